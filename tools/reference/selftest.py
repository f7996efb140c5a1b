#!/usr/bin/python3
"""Self-checks of the PyTorch reference (olmo3_ref.py) against independent formulations.

usage: /usr/bin/python3 tools/reference/selftest.py     (runs in a few seconds; exits 1 on failure)
"""

import math
import os
import struct
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import olmo3_ref as ref  # noqa: E402

S, F = "sliding_attention", "full_attention"
F64 = torch.float64


def config(**kw):
    c = dict(model_type="olmo3", vocab_size=40, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-6, rope_theta=500000.0,
             sliding_window=4, layer_types=[S, F], tie_word_embeddings=False, max_position_embeddings=64)
    c.update(kw)
    return c


def model(seed=0, std=0.2, **kw):
    cfg = ref.load_config(config(**kw))
    return cfg, ref.init_params(cfg, seed, std=std, norm_jitter=0.1)


def tokens(cfg, B, T, seed=0):
    return torch.randint(0, cfg.vocab_size, (B, T), generator=torch.Generator().manual_seed(seed))


def loss_of(params, cfg, ids, precision="fp32"):
    return ref.loss(ref.forward(params, cfg, ids, precision), ids)[0]


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


# ----------------------------------------------------------------------------------------------

def test_gradient_finite_differences():
    """Autograd gradient of the float64 loss == central differences, for every model type."""
    for kw in (dict(), dict(model_type="olmo2"), dict(model_type="llama"), dict(tie_word_embeddings=True)):
        cfg, params = model(seed=1, **kw)
        ids = tokens(cfg, 2, 11, seed=1)
        p = ref.leaf_params(params, F64)
        loss_of(p, cfg, ids).backward()
        rng = np.random.default_rng(0)
        names = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
                 "model.layers.0.self_attn.k_proj.weight", "model.layers.1.self_attn.v_proj.weight",
                 "model.layers.1.self_attn.o_proj.weight", "model.layers.0.mlp.gate_proj.weight",
                 "model.layers.1.mlp.down_proj.weight", "model.layers.0.post_attention_layernorm.weight",
                 "model.norm.weight"]
        names += ["model.layers.1.self_attn.k_norm.weight", "model.layers.0.post_feedforward_layernorm.weight"] \
            if cfg.reordered_norm else ["model.layers.1.input_layernorm.weight"]
        names += [] if cfg.tie_word_embeddings else ["lm_head.weight"]
        for name in names:
            g = p[name].grad.flatten()
            # pick the largest-|grad| entry among a few random ones so that rel err is well conditioned
            cand = rng.choice(g.numel(), size=min(8, g.numel()), replace=False)
            idx = int(cand[np.argmax(np.abs(g[cand].numpy()))])
            h = 1e-5
            vals = []
            for sgn in (1, -1):
                q = {k: v.detach().clone() for k, v in p.items()}
                q[name].view(-1)[idx] += sgn * h
                vals.append(float(loss_of(q, cfg, ids)))
            fd = (vals[0] - vals[1]) / (2 * h)
            rel = abs(fd - float(g[idx])) / max(abs(fd), 1e-12)
            check(rel < 1e-6, f"{cfg.model_type} {name}[{idx}]: autograd {float(g[idx])} vs fd {fd} (rel {rel})")


def naive_attention(q, k, v, window):
    """Per-query, per-head loops: a second formulation of attend()."""
    B, H, T, D = q.shape
    K = k.shape[1]
    out = torch.zeros_like(q)
    for b in range(B):
        for h in range(H):
            kh = h // (H // K)
            for i in range(T):
                lo = 0 if window is None else max(0, i - window + 1)
                s = torch.stack([q[b, h, i] @ k[b, kh, j] / math.sqrt(D) for j in range(lo, i + 1)])
                w = torch.softmax(s, 0)
                out[b, h, i] = sum(w[n] * v[b, kh, lo + n] for n in range(len(w)))
    return out


