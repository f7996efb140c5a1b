#!/usr/bin/python3
"""Writes a replica checkpoint's weights, AdamW moments and step as an OLMo-core checkpoint, with PyTorch's own
torch.distributed.checkpoint (DCP) on one process, the way OLMo-core's train module saves one:

    OUT/config.json                 OLMo-core's experiment config (here a stand-in that is not an HF config)
    OUT/model_and_optim/.metadata   DCP's Metadata, pickled
    OUT/model_and_optim/__0_0.distcp
        model.<OLMo-core name>                    fp32 weights, in --chunks chunks along dim 0 (as FSDP shards them)
        optim.state.<name>.exp_avg, .exp_avg_sq  the moments, chunked the same way
        optim.state.<name>.step                   a 0-dim fp32 tensor: the updates applied (SkipStepAdamW)
        optim.param_groups.<name>.<key>           non-tensors (DCP's bytes items)

The names follow OLMo-core's olmo_core/nn/hf/convert.py (OLMO_CORE_TO_HF_WEIGHT_MAPPINGS, read backwards).

Debian's python3-torch is 1.13, where DCP lives in torch.distributed._shard.checkpoint and the flattened keys are
given directly (torch >= 2.0 flattens the nested {"model": ..., "optim": ...} into the same dotted keys). Two
things about that torch are worked around here, never in what it writes:
  * its sharded_tensor/metadata.py has a dataclass field default that Python >= 3.11 refuses (a mutable default);
    the module is loaded with PyTorch 2.0's own fix (default_factory) applied to its source.
  * --layout torch2 re-pickles .metadata with the module and class names of torch >= 2.1 and OLMo-core
    (torch.distributed.checkpoint.metadata.*, TensorProperties there, StorageMeta, the planner_data map, and
    olmo_core.distributed.checkpoint.filesystem._StorageInfo), re-created from their sources, because AI2's
    checkpoints were written by those and this torch cannot.

usage: write_olmo_core_checkpoint.py REPLICA_CHECKPOINT OUT [--chunks N] [--layout torch1|torch2]
"""
import argparse
import dataclasses
import enum
import importlib.abc
import importlib.util
import json
import os
import pickle
import struct
import sys
import tempfile
import types


