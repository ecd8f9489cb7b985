#!/usr/bin/python3
"""An independent writer of llm.c's multiple-choice eval file, for tests/unit/eval/test_hellaswag.c.

It shares no code with the C side (eval/eval_file.c, eval/hellaswag.c,
data/tokenizer*.c) and uses only the Python standard library:

- GPT-2's byte-level BPE from OpenAI's published encoder.json and vocab.bpe:
  bytes_to_unicode, then merges by rank, as OpenAI's gpt-2 src/encoder.py
  describes them;
- GPT-2's pre-tokenizer pattern
      's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
  as a hand-written scanner over Unicode categories (unicodedata: L* letters,
  N* numbers) and str.isspace() for \\s. (str.isspace and Unicode's
  White_Space property differ on a few rare characters, none of which the
  test file holds; the stdlib `re` has no \\p classes, and the `regex`
  module is not always installed);
- the eval file as llm.c's dev/data/data_common.py documents it: a header of
  256 int32 (20240522, 1, number of examples, longest record in bytes), then
  per example the uint16 stream 65535, record bytes, index, label, 4,
  context count + tokens, and each ending's count + tokens;
- HellaSwag rendered as llm.c's dev/data/hellaswag.py does: the context
  encoded as it is, each ending as " " + ending.

Usage: hellaswag_writer.py ENCODER_JSON VOCAB_BPE IN.jsonl OUT.bin
"""
import json
import struct
import sys
import unicodedata


def bytes_to_unicode():
    """GPT-2's reversible map of the 256 byte values to printable characters."""
    keep = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1))
            + list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def char_class(ch):
    """'s' for whitespace, 'L' for a letter, 'N' for a number, 'o' for anything else."""
    if ch.isspace():
        return "s"
    c = unicodedata.category(ch)[0]
    return c if c in "LN" else "o"


def pretokenize(text):
    """Split text into GPT-2's pieces (the pattern in the module docstring)."""
    pieces, i, n = [], 0, len(text)
    while i < n:
        # 's 't 're 've 'm 'll 'd, tried first
        if text[i] == "'":
            hit = next((s for s in ("s", "t", "re", "ve", "m", "ll", "d")
                        if text.startswith(s, i + 1)), None)
            if hit is not None:
                pieces.append(text[i:i + 1 + len(hit)])
                i += 1 + len(hit)
                continue
        # ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+': one space joins the run after it
        j = i + 1 if text[i] == " " and i + 1 < n and char_class(text[i + 1]) != "s" else i
        cls = char_class(text[j])
        if cls != "s":
            k = j
            while k < n and char_class(text[k]) == cls:
                k += 1
            pieces.append(text[i:k])
            i = k
            continue
        # '\s+(?!\S)': a run of spaces, less its last when a non-space follows
        # (that one goes with the next piece); else '\s+' (a lone space before a non-space)
        k = i
        while k < n and text[k].isspace():
            k += 1
        end = k if k == n or k - i == 1 else k - 1
        pieces.append(text[i:end])
        i = end
    return pieces


class Bpe:
    def __init__(self, encoder_json, vocab_bpe):
        with open(encoder_json, encoding="utf-8") as f:
            self.encoder = json.load(f)
        with open(vocab_bpe, encoding="utf-8") as f:
            lines = f.read().split("\n")
        merges = [tuple(l.split()) for l in lines[1:] if l.strip()]  # line 0: "#version"
        self.rank = {m: r for r, m in enumerate(merges)}
        self.byte_map = bytes_to_unicode()
        self.cache = {}

    def merge(self, word):
        """Merge the lowest-ranked adjacent pair, every occurrence left to right, until none is left."""
        if word in self.cache:
            return self.cache[word]
        parts = list(word)
        while len(parts) > 1:
            best = None
            for k in range(len(parts) - 1):
                r = self.rank.get((parts[k], parts[k + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, parts[k], parts[k + 1])
            if best is None:
                break
            _, a, b = best
            merged, k = [], 0
            while k < len(parts):
                if k + 1 < len(parts) and parts[k] == a and parts[k + 1] == b:
                    merged.append(a + b)
                    k += 2
                else:
                    merged.append(parts[k])
                    k += 1
            parts = merged
        self.cache[word] = parts
        return parts

    def encode(self, text):
        ids = []
        for piece in pretokenize(text):
            word = "".join(self.byte_map[b] for b in piece.encode("utf-8"))
            ids.extend(self.encoder[t] for t in self.merge(word))
        return ids


def write_evalfile(path, examples):
    """examples: list of (label, ctx_tokens, [4 ending token lists])."""
    assert 0 < len(examples) < 2 ** 16
    stream, longest = [], 0
    for idx, (label, ctx, ends) in enumerate(examples):
        rec = [65535, 0, idx, label, len(ends), len(ctx)] + ctx
        for e in ends:
            rec += [len(e)] + e
        assert all(0 <= t < 65535 for t in ctx + sum(ends, []))
        rec[1] = 2 * len(rec)
        assert rec[1] < 2 ** 16
        longest = max(longest, rec[1])
        stream += rec
    header = [20240522, 1, len(examples), longest] + [0] * 252
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *header))
        f.write(struct.pack("<%dH" % len(stream), *stream))


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__.strip().splitlines()[-1])
    enc_json, vocab_bpe, jsonl, out = sys.argv[1:]
    bpe = Bpe(enc_json, vocab_bpe)
    examples = []
    with open(jsonl, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            o = json.loads(line)
            ctx = bpe.encode(o["ctx"])
            ends = [bpe.encode(" " + e) for e in o["endings"]]
            examples.append((int(o["label"]), ctx, ends))
    write_evalfile(out, examples)


if __name__ == "__main__":
    main()
