#!/usr/bin/env node
// dev/reference/tiktoken_ranks.js — npm's tiktoken package ships each
// encoding as JSON whose "bpe_ranks" holds lines "<name> <first rank>
// <base64> <base64> ..." (consecutive ranks); print it as OpenAI's
// <name>.tiktoken rank file: "<base64> <rank>\n" per token, in rank order.
// scripts/fetch_tokenizers.sh checks the result by OpenAI's sha256.
//   node dev/reference/tiktoken_ranks.js .../tiktoken/encoders/cl100k_base.json > cl100k_base.tiktoken
'use strict';
const fs = require('fs');
const d = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const out = [];
for (const line of d.bpe_ranks.split('\n')) {
  if (!line) continue;
  const parts = line.split(' ');
  const first = parseInt(parts[1], 10);
  for (let i = 2; i < parts.length; i++) out.push(`${parts[i]} ${first + i - 2}\n`);
}
process.stdout.write(out.join(''));
