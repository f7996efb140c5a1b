# Shared by the stage-3 tests (sourced; not a test itself): the tiny OLMo 3 block with the dolma2 vocabulary (EOS
# 100257, padding 100277; 3 sliding layers, 1 full) and documents of random lengths for packing.

# stage3_model FILE EXTRA_YAML: the block's model YAML, with the lines of EXTRA_YAML (max_position_embeddings, YaRN).
stage3_model() {
  cat >"$1" <<YAML
model_type: olmo3
vocab_size: 100352
hidden_size: 32
intermediate_size: 96
num_hidden_layers: 4
num_attention_heads: 4
num_key_value_heads: 2
head_dim: 8
sliding_window: 16
tie_word_embeddings: false
eos_token_id: 100257
pad_token_id: 100277
$2
YAML
}

# stage3_documents DIR: DIR/docs{0..3}.npy, 40 documents each of 1 to 300 tokens, each ending in EOS.
stage3_documents() {
  "${py:-/usr/bin/python3}" - "$1" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(3)
for f in range(4):
    docs = [np.append(rng.integers(0, 1000, size=n, dtype=np.uint32), np.uint32(100257))
            for n in rng.integers(0, 300, size=40)]
    np.save(f"{sys.argv[1]}/docs{f}.npy", np.concatenate(docs))
PY
}
