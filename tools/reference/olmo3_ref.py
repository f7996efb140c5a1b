"""Independent PyTorch reference of the OLMo 3 / OLMo 2 / Llama decoder, written from the HF semantics.

Used to generate golden fixtures for replica's C++ parity tests and as a CPU speed baseline.
Clarity over speed: attention is written out explicitly (scores, -inf mask, fp32 softmax).
Run with Debian's /usr/bin/python3 (torch 1.13, numpy 1.24). See README.md for the conventions.

Shape letters: B batch, T time, C channels (hidden), V vocab, H query heads, K kv heads, D head dim,
W sliding window (keys visible to a query, including itself), L layers, I MLP hidden.
"""

import json
import math
import os
import struct
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
import torch

import float8_ref  # beside this file (sys.path[0] for every script here)

Params = Dict[str, torch.Tensor]

# ----------------------------------------------------------------------------------------------
# Config


@dataclass
class Yarn:
    """YaRN RoPE scaling (HF rope_scaling {"rope_type": "yarn"}; OLMo-core YaRNRoPEScalingConfig)."""
    factor: float
    original_max_position_embeddings: int  # OLMo-core old_context_len
    beta_fast: float
    beta_slow: float
    attention_factor: float  # multiplies cos and sin


@dataclass
class Config:
    model_type: str  # "olmo3" | "olmo2" | "llama"
    vocab_size: int  # V
    hidden_size: int  # C
    intermediate_size: int  # I
    num_hidden_layers: int  # L
    num_attention_heads: int  # H
    num_key_value_heads: int  # K
    head_dim: int  # D
    rms_norm_eps: float
    rope_theta: float
    sliding_window: Optional[int]  # W; None when no layer slides
    layer_types: List[str]  # "sliding_attention" | "full_attention", one per layer
    tie_word_embeddings: bool
    max_position_embeddings: int
    yarn: Optional[Yarn] = None  # applied to the full-attention layers only (OLMo-core); sliding keep plain RoPE
    raw: dict = field(default_factory=dict, repr=False)

    @property
    def reordered_norm(self) -> bool:  # OLMo 2/3 post-sublayer norms + QK-norm; Llama pre-norm
        return self.model_type in ("olmo2", "olmo3")

    def window(self, layer: int) -> Optional[int]:
        return self.sliding_window if self.layer_types[layer] == "sliding_attention" else None

    def yarn_layer(self, layer: int) -> bool:
        return self.yarn is not None and self.layer_types[layer] == "full_attention"


def default_layer_types(n_layers: int) -> List[str]:
    """HF Olmo3Config default: every 4th layer (3, 7, 11, ...) is full attention."""
    return ["sliding_attention" if (i + 1) % 4 != 0 else "full_attention" for i in range(n_layers)]


def _rope_block(block: dict, max_positions: int) -> Optional[Yarn]:
    """One HF rope block (rope_scaling, or a rope_parameters entry): None for "default", a Yarn for "yarn"."""
    kind = block.get("rope_type", block.get("type"))
    if kind == "default":
        return None
    if kind != "yarn":
        raise ValueError(f"config: rope type {kind!r} is not supported by the reference (yarn or default)")
    if not block.get("truncate", True):
        raise ValueError("config: YaRN with truncate=false is not OLMo-core's (it always floors/ceils the range)")
    factor = float(block["factor"])
    # HF: beta_fast/beta_slow default to 32/1; attention_factor to get_mscale(factor) = 0.1 ln(factor) + 1.
    attention_factor = block.get("attention_factor")
    if attention_factor is None:
        attention_factor = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0
    return Yarn(factor=factor,
                original_max_position_embeddings=int(block.get("original_max_position_embeddings") or max_positions),
                beta_fast=float(block.get("beta_fast") or 32), beta_slow=float(block.get("beta_slow") or 1),
                attention_factor=float(attention_factor))


