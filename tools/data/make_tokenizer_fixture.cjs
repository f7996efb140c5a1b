// Writes the tokenizer parity fixtures from the npm `tiktoken` WASM build (the Rust core of OpenAI's tiktoken):
//   tokenizer_sample.jsonl    {"name", "text", "ids"} per line: prose in many languages, code, emoji, edge cases
//   tokenizer_codepoints.txt  "<first> <last> <sha256 of ids as little-endian uint32>" per block of code points,
//                             where the text of a block is the probe of every code point in it (see probe()).
// Usage (see docs/data.md):  node tools/data/make_tokenizer_fixture.cjs <tiktoken package dir> <out dir>
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const zlib = require('zlib');

const [pkgDir, outDir] = process.argv.slice(2);
if (!pkgDir || !outDir) {
  console.error('usage: make_tokenizer_fixture.cjs <tiktoken package dir> <out dir>');
  process.exit(2);
}
const { get_encoding } = require(path.resolve(pkgDir, 'tiktoken.cjs'));
const enc = get_encoding('cl100k_base');
const encode = (s) => Array.from(enc.encode_ordinary(s));

// A code point in contexts that expose how the regex classifies it: letter run, digit run, whitespace
// run, punctuation run, case-insensitive contraction, newline handling.
function probe(cp) {
  const c = String.fromCodePoint(cp);
  return 'a' + c + 'b1' + c + '2 ' + c + "'" + c + 'll\n' + c + c + '  ' + c + '\r\n';
}

const samples = [];
const add = (name, text) => samples.push({ name, text, ids: encode(text) });

add('english', 'The quick brown fox jumps over the lazy dog. It\'s 3:45pm; we\'ve paid $1,234,567.89 (approx.)!');
add('contractions', "I'LL SEE YOU'RE NOT. She'd've said 'twas WE'VE 'S 'T 'M 'D 'Ll 'rE don't");
add('german', 'Größenwahn: Die Straße führt über die Brücke. Äpfel, Öl und Übermut — „Zitat“ und ‚halbe‘.');
add('french', "L'été dernier, nous sommes allés à Besançon ; c'était « magnifique » ! Œuvre, cœur, façade.");
add('spanish', '¿Dónde está la estación? ¡Mañana será otro día! El niño comió piñas y jalapeños.');
add('russian', 'Съешь же ещё этих мягких французских булок, да выпей чаю. Москва — столица России.');
add('greek', 'Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.');
add('arabic', 'نص حكيم له سر قاطع وذو شأن عظيم مكتوب على ثوب أخضر ومغلف بجلد أزرق. ١٢٣٤٥٦٧');
add('hebrew', 'דג סקרן שט בים מאוכזב ולפתע מצא חברה. שלום עולם!');
add('hindi', 'ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश करने वाले विष्णुवतार भगवान श्रीराम। १२३४');
add('chinese', '我能吞下玻璃而不伤身体。中华人民共和国成立于1949年10月1日，首都是北京。');
add('japanese', 'いろはにほへと ちりぬるを わかよたれそ つねならむ。東京都渋谷区１２３番地、カタカナとひらがな。');
add('korean', '다람쥐 헌 쳇바퀴에 타고파. 대한민국의 수도는 서울입니다. 안녕하세요!');
add('thai', 'เป็นมนุษย์สุดประเสริฐเลิศคุณค่า กว่าบรรดาฝูงสัตว์เดรัจฉาน');
add('vietnamese', 'Tiếng Việt có dấu: Trăm năm trong cõi người ta, chữ tài chữ mệnh khéo là ghét nhau.');
add('emoji', 'Hello 🌍! 👨‍👩‍👧‍👦 family, 🏳️‍🌈 flag, 🇩🇪🇫🇷🇯🇵 flags, skin 👍🏽, keycap 1️⃣, 🤖🚀✨ done.');
add('combining', 'e\u0301 vs é, n\u0303, a\u030a\u0323, Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇');
add('symbols', '∀x∈ℝ: x² ≥ 0 ⇒ √x² = |x|; ∑ᵢ aᵢ ≈ ∫₀^∞ f(t) dt ± ε. ©®™ §¶ †‡ °C ½ ¼ ⅞ ⅻ');
add('whitespace', 'a\tb\n\nc\r\nd   e\u00a0f\u2003g\u3000h\u200bi\u180ej\u2028k\u0085l \n \n  \n\t\t\n   x');
add('long_spaces', 'start' + ' '.repeat(300) + 'end' + '\n'.repeat(50) + 'x' + ' \t'.repeat(100));
add('digits', '1 12 123 1234 12345 123456 1234567 3.14159265358979 0x1F 1e-10 ٣٤٥ ۱۲۳ १२३ ①②③ Ⅻ 10000000000000000');
add('long_word', 'a'.repeat(257) + ' ' + 'ab'.repeat(200) + ' ' + 'Supercalifragilisticexpialidocious'.repeat(8));
add('base64', 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==' +
    'QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3ODkrLw'.repeat(6));
