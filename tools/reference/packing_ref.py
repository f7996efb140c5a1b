#!/usr/bin/env python3
"""OLMo-core's NumpyPackedFSLDataset in numpy: the oracle of replica's packed data (tests/unit/test_data_packing.cc).

Transcribed from OLMo-core's source (allenai/OLMo-core 3f21b7799, src/olmo_core/data/): the source permutation of
NumpyDatasetConfig._resolve_paths_metadata (random.Random(seed).shuffle of the file order), chunked() into source
groups, iter_document_indices_with_max_sequence_length (documents end at EOS, the tail after a file's last EOS
dropped, or, as for a file that is not local, the `start,end` lines of the file's Dolma `.csv.gz` metadata; long
documents truncated or fragmented), pack_documents_into_instances with InstancePacker and
SegmentTree (OBFD, np.argsort of -length), NumpyPackedFSLDataset.__getitem__ (documents in bin order, padded
with the pad id) and get_document_lengths (EOS-delimited segments, the padding tail its own segment). Nothing
here is taken from replica's C++.

  packing_ref.py pack OUT_DIR SEQ_LEN GROUP_SIZE truncate|fragment PERMUTATION_SEED|none EOS PAD uint16|uint32
                      eos|metadata FILE...
      writes OUT_DIR/input_ids.npy (int64 [N, SEQ_LEN]), OUT_DIR/doc_lens.npy (int64, every instance's
      lengths one after the other) and OUT_DIR/doc_counts.npy (int64 [N]: how many lengths each instance has).
  packing_ref.py argsort KIND IN.npy OUT.npy ...   for each pair, np.argsort(IN, kind=KIND) (1-D int64) to OUT.
"""
import gzip
import math
import os
import random
import sys
from collections import defaultdict, deque

import numpy as np


def chunked(items, n):
    return [items[i : i + n] for i in range(0, len(items), n)]


def iter_document_indices(path, eos, dtype, boundaries):
    if boundaries == "eos":
        mmap = np.memmap(path, mode="r", dtype=dtype)
        start_idx = 0
        for idx in (mmap == eos).nonzero()[0]:
            end_idx = int(idx) + 1
            yield start_idx, end_idx
            start_idx = end_idx
        return
    metadata_filename = os.path.basename(path).replace(".npy", ".csv.gz")
    metadata_path = os.path.join(os.path.dirname(path), metadata_filename)
    total_tokens = os.path.getsize(path) // np.dtype(dtype).itemsize
    with gzip.open(metadata_path, "rt") as f:
        for line in f:
            start_index_str, end_index_str, *_ = line.split(",")
            start_index, end_index = int(start_index_str), int(end_index_str)
            if start_index >= total_tokens:
                raise RuntimeError(f"document start index {start_index} of {path} is out of bounds")
            if end_index > total_tokens:
                raise RuntimeError(f"document end index {end_index} of {path} is out of bounds")
            yield start_index, end_index


def iter_document_indices_with_max_sequence_length(path, max_sequence_length, eos, dtype, long_doc_strategy,
                                                   boundaries):
    for start_idx, end_idx in iter_document_indices(path, eos, dtype, boundaries):
        if end_idx - start_idx > max_sequence_length:
            if long_doc_strategy == "truncate":
                yield start_idx, start_idx + max_sequence_length
            else:  # fragment
                for new_start_idx in range(start_idx, end_idx, max_sequence_length):
                    yield new_start_idx, min(end_idx, new_start_idx + max_sequence_length)
        else:
            yield start_idx, end_idx


class SegmentTreeNode:
    def __init__(self, parent=None):
        self.weight = 0
        self.parent = parent
        self.children = None
        self.leaf_id = None

    def update(self, weight=None):
        if weight is not None:
            self.weight = weight
        else:
            self.weight = max(self.children[0].weight, self.children[1].weight)
        if self.parent is not None:
            self.parent.update()


class SegmentTree:
    def __init__(self, n):
        assert math.log2(n) % 1 == 0, "N should be a power of 2"
        self.root_node = SegmentTreeNode()
        self.leaf_nodes = []
        max_depth = int(math.log2(n))
        leaf_id = 0
        queue = deque([(self.root_node, 0)])
        while queue:
            parent, depth = queue.popleft()
            if depth < max_depth:
                parent.children = (SegmentTreeNode(parent), SegmentTreeNode(parent))
                queue.append((parent.children[0], depth + 1))
                queue.append((parent.children[1], depth + 1))
            else:
                parent.leaf_id = leaf_id
                self.leaf_nodes.append(parent)
                leaf_id += 1
        assert len(self.leaf_nodes) == n
        self.leaf_nodes[-1].update(n)

    def query(self, weight):
        node = self.root_node
        while node.children is not None:
            assert weight <= node.weight
            left_child, right_child = node.children
            node = left_child if weight <= left_child.weight else right_child
        return node