def _rope(d: dict, max_positions: int):
    """(rope_theta, Yarn or None) from transformers 4.5x (rope_theta + rope_scaling) or 5.x (rope_parameters, flat
    or per layer type). Only the full-attention layers may be scaled."""
    theta = float(d.get("rope_theta", 10000.0))
    yarn = _rope_block(d["rope_scaling"], max_positions) if d.get("rope_scaling") is not None else None
    rp = d.get("rope_parameters")
    if rp is not None:
        per_type = "full_attention" in rp or "sliding_attention" in rp
        if per_type and rp.get("sliding_attention") and _rope_block(rp["sliding_attention"], max_positions):
            raise ValueError("config: scaled sliding-attention RoPE (OLMo-core scales the full layers only)")
        block = rp.get("full_attention", {"rope_type": "default"}) if per_type else rp
        theta = float(block.get("rope_theta", theta))
        yarn = _rope_block(block, max_positions) or yarn
    return theta, yarn


def load_config(src) -> Config:
    """src: a config dict, a path to config.json, or a model directory holding config.json."""
    if isinstance(src, (str, os.PathLike)):
        path = os.path.join(src, "config.json") if os.path.isdir(src) else src
        with open(path) as f:
            src = json.load(f)
    d = dict(src)
    mt = d.get("model_type")
    if mt not in ("olmo3", "olmo2", "llama"):
        raise ValueError(f"config: unsupported model_type {mt!r} (expected olmo3, olmo2 or llama)")
    if d.get("attention_bias", False) or d.get("mlp_bias", False):
        raise ValueError("config: biases are not supported")
    if d.get("hidden_act", "silu") != "silu":
        raise ValueError("config: hidden_act must be silu")
    C, H = int(d["hidden_size"]), int(d["num_attention_heads"])
    L = int(d["num_hidden_layers"])
    K = int(d.get("num_key_value_heads") or H)
    if H % K != 0:
        raise ValueError(f"config: num_attention_heads {H} not a multiple of num_key_value_heads {K}")
    D = int(d.get("head_dim") or C // H)
    if mt == "olmo3":
        layer_types = list(d.get("layer_types") or default_layer_types(L))
        window = d.get("sliding_window")
        window = 4096 if window is None else int(window)  # HF Olmo3Config default
    else:  # olmo2 and llama: every layer full attention
        layer_types, window = ["full_attention"] * L, None
    if len(layer_types) != L or any(t not in ("sliding_attention", "full_attention") for t in layer_types):
        raise ValueError(f"config: bad layer_types {layer_types}")
    max_positions = int(d.get("max_position_embeddings", 2048))  # every one of the three HF configs
    theta, yarn = _rope(d, max_positions)
    if "sliding_attention" not in layer_types:
        window = None
    elif window < 1:
        raise ValueError("config: sliding_window must be >= 1")
    return Config(
        model_type=mt,
        vocab_size=int(d["vocab_size"]),
        hidden_size=C,
        intermediate_size=int(d["intermediate_size"]),
        num_hidden_layers=L,
        num_attention_heads=H,
        num_key_value_heads=K,
        head_dim=D,
        rms_norm_eps=float(d.get("rms_norm_eps", 1e-6 if mt == "llama" else 1e-5)),  # LlamaConfig / Olmo[23]Config
        rope_theta=theta,
        sliding_window=window,
        layer_types=layer_types,
        tie_word_embeddings=bool(d.get("tie_word_embeddings", False)),
        max_position_embeddings=max_positions,
        yarn=yarn,
        raw=d,
    )


# ----------------------------------------------------------------------------------------------
# Parameters


def param_shapes(cfg: Config) -> Dict[str, tuple]:
    """HF parameter names and [out, in] shapes, in a fixed order."""
    V, C, I, H, K, D = (cfg.vocab_size, cfg.hidden_size, cfg.intermediate_size,
                        cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim)
    s = {"model.embed_tokens.weight": (V, C)}
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        s[p + "self_attn.q_proj.weight"] = (H * D, C)
        s[p + "self_attn.k_proj.weight"] = (K * D, C)
        s[p + "self_attn.v_proj.weight"] = (K * D, C)
        s[p + "self_attn.o_proj.weight"] = (C, H * D)
        if cfg.reordered_norm:
            s[p + "self_attn.q_norm.weight"] = (H * D,)
            s[p + "self_attn.k_norm.weight"] = (K * D,)
        s[p + "mlp.gate_proj.weight"] = (I, C)
        s[p + "mlp.up_proj.weight"] = (I, C)
        s[p + "mlp.down_proj.weight"] = (C, I)
        if cfg.reordered_norm:
            s[p + "post_attention_layernorm.weight"] = (C,)
            s[p + "post_feedforward_layernorm.weight"] = (C,)
        else:
            s[p + "input_layernorm.weight"] = (C,)
            s[p + "post_attention_layernorm.weight"] = (C,)
    s["model.norm.weight"] = (C,)
    if not cfg.tie_word_embeddings:
        s["lm_head.weight"] = (V, C)
    return s


def init_params(cfg: Config, seed: int, std: float = 0.02, norm_jitter: float = 0.0) -> Params:
    """Matrices: truncated normal(0, std) cut at +-3 std; norm weights 1 (+ norm_jitter * N(0,1)).

    Deterministic from `seed` (CPU torch.Generator). The truncated normal uses the inverse-CDF method
    (as nn.init.trunc_normal_ does), drawn in float64 and rounded to float32.
    """
    g = torch.Generator().manual_seed(seed)
    lo = 0.5 * (1.0 + math.erf(-3.0 / math.sqrt(2.0)))  # Phi(-3)
    hi = 1.0 - lo
    out = {}
    for name, shape in param_shapes(cfg).items():
        if len(shape) == 2:
            u = lo + (hi - lo) * torch.rand(shape, generator=g, dtype=torch.float64)
            w = torch.erfinv(2.0 * u - 1.0) * (math.sqrt(2.0) * std)
            out[name] = w.clamp(-3 * std, 3 * std).to(torch.float32)
        else:
            w = torch.ones(shape, dtype=torch.float64)
            if norm_jitter:
                w = w + norm_jitter * torch.randn(shape, generator=g, dtype=torch.float64)
            out[name] = w.to(torch.float32)
    return out


def leaf_params(params: Params, dtype=torch.float32, requires_grad=True) -> Params:
    """Copies of the parameters in `dtype`, as autograd leaves."""
    return {k: v.detach().to(dtype).clone().requires_grad_(requires_grad) for k, v in params.items()}


# ----------------------------------------------------------------------------------------------
# Building blocks

def _acc(x: torch.Tensor) -> torch.Tensor:
    """Accumulation dtype: float64 stays float64, everything else goes to float32."""
    return x if x.dtype == torch.float64 else x.float()


def round_bf16(x: torch.Tensor) -> torch.Tensor:
    """Round to bfloat16 (round-to-nearest-even) and back to x's dtype."""
    return x.to(torch.bfloat16).to(x.dtype)


class _Bf16Linear(torch.autograd.Function):
    """y = bf16(x) @ bf16(w)^T with fp32 accumulation (replica's bf16 mode).

    The backward matmuls follow the same rule (both operands bf16, fp32 accumulation):
    dx = bf16(dy) @ bf16(w),  dw = bf16(dy)^T @ bf16(x).
    """

    @staticmethod
    def forward(ctx, x, w):
        xr, wr = round_bf16(x), round_bf16(w)
        ctx.save_for_backward(xr, wr)
        return xr @ wr.t()

    @staticmethod
    def backward(ctx, dy):
        xr, wr = ctx.saved_tensors
        dyr = round_bf16(dy)
        dx = dyr @ wr
        dw = dyr.reshape(-1, dyr.shape[-1]).t() @ xr.reshape(-1, xr.shape[-1])
        return dx, dw


# float8 linears (train.float8): torchao's Float8Linear with the tensorwise recipe as OLMo-core ran it in OLMo 3
# stage 3 (shared/reference/stage3.md §5), written from torchao's float8_utils.py, float8_scaling_utils.py,
# float8_linear.py (matmul_with_hp_or_float8_args) and float8_ops.py (_scaled_mm). The casts are float8_ref.py's
# exact rounding, vectorised over the sorted values of the format's codes.

def _float8_codes(fmt: str):
    codes, values = float8_ref._TABLES[fmt]
    return (torch.tensor([float(v) for v in values], dtype=torch.float64),
            torch.tensor([c % 2 == 0 for c in codes]))


_FLOAT8_CODES = {fmt: _float8_codes(fmt) for fmt in float8_ref.FORMATS}


def float8_round(y: torch.Tensor, fmt: str) -> torch.Tensor:
    """to_fp8_saturated(y) as values (float32): clamp |y| to max, nearest code value, a tie to the even code."""
    values, even = _FLOAT8_CODES[fmt]
    a = y.double().abs().clamp(max=float(values[-1]))
    hi = torch.searchsorted(values, a).clamp(max=len(values) - 1)  # values[hi - 1] < a <= values[hi]
    lo = (hi - 1).clamp(min=0)
    below, above = a - values[lo], values[hi] - a  # exact: neighbouring values of at most 24 significant bits
    take_hi = (values[hi] == a) | (above < below) | ((above == below) & even[hi])
    return (torch.where(take_hi, values[hi], values[lo]) * torch.sign(y.double())).float()


def float8_cast(x: torch.Tensor, fmt: str, power_of_two: bool):
    """hp_tensor_to_float8_dynamic, tensorwise: (the codes' values, the inverse scale _scaled_mm takes), float32."""
    scale = float8_ref.amax_to_scale(float(x.abs().max()), fmt, power_of_two)
    scale32 = torch.tensor(scale, dtype=torch.float32)
    return float8_round(x.float() * scale32, fmt), torch.tensor(1.0, dtype=torch.float32) / scale32


def scaled_mm(a: torch.Tensor, b: torch.Tensor, inverse_a: torch.Tensor, inverse_b: torch.Tensor) -> torch.Tensor:
    """torch._scaled_mm(a8, b8, scale_a, scale_b) with float32 output: the exact products summed (in float64 here,
    the GPU in fp32), then multiplied by scale_a · scale_b."""
    return (a.double() @ b.double()).float() * (inverse_a * inverse_b)


class _Float8Linear(torch.autograd.Function):
    """y = x @ w^T with e4m3 x (power-of-two dynamic scale) and e4m3 w (scale of the whole weight, not rounded: OLMo-
    core's precompute_float8_dynamic_scale_for_fsdp); backward dx = e5m2(dy) @ e4m3(w), dw = e5m2(dy)^T @ e4m3(x),
    dy with a power-of-two dynamic scale. In bf16 the activations and gradients are cast from their bf16 values."""

    @staticmethod
    def forward(ctx, x, w, precision):
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        x8, inverse_x = float8_cast(round_bf16(x2) if precision == "bf16" else x2, "e4m3", True)
        w8, inverse_w = float8_cast(w, "e4m3", False)
        ctx.save_for_backward(x8, inverse_x, w8, inverse_w)
        ctx.precision, ctx.shape = precision, shape
        return scaled_mm(x8, w8.t(), inverse_x, inverse_w).reshape(*shape[:-1], w.shape[0])

    @staticmethod
    def backward(ctx, dy):
        x8, inverse_x, w8, inverse_w = ctx.saved_tensors
        g = dy.reshape(-1, dy.shape[-1])
        g8, inverse_g = float8_cast(round_bf16(g) if ctx.precision == "bf16" else g, "e5m2", True)
        dx = scaled_mm(g8, w8, inverse_g, inverse_w).reshape(ctx.shape)
        dw = scaled_mm(g8.t(), x8, inverse_g, inverse_x)
        return dx, dw, None


def block_linear(x: torch.Tensor, w: torch.Tensor, precision: str, float8: bool) -> torch.Tensor:
    """A block's Linear: float8 when on and both dimensions are divisible by 16 (OLMo-core's filter), else linear."""
    if float8 and w.shape[0] % 16 == 0 and w.shape[1] % 16 == 0:
        return _Float8Linear.apply(x, w, precision)
    return linear(x, w, precision)


def linear(x: torch.Tensor, w: torch.Tensor, precision: str = "fp32") -> torch.Tensor:
    """x [..., in] @ w[out, in]^T. precision "bf16" rounds both operands to bf16 (fwd and bwd)."""
    if precision == "fp32":
        return torch.nn.functional.linear(x, w)
    if precision == "bf16":
        return _Bf16Linear.apply(x, w)
    raise ValueError(f"unknown precision {precision!r}")


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """x * rsqrt(mean(x^2) + eps) * w over the last dim, in fp32 (float64 in a float64 run)."""
    xf = _acc(x)
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * _acc(w)


def rope_cos_sin(cfg: Config, T: int):
    """cos, sin [T, D] as float32 values, the HF rotate-half layout: emb = cat(freqs, freqs).

    inv_freq[j] = fp32(1 / theta^(2j/D))  (computed in float64, rounded once to fp32)
    angle[t, j] = fp32(fp32(t) * inv_freq[j])  (one fp32 multiply)
    cos/sin     = fp32(cos/sin(angle computed in float64))  (correctly rounded fp32 of the fp32 angle)
    """
    D = cfg.head_dim
    inv_freq = (1.0 / cfg.rope_theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D)).float()
    pos = torch.arange(T, dtype=torch.float32)
    freqs = torch.outer(pos, inv_freq)  # fp32 product
    emb = torch.cat([freqs, freqs], dim=-1).double()
    return emb.cos().float(), emb.sin().float()


