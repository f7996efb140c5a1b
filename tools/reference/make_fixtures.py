#!/usr/bin/python3
"""Generate golden fixtures for replica's C++ parity tests from the PyTorch reference (olmo3_ref.py).

usage: /usr/bin/python3 tools/reference/make_fixtures.py --out DIR
Writes DIR/<case>/{config.json, model.safetensors, tokens.npy, logits_fp32.npy, logits_bf16.npy,
loss.json, loss_bf16.json, grads.safetensors, grads_bf16.safetensors, greedy.json} and DIR/cases.json; the packed
cases (intra-document masking) also doc_lens.json, and are listed in DIR/packed_cases.json; the float8 cases
(DIR/float8_cases.json) also {logits,loss,grads}_float8_{fp32,bf16}.
Deterministic and idempotent; prints one summary line.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import olmo3_ref as ref  # noqa: E402

Z_LOSS = 1e-5
FIXTURE_STD = 0.1  # larger than the 0.02 training init: peakier attention and logits, so bugs show
S, F = "sliding_attention", "full_attention"
# Greedy decoding goldens: prompt + new tokens span more than every sliding window but one (mha_window_ge_t's W=64).
GREEDY_PROMPT, GREEDY_NEW = 9, 40
# The smallest gap between the two largest logits a golden may have: far above fp32's error on these models
# (2.5e-6, README), so that replica must choose the same ids.
GREEDY_MIN_MARGIN = 1e-4

# name: (config overrides, B, T, seed). Base config below; one line per case.
CASES = {
    # MHA, window >= T (sliding layers behave as full), untied, odd T
    "mha_window_ge_t": (dict(vocab_size=64, hidden_size=32, num_attention_heads=4, num_key_value_heads=4,
                             num_hidden_layers=2, sliding_window=64, layer_types=[S, F]), 2, 37, 1),
    # GQA H=4 K=2, D=16, every layer sliding with W < T
    "gqa_h4k2_all_sliding": (dict(vocab_size=96, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                                  num_hidden_layers=2, sliding_window=8, layer_types=[S, S]), 1, 50, 2),
    # GQA H=4 K=1 (MQA), tied embeddings, T > 64 with several tiles, W=12
    "gqa_h4k1_tied_t77": (dict(vocab_size=128, hidden_size=32, num_attention_heads=4, num_key_value_heads=1,
                               num_hidden_layers=3, sliding_window=12, layer_types=[S, F, S],
                               tie_word_embeddings=True), 2, 77, 3),
    # default 3:1 pattern (layer_types absent -> s,s,s,f), T=130, W=20, rope_theta 1e4
    "default_pattern_t130": (dict(vocab_size=80, hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
                                  num_hidden_layers=4, sliding_window=20, rope_theta=10000.0), 1, 130, 4),
    # alternating s,f,s,f, B=3, tiny window 5, tied
    "sfsf_b3_w5": (dict(vocab_size=72, hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
                        num_hidden_layers=4, sliding_window=5, layer_types=[S, F, S, F],
                        tie_word_embeddings=True), 3, 33, 5),
    # olmo3 with every layer full (sliding_window present but unused), untied, V=300
    "all_full_v300": (dict(vocab_size=300, hidden_size=48, num_attention_heads=4, num_key_value_heads=4,
                           num_hidden_layers=2, sliding_window=7, layer_types=[F, F]), 2, 40, 6),
    # head_dim decoupled from hidden/heads (H*D = 64 != C = 32), GQA, W=16, T=100
    "head_dim16_c32": (dict(vocab_size=64, hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
                            head_dim=16, num_hidden_layers=2, sliding_window=16, layer_types=[S, F]), 1, 100, 7),
    # OLMo 2: reordered norm + QK-norm, every layer full
    "olmo2": (dict(model_type="olmo2", architectures=["Olmo2ForCausalLM"], vocab_size=100, hidden_size=32,
                   num_attention_heads=4, num_key_value_heads=4, num_hidden_layers=2), 2, 45, 8),
    # Llama: pre-norm, no QK-norm, GQA, full attention, eps 1e-5
    "llama": (dict(model_type="llama", architectures=["LlamaForCausalLM"], vocab_size=90, hidden_size=32,
                   num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2, rms_norm_eps=1e-5,
                   rope_theta=10000.0), 2, 29, 9),
}

def random_documents(T: int, seed: int, cuts: int) -> list:
    """Document lengths of one row of T tokens cut at `cuts` random distinct points (so some may be one token)."""
    g = torch.Generator().manual_seed(seed)
    points = sorted((torch.randperm(T - 1, generator=g)[:cuts] + 1).tolist())
    return [b - a for a, b in zip([0] + points, points + [T])]


# Packed rows (intra-document masking, stage3.md §3): name: (config overrides, each row's document lengths, seed);
# B is the number of rows, T their common sum. Labels stay the shifted ids: the EOS of a document predicts the
# next document's first token (§3.4); attention keeps the documents apart, RoPE positions stay global.
PACKED_CASES = {
    # one-token documents first, in a run and last; a document crossing the 64-query tiles; sliding and full
    # layers with W = 12 < most documents; GQA; a second row of random cut points and a third of one document
    "packed_sliding_gqa": (dict(vocab_size=96, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                                num_hidden_layers=2, sliding_window=12, layer_types=[S, F]),
                           [[1, 1, 90, 5, 1, 1, 51], random_documents(150, 12, 9), [150]], 10),
    # every layer full, documents shorter and longer than a tile, a row of random cut points, tied embeddings
    "packed_full_tied": (dict(vocab_size=64, hidden_size=32, num_attention_heads=4, num_key_value_heads=4,
                              num_hidden_layers=2, sliding_window=8, layer_types=[F, F],
                              tie_word_embeddings=True), [[40, 1, 66, 23], random_documents(130, 13, 5)], 11),
}

# float8 linears (train.float8): name: (config overrides, B, T, seed). Besides the case's usual goldens, the float8
# ones in fp32 and bf16 (make_float8_case); listed in DIR/float8_cases.json.
FLOAT8_CASES = {
    # every block Linear qualifies (dimensions divisible by 16): C = 64, H·D = 64, K·D = 32, F = 128
    "float8_all_linears": (dict(vocab_size=96, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                num_key_value_heads=2, num_hidden_layers=2, sliding_window=16,
                                layer_types=[S, F]), 2, 40, 12),
    # only q and o qualify: K·D = 8 (MQA) and F = 88 stay in the model's precision; tied embeddings, OLMo 2 norms
    "float8_some_linears": (dict(model_type="olmo2", architectures=["Olmo2ForCausalLM"], vocab_size=80, hidden_size=32,
                                 num_attention_heads=4, num_key_value_heads=1, num_hidden_layers=2,
                                 tie_word_embeddings=True), 2, 33, 13),
}


# The released Olmo-3-1025-7B config.json (the post-stage-3 model), every key as transformers 4.57 writes an
# Olmo3Config (shared/reference/olmo3.md §1.7, stage3.md §1). RELEASED_CASES shrink only what a tiny shape must.
RELEASED_7B = {
    "architectures": ["Olmo3ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "dtype": "bfloat16",
    "eos_token_id": 100257,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 11008,
    "layer_types": [S, S, S, F] * 8,
    "max_position_embeddings": 65536,
    "model_type": "olmo3",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 32,
    "pad_token_id": 100277,
    "rms_norm_eps": 1e-06,
    "rope_scaling": {"attention_factor": 1.2079441541679836, "beta_fast": 32.0, "beta_slow": 1.0, "factor": 8.0,
                     "original_max_position_embeddings": 8192, "rope_type": "yarn"},
    "rope_theta": 500000,
    "sliding_window": 4096,
    "tie_word_embeddings": False,
    "transformers_version": "4.57.1",
    "use_cache": True,
    "vocab_size": 100278,
}

# name: (changes to RELEASED_7B, B, T, seed).
RELEASED_CASES = {
    # D = 128/4 = 32 and an original context of 64 put the YaRN ramp at low 0, high 3 (dims 0 kept, 1-2 blended,
    # 3-15 divided by 8); T = 100 runs past the original context; the window shrinks below T so that it masks.
    "released_7b_yarn": (dict(hidden_size=128, intermediate_size=256, num_attention_heads=4, num_key_value_heads=4,
                              num_hidden_layers=4, layer_types=[S, S, S, F], vocab_size=256, sliding_window=48,
                              rope_scaling=dict(RELEASED_7B["rope_scaling"], original_max_position_embeddings=64)),
                         2, 100, 10),
}


def make_config(overrides: dict) -> dict:
    c = {
        "architectures": ["Olmo3ForCausalLM"],
        "model_type": "olmo3",
        "vocab_size": 64,
        "hidden_size": 32,
        "intermediate_size": 88,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "hidden_act": "silu",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "rms_norm_eps": 1e-6,
        "rope_theta": 500000.0,
        "rope_scaling": None,
        "max_position_embeddings": 256,
        "initializer_range": 0.02,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
    }
    c.update(overrides)
    if c["model_type"] != "olmo3":
        c.pop("sliding_window", None)
        c.pop("layer_types", None)
    return c


def run(params, cfg, ids, dtype, precision, doc_lens=None, float8=False):
    """Forward + backward; returns logits (float32 numpy), loss dict, grads (float32 tensors)."""
    p = ref.leaf_params(params, dtype)
    logits = ref.forward(p, cfg, ids, precision, doc_lens, float8)
    total, ce, z = ref.loss(logits, ids, Z_LOSS)
    total.backward()
    n = ids.shape[0] * (ids.shape[1] - 1)
    losses = {"loss": float(total), "ce": float(ce), "z_loss": Z_LOSS * float(z),
              "lse_sq_mean": float(z), "z_loss_coef": Z_LOSS, "n_labels": n}
    grads = {k: v.grad.detach().to(torch.float32) for k, v in p.items()}
    return logits.detach().to(torch.float32).numpy(), losses, grads


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2)  # json writes floats with repr (shortest round-trip) precision
        f.write("\n")
    os.replace(tmp, path)


def write_npy(path, arr):
    tmp = path + ".tmp.npy"
    np.save(tmp, arr)
    os.replace(tmp, path)


def make_case(out_dir, name, config, B, T, seed, doc_lens=None):
    cfg = ref.load_config(config)
    params = ref.init_params(cfg, seed, std=FIXTURE_STD, norm_jitter=0.1)
    g = torch.Generator().manual_seed(1000 + seed)
    ids = torch.randint(0, cfg.vocab_size, (B, T), generator=g, dtype=torch.int64)

    d = os.path.join(out_dir, name)
    ref.save_hf(d, config, params, "F32")
    write_npy(os.path.join(d, "tokens.npy"), ids.numpy())
    if doc_lens is not None:
        write_json(os.path.join(d, "doc_lens.json"), doc_lens)

    # fp32 goldens: the same code in float64 on the float32 weights, stored as float32
    logits, losses, grads = run(params, cfg, ids, torch.float64, "fp32", doc_lens)
    write_npy(os.path.join(d, "logits_fp32.npy"), logits)
    write_json(os.path.join(d, "loss.json"), losses)
    ref.save_safetensors(os.path.join(d, "grads.safetensors"), grads, "F32")

    # greedy decoding of the first instance's first GREEDY_PROMPT tokens: a full recompute per token, float64
    prompt = ids[0, :GREEDY_PROMPT].tolist()
    new_ids, margins = ref.greedy(ref.leaf_params(params, torch.float64, requires_grad=False), cfg, prompt, GREEDY_NEW)
    assert min(margins) > GREEDY_MIN_MARGIN, f"{name}: a near tie in greedy decoding ({min(margins):.2e})"
    write_json(os.path.join(d, "greedy.json"), {"prompt": prompt, "ids": new_ids, "min_margin": min(margins)})

    # bf16 goldens: computed in float32, matmul operands rounded to bf16 (forward and backward)
    logits, losses, grads = run(params, cfg, ids, torch.float32, "bf16", doc_lens)
    write_npy(os.path.join(d, "logits_bf16.npy"), logits)
    write_json(os.path.join(d, "loss_bf16.json"), losses)
    ref.save_safetensors(os.path.join(d, "grads_bf16.safetensors"), grads, "F32")


def make_float8_case(out_dir, name, config, B, T, seed):
    """make_case, then the goldens of the float8 model, in float32 (its casts read float32 values, as replica's do)."""
    make_case(out_dir, name, config, B, T, seed)
    cfg = ref.load_config(config)
    params = ref.init_params(cfg, seed, std=FIXTURE_STD, norm_jitter=0.1)
    ids = torch.from_numpy(np.load(os.path.join(out_dir, name, "tokens.npy")))
    d = os.path.join(out_dir, name)
    for precision in ("fp32", "bf16"):
        logits, losses, grads = run(params, cfg, ids, torch.float32, precision, float8=True)
        write_npy(os.path.join(d, f"logits_float8_{precision}.npy"), logits)
        write_json(os.path.join(d, f"loss_float8_{precision}.json"), losses)
        ref.save_safetensors(os.path.join(d, f"grads_float8_{precision}.safetensors"), grads, "F32")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="fixture directory (created if missing)")
    args = ap.parse_args()
    torch.set_num_threads(1)  # deterministic reductions
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    for name, (overrides, B, T, seed) in CASES.items():
        make_case(args.out, name, make_config(overrides), B, T, seed)
    for name, (changes, B, T, seed) in RELEASED_CASES.items():
        make_case(args.out, name, dict(RELEASED_7B, **changes), B, T, seed)
    for name, (overrides, doc_lens, seed) in PACKED_CASES.items():
        make_case(args.out, name, make_config(overrides), len(doc_lens), sum(doc_lens[0]), seed, doc_lens)
    write_json(os.path.join(args.out, "packed_cases.json"), list(PACKED_CASES))
    for name, (overrides, B, T, seed) in FLOAT8_CASES.items():
        make_float8_case(args.out, name, make_config(overrides), B, T, seed)
    write_json(os.path.join(args.out, "float8_cases.json"), list(FLOAT8_CASES))
    names = list(CASES) + list(RELEASED_CASES)
    write_json(os.path.join(args.out, "cases.json"), names)  # last: the build's output, once all exist
    n_cases = len(names) + len(PACKED_CASES) + len(FLOAT8_CASES)
    print(f"make_fixtures: {n_cases} cases written to {args.out} in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