class InstancePacker:
    def __init__(self, max_sequence_length):
        self.max_sequence_length = max_sequence_length
        self.seg_tree = SegmentTree(max_sequence_length)
        self.instance_bins = []
        self.space_to_bins = defaultdict(deque)

    def _pack_document(self, document_id, document_length):
        best_fit_capacity = self.seg_tree.query(document_length).leaf_id + 1
        if best_fit_capacity == self.max_sequence_length:
            self.instance_bins.append([])
            bin_id = len(self.instance_bins) - 1
        else:
            bins = self.space_to_bins[best_fit_capacity]
            bin_id = bins.popleft()
            if len(bins) == 0:
                self.seg_tree.leaf_nodes[best_fit_capacity - 1].update(weight=0)
        self.instance_bins[bin_id].append(document_id)
        bin_space = best_fit_capacity - document_length
        if bin_space > 0:
            bins = self.space_to_bins[bin_space]
            if len(bins) == 0:
                self.seg_tree.leaf_nodes[bin_space - 1].update(weight=bin_space)
            self.space_to_bins[bin_space].append(bin_id)
        return bin_id

    def pack_documents(self, document_indices):
        document_lengths = document_indices[:, 1] - document_indices[:, 0]
        sorted_index = np.argsort(-1 * document_lengths.astype(np.int64))
        document_indices = np.take(document_indices, sorted_index, axis=0)
        for document_id, (start_idx, end_idx) in enumerate(document_indices):
            self._pack_document(document_id, int(end_idx - start_idx))
        return self.instance_bins, document_indices


def pack_documents_into_instances(paths, max_sequence_length, eos, dtype, long_doc_strategy, boundaries):
    def doc_idx_gen():
        start_offset = 0
        for path in paths:
            for start_idx, end_idx in iter_document_indices_with_max_sequence_length(
                path, max_sequence_length, eos, dtype, long_doc_strategy, boundaries
            ):
                yield start_offset + start_idx
                yield start_offset + end_idx
            start_offset += os.path.getsize(path) // np.dtype(dtype).itemsize

    document_indices = np.fromiter(doc_idx_gen(), dtype=np.uint64).reshape(-1, 2)
    return InstancePacker(max_sequence_length).pack_documents(document_indices)


def get_document_lengths(input_ids, eos):
    boundaries = np.concatenate(
        [[-1], (input_ids == eos).nonzero()[0], [] if input_ids[-1] == eos else [input_ids.shape[0] - 1]]
    ).astype(np.int64)
    return boundaries[1:] - boundaries[:-1]


def packed_instances(paths, seq_len, group_size, long_doc_strategy, permutation_seed, eos, pad, dtype, boundaries):
    """Yields (input_ids, doc_lens) of every instance in global instance order."""
    if permutation_seed is not None:
        order = list(range(len(paths)))
        random.Random(permutation_seed).shuffle(order)
        paths = [paths[i] for i in order]
    for group in chunked(paths, group_size):
        instances, document_indices = pack_documents_into_instances(
            group, seq_len, eos, dtype, long_doc_strategy, boundaries
        )
        sizes = [os.path.getsize(p) // np.dtype(dtype).itemsize for p in group]
        for instance in instances:
            tokens = []
            for document_id in instance:
                document_start, document_end = (int(x) for x in document_indices[document_id])
                source_start = 0
                for path, size in zip(group, sizes):
                    if source_start <= document_start < source_start + size:
                        break
                    source_start += size
                else:
                    raise RuntimeError("no source file holds the document")
                mmap = np.memmap(path, mode="r", dtype=dtype)
                tokens.append(mmap[document_start - source_start : document_end - source_start].astype(np.int64))
            input_ids = np.concatenate(tokens)
            input_ids = np.pad(input_ids, (0, seq_len - input_ids.shape[0]), constant_values=pad)
            yield input_ids, get_document_lengths(input_ids, eos)


def argsort(kind, paths):
    for in_path, out_path in zip(paths[::2], paths[1::2]):
        np.save(out_path, np.argsort(np.load(in_path), kind=kind).astype(np.int64))


def pack(argv):
    out_dir, seq_len, group_size, long_doc_strategy, seed, eos, pad, dtype, boundaries, *paths = argv
    instances = list(
        packed_instances(
            paths, int(seq_len), int(group_size), long_doc_strategy, None if seed == "none" else int(seed),
            int(eos), int(pad), np.dtype(dtype).type, boundaries,
        )
    )
    np.save(os.path.join(out_dir, "input_ids.npy"), np.stack([ids for ids, _ in instances]))
    np.save(os.path.join(out_dir, "doc_lens.npy"), np.concatenate([lens for _, lens in instances]))
    np.save(os.path.join(out_dir, "doc_counts.npy"), np.array([len(lens) for _, lens in instances], dtype=np.int64))


if __name__ == "__main__":
    if sys.argv[1] == "argsort":
        argsort(sys.argv[2], sys.argv[3:])
    else:
        pack(sys.argv[2:])