def yarn_inv_freq(cfg: Config) -> torch.Tensor:
    """OLMo-core's YaRNRoPEScalingConfig.compute_scaled_inv_freq, transcribed: fp32 torch throughout.

    extrapolation = 1 / theta^(arange(0, D, 2) / D) (fp32 pow), interpolation = extrapolation / factor,
    d(n) = D ln(original / (n 2 pi)) / (2 ln theta) in Python floats, low = max(floor(d(beta_fast)), 0),
    high = min(ceil(d(beta_slow)), D/2 - 1), ramp = clamp((j - low) / max(high - low, 1e-3), 0, 1),
    inv_freq = interpolation * ramp + extrapolation * (1 - ramp).
    (HF's _compute_yarn_parameters with truncate=True gives the same low/high for OLMo 3; it clamps high to D - 1 and
    blends as interpolation * (1 - (1 - ramp)) + extrapolation * (1 - ramp).)
    """
    y, D, theta = cfg.yarn, cfg.head_dim, cfg.rope_theta
    extrapolation = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
    interpolation = extrapolation / y.factor
    half = extrapolation.shape[0]
    j = torch.arange(half, dtype=torch.float32)

    def dim_from_rotations(n):
        return D * math.log(y.original_max_position_embeddings / (n * 2.0 * math.pi)) / (2.0 * math.log(theta))

    low = max(math.floor(dim_from_rotations(y.beta_fast)), 0)
    high = min(math.ceil(dim_from_rotations(y.beta_slow)), half - 1)
    ramp = ((j - low) / max(high - low, 1e-3)).clamp(0, 1)  # 0 keeps the frequency, 1 divides it by factor
    return interpolation * ramp + extrapolation * (1.0 - ramp)


