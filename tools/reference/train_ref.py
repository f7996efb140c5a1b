#!/usr/bin/python3
"""PyTorch reference trainer with replica's (= OLMo-core's) training semantics, for curve-parity goldens.

usage: /usr/bin/python3 tools/reference/train_ref.py --recipe RESOLVED.yaml [section.key=value ...]
           [--order ORDER.npy] [--dtype float64|float32] [--out METRICS.jsonl] [--save-final DIR]
           [--save-every N --series DIR]

The recipe is a resolved replica recipe (every key present, as `Recipe::to_yaml()` writes it to the run
directory); overrides are parsed as YAML like replica's. Used keys: model.init_from (an HF model
directory: the initial weights), data.paths or data.mix_file (token files), data.seq_len, data.global_batch_size,
data.micro_batch_size, optim.*, schedule.*, train.max_steps, train.stop_at, train.precision,
train.threads.

Semantics, written by hand (no torch.optim), step s = 1, 2, ...:
  data      each token file (headerless uint32, or .npy) is cut into seq_len-token instances, the remainder
            dropped; instance ids count on across files. Batch b is instances [b*G, (b+1)*G) or, with
            --order, order[b*G:(b+1)*G] (uint32 instance ids, batch-major).
  loss      labels are the ids shifted left within each instance (last position unlabelled);
            loss = (sum ce + z_loss * sum lse^2) / n over the global batch, n = G * (seq_len - 1),
            accumulated over micro-batches. Reported: ce = sum ce / n, z_loss = z_loss * sum lse^2 / n,
            loss = ce + z_loss (all before the update).
  clip      grad_norm = global L2 norm before clipping; grads *= min(1, clip / (grad_norm + 1e-6)) when
            optim.clip > 0.
  skip      (optim.skip_step) OLMo-core's rule on (ce, grad_norm): see SkipStep below; a skipped step
            changes no weight, moment or step count.
  lr        schedule(s) with OLMo-core's formulas (learning_rate below).
  AdamW     OLMo-core foreach_adamw_step: p *= 1 - lr*wd (wd = 0 for model.embed_tokens.weight);
            m = m*(1 - w1) + g*w1, v = v*(1 - w2) + g*g*w2 (w = 1 - beta); t += 1;
            p += m / (sqrt(v) / sqrt(1 - beta2^t) + eps) * -(lr / (1 - beta1^t)).
Everything runs in --dtype (float64 by default: the golden the fp32 C++ run is compared against).
Each step prints one JSON line {"step", "loss", "ce", "z_loss", "lr", "grad_norm", "skipped", "step_s"}.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import olmo3_ref as ref  # noqa: E402

# ----------------------------------------------------------------------------------------------
# Recipe


def load_recipe(path, overrides):
    with open(path) as f:
        recipe = yaml.safe_load(f)
    for item in overrides:
        key, eq, value = item.partition("=")
        section, dot, name = key.partition(".")
        if not eq or not dot or section not in recipe or name not in recipe[section]:
            raise SystemExit(f"override {item!r}: unknown key {key!r} (expected section.key=value)")
        recipe[section][name] = yaml.safe_load(value) if value else None
    return recipe


def schedule_from_recipe(r):
    """The schedule parameters with horizons resolved to steps, as replica's schedule_config()."""
    s, tokens_per_step = r["schedule"], r["data"]["global_batch_size"] * r["data"]["seq_len"]

    def horizon(steps, tokens):
        if steps and steps > 0:
            return int(steps)
        if tokens and tokens > 0:
            return math.ceil(float(tokens) / tokens_per_step)
        return int(r["train"]["max_steps"])

    return dict(type=s["type"], lr=float(r["optim"]["lr"]), warmup=int(s["warmup_steps"]),
                alpha_f=float(s["alpha_f"]), t_max=horizon(s["t_max"], s["t_max_tokens"]),
                decay=int(s["decay_steps"]), stitch_step=int(s["stitch_step"]),
                part2_warmup=int(s["part2_warmup_steps"]),
                part2_t_max=horizon(s["part2_t_max"], s["part2_t_max_tokens"]))


# ----------------------------------------------------------------------------------------------
# LR schedules: olmo_core/optim/scheduler.py, term for term


def _linear_warmup(lr, step, warmup):
    return 0.0 + (lr - 0.0) * min(step, warmup) / warmup


def _cos_with_warmup(lr, step, warmup, alpha_f, t_max):
    eta_min = lr * alpha_f
    if step < warmup:
        return _linear_warmup(lr, step, warmup)
    if step >= t_max:
        return eta_min
    return eta_min + (lr - eta_min) * (1 + math.cos(math.pi * (step - warmup) / (t_max - warmup))) / 2


def _half_cos_with_warmup(lr, step, warmup, alpha_f, t_max):
    eta_min = lr * alpha_f
    if step < warmup:
        return _linear_warmup(eta_min + (lr - eta_min) / 2, step, warmup)
    if step >= t_max:
        return eta_min
    t = t_max - warmup
    return eta_min + (lr - eta_min) * (1 + math.cos(math.pi * (step - warmup + t) / (2 * t))) / 2


