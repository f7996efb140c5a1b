// ckpt/dcp on crafted torch.distributed.checkpoint directories: tensors assembled from chunks in any order, and the
// metadata refused, naming the key, when its chunks do not tile a tensor or point nowhere.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "error_of.h"
#include "replica/ckpt/dcp.h"
#include "replica/core/error.h"
#include "scratch_dir.h"
#include "torch_save_builder.h"

namespace replica::ckpt {
namespace {

using namespace testing;

struct ChunkSpec {
  std::vector<int64_t> offsets, sizes;
  std::vector<float> values;
  std::string file = "__0_0.distcp";
};
struct TensorSpec {
  std::string key;
  std::vector<int64_t> size;
  std::vector<ChunkSpec> chunks;
};

const std::string kMetadata = "torch.distributed.checkpoint.metadata";

// Writes dir/.metadata and the .distcp files of `tensors` (each chunk a torch.save archive, one after the other), as
// torch 2.x's FileSystemWriter does, with _StorageInfo from `storage_module`.
std::string write_dcp(const std::string& name, const std::vector<TensorSpec>& tensors,
                      const std::string& storage_module = "torch.distributed.checkpoint.filesystem") {
  const std::string dir = (testing::scratch_dir("ckpt_dcp") / name).string();
  std::filesystem::create_directories(dir);
  PickleBuilder b;
  b.object(kMetadata, "Metadata").empty_dict().mark().str("state_dict_metadata").empty_dict().mark();
  for (const TensorSpec& t : tensors) {
    b.str(t.key).object(kMetadata, "TensorStorageMetadata").empty_dict().mark();
    b.str("properties").object(kMetadata, "TensorProperties").mark().global("torch", "float32").none().op('\x89');
    b.none().op('\x89').tuple().build();
    b.str("size").size(t.size).str("chunks").empty_list().mark();
    for (const ChunkSpec& c : t.chunks) {
      b.object(kMetadata, "ChunkStorageMetadata").empty_dict().mark().str("offsets").size(c.offsets);
      b.str("sizes").size(c.sizes).setitems().build();
    }
    b.appends().setitems().build();
  }
  b.setitems().str("planner_data").none().str("storage_data").empty_dict().mark();
  std::map<std::string, std::string> files;
  for (const TensorSpec& t : tensors)
    for (const ChunkSpec& c : t.chunks) {
      const std::string archive = saved_f32(c.values, c.sizes);
      b.object(kMetadata, "MetadataIndex").empty_dict().mark().str("fqn").str(t.key).str("offset");
      b.size(c.offsets).str("index").none().setitems().build();
      b.object(storage_module, "_StorageInfo").empty_dict().mark().str("relative_path").str(c.file);
      b.str("offset").integer(int64_t(files[c.file].size())).str("length").integer(int64_t(archive.size()));
      b.setitems().build();
      files[c.file] += archive;
    }
  std::ofstream(dir + "/.metadata", std::ios::binary) << b.setitems().setitems().build().done();
  for (const auto& [file, bytes] : files) std::ofstream(dir + "/" + file, std::ios::binary) << bytes;
  return dir;
}

std::string dcp_open_error(const std::string& dir) {
  return error_of([&] { DcpCheckpoint dcp(dir); });
}

TEST(DcpCheckpoint, AssemblesATensorFromItsChunks) {
  // A [4, 3] tensor in two row blocks (FSDP's dim-0 shards), the later block first in the file, in two files.
  const std::string dir = write_dcp(
      "assembled", {{"model.w",
                     {4, 3},
                     {{{2, 0}, {2, 3}, {6, 7, 8, 9, 10, 11}}, {{0, 0}, {2, 3}, {0, 1, 2, 3, 4, 5}, "__1_0.distcp"}}},
                    {"optim.state.w.step", {}, {{{}, {}, {12}}}}});
  const DcpCheckpoint dcp(dir);
  ASSERT_NE(dcp.find("model.w"), nullptr);
  EXPECT_EQ(dcp.find("model.w")->chunks.size(), 2u);
  std::vector<float> w(12);
  dcp.read_f32("model.w", {4, 3}, w.data());
  for (int i = 0; i < 12; i++) EXPECT_EQ(w[size_t(i)], float(i));
  float step = 0;
  dcp.read_f32("optim.state.w.step", {}, &step);
  EXPECT_EQ(step, 12.0f);
}

TEST(DcpCheckpoint, AssemblesColumnBlocks) {
  const std::string dir =
      write_dcp("columns", {{"w", {2, 4}, {{{0, 2}, {2, 2}, {2, 3, 6, 7}}, {{0, 0}, {2, 2}, {0, 1, 4, 5}}}}});
  std::vector<float> w(8);
  DcpCheckpoint(dir).read_f32("w", {2, 4}, w.data());
  EXPECT_EQ(w, (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(DcpCheckpoint, AcceptsOlmoCoresStorageInfo) {
  const std::string dir =
      write_dcp("olmo_core", {{"w", {1}, {{{0}, {1}, {3}}}}}, "olmo_core.distributed.checkpoint.filesystem");
  float w = 0;
  DcpCheckpoint(dir).read_f32("w", {1}, &w);
  EXPECT_EQ(w, 3.0f);
}

TEST(DcpCheckpoint, RefusesChunksThatDoNotTileTheTensor) {
  EXPECT_NE(dcp_open_error(write_dcp("overlap", {{"w", {3}, {{{0}, {2}, {0, 1}}, {{1}, {2}, {1, 2}}}}}))
                .find("'w' has overlapping chunks at [0] and [1]"),
            std::string::npos);
  EXPECT_NE(dcp_open_error(write_dcp("gap", {{"w", {3}, {{{0}, {2}, {0, 1}}}}})).find("cover 2 of its 3 elements"),
            std::string::npos);
  EXPECT_NE(
      dcp_open_error(write_dcp("beyond", {{"w", {3}, {{{2}, {2}, {0, 1}}, {{0}, {2}, {0, 1}}}}})).find("beyond it"),
      std::string::npos);
}

TEST(DcpCheckpoint, RefusesWhatThePickleMustNotName) {
  EXPECT_NE(dcp_open_error(write_dcp("foreign", {{"w", {1}, {{{0}, {1}, {3}}}}}, "mymodule.filesystem"))
                .find("'mymodule.filesystem._StorageInfo', which is not one of the classes"),
            std::string::npos);
  const std::string dir = write_dcp("escape", {{"w", {1}, {{{0}, {1}, {3}, "../w.distcp"}}}});
  EXPECT_NE(dcp_open_error(dir).find("relative_path '../w.distcp' is not a file name"), std::string::npos);
  EXPECT_NE(dcp_open_error(testing::scratch_dir("ckpt_dcp").string()).find("no .metadata file"), std::string::npos);
}

TEST(DcpCheckpoint, ReadsNameTheKeyAndTheFile) {
  const std::string dir = write_dcp("reads", {{"w", {2}, {{{0}, {2}, {1, 2}}}}});
  const DcpCheckpoint dcp(dir);
  std::vector<float> w(2);
  auto read_error = [&](const std::string& key, const std::vector<int64_t>& shape) {
    try {
      dcp.read_f32(key, shape, w.data());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(read_error("v", {2}).find("no tensor 'v'"), std::string::npos);
  EXPECT_NE(read_error("w", {3}).find("'w' has shape [2], the model expects [3]"), std::string::npos);
  std::filesystem::resize_file(dir + "/__0_0.distcp", 100);
  EXPECT_NE(read_error("w", {2}).find("__0_0.distcp: truncated: 'w' needs bytes [0, "), std::string::npos);
  std::filesystem::remove(dir + "/__0_0.distcp");
  const DcpCheckpoint again(dir);
  try {
    again.read_f32("w", {2}, w.data());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("__0_0.distcp: missing"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace replica::ckpt