def test_attention():
    g = torch.Generator().manual_seed(3)
    B, H, K, T, D = 2, 4, 2, 9, 8
    q, k, v = (torch.randn(B, n, T, D, generator=g, dtype=F64) for n in (H, K, K))
    for window in (None, 3, 1, 20):
        diff = (ref.attend(q, k, v, window) - naive_attention(q, k, v, window)).abs().max()
        check(diff < 1e-12, f"attend vs naive loops, window {window}: {diff}")
    # W=3: query i sees exactly keys i-2..i. Perturbing any other key/value leaves row i unchanged.
    i, W = 6, 3
    base = ref.attend(q, k, v, W)[:, :, i]
    for j in range(T):
        k2, v2 = k.clone(), v.clone()
        k2[:, :, j] += 1.0
        v2[:, :, j] += 1.0
        changed = bool((ref.attend(q, k2, v2, W)[:, :, i] != base).any())
        check(changed == (i - W < j <= i), f"window {W}: query {i}, key {j}: changed={changed}")
    # the same at model level: one all-sliding layer, W=3 -> logits[i] depend on tokens i-2..i only
    cfg, params = model(num_hidden_layers=1, layer_types=[S], sliding_window=3)
    ids = tokens(cfg, 1, 10)
    base = ref.forward(params, cfg, ids)[0, i]
    for j in range(10):
        ids2 = ids.clone()
        ids2[0, j] = (ids2[0, j] + 1) % cfg.vocab_size
        changed = bool((ref.forward(params, cfg, ids2)[0, i] != base).any())
        check(changed == (i - 3 < j <= i), f"model W=3: logits[{i}] vs token {j}: changed={changed}")


