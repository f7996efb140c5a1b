#!/usr/bin/python3
"""Independent reference for replica's evaluation (src/replica/eval/): scores written from lm-eval's and
OLMo-core's definitions on top of olmo3_ref.py, in float64.

usage: /usr/bin/python3 tools/reference/eval_ref.py model --out DIR --seed S
       /usr/bin/python3 tools/reference/eval_ref.py jobs IN.json OUT.json
`model` writes a tiny random OLMo-3-shaped HF directory with the real padded dolma2 vocabulary (100,352), so
real token ids fit. `jobs` runs a list of jobs, each {"kind", ...}:
  score:   {"model", "max_length", "requests": [{"context": [ids], "continuation": [ids]}]}
           -> [{"logprob", "greedy"}]   lm-eval _loglikelihood_tokens: inp = (ctx + cont)[-(L+1):][:-1]
  rolling: {"model", "tokens" (uint32 file, EOS-separated), "window", "eos"}
           -> {"nll", "tokens"}          lm-eval get_rolling_token_windows(context_len=1) + make_disjoint_window
  heldout: {"model", "tokens", "seq_len", "eos"}
           -> {"nll", "tokens"}          OLMo-core: one instance per document with its EOS, truncated to seq_len
  kl:      {"reference", "model", "tokens", "window", "eos", "max_positions"}
           -> {"kl_mean", "kl_max", "top1", "positions"}   KL(reference || model) over the rolling windows
"""

import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import olmo3_ref as ref  # noqa: E402

S, F = "sliding_attention", "full_attention"
_models = {}


def make_model(out, seed):
    config = {
        "architectures": ["Olmo3ForCausalLM"], "model_type": "olmo3", "vocab_size": 100352, "hidden_size": 32,
        "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 8, "hidden_act": "silu", "attention_bias": False, "attention_dropout": 0.0, "rms_norm_eps": 1e-6,
        "rope_theta": 500000.0, "rope_scaling": None, "max_position_embeddings": 512, "initializer_range": 0.02,
        "tie_word_embeddings": False, "sliding_window": 16, "layer_types": [S, F], "eos_token_id": 100257,
        "pad_token_id": 100277, "torch_dtype": "float32",
    }
    cfg = ref.load_config(config)
    params = ref.init_params(cfg, seed, std=0.1, norm_jitter=0.1)
    ref.save_hf(out, config, params, "F32")


def load(dirname):
    if dirname not in _models:
        config, params = ref.load_hf(dirname)
        cfg = ref.load_config(config)
        p = {k: v.to(torch.float64) for k, v in params.items()}
        head = p["model.embed_tokens.weight"] if cfg.tie_word_embeddings else p["lm_head.weight"]
        body = dict(p)
        body["lm_head.weight"] = torch.eye(cfg.hidden_size, dtype=torch.float64)  # forward() then returns hidden
        body["model.embed_tokens.weight"] = p["model.embed_tokens.weight"]
        cfg.tie_word_embeddings = False
        _models[dirname] = (cfg, body, head)
    return _models[dirname]


def logits_at(dirname, ids, positions):
    """float64 logits [len(positions), V] of the rows `positions` of input `ids`."""
    cfg, body, head = load(dirname)
    with torch.no_grad():
        hidden = ref.forward(body, cfg, torch.tensor([ids], dtype=torch.int64))[0]
        return hidden[positions] @ head.T


def logprobs(dirname, ids, positions, targets):
    lg = logits_at(dirname, ids, positions)
    lp = torch.log_softmax(lg, dim=-1)
    t = torch.tensor(targets)
    return lp[torch.arange(len(targets)), t], lg.argmax(-1) == t


def score(job):
    out, L = [], job["max_length"]
    for r in job["requests"]:
        ctx, cont = r["context"], r["continuation"]
        inp = (ctx + cont)[-(L + 1):][:-1]
        n = len(inp)
        lp, greedy = logprobs(job["model"], inp, list(range(n - len(cont), n)), cont)
        out.append({"logprob": float(lp.sum()), "greedy": bool(greedy.all())})
    return out


def documents(path, eos, with_eos):
    toks = np.fromfile(path, dtype="<u4").astype(np.int64).tolist()
    docs, cur = [], []
    for t in toks:
        if t == eos:
            docs.append(cur + [t] if with_eos else cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        docs.append(cur)
    return docs


def rolling_windows(tokens, prefix, max_seq_len):
    """lm_eval.utils.get_rolling_token_windows(context_len=1) followed by make_disjoint_window."""
    pred_len, predicted = max_seq_len, 0
    first = min(max_seq_len, len(tokens))
    yield [prefix], tokens[:first]  # disjoint form of ([prefix] + tokens[:first-1], tokens[:first])
    predicted += first
    while predicted < len(tokens):
        wlen = min(len(tokens) - predicted, pred_len)
        end = predicted + wlen
        a, b = tokens[end - max_seq_len - 1:end - 1], tokens[end - wlen:end]
        yield a[:len(a) - (len(b) - 1)], b
        predicted += wlen


def rolling(job):
    nll, n = 0.0, 0
    reqs = []
    for doc in documents(job["tokens"], job["eos"], False):
        if doc:
            reqs += [{"context": c, "continuation": t} for c, t in rolling_windows(doc, job["eos"], job["window"])]
    for r in score({"model": job["model"], "max_length": job["window"], "requests": reqs}):
        nll -= r["logprob"]
    for r in reqs:
        n += len(r["continuation"])
    return {"nll": nll, "tokens": n}


def heldout(job):
    nll, n = 0.0, 0
    for doc in documents(job["tokens"], job["eos"], True):
        doc = doc[:job["seq_len"]]
        if len(doc) < 2:
            continue
        lp, _ = logprobs(job["model"], doc, list(range(len(doc) - 1)), doc[1:])
        nll -= float(lp.sum())
        n += len(doc) - 1
    return {"nll": nll, "tokens": n}


def kl(job):
    kls, agree = [], 0
    for doc in documents(job["tokens"], job["eos"], False):
        for ctx, cont in rolling_windows(doc, job["eos"], job["window"]) if doc else []:
            inp = (ctx + cont)[-(job["window"] + 1):][:-1]
            pos = list(range(len(inp) - len(cont), len(inp)))[:job["max_positions"] - len(kls)]
            if not pos:
                break
            p = torch.log_softmax(logits_at(job["reference"], inp, pos), -1)
            q = torch.log_softmax(logits_at(job["model"], inp, pos), -1)
            kls += (p.exp() * (p - q)).sum(-1).tolist()
            agree += int((p.argmax(-1) == q.argmax(-1)).sum())
    return {"kl_mean": sum(kls) / len(kls), "kl_max": max(kls), "top1": agree / len(kls), "positions": len(kls)}


def main():
    torch.set_num_threads(1)
    if sys.argv[1] == "model":
        make_model(sys.argv[sys.argv.index("--out") + 1], int(sys.argv[sys.argv.index("--seed") + 1]))
        return
    with open(sys.argv[2]) as f:
        jobs = json.load(f)
    kinds = {"score": score, "rolling": rolling, "heldout": heldout, "kl": kl}
    results = [kinds[j["kind"]](j) for j in jobs]
    with open(sys.argv[3] + ".tmp", "w") as f:
        json.dump(results, f)
    os.replace(sys.argv[3] + ".tmp", sys.argv[3])


if __name__ == "__main__":
    main()