def learning_rate(c, step):
    lr, warmup, t_max, eta_min = c["lr"], c["warmup"], c["t_max"], c["lr"] * c["alpha_f"]
    kind = c["type"]
    if kind == "constant":
        return _linear_warmup(lr, step, warmup) if step < warmup else lr
    if kind == "cosine":
        return _cos_with_warmup(lr, step, warmup, c["alpha_f"], t_max)
    if kind == "linear":
        if step < warmup:
            return _linear_warmup(lr, step, warmup)
        if step >= t_max:
            return eta_min
        return lr - (lr - eta_min) * ((step - warmup) / (t_max - warmup))
    if kind == "wsd":
        if warmup > 0 and step <= warmup:
            return _linear_warmup(lr, step, warmup)
        if step >= t_max:
            return eta_min
        if step >= t_max - c["decay"]:
            return eta_min + (lr - eta_min) * min(t_max - step, c["decay"]) / c["decay"]
        return lr
    if kind == "half_cosine":
        return _half_cos_with_warmup(lr, step, warmup, c["alpha_f"], t_max)
    if kind == "olmo3_stitched":
        if step <= c["stitch_step"]:
            return _cos_with_warmup(lr, step, warmup, c["alpha_f"], t_max)
        return _half_cos_with_warmup(lr, step, c["part2_warmup"], c["alpha_f"], c["part2_t_max"])
    raise SystemExit(f"schedule.type {kind!r} is not supported")


# ----------------------------------------------------------------------------------------------
# Skip-step rule: olmo_core/optim/skip_step_optimizer.py