class _PatchedShardedTensorMetadata(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Loads torch 1.13's sharded_tensor/metadata.py with PyTorch 2.0's fix for Python >= 3.11."""

    NAME = "torch.distributed._shard.sharded_tensor.metadata"

    def find_spec(self, name, path, target=None):
        if name != self.NAME:
            return None
        sys.meta_path.remove(self)
        try:
            self.origin = importlib.util.find_spec(name).origin
        finally:
            sys.meta_path.insert(0, self)
        return importlib.util.spec_from_file_location(name, self.origin, loader=self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        source = open(self.origin).read()
        broken = "field(default=TensorProperties())"
        if broken in source:
            source = source.replace(broken, "field(default_factory=TensorProperties)")
        exec(compile(source, self.origin, "exec"), module.__dict__)


sys.meta_path.insert(0, _PatchedShardedTensorMetadata())
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed._shard.checkpoint import FileSystemWriter, save_state_dict  # noqa: E402
from torch.distributed._shard.sharded_tensor import Shard, ShardMetadata, init_from_local_shards  # noqa: E402

TOP = {"model.embed_tokens.weight": "embeddings.weight", "model.norm.weight": "lm_head.norm.weight",
       "lm_head.weight": "lm_head.w_out.weight"}
BLOCK = {"self_attn.q_proj.weight": "attention.w_q.weight", "self_attn.k_proj.weight": "attention.w_k.weight",
         "self_attn.v_proj.weight": "attention.w_v.weight", "self_attn.o_proj.weight": "attention.w_out.weight",
         "self_attn.q_norm.weight": "attention.q_norm.weight", "self_attn.k_norm.weight": "attention.k_norm.weight",
         "mlp.gate_proj.weight": "feed_forward.w1.weight", "mlp.down_proj.weight": "feed_forward.w2.weight",
         "mlp.up_proj.weight": "feed_forward.w3.weight", "post_attention_layernorm.weight": "attention_norm.weight",
         "post_feedforward_layernorm.weight": "feed_forward_norm.weight"}


def olmo_core_name(hf):
    if hf in TOP:
        return TOP[hf]
    _, _, layer, rest = hf.split(".", 3)
    return f"blocks.{layer}.{BLOCK[rest]}"


def read_safetensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        begin, end = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data, np.float32, (end - begin) // 4, 8 + n + begin)
                                     .reshape(info["shape"]).copy())
    return out


def chunked(t, chunks):
    """A ShardedTensor of `chunks` row blocks of t on this one rank, as FSDP's dim-0 shards would be."""
    if t.dim() == 0 or chunks == 1 or t.shape[0] < chunks:
        return t
    bounds = np.linspace(0, t.shape[0], chunks + 1).round().astype(int)
    shards = [Shard(t[a:b].clone(), ShardMetadata([int(a)] + [0] * (t.dim() - 1), [int(b - a)] + list(t.shape[1:]),
                                                  "rank:0/cpu")) for a, b in zip(bounds[:-1], bounds[1:])]
    return init_from_local_shards(shards, list(t.shape))


# ---- torch >= 2.1 / OLMo-core class names (--layout torch2), re-created from their sources ----

def _module(name):
    """The module `name` in sys.modules (with its parent packages), where pickle looks classes up by name."""
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        sys.modules.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
    return sys.modules[name]


def _place(cls, module_name):
    cls.__module__ = module_name
    setattr(_module(module_name), cls.__name__, cls)
    return cls


M2 = "torch.distributed.checkpoint.metadata"


class _MEM_FORMAT_ENCODING(enum.Enum):
    TORCH_CONTIGUOUS_FORMAT = 0
    TORCH_CHANNELS_LAST = 1
    TORCH_PRESERVE_FORMAT = 2


@dataclasses.dataclass
class TensorProperties:
    dtype: torch.dtype
    layout: torch.layout = torch.strided
    requires_grad: bool = False
    memory_format: torch.memory_format = torch.contiguous_format
    pin_memory: bool = False

    def __getstate__(self):
        return (self.dtype, self.layout, self.requires_grad, _MEM_FORMAT_ENCODING.TORCH_CONTIGUOUS_FORMAT,
                self.pin_memory)

    def __setstate__(self, state):
        self.dtype, self.layout, self.requires_grad, _, self.pin_memory = state
        self.memory_format = torch.contiguous_format


@dataclasses.dataclass
class ChunkStorageMetadata:
    offsets: torch.Size
    sizes: torch.Size


@dataclasses.dataclass
class TensorStorageMetadata:
    properties: TensorProperties
    size: torch.Size
    chunks: list


@dataclasses.dataclass
class BytesStorageMetadata:
    pass


@dataclasses.dataclass
class StorageMeta:
    checkpoint_id: object = None
    save_id: object = None
    load_id: object = None
    modules: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Metadata:
    state_dict_metadata: dict
    planner_data: object = None
    storage_data: object = None
    storage_meta: object = None
    version: object = None


@dataclasses.dataclass(frozen=True)
class MetadataIndex:
    fqn: str
    offset: object = None
    index: object = dataclasses.field(hash=False, compare=False, default=None)


@dataclasses.dataclass
class _StorageInfo:
    relative_path: str
    offset: int
    length: int


for _cls in (_MEM_FORMAT_ENCODING, TensorProperties, ChunkStorageMetadata, TensorStorageMetadata,
             BytesStorageMetadata, StorageMeta, Metadata, MetadataIndex):
    _place(_cls, M2)
_place(_StorageInfo, "olmo_core.distributed.checkpoint.filesystem")


def as_torch2(old, checkpoint_id):
    """The same metadata, as torch >= 2.1 with OLMo-core's RemoteFileSystemWriter pickles it."""
    items = {}
    for key, md in old.state_dict_metadata.items():
        if hasattr(md, "chunks"):
            items[key] = TensorStorageMetadata(TensorProperties(md.properties.dtype), md.size,
                                               [ChunkStorageMetadata(c.offsets, c.sizes) for c in md.chunks])
        else:
            items[key] = BytesStorageMetadata()
    storage = {MetadataIndex(i.fqn, i.offset, i.index): _StorageInfo(s.relative_path, s.offset, s.length)
               for i, s in old.storage_data.items()}
    planner = {key: tuple(key.split(".", 1)) for key in items}
    return Metadata(items, planner, storage, StorageMeta(checkpoint_id, "0123456789abcdef"), "1.0.0")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("out")
    ap.add_argument("--chunks", type=int, default=2)
    ap.add_argument("--layout", choices=["torch1", "torch2"], default="torch1")
    a = ap.parse_args()

    state = json.load(open(os.path.join(a.checkpoint, "train_state.json")))
    step = float(state["optimizer"]["adam_step_count"])
    weights = read_safetensors(os.path.join(a.checkpoint, "model.safetensors"))
    optim = read_safetensors(os.path.join(a.checkpoint, "optim.safetensors"))

    rendezvous = tempfile.TemporaryDirectory()
    dist.init_process_group("gloo", init_method=f"file://{rendezvous.name}/pg", rank=0, world_size=1)
    flat = {}
    for hf, w in weights.items():
        name = olmo_core_name(hf)
        flat[f"model.{name}"] = chunked(w, a.chunks)
        flat[f"optim.state.{name}.exp_avg"] = chunked(optim[f"exp_avg.{hf}"], a.chunks)
        flat[f"optim.state.{name}.exp_avg_sq"] = chunked(optim[f"exp_avg_sq.{hf}"], a.chunks)
        flat[f"optim.state.{name}.step"] = torch.tensor(step, dtype=torch.float32)
        flat[f"optim.param_groups.{name}.lr"] = 1e-3
        flat[f"optim.param_groups.{name}.weight_decay"] = 0.0 if name == "embeddings.weight" else 0.1

    dcp_dir = os.path.join(a.out, "model_and_optim")
    os.makedirs(dcp_dir)
    save_state_dict(flat, FileSystemWriter(dcp_dir, single_file_per_rank=True))
    dist.destroy_process_group()
    rendezvous.cleanup()
    if a.layout == "torch2":
        path = os.path.join(dcp_dir, ".metadata")
        old = pickle.load(open(path, "rb"))
        with open(path, "wb") as f:
            pickle.dump(as_torch2(old, f"{os.path.basename(os.path.abspath(a.out))}/model_and_optim"), f)
    # OLMo-core's experiment config: not an HF config.json, which replica must not mistake for one.
    json.dump({"model": {"d_model": 0, "block": {"name": "reordered_norm"}}, "trainer": {}},
              open(os.path.join(a.out, "config.json"), "w"))


if __name__ == "__main__":
    main()