def numpy_forward(params, c, ids):
    """A second, float64 numpy formulation of the whole model, written from the config dict."""
    P = {k: v.double().numpy() for k, v in params.items()}
    V, C, L = c["vocab_size"], c["hidden_size"], c["num_hidden_layers"]
    H, K = c["num_attention_heads"], c["num_key_value_heads"]
    D, eps, olmo = c.get("head_dim") or C // H, c["rms_norm_eps"], c["model_type"] != "llama"
    kinds = c.get("layer_types") if c["model_type"] == "olmo3" else None
    kinds = kinds or ([S if (i + 1) % 4 else F for i in range(L)] if c["model_type"] == "olmo3" else [F] * L)

    def norm(x, w):
        return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * w

    def rope(x):  # x [T, D]; pairs (d, d + D/2) rotated by t * theta^(-2d/D)
        T = x.shape[0]
        ang = np.arange(T, dtype=np.float32)[:, None] * (c["rope_theta"] ** (-np.arange(D // 2) * 2.0 / D)
                                                          ).astype(np.float32)[None, :]
        ang = ang.astype(np.float32).astype(np.float64)  # the fp32 angle; cos/sin rounded to fp32
        cs, sn = np.cos(ang).astype(np.float32).astype(np.float64), np.sin(ang).astype(np.float32).astype(np.float64)
        a, b = x[:, :D // 2], x[:, D // 2:]
        return np.concatenate([a * cs - b * sn, b * cs + a * sn], axis=1)

    B, T = ids.shape
    out = np.zeros((B, T, V))
    for bi in range(B):
        x = P["model.embed_tokens.weight"][ids[bi].numpy()]
        for i in range(L):
            pre = f"model.layers.{i}."
            ln1 = P[pre + ("input_layernorm.weight" if not olmo else "post_attention_layernorm.weight")]
            a_in = x if olmo else norm(x, ln1)
            q = a_in @ P[pre + "self_attn.q_proj.weight"].T
            k = a_in @ P[pre + "self_attn.k_proj.weight"].T
            v = a_in @ P[pre + "self_attn.v_proj.weight"].T
            if olmo:
                q, k = norm(q, P[pre + "self_attn.q_norm.weight"]), norm(k, P[pre + "self_attn.k_norm.weight"])
            y = np.zeros((T, H * D))
            for h in range(H):
                g = h * K // H
                qh, kh, vh = rope(q[:, h * D:(h + 1) * D]), rope(k[:, g * D:(g + 1) * D]), v[:, g * D:(g + 1) * D]
                s = qh @ kh.T / np.sqrt(D)
                allowed = np.tril(np.ones((T, T), bool))
                if kinds[i] == S:
                    allowed &= np.triu(np.ones((T, T), bool), -(c["sliding_window"] - 1))
                s = np.where(allowed, s, -np.inf)
                e = np.exp(s - s.max(1, keepdims=True))
                y[:, h * D:(h + 1) * D] = (e / e.sum(1, keepdims=True)) @ vh
            a = y @ P[pre + "self_attn.o_proj.weight"].T
            h_ = x + (norm(a, ln1) if olmo else a)
            m_in = h_ if olmo else norm(h_, P[pre + "post_attention_layernorm.weight"])
            gt, up = m_in @ P[pre + "mlp.gate_proj.weight"].T, m_in @ P[pre + "mlp.up_proj.weight"].T
            m = (gt / (1 + np.exp(-gt)) * up) @ P[pre + "mlp.down_proj.weight"].T
            x = h_ + (norm(m, P[pre + "post_feedforward_layernorm.weight"]) if olmo else m)
        head = P["model.embed_tokens.weight"] if c["tie_word_embeddings"] else P["lm_head.weight"]
        out[bi] = norm(x, P["model.norm.weight"]) @ head.T
    return out


def test_model_matches_numpy_formulation():
    for kw in (dict(), dict(layer_types=None, num_hidden_layers=4, sliding_window=3), dict(model_type="olmo2"),
               dict(model_type="llama", rms_norm_eps=1e-2), dict(tie_word_embeddings=True, rms_norm_eps=0.3),
               dict(head_dim=8, num_key_value_heads=1)):
        c = config(**kw)
        cfg, params = ref.load_config(c), None
        params = ref.init_params(cfg, 7, std=0.2, norm_jitter=0.1)
        ids = tokens(cfg, 2, 12, seed=7)
        got = ref.forward(ref.leaf_params(params, F64, False), cfg, ids).numpy()
        diff = np.abs(got - numpy_forward(params, c, ids)).max()
        check(diff < 1e-10, f"reference vs numpy formulation {kw}: {diff}")


def test_rope_is_complex_rotation():
    """rotate-half RoPE == multiplying (x[:D/2] + i x[D/2:]) by exp(i * t * inv_freq)."""
    cfg = ref.load_config(config(hidden_size=32, num_attention_heads=2))
    T, D = 12, cfg.head_dim
    x = torch.randn(1, 2, T, D, generator=torch.Generator().manual_seed(4), dtype=F64)
    cos, sin = ref.rope_cos_sin(cfg, T)
    got = ref.apply_rope(x, cos, sin)
    inv = 1.0 / cfg.rope_theta ** (np.arange(0, D, 2) / D)
    ang = np.arange(T)[:, None] * inv[None, :]
    z = (x[..., :D // 2].numpy() + 1j * x[..., D // 2:].numpy()) * np.exp(1j * ang)
    want = np.concatenate([z.real, z.imag], axis=-1)
    diff = np.abs(got.numpy() - want).max()
    check(diff < 1e-5, f"rope vs complex rotation: {diff}")  # fp32 tables
    check(cos.dtype == torch.float32 and torch.equal(cos[0], torch.ones(D)), "rope tables fp32, cos(0)=1")


def test_yarn_matches_hf_formulation_and_scales_full_layers_only():
    """OLMo-core's YaRN (the reference) against HF's _compute_yarn_parameters written out in float64 (truncate=True:
    low/high floored/ceiled, high clamped to D - 1, blend interp * (1 - e) + extrap * e with e = 1 - ramp), on the
    released OLMo 3 settings; then the model: sliding layers must not see the scaling."""
    yarn = dict(rope_type="yarn", factor=8.0, original_max_position_embeddings=8192, beta_fast=32.0, beta_slow=1.0,
                attention_factor=1.2079441541679836)
    cfg = ref.load_config(config(hidden_size=512, num_attention_heads=4, rope_scaling=yarn))  # D = 128
    D, base = cfg.head_dim, cfg.rope_theta

    def correction_dim(n):
        return D * math.log(8192 / (n * 2 * math.pi)) / (2 * math.log(base))

    low, high = max(math.floor(correction_dim(32)), 0), min(math.ceil(correction_dim(1)), D - 1)
    pos_freqs = base ** (np.arange(0, D, 2) / D)
    ramp = np.clip((np.arange(D // 2) - low) / (high - low), 0, 1)
    extrapolation_factor = 1 - ramp
    hf = 1 / (8.0 * pos_freqs) * (1 - extrapolation_factor) + 1 / pos_freqs * extrapolation_factor
    got = ref.yarn_inv_freq(cfg).double().numpy()
    rel = np.abs(got - hf).max() / np.abs(hf).max()
    check((low, high) == (18, 35) and rel < 1e-6, f"yarn inv_freq vs HF: low {low} high {high} rel {rel}")
    cos, sin = ref.yarn_cos_sin(cfg, 5)
    check(abs(cos[0, 0].item() - 1.2079441541679836) < 1e-7, "yarn tables carry the attention factor")
    # A scaled model differs from the unscaled one through its full layer only: with every layer sliding, none.
    ids = tokens(cfg, 1, 9)
    scaled, plain = (ref.load_config(config(layer_types=[S, S], rope_scaling=r)) for r in (yarn, None))
    params = ref.init_params(plain, 0, std=0.2)
    same = torch.equal(ref.forward(params, scaled, ids), ref.forward(params, plain, ids))
    full, full_plain = (ref.load_config(config(layer_types=[S, F], rope_scaling=r)) for r in (yarn, None))
    check(same and not torch.equal(ref.forward(params, full, ids), ref.forward(params, full_plain, ids)),
          "YaRN applies to full-attention layers only")


def test_loss_matches_torch_cross_entropy():
    cfg, params = model()
    ids = tokens(cfg, 3, 8)
    logits = ref.forward(ref.leaf_params(params, F64, False), cfg, ids)
    total, ce, z = ref.loss(logits, ids, z_loss=1e-5)
    want_ce = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, cfg.vocab_size), ids[:, 1:].reshape(-1))
    want_z = (torch.logsumexp(logits[:, :-1], -1) ** 2).mean()
    check(abs(float(ce - want_ce)) < 1e-12, f"ce {float(ce)} vs torch {float(want_ce)}")
    check(abs(float(z - want_z)) < 1e-10, "z mean")
    check(abs(float(total - (ce + 1e-5 * z))) < 1e-12, "loss = ce + 1e-5 z")


def test_bf16_mode():
    cfg, params = model(std=0.1)
    ids = tokens(cfg, 2, 10)
    lf = ref.forward(ref.leaf_params(params, torch.float32, False), cfg, ids, "fp32")
    lb = ref.forward(ref.leaf_params(params, torch.float32, False), cfg, ids, "bf16")
    rel = float((lf - lb).abs().max() / lf.abs().max())
    check(1e-4 < rel < 5e-2, f"bf16 vs fp32 logits relative difference {rel}")
    # the bf16 linear: forward and backward operands rounded, fp32 accumulation
    g = torch.Generator().manual_seed(5)
    x = torch.randn(3, 5, 7, generator=g).requires_grad_()
    w = torch.randn(6, 7, generator=g).requires_grad_()
    dy = torch.randn(3, 5, 6, generator=g)
    y = ref.linear(x, w, "bf16")
    y.backward(dy)
    r = ref.round_bf16
    check(torch.allclose(y, r(x) @ r(w).t(), atol=0, rtol=1e-6), "bf16 linear forward")
    check(torch.allclose(x.grad, r(dy) @ r(w), atol=0, rtol=1e-6), "bf16 linear dx")
    check(torch.allclose(w.grad, r(dy).reshape(-1, 6).t() @ r(x).reshape(-1, 7), atol=0, rtol=1e-5),
          "bf16 linear dw")
    # round_bf16 is round-to-nearest-even on the bit pattern
    a = torch.randn(10000, generator=g)
    bits = a.numpy().view(np.uint32).astype(np.uint64)
    rne = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(np.float32)
    check(np.array_equal(r(a).numpy(), rne), "bf16 rounding is RNE")


def expand_kv(params, cfg):
    """An MHA copy of a GQA model: each kv head's rows repeated for every query head of its group."""
    H, K, D = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    out = dict(params)
    for i in range(cfg.num_hidden_layers):
        for n in ("k_proj.weight", "v_proj.weight", "k_norm.weight"):
            name = f"model.layers.{i}.self_attn.{n}"
            if name in out:
                w = out[name].reshape(K, D, *out[name].shape[1:])
                out[name] = w.repeat_interleave(H // K, dim=0).reshape(H * D, *out[name].shape[1:])
    return out


def test_document_masked_attention_is_each_document_alone():
    """A packed row attends like its documents run one by one (the definition of intra-document masking),
    with and without a window, including one-token documents."""
    g = torch.Generator().manual_seed(4)
    B, H, K, T, D = 2, 4, 2, 12, 8
    q, k, v = (torch.randn(B, n, T, D, generator=g, dtype=F64) for n in (H, K, K))
    doc_lens = [[1, 5, 1, 1, 4], [12]]
    for window in (None, 3):
        packed = ref.attend(q, k, v, window, doc_lens)
        for b, lens in enumerate(doc_lens):
            start = 0
            for n in lens:
                s = slice(start, start + n)
                alone = ref.attend(q[b:b + 1, :, s], k[b:b + 1, :, s], v[b:b + 1, :, s], window)
                diff = (packed[b:b + 1, :, s] - alone).abs().max()
                check(diff < 1e-12, f"document [{start}, {start + n}) of row {b}, window {window}: {diff}")
                start += n


def test_gqa_equals_expanded_mha():
    for kw in (dict(num_key_value_heads=2), dict(num_key_value_heads=1), dict(model_type="llama")):
        cfg, params = model(**kw)
        mha_cfg = ref.load_config(config(**{**kw, "num_key_value_heads": cfg.num_attention_heads}))
        ids = tokens(cfg, 2, 9)
        a = ref.forward(ref.leaf_params(params, F64, False), cfg, ids)
        b = ref.forward(ref.leaf_params(expand_kv(params, cfg), F64, False), mha_cfg, ids)
        check(float((a - b).abs().max()) < 1e-12, f"GQA {kw} vs expanded MHA")


def test_tied_vs_untied():
    cfg_u, params = model()
    cfg_t = ref.load_config(config(tie_word_embeddings=True))
    tied = {k: v for k, v in params.items() if k != "lm_head.weight"}
    untied = dict(tied, **{"lm_head.weight": tied["model.embed_tokens.weight"].clone()})
    check(set(ref.param_shapes(cfg_t)) == set(tied), "tied model has no lm_head.weight")
    ids = tokens(cfg_u, 2, 7)
    pt, pu = ref.leaf_params(tied, F64), ref.leaf_params(untied, F64)
    lt, lu = ref.forward(pt, cfg_t, ids), ref.forward(pu, cfg_u, ids)
    check(torch.equal(lt, lu), "tied logits == untied logits with lm_head = embedding")
    ref.loss(lt, ids)[0].backward()
    ref.loss(lu, ids)[0].backward()
    want = pu["model.embed_tokens.weight"].grad + pu["lm_head.weight"].grad
    check(float((pt["model.embed_tokens.weight"].grad - want).abs().max()) < 1e-14, "tied embedding grad")


def test_safetensors_round_trip():
    cfg, params = model()
    params = {k: v * 3.7 for k, v in params.items()}  # values with full mantissas
    with tempfile.TemporaryDirectory() as d:
        for dtype in ("F32", "BF16"):
            for shard in (None, 2000):
                path = os.path.join(d, f"{dtype}-{shard}")
                ref.save_hf(path, config(), params, dtype, max_shard_bytes=shard)
                files = sorted(os.listdir(path))
                if shard:
                    check("model.safetensors.index.json" in files and
                          sum(f.endswith(".safetensors") for f in files) > 2, f"sharded files: {files}")
                conf, loaded = ref.load_hf(path)
                check(conf == config() and list(loaded) == list(params), "names and config round trip")
                for k, v in params.items():
                    want = v if dtype == "F32" else v.to(torch.bfloat16).float()
                    check(loaded[k].dtype == torch.float32 and loaded[k].shape == v.shape, k)
                    check(np.array_equal(loaded[k].numpy().view(np.uint32), want.numpy().view(np.uint32)),
                          f"{dtype} shard={shard}: {k} not bit-exact")
        # the byte layout: u64 LE header length (multiple of 8), JSON header, data at the stated offsets
        path = os.path.join(d, "one.safetensors")
        t = torch.tensor([[1.0, -2.5, 3.25]])
        ref.save_safetensors(path, {"a": t, "b": t[0, :2]}, "F32")
        raw = open(path, "rb").read()
        (n,) = struct.unpack("<Q", raw[:8])
        check(n % 8 == 0 and raw[8 + n - 1:8 + n] in (b" ", b"}"), "header padded to 8 with spaces")
        check(raw[8 + n:] == np.array([1.0, -2.5, 3.25, 1.0, -2.5], "<f4").tobytes(), "raw LE data")


def test_bench_onednn_path_matches_reference():
    """bench_ref's oneDNN GEMMs give the reference's loss and gradients (fp32 rounding apart)."""
    import bench_ref
    cfg, params = model(std=0.1, layer_types=[S, S], sliding_window=5)
    ids = tokens(cfg, 2, 21)
    runs = []
    for lin, att in ((ref.linear, ref.attend), (bench_ref.onednn_linear, bench_ref.onednn_attend)):
        saved = ref.linear, ref.attend
        ref.linear, ref.attend = lin, att
        try:
            p = ref.leaf_params(params, torch.float32)
            total = loss_of(p, cfg, ids)
            total.backward()
            runs.append((float(total), {k: v.grad for k, v in p.items()}))
        finally:
            ref.linear, ref.attend = saved
    (la, ga), (lb, gb) = runs
    check(abs(la - lb) < 1e-5, f"bench loss {lb} vs reference {la}")
    for k in ga:
        err = float((ga[k] - gb[k]).abs().max() / ga[k].abs().max())
        check(err < 1e-4, f"bench grad {k}: rel {err}")


def main():
    t0 = time.time()
    torch.set_num_threads(1)  # tiny tensors; extra threads only add contention
    tests = [v for k, v in globals().items() if k.startswith("test_")]
    for t in tests:
        t1 = time.time()
        t()
        print(f"ok  {t.__name__}  ({time.time() - t1:.2f} s)")
    print(f"selftest: {len(tests)} tests passed in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