class SkipStep:
    """Keeps up to window+1 values (current last). Active once len >= max(2, window // 2); then the step
    is skipped when the current value is non-finite or value - mean > sigma * std over the finite
    previous values (Bessel std; NaN with < 2 values, which skips), for the loss or the grad norm."""

    def __init__(self, window, sigma):
        self.window, self.sigma, self.losses, self.grad_norms = window, sigma, [], []

    def _push(self, history, value):
        history.append(value)
        del history[:-(self.window + 1)]

    def _within(self, history):
        value, prev = history[-1], [x for x in history[:-1] if math.isfinite(x)]
        if not math.isfinite(value) or len(prev) < 2:
            return False
        mean = sum(prev) / len(prev)
        std = math.sqrt(sum((x - mean) ** 2 for x in prev) / (len(prev) - 1))
        return value - mean <= self.sigma * std

    def record(self, loss, grad_norm):
        self._push(self.losses, loss)
        if grad_norm is not None:
            self._push(self.grad_norms, grad_norm)
        if len(self.losses) < max(2, self.window // 2):
            return True
        return self._within(self.losses) and (not self.grad_norms or self._within(self.grad_norms))


# ----------------------------------------------------------------------------------------------
# Data


def token_paths(data):
    """data.paths, or the files of data.mix_file: `label,path` or `path` lines ('#' and blank lines
    skipped), relative paths relative to the mix file's directory (replica's read_mix_file)."""
    if not data.get("mix_file"):
        return list(data["paths"])
    base, paths = os.path.dirname(data["mix_file"]), []
    with open(data["mix_file"]) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                path = line.split(",", 1)[-1].strip()
                paths.append(path if os.path.isabs(path) else os.path.join(base, path))
    return paths


def read_tokens(path):
    """A token file as a 1-D integer array: .npy through its header, otherwise headerless uint32."""
    with open(path, "rb") as f:
        magic = f.read(6)
    if magic == b"\x93NUMPY":
        return np.load(path, mmap_mode="r").reshape(-1)
    return np.memmap(path, dtype="<u4", mode="r")


class Instances:
    """Fixed-length instances of each file in turn (remainders dropped); global id = cumulative index."""

    def __init__(self, paths, seq_len):
        self.files = [read_tokens(p) for p in paths]
        self.seq_len = seq_len
        self.starts = np.cumsum([0] + [len(f) // seq_len for f in self.files])

    def __len__(self):
        return int(self.starts[-1])

    def __getitem__(self, i):
        f = int(np.searchsorted(self.starts, i, side="right")) - 1
        k = i - int(self.starts[f])
        return np.asarray(self.files[f][k * self.seq_len:(k + 1) * self.seq_len], dtype=np.int64)


# ----------------------------------------------------------------------------------------------
# Training


def loss_sums(params, cfg, ids, precision):
    """(sum ce, sum lse^2) over the labelled positions of ids [B, T], in the parameters' dtype."""
    logits = ref.forward(params, cfg, ids, precision)[:, :-1, :]
    if logits.dtype != torch.float64:
        logits = logits.float()
    lse = torch.logsumexp(logits, dim=-1)
    target = logits.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return (lse - target).sum(), (lse * lse).sum()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--recipe", required=True, help="resolved replica recipe (config.yaml of a run)")
    ap.add_argument("overrides", nargs="*", help="section.key=value (value parsed as YAML)")
    ap.add_argument("--order", help="uint32 .npy of instance ids, batch-major (default: 0, 1, 2, ...)")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    ap.add_argument("--out", help="write the JSON lines here instead of stdout")
    ap.add_argument("--save-final", help="write the final weights as an HF model directory (F32)")
    ap.add_argument("--save-every", type=int, default=0,
                    help="every N steps, the weights as an HF model directory DIR/stepN (F32): a checkpoint "
                         "series for `replica reproduce`")
    ap.add_argument("--series", help="the directory of --save-every's model directories")
    args = ap.parse_args()
    if args.save_every and not args.series:
        ap.error("--save-every needs --series DIR")

    r = load_recipe(args.recipe, args.overrides)
    data, optim, train = r["data"], r["optim"], r["train"]
    if train.get("threads"):
        torch.set_num_threads(int(train["threads"]))
    dtype = torch.float64 if args.dtype == "float64" else torch.float32
    config, weights = ref.load_hf(r["model"]["init_from"])
    cfg = ref.load_config(config)
    params = ref.leaf_params(weights, dtype)
    exp_avg = {k: torch.zeros_like(p) for k, p in params.items()}
    exp_avg_sq = {k: torch.zeros_like(p) for k, p in params.items()}

    T, G, M = int(data["seq_len"]), int(data["global_batch_size"]), int(data["micro_batch_size"])
    instances = Instances(token_paths(data), T)
    order = np.load(args.order).reshape(-1) if args.order else np.arange(len(instances), dtype=np.uint32)
    schedule = schedule_from_recipe(r)
    beta1, beta2 = (float(b) for b in optim["betas"])
    eps, wd = float(optim["eps"]), float(optim["weight_decay"])
    clip, z_coef = float(optim["clip"]), float(optim["z_loss"])
    skip = None
    if optim["skip_step"]:
        skip = SkipStep(int(optim["skip_step_window"]), float(optim["skip_step_sigma"]))
    last = int(train["stop_at"]) or int(train["max_steps"])
    n_labels = G * (T - 1)
    out = open(args.out, "w") if args.out else sys.stdout
    adam_t = 0

    for step in range(1, last + 1):
        start = time.perf_counter()
        batch = order[(step - 1) * G:step * G]
        if len(batch) < G:
            raise SystemExit(f"step {step}: the data holds only {len(order) // G} batches of {G} instances")
        for p in params.values():
            p.grad = None
        ce_total = z_total = 0.0
        for mb in range(0, G, M):
            ids = torch.from_numpy(np.stack([instances[int(i)] for i in batch[mb:mb + M]]))
            if int(ids.max()) >= cfg.vocab_size:
                raise SystemExit(f"step {step}: token id {int(ids.max())} >= vocab size {cfg.vocab_size}")
            ce, z = loss_sums(params, cfg, ids, train["precision"])
            ((ce + z_coef * z) / n_labels).backward()
            ce_total += ce.item()
            z_total += z.item()

        with torch.no_grad():
            grads = {k: p.grad for k, p in params.items()}
            grad_norm = math.sqrt(sum(float((g.double() * g.double()).sum()) for g in grads.values()))
            if clip > 0:
                coef = min(1.0, clip / (grad_norm + 1e-6))
                if coef < 1.0:
                    for g in grads.values():
                        g.mul_(coef)
            ce_mean = ce_total / n_labels
            skipped = skip is not None and not skip.record(ce_mean, grad_norm if clip > 0 else None)
            lr = learning_rate(schedule, step)
            if not skipped:
                adam_t += 1
                w1, w2 = 1 - beta1, 1 - beta2
                step_size = lr / (1 - beta1 ** adam_t)
                bc2_sqrt = math.sqrt(1 - beta2 ** adam_t)
                for k, p in params.items():
                    g, m, v = grads[k], exp_avg[k], exp_avg_sq[k]
                    p.mul_(1 - lr * (0.0 if k == "model.embed_tokens.weight" else wd))
                    m.mul_(1 - w1).add_(g * w1)
                    v.mul_(1 - w2).add_(g * g * w2)
                    p.add_(m / (v.sqrt() / bc2_sqrt + eps) * -step_size)

        z_loss = z_coef * z_total / n_labels
        line = {"step": step, "loss": ce_mean + z_loss, "ce": ce_mean, "z_loss": z_loss, "lr": lr,
                "grad_norm": grad_norm, "skipped": skipped, "step_s": time.perf_counter() - start}
        out.write(json.dumps(line) + "\n")
        out.flush()
        if args.save_every and step % args.save_every == 0:
            ref.save_hf(f"{args.series}/step{step}", config, {k: p.detach().float() for k, p in params.items()})

    if args.save_final:
        ref.save_hf(args.save_final, config, {k: p.detach().float() for k, p in params.items()})


if __name__ == "__main__":
    main()
