#!/usr/bin/env bash
# `data tokenize` writes what AI2's `dolma tokens --tokenizer.encode_special_tokens` writes, document for document,
# checked against an oracle that is not replica's code: Hugging Face's own tokenizers (the Rust library, npm package
# `tokenizers`, tools/node) over AI2's tokenizer.json, with dolma's rules around it written here from
# dolma/tokenizer/tokenizer.py (tokenize_file, add_special_tokens) and memmap_writer.py (the sidecar) in Python:
#   - each JSONL line is read in text mode (universal newlines), `text.strip()` (str.isspace), empty ones skipped;
#   - encode_special_tokens: special added tokens are text, the plain ones (extra ids, PII masks) keep their ids;
#   - EOS (100257) appended unless the last id already is EOS;
#   - the sidecar NAME.csv.gz: csv.writer rows start,end,id,src,loc.
# Also: --rules verbatim (every byte as text, EOS after every document) against HF with no added tokens, .json.gz
# input, and the errors of a bad --rules value and an output name without ".npy".
set -euo pipefail
replica=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=${PYTHON:-/usr/bin/python3}
ranks="$src/tests/fixtures/data/cl100k_base.tiktoken"
oracle="$src/tools/node/node_modules/tokenizers"
if [ ! -f "$oracle/package.json" ]; then
  echo "SKIP: Hugging Face tokenizers (npm) is not installed in tools/node: run scripts/install-deps.sh" >&2
  exit 0
fi
cd "$work"

# AI2's tokenizer.json, as export-hf writes it for a model over dolma2's vocabulary (checked against AI2's sha256).
$py - "$src/tools/reference" <<'PY'
import sys, torch
sys.path.insert(0, sys.argv[1])
import olmo3_ref as ref
config = {"architectures": ["Olmo3ForCausalLM"], "model_type": "olmo3", "vocab_size": 100278, "hidden_size": 8,
          "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 1, "num_key_value_heads": 1,
          "head_dim": 8, "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 500000.0,
          "tie_word_embeddings": False, "sliding_window": 16, "layer_types": ["full_attention"],
          "eos_token_id": 100257, "pad_token_id": 100277}
shapes = ref.param_shapes(ref.load_config(config))
ref.save_hf("model", config, {k: torch.zeros(shape) for k, shape in shapes.items()})
PY
"$replica" export-hf --checkpoint model --out hf --tokenizer "$ranks" >/dev/null
echo "3ca996cca8afea58b34e95c353e859333592642a5e51d695d7a6dbbaf692dfe9  hf/tokenizer.json" | sha256sum -c --quiet -

# Documents that exercise every rule; ids with the characters csv quotes; CRLF, lone CR and blank lines.
$py - <<'PY'
import gzip, json
ws = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000"
texts = [
    "  Hello, world.  \n", ws + "inside" + ws, ws, "", "\u200b not whitespace \ufeff", "\n\n\n",
    "Call |||PHONE_NUMBER||| or write to |||EMAIL_ADDRESS||| from |||IP_ADDRESS|||",
    "|||IP_ADDRESS|||", "|||PHONE_NUMBER|||EMAIL_ADDRESS|||", "|||||PHONE_NUMBER|||||", "||IP_ADDRESS||",
    "".join(f"<|extra_id_{i}|>" for i in range(11)) + " <|extra_id_1|>0 <|extra_id_11|> <|extra_id_|>",
    "<|<|extra_id_0|>|>", "a<|endoftext|>b", "ends with EOS text <|endoftext|>", "<|endoftext|>",
    "<|pad|><|im_start|>user\nhi<|im_end|><|endofprompt|><|fim_prefix|>x<|fim_middle|>y<|fim_suffix|>",
    "<|endoftext|>|||IP_ADDRESS|||<|extra_id_3|><|pad|>", "emoji \U0001F600 CJK \u4e2d\u6587 e\u0301 \u00e9",
    "numbers 1234567 and   spaces\t\ttabs\r\nwindows\rmac", "x" * 3000 + " " + "y" * 200,
    # Pieces over 128 bytes take the heap merge (merge_large): a long word of mixed letters, a punctuation run.
    "".join("etaoinshrdlucmfwyp"[(i * i * 7 + i * 3) % 18] for i in range(5000)), "-=" * 400 + "+" * 300,
]
ids = ["plain", "with,comma", 'with "quotes"', "with\nnewline", "with\rreturn", "", "\u00e9t\u00e9", "x,\"y\"\r\n"]
with open("docs.jsonl", "w", encoding="utf-8", newline="") as f:
    for i, text in enumerate(texts):
        f.write(json.dumps({"id": ids[i % len(ids)] + str(i), "text": text, "source": "test"}))
        f.write(["\n", "\r\n", "\r", "\n\n", "\n \t\n"][i % 5])
with gzip.open("more.json.gz", "wt", encoding="utf-8", newline="") as f:
    for i, text in enumerate(reversed(texts)):
        f.write(json.dumps({"text": text, "id": f"gz-{i}"}, ensure_ascii=False) + "\n")
open("plain.txt", "w", encoding="utf-8").write("\n\n  A plain-text document, one per file.\u3000\n")
PY

"$replica" data tokenize --input docs.jsonl more.json.gz plain.txt --output dolma.npy --tokenizer "$ranks" --jobs 2 |
  tee tokenize.log
grep -q "document metadata (dolma's sidecar: start,end,id,source,line): dolma.csv.gz" tokenize.log
"$replica" data tokenize --input docs.jsonl more.json.gz plain.txt --output verbatim.npy --rules verbatim \
  --tokenizer "$ranks" --jobs 1 >/dev/null

