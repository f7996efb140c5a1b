// torch.distributed.checkpoint directories: the metadata's classes interpreted from the pickle tree, chunks checked
// to tile each tensor, and tensors assembled from their chunks' torch.save archives.
#include "replica/ckpt/dcp.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "replica/ckpt/pickle.h"
#include "replica/core/bf16.h"
#include "replica/core/error.h"
#include "replica/core/file.h"

namespace replica::ckpt {

namespace fs = std::filesystem;
using Kind = PyValue::Kind;

uint64_t DcpTensor::numel() const {
  uint64_t n = 1;
  for (int64_t d : size) n *= uint64_t(d);
  return n;
}

namespace {

// The metadata module moved from torch.distributed._shard.checkpoint (torch 1.13, 2.0) to torch.distributed.checkpoint;
// TensorProperties from torch.distributed._shard.sharded_tensor.metadata to the latter; OLMo-core writes its own
// _StorageInfo. A global outside this list fails the read with its name.
std::set<std::string> metadata_globals() {
  std::set<std::string> allowed = {
      "torch.distributed._shard.sharded_tensor.metadata.TensorProperties",
      "torch.distributed._shard.sharded_tensor.metadata.MEM_FORMAT_ENCODING",
      "torch.distributed.checkpoint.metadata._MEM_FORMAT_ENCODING",
      "torch.distributed.checkpoint.filesystem._StorageInfo",
      "torch.distributed._shard.checkpoint.filesystem._StorageInfo",
      "olmo_core.distributed.checkpoint.filesystem._StorageInfo",
      "torch.Size",
      "torch.serialization._get_layout",
      "builtins.getattr",  // how Python 3.11+ pickles an enum member: getattr(MEM_FORMAT_ENCODING, 'TORCH_...')
      "collections.OrderedDict",
      "pathlib.PosixPath",  // StorageMeta.checkpoint_id, when the writer was given a Path
  };
  for (const char* module : {"torch.distributed.checkpoint.metadata", "torch.distributed._shard.checkpoint.metadata"})
    for (const char* cls : {"Metadata", "TensorStorageMetadata", "ChunkStorageMetadata", "BytesStorageMetadata",
                            "MetadataIndex", "StorageMeta", "TensorProperties"})
      allowed.insert(fmt::format("{}.{}", module, cls));
  for (const char* dtype : {"float32", "bfloat16", "float16", "float64", "int64", "int32", "int16", "int8", "uint8",
                            "bool", "complex64", "float8_e4m3fn", "float8_e5m2"})
    allowed.insert(fmt::format("torch.{}", dtype));
  return allowed;
}

// The name of a call's class without its module ("TensorStorageMetadata"), "" for anything else.
std::string class_of(const PyValue& v) {
  const std::string of = v.call_of();
  const size_t dot = of.rfind('.');
  return dot == std::string::npos ? of : of.substr(dot + 1);
}

// A dataclass instance's field: its BUILD state is its __dict__, or (None or __dict__, slots) for a slotted one.
const PyValue* field(const PyValue& object, std::string_view name) {
  const PyValue state = object.state();
  if (state.is(Kind::dict)) return state.find(name);
  if (state.is(Kind::tuple) && state.items().size() == 2) {
    for (const PyValue& part : state.items())
      if (part.is(Kind::dict))
        if (const PyValue* v = part.find(name)) return v;
  }
  return nullptr;
}

const PyValue& required(const PyValue& object, std::string_view name, const std::string& where) {
  const PyValue* v = field(object, name);
  check(v != nullptr, "{}: {} has no field '{}'", where, object.describe(), name);
  return *v;
}

// torch.Size((4, 3)), or a plain tuple or list of integers.
std::vector<int64_t> int_sequence(const PyValue& v, const std::string& where) {
  const PyValue* seq = &v;
  if (v.call_of() == "torch.Size") {
    check(v.items().size() == 1, "{}: torch.Size with {} arguments", where, v.items().size());
    seq = &v.items()[0];
  }
  check(seq->is(Kind::tuple) || seq->is(Kind::list), "{}: expected a size, found {}", where, seq->describe());
  std::vector<int64_t> out;
  for (const PyValue& x : seq->items()) {
    check(x.is(Kind::integer) && x.as_int() >= 0, "{}: a size holds {}, not a non-negative integer", where,
          x.describe());
    out.push_back(x.as_int());
  }
  return out;
}

// TensorProperties pickles its state as the tuple (dtype, layout, requires_grad, memory format, pin_memory).
std::string dtype_of(const PyValue& properties, const std::string& where) {
  check(class_of(properties) == "TensorProperties", "{}: properties are {}, not TensorProperties", where,
        properties.describe());
  const PyValue state = properties.state();
  const PyValue* dtype = nullptr;
  if (state.is(Kind::tuple) && !state.items().empty()) dtype = &state.items()[0];
  if (state.is(Kind::dict)) dtype = state.find("dtype");
  check(dtype && dtype->is(Kind::global) && dtype->module() == "torch", "{}: TensorProperties without a torch dtype",
        where);
  return dtype->name();
}

struct StorageInfo {
  std::string file;
  uint64_t offset = 0, length = 0;
};

using ChunkKey = std::pair<std::string, std::vector<int64_t>>;  // (fqn, chunk offsets)

std::map<ChunkKey, StorageInfo> storage_data(const PyValue& data, const std::string& where) {
  std::map<ChunkKey, StorageInfo> out;
  for (const auto& [index, info] : data.entries()) {
    check(class_of(index) == "MetadataIndex" && class_of(info) == "_StorageInfo",
          "{}: storage_data maps {} to {}, not MetadataIndex to _StorageInfo", where, index.describe(),
          info.describe());
    const std::string fqn = required(index, "fqn", where).as_string();
    const std::string at = fmt::format("{} storage_data['{}']", where, fqn);
    const PyValue* offset = field(index, "offset");
    std::vector<int64_t> offsets =
        offset && !offset->is(Kind::none) ? int_sequence(*offset, at) : std::vector<int64_t>{};
    if (const PyValue* transforms = field(info, "transform_descriptors"))
      check(transforms->is(Kind::none) || transforms->items().empty(),
            "{}: written with stream transforms (compression or encryption extensions), which this reader does not "
            "undo; save without _extensions",
            at);
    StorageInfo s;
    s.file = required(info, "relative_path", at).as_string();
    check(!s.file.empty() && s.file.find('/') == std::string::npos && s.file != "." && s.file != "..",
          "{}: relative_path '{}' is not a file name in the checkpoint directory", at, s.file);
    const int64_t off = required(info, "offset", at).as_int(), length = required(info, "length", at).as_int();
    check(off >= 0 && length >= 0, "{}: a negative offset or length ({}, {})", at, off, length);
    s.offset = uint64_t(off);
    s.length = uint64_t(length);
    out[{fqn, std::move(offsets)}] = s;
  }
  return out;
}

uint64_t volume(const std::vector<int64_t>& sizes) {
  uint64_t n = 1;
  for (int64_t d : sizes) n *= uint64_t(d);
  return n;
}

// The elements of a size read from the metadata, which must fit in memory's address arithmetic.
void check_volume(const std::vector<int64_t>& sizes, const std::string& what) {
  uint64_t n = 1;
  for (int64_t d : sizes)
    check(!__builtin_mul_overflow(n, uint64_t(d), &n) && n <= (uint64_t(1) << 60), "{}: size {} is too large", what,
          sizes);
}

// Chunks inside the tensor, pairwise disjoint, volumes adding up to the whole: an exact tiling.
void check_tiling(const std::string& key, DcpTensor& t, const std::string& where) {
  uint64_t covered = 0;
  for (const DcpChunk& c : t.chunks) {
    check(c.offsets.size() == t.size.size() && c.sizes.size() == t.size.size(),
          "{}: '{}' of {} dimensions has a chunk of {}", where, key, t.size.size(), c.sizes.size());
    for (size_t d = 0; d < t.size.size(); d++)
      check(c.offsets[d] <= t.size[d] && c.sizes[d] <= t.size[d] - c.offsets[d],
            "{}: '{}' of size {} has a chunk at {} of size {} beyond it", where, key, t.size, c.offsets, c.sizes);
    covered += volume(c.sizes);
  }
  std::sort(t.chunks.begin(), t.chunks.end(),
            [](const DcpChunk& a, const DcpChunk& b) { return a.offsets < b.offsets; });
  const size_t rank = t.size.size();
  for (size_t i = 0; i < t.chunks.size(); i++) {
    const DcpChunk& a = t.chunks[i];
    if (volume(a.sizes) == 0) continue;
    for (size_t j = i + 1; j < t.chunks.size(); j++) {
      const DcpChunk& b = t.chunks[j];
      if (rank > 0 && b.offsets[0] >= a.offsets[0] + a.sizes[0]) break;  // sorted: no later chunk reaches a
      bool overlap = volume(b.sizes) != 0;
      for (size_t d = 0; d < rank && overlap; d++)
        overlap = b.offsets[d] < a.offsets[d] + a.sizes[d] && a.offsets[d] < b.offsets[d] + b.sizes[d];
      check(!overlap, "{}: '{}' has overlapping chunks at {} and {}", where, key, a.offsets, b.offsets);
    }
  }
  check(covered == t.numel(), "{}: the chunks of '{}' cover {} of its {} elements", where, key, covered, t.numel());
}

// Copies a chunk (row-major, its own shape) into the whole tensor at its offsets, converting to fp32.
void place_chunk(const TorchTensor& src, const DcpChunk& c, const std::vector<int64_t>& size, float* out) {
  const size_t rank = size.size();
  if (volume(c.sizes) == 0) return;
  const uint64_t row = rank == 0 ? 1 : uint64_t(c.sizes[rank - 1]);
  const uint64_t rows = volume(c.sizes) / row;
  const size_t width = torch_dtype_size(src.dtype);
  std::vector<int64_t> index(rank, 0);  // of the chunk's row, in all but the last dimension
  for (uint64_t r = 0; r < rows; r++) {
    uint64_t at = 0;  // the row's first element in the whole tensor
    for (size_t d = 0; d < rank; d++) at = at * uint64_t(size[d]) + uint64_t(c.offsets[d] + index[d]);
    const char* from = src.data + r * row * width;
    if (src.dtype == TorchDtype::f32) {
      std::memcpy(out + at, from, row * 4);
    } else {
      for (uint64_t k = 0; k < row; k++) {
        bf16 h;
        std::memcpy(&h.bits, from + 2 * k, 2);
        out[at + k] = to_float(h);
      }
    }
    for (size_t d = rank >= 1 ? rank - 1 : 0; d-- > 0;) {  // next row: odometer over the outer dimensions
      if (++index[d] < c.sizes[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace

DcpCheckpoint::DcpCheckpoint(const std::string& dir) : dir_(dir) {
  const std::string path = (fs::path(dir) / ".metadata").string();
  check(fs::is_regular_file(path), "{}: no .metadata file (not a torch.distributed.checkpoint directory)", dir);
  const std::string bytes = read_text_file(path);
  const PickleTree tree = read_pickle(bytes, metadata_globals(), path);
  const PyValue root = tree.root();
  check(class_of(root) == "Metadata", "{}: holds {}, not torch.distributed.checkpoint's Metadata", path,
        root.describe());
  const std::map<ChunkKey, StorageInfo> where = storage_data(required(root, "storage_data", path), path);

  for (const auto& [key_value, item] : required(root, "state_dict_metadata", path).entries()) {
    const std::string key = key_value.as_string();
    const std::string at = fmt::format("{} ['{}']", path, key);
    const std::string kind = class_of(item);
    if (kind == "BytesStorageMetadata") {
      byte_items_.push_back(key);
      continue;
    }
    check(kind == "TensorStorageMetadata", "{}: {}, not TensorStorageMetadata or BytesStorageMetadata", at,
          item.describe());
    const std::string dtype = dtype_of(required(item, "properties", at), at);
    DcpTensor t;
    if (dtype == "float32" || dtype == "bfloat16") {
      t.dtype = dtype == "float32" ? TorchDtype::f32 : TorchDtype::bf16;
    } else {
      other_dtypes_[key] = dtype;
      continue;
    }
    t.size = int_sequence(required(item, "size", at), at);
    check_volume(t.size, at);
    const PyValue& chunks = required(item, "chunks", at);
    check(chunks.is(Kind::list), "{}: chunks are {}, not a list", at, chunks.describe());
    for (const PyValue& chunk : chunks.items()) {
      check(class_of(chunk) == "ChunkStorageMetadata", "{}: a chunk is {}", at, chunk.describe());
      DcpChunk c;
      c.offsets = int_sequence(required(chunk, "offsets", at), at);
      c.sizes = int_sequence(required(chunk, "sizes", at), at);
      const auto it = where.find({key, c.offsets});
      check(it != where.end(), "{}: no storage_data entry for the chunk at {}", at, c.offsets);
      c.file = it->second.file;
      c.offset = it->second.offset;
      c.length = it->second.length;
      t.chunks.push_back(std::move(c));
    }
    check_tiling(key, t, path);
    tensors_.emplace(key, std::move(t));
  }
}

const DcpTensor* DcpCheckpoint::find(const std::string& key) const {
  const auto it = tensors_.find(key);
  return it == tensors_.end() ? nullptr : &it->second;
}

const MappedFile& DcpCheckpoint::file(const std::string& relative) const {
  auto& slot = files_[relative];
  if (!slot) {
    const std::string path = (fs::path(dir_) / relative).string();
    check(fs::is_regular_file(path), "{}: missing (the checkpoint's .metadata names it)", path);
    slot = std::make_unique<MappedFile>(path);
  }
  return *slot;
}

void DcpCheckpoint::read_f32(const std::string& key, const std::vector<int64_t>& expected_shape, float* out) const {
  if (const auto other = other_dtypes_.find(key); other != other_dtypes_.end())
    fail("{}: '{}' is a torch.{} tensor; float32 or bfloat16 expected", dir_, key, other->second);
  const DcpTensor* t = find(key);
  check(t != nullptr, "{}: no tensor '{}' in the checkpoint (expected shape {})", dir_, key, expected_shape);
  check(t->size == expected_shape, "{}: '{}' has shape {}, the model expects {}", dir_, key, t->size, expected_shape);
  for (const DcpChunk& c : t->chunks) {
    const MappedFile& f = file(c.file);
    check(c.offset <= f.size() && c.length <= f.size() - c.offset,
          "{}: truncated: '{}' needs bytes [{}, {}) of it, the file has {}", f.path(), key, c.offset,
          c.offset + c.length, f.size());
    const std::string source = fmt::format("{} at byte {} ('{}' chunk at {})", f.path(), c.offset, key, c.offsets);
    const TorchTensor chunk = read_torch_save_tensor(std::string_view(f.data() + c.offset, c.length), source);
    check(chunk.dtype == t->dtype, "{}: holds {}, the metadata says {}", source, torch_dtype_name(chunk.dtype),
          torch_dtype_name(t->dtype));
    check(chunk.shape == c.sizes, "{}: holds shape {}, the metadata says {}", source, chunk.shape, c.sizes);
    place_chunk(chunk, c, t->size, out);
  }
}

}  // namespace replica::ckpt