def yarn_cos_sin(cfg: Config, T: int):
    """cos, sin [T, D] of the YaRN layers: angle = fp32(t) * inv_freq (fp32), cos/sin of it correctly rounded to fp32,
    then times attention_factor in fp32 (OLMo-core multiplies pos_sin and pos_cos; HF multiplies cos and sin)."""
    freqs = torch.outer(torch.arange(T, dtype=torch.float32), yarn_inv_freq(cfg))
    emb = torch.cat([freqs, freqs], dim=-1).double()
    a = cfg.yarn.attention_factor
    return emb.cos().float() * a, emb.sin().float() * a


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [B, heads, T, D]; non-interleaved rotate-half: x*cos + cat(-x2, x1)*sin."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    rotated = torch.cat([-x2, x1], dim=-1)
    return x * cos.to(x.dtype) + rotated * sin.to(x.dtype)


def attention_mask(T: int, window: Optional[int]) -> torch.Tensor:
    """bool [T, T]: key j is visible to query i iff j <= i and (full or i - W < j)."""
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    visible = j <= i
    if window is not None:
        visible = visible & (j > i - window)
    return visible


def document_mask(doc_lens: List[int]) -> torch.Tensor:
    """bool [T, T] of one packed row: key j is visible to query i iff both lie in the same document.

    doc_lens are the row's document lengths in order (summing to T; a padding tail is one more document), as
    OLMo-core's doc_lens and flash-attn's varlen cu_seqlens describe a packed instance (stage3.md §3.1-3.2).
    """
    document = torch.repeat_interleave(torch.arange(len(doc_lens)), torch.tensor(doc_lens))
    return document[:, None] == document[None, :]