add('punctuation', '!!!??? ...--- ((( ))) [[[]]] {{{}}} <<<>>> ;;; ::: """ \'\'\' ``` ~~~ ^^^ ### @@@ &&& *** /// \\\\\\ ||| ___ ===');
add('special_text', 'Text <|endoftext|> with <|fim_prefix|>specials<|fim_suffix|> |||EMAIL_ADDRESS||| <|pad|> <|im_start|>user');
add('url_email', 'Visit https://example.com/path?q=1&lang=en#frag or mail john.doe+tag@example.co.uk; ftp://x.y/z.tar.gz');
add('json', '{"name": "replica", "version": [1, 2, 3], "nested": {"ok": true, "pi": 3.14, "none": null}}\n');
add('markdown', '# Title\n\n## Sub\n\n- item *one*\n- item **two**\n\n```python\nprint("hi")\n```\n\n> quote\n\n| a | b |\n|---|---|\n');
add('html', '<!DOCTYPE html><html><head><meta charset="utf-8"><title>T</title></head><body><p class="x">Hi &amp; bye</p></body></html>');
add('empty', '');
add('single_space', ' ');
add('only_newlines', '\n\n\n');
add('mixed_crlf', 'line one\r\nline two\r\n\r\n\tindented\r\n');

// Real files from the Debian base system, cut to a few kB each (code in several languages, prose, roff).
const localFiles = [
  ['python', '/usr/lib/python3.11/json/decoder.py'],
  ['python2', '/usr/lib/python3.11/textwrap.py'],
  ['cpp', '/usr/include/c++/12/bits/stl_vector.h'],
  ['cpp2', '/usr/include/c++/12/bits/basic_string.h'],
  ['c_header', '/usr/include/stdio.h'],
  ['perl', '/usr/share/perl/5.36/Text/Wrap.pm'],
  ['shell', '/usr/bin/zgrep'],
  ['license', '/usr/share/common-licenses/GPL-3'],
  ['roff', '/usr/share/man/man1/ls.1.gz'],
];
for (const [name, file] of localFiles) {
  if (!fs.existsSync(file)) continue;
  let buf = fs.readFileSync(file);
  if (file.endsWith('.gz')) buf = zlib.gunzipSync(buf);
  add(name, buf.toString('utf8').slice(0, 12000));
}

fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'tokenizer_sample.jsonl'), samples.map((s) => JSON.stringify(s)).join('\n') + '\n');

const lines = [];
const block = 4096;
for (let first = 0; first < 0x110000; first += block) {
  let text = '';
  const last = first + block - 1;
  for (let cp = first; cp <= last; cp++) if (cp < 0xd800 || cp > 0xdfff) text += probe(cp);
  const ids = Uint32Array.from(encode(text));
  const digest = crypto.createHash('sha256').update(Buffer.from(ids.buffer)).digest('hex');
  lines.push(`${first} ${last} ${digest}`);
}
fs.writeFileSync(path.join(outDir, 'tokenizer_codepoints.txt'), lines.join('\n') + '\n');
console.log(`wrote ${samples.length} samples and ${lines.length} code point blocks to ${outDir}`);