# The oracle: dolma's rules in Python (str.strip is Python's own), Hugging Face tokenizers in node.
$py - hf/tokenizer.json docs.jsonl more.json.gz plain.txt <<'PY'
import gzip, json, sys
tokenizer_json, inputs = sys.argv[1], sys.argv[2:]
documents = []  # [id, src, loc, text, text.strip()] as dolma's tokenize_file reads them
for path in inputs:
    if path.endswith(".txt"):  # replica's rule for a plain-text file (dolma reads JSONL only): id and src = path
        text = open(path, encoding="utf-8", newline="").read()
        documents.append([path, path, 1, text, text.strip()])
        continue
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as stream:  # text mode: universal newlines, as smart_open reads
        for i, line in enumerate(stream, start=1):
            if not line.strip(" \t\n"):
                continue  # msgspec rejects a blank line; dolma logs it and goes on
            row = json.loads(line)
            documents.append([row["id"], path, i, row["text"], row["text"].strip()])
json.dump(documents, open("documents.json", "w"))
spec = json.load(open(tokenizer_json))
# encode_special_tokens=True: AddedVocabulary.find_matches skips every special token's match, so its text goes to the
# model; with dolma2's tokens no special match can overlap a plain one, so this equals dropping the special entries.
json.dump(dict(spec, added_tokens=[t for t in spec["added_tokens"] if not t["special"]]),
          open("hf_encode_special_tokens.json", "w"))
json.dump(dict(spec, added_tokens=[]), open("hf_ordinary.json", "w"))
PY
node - "$oracle" <<'JS'
const fs = require("fs");
const { Tokenizer } = require(process.argv[2]);
(async () => {
  const documents = JSON.parse(fs.readFileSync("documents.json", "utf8"));
  // dolma encodes the stripped text with encode_special_tokens; verbatim every raw byte as ordinary text.
  for (const [name, column] of [["hf_encode_special_tokens", 4], ["hf_ordinary", 3]]) {
    const tokenizer = Tokenizer.fromFile(`${name}.json`);
    const ids = [];
    for (const document of documents)
      ids.push(Array.from((await tokenizer.encode(document[column], null, { addSpecialTokens: false })).getIds()));
    fs.writeFileSync(`${name}.ids.json`, JSON.stringify(ids));
  }
})();
JS
skipped=$(sed -n 's/.*skipped \([0-9]*\) documents that are empty after strip().*/\1/p' tokenize.log)
$py - "${skipped:-0}" <<'PY'
import csv, gzip, io, json, sys
import numpy as np
EOS = 100257
documents = json.load(open("documents.json"))
dolma_ids = json.load(open("hf_encode_special_tokens.ids.json"))
ordinary_ids = json.load(open("hf_ordinary.ids.json"))

# dolma: skip empty stripped texts, add_special_tokens appends EOS unless present, a sidecar row per document.
tokens, rows, start, skipped = [], io.StringIO(), 0, 0
writer = csv.writer(rows)
for (doc_id, src, loc, _, text), ids in zip(documents, dolma_ids):
    if not text:
        skipped += 1
        continue
    if ids[-1] != EOS:
        ids.append(EOS)
    tokens += ids
    writer.writerow((start, start + len(ids), doc_id, src, loc))
    start += len(ids)
assert skipped == int(sys.argv[1]) and skipped > 0, f"dolma skips {skipped} documents, replica {sys.argv[1]}"
replica = np.fromfile("dolma.npy", dtype="<u4").tolist()
first = next((i for i, (a, b) in enumerate(zip(replica, tokens)) if a != b), None)
assert first is None, f"first differing token {first}: replica {replica[first-3:first+3]} HF {tokens[first-3:first+3]}"
assert len(replica) == len(tokens), (len(replica), len(tokens))
sidecar = gzip.open("dolma.csv.gz", "rb").read().decode("utf-8")
assert sidecar == rows.getvalue(), f"the sidecar differs from dolma's csv rows:\n{sidecar[:300]!r}\n{rows.getvalue()[:300]!r}"
assert any(t != EOS and t >= 100256 for t in replica), "no plain added token was exercised"

# verbatim: every document, every byte as ordinary text, EOS after each.
expected = [t for ids in ordinary_ids for t in ids + [EOS]]
assert np.fromfile("verbatim.npy", dtype="<u4").tolist() == expected, "verbatim differs from HF without added tokens"
print(f"dolma: {len(tokens)} tokens in {len(documents) - skipped} documents = HF tokenizers with dolma's rules; "
      f"verbatim: {len(expected)} tokens")
PY

# Bad input: a --rules value that does not exist, before anything is written.
if "$replica" data tokenize --input docs.jsonl --output bad.npy --rules strict --tokenizer "$ranks" 2>err.txt; then
  exit 1
fi
grep -q -- "--rules: expected dolma or verbatim, got 'strict'" err.txt
[ ! -e bad.npy ] && [ ! -e bad.csv.gz ]
# An output whose name has no ".npy": the tokens are written, and it says why there is no sidecar.
"$replica" data tokenize --input docs.jsonl --output tokens.bin --tokenizer "$ranks" | grep -q "no document metadata"
[ -s tokens.bin ] && [ "$(ls ./*.csv.gz | tr '\n' ' ')" = "./dolma.csv.gz ./verbatim.csv.gz " ]
"$replica" data tokenize --input docs.jsonl --output quiet.npy --no-metadata --tokenizer "$ranks" >/dev/null
[ ! -e quiet.csv.gz ]
echo "data_tokenize_dolma: OK"
