#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz harnesses (tests/fuzz/corpus/<harness>/): a few small valid inputs of each
format and the crafted files of the December 2026 reliability review. Run from anywhere; the output is committed.
"""
import ctypes
import json
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "corpus")


def put(harness, name, data):
    os.makedirs(os.path.join(OUT, harness), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(OUT, harness, name), "wb") as f:
        f.write(data)


def npy_bytes(array, version=(1, 0)):
    import io
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, version=version)
    return buf.getvalue()


def npy_with_shape(shape_text, payload=b"\0\0\0\0", descr="<u4"):
    """A .npy whose header states `shape_text` verbatim (the review's D2 file: 2**62 + 1 tokens in 4 bytes)."""
    h = ("{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)).encode()
    h += b" " * ((64 - (10 + len(h) + 1) % 64) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + payload


def safetensors_bytes(tensors, metadata=None, pad=True, header_override=None):
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, array in tensors:
        raw = array.tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = header_override if header_override is not None else json.dumps(header)
    if pad:
        text += " " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text.encode() + data


def xxh3_128(data):
    class Hash(ctypes.Structure):
        _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]
    lib = ctypes.CDLL("libxxhash.so.0")
    lib.XXH3_128bits.restype = Hash
    h = lib.XXH3_128bits(data, ctypes.c_size_t(len(data)))
    return "%016x%016x" % (h.high64, h.low64)


TINY = {"model_type": "olmo3", "vocab_size": 256, "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "sliding_window": 8, "layer_types": ["sliding_attention", "full_attention"], "rms_norm_eps": 1e-6,
        "rope_theta": 500000.0, "max_position_embeddings": 64, "tie_word_embeddings": False}


def main():
    ids = np.array([100257, 5, 17, 100257, 9, 100256], dtype="<u4")
    # .npy headers
    put("npy", "u4_1d.npy", npy_bytes(ids))
    put("npy", "u2_1d.npy", npy_bytes(ids.astype("<u2")))
    put("npy", "f4_2d.npy", npy_bytes(np.arange(6, dtype="<f4").reshape(2, 3)))
    put("npy", "i8_v2.npy", npy_bytes(np.arange(3, dtype="<i8"), version=(2, 0)))
    put("npy", "scalar.npy", npy_bytes(np.array(7, dtype="<i4")))
    put("npy", "empty.npy", npy_bytes(np.zeros(0, dtype="<u4")))
    put("npy", "review_d2_wrapping_count.npy", npy_with_shape("(4611686018427387905,)"))
    put("npy", "review_shape_text.npy", npy_with_shape("(abc,)"))
    put("npy", "review_magic_only.npy", b"\x93NUMPY")
    # token files: the first byte picks the headerless dtype (odd: uint16)
    put("token_file", "npy_u4", b"\0" + npy_bytes(ids))
    put("token_file", "npy_u2", b"\0" + npy_bytes(ids.astype("<u2")))
    put("token_file", "headerless_u4", b"\0" + ids.tobytes())
    put("token_file", "headerless_u2", b"\1" + ids.astype("<u2").tobytes())
    put("token_file", "review_d2_wrapping_count", b"\0" + npy_with_shape("(4611686018427387905,)"))
    # safetensors
    a = np.arange(6, dtype="<f4").reshape(2, 3)
    b = np.arange(4, dtype="<u2")  # raw BF16 / F16 bits
    put("safetensors", "f32_bf16_f16", safetensors_bytes([("a", "F32", a), ("b", "BF16", b), ("c", "F16", b)],
                                                         {"format": "pt"}))
    put("safetensors", "odd_header", safetensors_bytes([("b", "BF16", b)], pad=False))
    put("safetensors", "review_d9_overlap", safetensors_bytes([], header_override=json.dumps(
        {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
         "b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})) + bytes(8))
    put("safetensors", "review_d9_duplicate_key", safetensors_bytes([], header_override=
        '{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
        '"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}') + bytes(4))
    put("safetensors", "review_d5_header_array", safetensors_bytes([], header_override="[1, 2]"))
    put("safetensors", "review_wrapping_shape", safetensors_bytes([], header_override=json.dumps(
        {"a": {"dtype": "F32", "shape": [2**32, 2**32], "data_offsets": [0, 0]}})))
    # HF config.json
    put("hf_config", "olmo3.json", json.dumps(TINY))
    put("hf_config", "olmo2.json", json.dumps({k: v for k, v in TINY.items()
                                               if k not in ("sliding_window", "layer_types")} | {"model_type": "olmo2"}))
    put("hf_config", "llama.json", json.dumps({"model_type": "llama", "vocab_size": 64, "hidden_size": 32,
                                               "intermediate_size": 48, "num_hidden_layers": 2,
                                               "num_attention_heads": 4, "tie_word_embeddings": True,
                                               "_name_or_path": "meta-llama/x"}))
    put("hf_config", "review_d12_fraction.json", json.dumps(TINY | {"hidden_size": 128.7}))
    # recipes: YAML, then NUL-separated overrides
    with open(os.path.join(ROOT, "configs", "recipes", "tiny.yaml")) as f:
        tiny = f.read()
    put("recipe", "tiny.yaml", tiny)
    put("recipe", "tiny_overrides", tiny + "\0optim.lr=1e-3\0data.paths=[a.npy]\0data.mix_file=\0train.seed=3")
    put("recipe", "flow.yaml", "run: {dir: r}\nmodel: {config: m.yaml}\ndata: {paths: [t.npy], seq_len: 8}\n"
        "schedule: {type: linear, warmup_steps: 2}\n\0optim.betas=[0.8, 0.9]")
    put("recipe", "review_complex_key.yaml", "run:\n  ? [a, b]\n  : 1\n")
    put("recipe", "review_duplicate_section.yaml", "train:\n  seed: 1\ntrain:\n  seed: 2\n")
    # eval suites
    put("suite", "sections.yaml", "batch_tokens: 4096\nheldout:\n  files: [nope/*.npy]\n  seq_len: 32\n"
        "tasks:\n  format: olmes\n  max_length: 64\n  list:\n    - {name: arc_easy, path: arc.jsonl, limit: 3}\n")
    put("suite", "kl.yaml", "kl:\n  reference: hf\n  files: [a.mix]\n  window: 16\n  max_positions: 8\n"
        "perplexity:\n  files: [b.npy]\n  window: 8\n  max_docs: 2\n")
    put("suite", "review_complex_key.yaml", "tasks:\n  ? [a, b]\n  : 1\n")
    put("suite", "review_negative.yaml", "batch_tokens: -1\nheldout: {files: [x.npy], seq_len: -5, max_docs: -1}\n")
    # task JSONL: the first byte picks the task (index into task_names(), see eval/tasks.cc) and the format (bit 7)
    names = ["arc_easy", "arc_challenge", "hellaswag", "piqa", "boolq", "openbookqa", "winogrande", "mmlu"]
    for i, name in enumerate(names):
        path = os.path.join(ROOT, "tests", "fixtures", "eval", name + ".jsonl")
        with open(path, "rb") as f:
            rows = f.read().splitlines(keepends=True)[:3]
        put("task", name, bytes([i]) + b"".join(rows))
        put("task", name + "_olmes", bytes([i | 0x80]) + b"".join(rows[:1]))
    put("task", "found_number_overflow", bytes([4]) + b'{"passage": "p", "question": "q", "label": 1e999}\n')
    put("task", "review_huge_label", bytes([2]) + b'{"activity_label": "a", "ctx_a": "b", "ctx_b": "c", '
        b'"endings": ["x", "y"], "label": "99999999999999999999"}\n')
    # tokenizer input
    put("tokenizer", "english", "Hello, world! It's 2026; numbers 12345 and   spaces.\n\n")
    put("tokenizer", "unicode", "Grüße, 世界! こんにちは 🙂 \u00a0\u2028 tab\tend")
    put("tokenizer", "invalid_utf8", b"ok \xff\xfe bad \xc3( and \xed\xa0\x80 surrogate")
    put("tokenizer", "added_tokens", "<|endoftext|> <|pad|> text")
    # MANIFEST.json, for the checkpoint directory the harness makes (model.safetensors = bytes 1..8)
    weights, state = bytes(range(1, 9)), b"{}\n"
    put("manifest", "valid.json", json.dumps({"version": 1, "hash": "xxh3_128", "files": {
        "model.safetensors": {"size": 8, "xxh3_128": xxh3_128(weights)},
        "train_state.json": {"size": 3, "xxh3_128": xxh3_128(state)}}}, indent=2))
    put("manifest", "wrong_size.json", json.dumps({"version": 1, "files": {"model.safetensors": {
        "size": 9, "xxh3_128": xxh3_128(weights)}}}))
    put("manifest", "entry_types.json", '{"files": {"model.safetensors": {"size": "8", "xxh3_128": 1}}}')
    # train_state.json
    state = {"version": 1, "step": 4, "tokens": 1024,
             "data": {"epoch": 1, "batch": 4, "batches_consumed": 4, "global_batch_size": 4, "seq_len": 64,
                      "fingerprint": "29f6"},
             "optimizer": {"adam_step_count": 4, "schedule": {"type": "cosine"}, "skip_step": {"window": 128}},
             "world_size": 1, "model": TINY, "config": "run: {dir: r}\n"}
    put("train_state", "valid.json", json.dumps(state, indent=2))
    put("train_state", "wrong_types.json", json.dumps(state | {"step": "4", "model": [1]}))
    # mix files
    put("mix", "labels.mix", "# domains\nweb,web/train.npy\ncode,/data/code.npy\r\nbooks.npy\n\n")
    put("mix", "review_blank_path.mix", "lbl,\n")
    # Dolma document metadata sidecars (gzip; mtime 0 so the bytes are the same on every run)
    def gz(text):
        import gzip
        return gzip.compress(text.encode(), mtime=0)
    put("document_metadata", "dolma.csv.gz", gz("0,412,doc-1,s3://ai2/longmino/a.json.gz,1\n412,9000,doc-2,x,2\n"))
    put("document_metadata", "crlf_gap.csv.gz", gz("0,5\r\n7,9\r\n9,1048576"))
    put("document_metadata", "two_members.csv.gz", gz("0,5\n") + gz("5,9\n") + b"\0\0")
    put("document_metadata", "overlap.csv.gz", gz("0,5\n4,8\n"))
    put("document_metadata", "out_of_bounds.csv.gz", gz("0,1048577\n"))
    put("document_metadata", "truncated.csv.gz", gz("0,5\n5,9\n" * 50)[:-5])
    put("document_metadata", "not_gzip.csv", "0,5\n5,9\n")


def torch_seeds():
    """Seeds written by PyTorch itself (Debian's python3-torch; run this script with /usr/bin/python3 for them):
    torch.save archives, and the .metadata of small OLMo-core checkpoints written with torch.distributed.checkpoint
    by tests/integration/write_olmo_core_checkpoint.py, in torch 1.13's and torch 2.x's class names."""
    try:
        import torch
    except ImportError:
        print("torch is not importable: the torch_save and dcp_metadata seeds are left as they are")
        return
    import io
    import subprocess
    import sys
    import tempfile

    def saved(t):
        buf = io.BytesIO()
        torch.save(t, buf)
        return buf.getvalue()
    put("torch_save", "f32_2x3", saved(torch.arange(6, dtype=torch.float32).reshape(2, 3)))
    put("torch_save", "bf16", saved(torch.tensor([1.5, -2.0], dtype=torch.bfloat16)))
    put("torch_save", "scalar", saved(torch.tensor(7.0)))
    put("torch_save", "view_at_offset", saved(torch.arange(8, dtype=torch.float32)[2:6]))
    put("torch_save", "transposed", saved(torch.arange(6, dtype=torch.float32).reshape(2, 3).t()))
    put("torch_save", "float_not_tensor", saved(0.1))

    writer = os.path.join(ROOT, "tests", "integration", "write_olmo_core_checkpoint.py")
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "replica")
        os.makedirs(ckpt)
        embed, norm = np.arange(8, dtype="<f4").reshape(4, 2), np.ones(2, dtype="<f4")
        names = [("model.embed_tokens.weight", embed), ("model.norm.weight", norm)]
        open(os.path.join(ckpt, "model.safetensors"), "wb").write(safetensors_bytes([(n, "F32", a) for n, a in names]))
        open(os.path.join(ckpt, "optim.safetensors"), "wb").write(safetensors_bytes(
            [(f"{m}.{n}", "F32", a * 0.5) for m in ("exp_avg", "exp_avg_sq") for n, a in names]))
        json.dump({"optimizer": {"adam_step_count": 2}}, open(os.path.join(ckpt, "train_state.json"), "w"))
        for layout in ("torch1", "torch2"):
            out = os.path.join(tmp, layout)
            subprocess.run([sys.executable, writer, ckpt, out, "--chunks", "2", "--layout", layout], check=True)
            metadata = open(os.path.join(out, "model_and_optim", ".metadata"), "rb").read()
            put("dcp_metadata", f"olmo_core_{layout}", metadata)
    put("dcp_metadata", "truncated", metadata[:len(metadata) // 2])
    command = b"touch /tmp/replica_fuzz_pwned"
    put("dcp_metadata", "os_system", b"\x80\x02cos\nsystem\nX" + struct.pack("<I", len(command)) + command + b"\x85R.")


def round2_seeds():
    """The parsers of the 2026-12-03 review: W&B CSV exports, metrics.jsonl, shard indexes, generation settings."""
    put("wandb_csv", "history.csv", "_step,train/CE loss,train/Z loss,optim/LR (group 0)\n1,11.5,0.001,1e-4\n"
        "2,10.25,0.001,2e-4\n")
    put("wandb_csv", "panel_two_runs.csv", "Step,runA - train/CE loss,runB - train/CE loss\n1,11.0,\n2,10.0,4.0\n")
    put("wandb_csv", "nan_cells.csv", "_step,train/CE loss\n1,nan\n2,inf\n3,10.5\n")
    put("wandb_csv", "bom_quoted.csv", b"\xef\xbb\xbf_step,\"eval/lm/c4/CE loss\"\r\n10,\"3.5\"\r\n")
    put("metrics_jsonl", "run.jsonl", '{"step":1,"loss":10.9,"ce":10.8,"z_loss":0.1,"lr":0.001,"grad_norm":1.5,'
        '"skipped":false}\n{"step":2,"eval":{"heldout_loss":10.5,"files":{"c4":10.4}}}\n'
        '{"step":5,"loss":9.0}\n{"step":3,"loss":')
    put("metrics_jsonl", "corrupt_middle.jsonl", '{"step":1,"loss":2}\nGARBAGE{not json\n{"step":2,"loss":1}\n')
    put("metrics_jsonl", "eval_scalar.jsonl", '{"step":1,"eval":"x"}\n{"step":-5,"loss":1}\n')
    names = ["model.embed_tokens.weight", "model.norm.weight"] + [
        f"model.layers.0.{n}.weight" for n in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                               "self_attn.o_proj", "self_attn.q_norm", "self_attn.k_norm",
                                               "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj",
                                               "post_attention_layernorm", "post_feedforward_layernorm")]
    put("hf_index", "valid.json", json.dumps({"metadata": {}, "weight_map": {n: "shard.safetensors" for n in names}}))
    put("hf_index", "traversal.json", json.dumps({"weight_map": {names[0]: "../hf/shard.safetensors"}}))
    put("hf_index", "absolute.json", json.dumps({"weight_map": {names[0]: "/etc/passwd"}}))
    put("generation", "greedy", struct.pack("<dqdQqq", 0.0, 0, 1.0, 0, 2, 8) + struct.pack("<4f", 1, 3, 2, 0))
    put("generation", "top_k_top_p", struct.pack("<dqdQqq", 0.8, 5, 0.9, 3, 2, 8) + struct.pack("<4f", 1, 3, 2, 0))
    put("generation", "overflow", struct.pack("<dqdQqq", 1e308, 2**63 - 1, 1e-300, 2**64 - 1, 2, 2**63 - 1))


if __name__ == "__main__":
    main()
    round2_seeds()
    torch_seeds()
