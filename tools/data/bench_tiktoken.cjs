// Times the npm tiktoken WASM build's cl100k_base encode_ordinary on text files (the side-by-side baseline for
// bench/bench_tokenizer.sh). Prints "file MB/s tokens" per file, best of --reps runs.
//   node tools/data/bench_tiktoken.cjs <tiktoken package dir> FILE...
'use strict';
const fs = require('fs');
const path = require('path');

const [pkgDir, ...files] = process.argv.slice(2);
const { get_encoding } = require(path.resolve(pkgDir, 'tiktoken.cjs'));
const enc = get_encoding('cl100k_base');
for (const file of files) {
  const text = fs.readFileSync(file, 'utf8');
  const bytes = Buffer.byteLength(text);
  let best = Infinity, tokens = 0;
  for (let rep = 0; rep < 5; rep++) {
    const t0 = process.hrtime.bigint();
    tokens = enc.encode_ordinary(text).length;
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  console.log(`${path.basename(file)} ${(bytes / best / 1e6).toFixed(1)} ${tokens}`);
}