def attend(q, k, v, window: Optional[int], doc_lens: Optional[List[List[int]]] = None) -> torch.Tensor:
    """Causal (optionally sliding) attention. q [B,H,T,D], k/v [B,K,T,D] -> [B,H,T,D].

    Query head h uses kv head h // (H/K). Scores are scaled by 1/sqrt(D); softmax in fp32. With doc_lens (each
    row's document lengths), a query also sees only keys of its own document: the causal/window mask and the
    row's document mask together.
    """
    B, H, K, T, D = q.shape[0], q.shape[1], k.shape[1], q.shape[2], q.shape[3]
    k = k.repeat_interleave(H // K, dim=1)
    v = v.repeat_interleave(H // K, dim=1)
    scores = _acc(torch.matmul(q, k.transpose(-1, -2))) * (D ** -0.5)  # [B,H,T,T]
    visible = attention_mask(T, window).expand(B, 1, T, T)
    if doc_lens is not None:
        visible = visible & torch.stack([document_mask(row) for row in doc_lens])[:, None]
    scores = scores.masked_fill(~visible, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.matmul(probs.to(v.dtype), v)


def self_attention(x, p: Params, pre: str, cfg: Config, cos, sin, window, precision, doc_lens=None, float8=False):
    B, T, _ = x.shape
    H, K, D = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    q = block_linear(x, p[pre + "q_proj.weight"], precision, float8)  # [B,T,H*D]
    k = block_linear(x, p[pre + "k_proj.weight"], precision, float8)  # [B,T,K*D]
    v = block_linear(x, p[pre + "v_proj.weight"], precision, float8)
    if cfg.reordered_norm:  # QK-norm over the full projection width, before splitting heads
        q = rms_norm(q, p[pre + "q_norm.weight"], cfg.rms_norm_eps)
        k = rms_norm(k, p[pre + "k_norm.weight"], cfg.rms_norm_eps)
    q = q.view(B, T, H, D).transpose(1, 2)
    k = k.view(B, T, K, D).transpose(1, 2)
    v = v.view(B, T, K, D).transpose(1, 2)
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    y = attend(q, k, v, window, doc_lens).transpose(1, 2).reshape(B, T, H * D)
    return block_linear(y, p[pre + "o_proj.weight"], precision, float8)


def mlp(x, p: Params, pre: str, precision, float8=False):
    gate = block_linear(x, p[pre + "gate_proj.weight"], precision, float8)
    up = block_linear(x, p[pre + "up_proj.weight"], precision, float8)
    return block_linear(torch.nn.functional.silu(gate) * up, p[pre + "down_proj.weight"], precision, float8)


# ----------------------------------------------------------------------------------------------
# Model and loss


def forward(params: Params, cfg: Config, ids: torch.Tensor, precision: str = "fp32",
            doc_lens: Optional[List[List[int]]] = None, float8: bool = False) -> torch.Tensor:
    """ids int64 [B, T] -> logits [B, T, V] in the parameters' dtype (float32 or float64).

    precision "fp32": plain; "bf16": every linear (q/k/v/o, gate/up/down, LM head) rounds its two
    operands to bf16 and accumulates in fp32; everything else stays fp32. doc_lens: packed rows' document
    lengths (attend); RoPE positions stay global, 0 … T-1 over the whole row (stage3.md §3.3). float8: the blocks'
    Linears in float8 (block_linear); the LM head stays in `precision`.
    """
    p, eps = params, cfg.rms_norm_eps
    T = ids.shape[1]
    plain = rope_cos_sin(cfg, T)
    scaled = yarn_cos_sin(cfg, T) if cfg.yarn is not None else None
    x = p["model.embed_tokens.weight"][ids]  # [B,T,C]
    for i in range(cfg.num_hidden_layers):
        pre = f"model.layers.{i}."
        w = cfg.window(i)
        cos, sin = scaled if cfg.yarn_layer(i) else plain
        if cfg.reordered_norm:  # h = x + norm(attn(x)); out = h + norm(mlp(h))
            a = self_attention(x, p, pre + "self_attn.", cfg, cos, sin, w, precision, doc_lens, float8)
            h = x + rms_norm(a, p[pre + "post_attention_layernorm.weight"], eps)
            m = mlp(h, p, pre + "mlp.", precision, float8)
            x = h + rms_norm(m, p[pre + "post_feedforward_layernorm.weight"], eps)
        else:  # llama pre-norm: h = x + attn(norm(x)); out = h + mlp(norm(h))
            a_in = rms_norm(x, p[pre + "input_layernorm.weight"], eps)
            h = x + self_attention(a_in, p, pre + "self_attn.", cfg, cos, sin, w, precision, doc_lens, float8)
            m_in = rms_norm(h, p[pre + "post_attention_layernorm.weight"], eps)
            x = h + mlp(m_in, p, pre + "mlp.", precision, float8)
    x = rms_norm(x, p["model.norm.weight"], eps)
    head = p["model.embed_tokens.weight"] if cfg.tie_word_embeddings else p["lm_head.weight"]
    return linear(x, head, precision)


def greedy(params: Params, cfg: Config, prompt: List[int], n: int, vocab: Optional[int] = None,
           eos: Optional[int] = None):
    """Greedy decoding without a cache: every step recomputes the full forward over prompt + the tokens so far and
    appends the argmax of the last position's logits (torch.argmax: the first of equal maxima) among ids < vocab
    (default: all), for n tokens or until it appends eos.

    Returns (new ids, margins): each step's gap between the largest and the second largest logit, so a caller can
    tell a decided choice from a near tie.
    """
    ids, margins = list(prompt), []
    with torch.no_grad():
        for _ in range(n):
            logits = forward(params, cfg, torch.tensor([ids], dtype=torch.int64))[0, -1, :vocab]
            top = torch.topk(logits, 2).values
            margins.append(float(top[0] - top[1]))
            ids.append(int(torch.argmax(logits)))
            if ids[-1] == eos:
                break
    return ids[len(prompt):], margins


def loss(logits: torch.Tensor, ids: torch.Tensor, z_loss: float = 1e-5):
    """Next-token cross entropy + z_loss * lse^2, summed over labelled tokens / n_labelled.

    Labels are ids shifted left within each instance; the last position of each instance is
    unlabelled. Returns (loss, ce / n, sum(lse^2) / n), computed in fp32 (float64 for float64 logits).
    """
    lg = _acc(logits[:, :-1, :])
    labels = ids[:, 1:]
    n = labels.numel()
    lse = torch.logsumexp(lg, dim=-1)
    target = lg.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    ce = (lse - target).sum()
    z = (lse * lse).sum()
    return (ce + z_loss * z) / n, ce / n, z / n


# ----------------------------------------------------------------------------------------------
# safetensors and HF model directories (format written by hand; no safetensors package)

_DTYPES = {"F32": (np.float32, 4), "BF16": (np.uint16, 2)}


def _to_bytes(t: torch.Tensor, dtype: str) -> bytes:
    t = t.detach().contiguous()
    if dtype == "F32":
        return t.to(torch.float32).numpy().astype("<f4").tobytes()
    if dtype == "BF16":  # torch rounds to nearest even
        return t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
    raise ValueError(f"unsupported safetensors dtype {dtype}")


def save_safetensors(path: str, tensors: Dict[str, torch.Tensor], dtype: str = "F32",
                     metadata: Optional[dict] = None):
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        b = _to_bytes(t, dtype)
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def load_safetensors(path: str) -> Dict[str, torch.Tensor]:
    """F32 and BF16 tensors, returned as float32 (BF16 widened exactly)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        raw = data[base + b: base + e]
        shape = tuple(info["shape"])
        if info["dtype"] == "F32":
            a = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        elif info["dtype"] == "BF16":
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise ValueError(f"{path}: tensor {name}: unsupported dtype {info['dtype']}")
        out[name] = torch.from_numpy(a.reshape(shape).copy())
    return out


def save_hf(dirname: str, config: dict, params: Params, dtype: str = "F32",
            max_shard_bytes: Optional[int] = None):
    """config.json + model.safetensors; or, with max_shard_bytes, model-0000k-of-0000n.safetensors
    shards plus model.safetensors.index.json."""
    os.makedirs(dirname, exist_ok=True)
    with open(os.path.join(dirname, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    if max_shard_bytes is None:
        save_safetensors(os.path.join(dirname, "model.safetensors"), params, dtype, {"format": "pt"})
        return
    width = _DTYPES[dtype][1]
    shards, cur, cur_bytes = [], {}, 0
    for name, t in params.items():
        nb = t.numel() * width
        if cur and cur_bytes + nb > max_shard_bytes:
            shards.append(cur)
            cur, cur_bytes = {}, 0
        cur[name] = t
        cur_bytes += nb
    if cur:
        shards.append(cur)
    weight_map, total = {}, 0
    for k, shard in enumerate(shards):
        fname = f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors"
        save_safetensors(os.path.join(dirname, fname), shard, dtype, {"format": "pt"})
        for name, t in shard.items():
            weight_map[name] = fname
            total += t.numel() * width
    with open(os.path.join(dirname, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
        f.write("\n")


def load_hf(dirname: str):
    """Returns (config dict, params as float32). Reads model.safetensors or the sharded index."""
    with open(os.path.join(dirname, "config.json")) as f:
        config = json.load(f)
    index = os.path.join(dirname, "model.safetensors.index.json")
    params = {}
    if os.path.exists(index):
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        for fname in sorted(set(weight_map.values())):
            for name, t in load_safetensors(os.path.join(dirname, fname)).items():
                if weight_map.get(name) == fname:
                    params[name] = t
        missing = set(weight_map) - set(params)
        if missing:
            raise ValueError(f"{index}: tensors not found in their shards: {sorted(missing)[:5]}")
    else:
        params = load_safetensors(os.path.join(dirname, "model.safetensors"))
    return config, params
