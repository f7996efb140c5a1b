// Checkpoint directories: manifest checks, exact tensor round trip, latest/retention/incomplete handling,
// train_state.json, the background saver's snapshot, and metrics.jsonl truncation on resume.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <tuple>

#include "error_of.h"
#include "replica/ckpt/checkpoint.h"
#include "replica/ckpt/manifest.h"
#include "replica/ckpt/model_source.h"
#include "replica/ckpt/safetensors.h"
#include "replica/ckpt/saver.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/train/checkpointing.h"
#include "scratch_dir.h"

namespace replica::ckpt {
namespace {

namespace fs = std::filesystem;

model::ModelConfig tiny_config() {
  model::ModelConfig c;
  c.vocab_size = 40, c.d_model = 16, c.ffn_hidden = 24, c.n_layers = 2, c.n_heads = 2, c.n_kv_heads = 1;
  c.head_dim = 8, c.sliding_window = 4, c.sliding = {true, false};
  return c;
}

const std::vector<std::string> kAdamW = {"exp_avg", "exp_avg_sq"};

struct Tensors {
  model::ModelConfig config = tiny_config();
  model::ParamTable table{config};
  std::vector<float> params;
  OptimizerState optimizer{kAdamW, table.total()};
  std::vector<float>&m = optimizer.tensors[0], &v = optimizer.tensors[1];
  explicit Tensors(float seed) : params(table.total()) {
    for (size_t i = 0; i < params.size(); i++) {
      params[i] = seed + 0.001f * float(i);
      m[i] = -0.5f * float(i);
      v[i] = 1e-3f * float(i);
    }
  }
  TrainState state(int64_t step) const {
    TrainState s;
    s.step = step, s.tokens = step * 64, s.epoch = 2, s.batch = 3, s.batches_consumed = step;
    s.global_batch_size = 4, s.seq_len = 16, s.data_fingerprint = "abc", s.optimizer_step_count = step - 1;
    s.schedule = {{"type", "cosine"}}, s.skip_step = {{"losses", {1.5, 2.25}}}, s.recipe = "run: {}\n";
    s.model = config;
    return s;
  }
  std::string write(const fs::path& root, int64_t step, int64_t keep = 0) const {
    return write_checkpoint(root.string(), {&table, params.data(), &optimizer}, state(step), keep);
  }
};

void flip_byte(const fs::path& file, size_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(std::streamoff(offset));
  char c = 0;
  f.read(&c, 1);
  c = char(c ^ 0x5a);
  f.seekp(std::streamoff(offset));
  f.write(&c, 1);
}

TEST(CkptCheckpoint, RoundTripIsExact) {
  testing::TestDir d;
  const Tensors t(0.25f);
  const std::string dir = t.write(d.path, 7);
  EXPECT_EQ(fs::path(dir).filename(), "step00000007");
  EXPECT_EQ(read_text_file((d.path / "latest").string()), "step00000007\n");
  EXPECT_FALSE(fs::exists(d.path / "step00000007.partial"));
  const TrainState s = read_checkpoint_state(dir, CheckpointRead::weights_and_optimizer);
  EXPECT_EQ(s.step, 7);
  EXPECT_EQ(s.tokens, 448);
  EXPECT_EQ(s.epoch, 2u);
  EXPECT_EQ(s.batch, 3);
  EXPECT_EQ(s.optimizer_step_count, 6);
  EXPECT_EQ(s.data_fingerprint, "abc");
  EXPECT_EQ(s.skip_step["losses"][1].get<double>(), 2.25);
  EXPECT_EQ(s.recipe, "run: {}\n");
  EXPECT_EQ(s.model.d_model, 16);
  std::vector<float> params(t.table.total());
  OptimizerState back;
  back.names = kAdamW;
  read_checkpoint_tensors(dir, t.table, params.data(), &back);
  ASSERT_EQ(back.tensors.size(), 2u);
  for (const model::ParamEntry& e : t.table.entries())
    for (size_t i = e.offset; i < e.offset + e.numel; i++) {
      ASSERT_EQ(params[i], t.params[i]) << e.name;
      ASSERT_EQ(back.tensors[0][i], t.m[i]) << e.name;
      ASSERT_EQ(back.tensors[1][i], t.v[i]) << e.name;
    }
  const SafetensorsReader optim((fs::path(dir) / "optim.safetensors").string());
  EXPECT_TRUE(optim.has("exp_avg.model.norm.weight"));
  EXPECT_TRUE(optim.has("exp_avg_sq.lm_head.weight"));
}

// AdamW's optim.safetensors is what it was before optimizers named their state: every exp_avg.<parameter> in table
// order, then every exp_avg_sq.<parameter>, each at the offset the previous one ends, with the step in the metadata.
TEST(CkptCheckpoint, AdamWStateKeepsItsLayout) {
  testing::TestDir d;
  const Tensors t(0.5f);
  const std::string dir = t.write(d.path, 3);
  std::vector<StTensorOut> before;
  for (const auto& [prefix, base] : {std::pair{"exp_avg.", t.m.data()}, std::pair{"exp_avg_sq.", t.v.data()}})
    for (const model::ParamEntry& e : t.table.entries())
      before.push_back({prefix + e.name, e.shape, base + e.offset, StDtype::F32});
  const fs::path expected = d.path / "before.safetensors";
  write_safetensors(expected.string(), before, {{"step", "3"}});
  EXPECT_EQ(read_text_file((fs::path(dir) / "optim.safetensors").string()), read_text_file(expected.string()));
}

// The state of an optimizer is whatever it names: one tensor (SGD's momentum_buffer) or none (plain SGD, which still
// writes an optim.safetensors, with no tensors, so that every resume reads and verifies the same files).
TEST(CkptCheckpoint, OptimizerStateIsTakenByName) {
  testing::TestDir d;
  const Tensors t(0.5f);
  OptimizerState one({"momentum_buffer"}, t.table.total()), none;
  for (size_t i = 0; i < t.table.total(); i++) one.tensors[0][i] = 0.25f * float(i) - 3.0f;
  const std::string with_one = write_checkpoint((d.path / "one").string(), {&t.table, t.params.data(), &one},
                                                t.state(2), 0),
                    with_none = write_checkpoint((d.path / "none").string(), {&t.table, t.params.data(), &none},
                                                 t.state(2), 0);
  for (const std::string& dir : {with_one, with_none})
    EXPECT_NO_THROW(read_checkpoint_state(dir, CheckpointRead::weights_and_optimizer)) << dir;
  const SafetensorsReader one_file((fs::path(with_one) / "optim.safetensors").string());
  EXPECT_EQ(one_file.tensors().size(), t.table.entries().size());
  EXPECT_TRUE(one_file.has("momentum_buffer.lm_head.weight"));
  EXPECT_TRUE(SafetensorsReader((fs::path(with_none) / "optim.safetensors").string()).tensors().empty());

  std::vector<float> params(t.table.total());
  OptimizerState back;
  back.names = {"momentum_buffer"};
  read_checkpoint_tensors(with_one, t.table, params.data(), &back);
  ASSERT_EQ(back.tensors.size(), 1u);
  for (const model::ParamEntry& e : t.table.entries())  // padding between tensors is not stored
    for (size_t i = e.offset; i < e.offset + e.numel; i++) {
      ASSERT_EQ(back.tensors[0][i], one.tensors[0][i]) << e.name;
      ASSERT_EQ(params[i], t.params[i]) << e.name;
    }
  OptimizerState back_none;
  read_checkpoint_tensors(with_none, t.table, params.data(), &back_none);
  EXPECT_TRUE(back_none.tensors.empty());

  // A checkpoint resumes only with the optimizer it was saved with: the names say which.
  const std::string adamw = t.write(d.path / "adamw", 2);
  const std::string e = error_of([&] { read_checkpoint_tensors(adamw, t.table, params.data(), &back); });
  EXPECT_NE(e.find("holds the optimizer state exp_avg, exp_avg_sq, but the optimizer (optim.name) keeps "
                   "momentum_buffer"),
            std::string::npos)
      << e;
  OptimizerState adam;
  adam.names = kAdamW;
  const std::string e2 = error_of([&] { read_checkpoint_tensors(with_none, t.table, params.data(), &adam); });
  EXPECT_NE(e2.find("holds the optimizer state none, but the optimizer (optim.name) keeps exp_avg, exp_avg_sq"),
            std::string::npos)
      << e2;
}

// Found by fuzz.train_state under UBSan: an integer too long for int64 parses as a double, which nlohmann's get<>
// converted to int64 (undefined behaviour); a fraction was truncated and -1 wrapped into the uint64 epoch.
// eval and generate run a checkpoint's model with the attention kernel its run recorded, where the device has it.
TEST(CkptCheckpoint, RecordedAttentionIsTheRunsWhereTheDeviceHasIt) {
  const testing::TestDir d;
  const Tensors t(0.5f);
  auto checkpoint = [&](const std::string& name, const std::string& recipe) {
    TrainState s = t.state(1);
    s.recipe = recipe;
    return write_checkpoint((d.path / name).string(), {&t.table, t.params.data(), &t.optimizer}, s, 0);
  };
  const std::string wgmma = checkpoint("wgmma", "train:\n  attention: wgmma\n");
  EXPECT_EQ(recorded_attention(wgmma, Device::cuda), AttentionKernel::wgmma);
  EXPECT_EQ(recorded_attention(wgmma, Device::cpu), AttentionKernel::automatic);
  const std::string fp32 = checkpoint("fp32", "train:\n  attention: fp32\n");
  EXPECT_EQ(recorded_attention(fp32, Device::cpu), AttentionKernel::fp32);
  EXPECT_EQ(recorded_attention(fp32, Device::cuda), AttentionKernel::fp32);
  const std::string cpu_bf16 = checkpoint("cpu_bf16", "train:\n  attention: cpu_bf16\n");
  EXPECT_EQ(recorded_attention(cpu_bf16, Device::cpu), AttentionKernel::cpu_bf16);
  EXPECT_EQ(recorded_attention(cpu_bf16, Device::cuda), AttentionKernel::automatic);
  EXPECT_EQ(recorded_attention(checkpoint("older", "run: {}\n"), Device::cuda), AttentionKernel::automatic);
  EXPECT_EQ(recorded_attention(d.path.string(), Device::cuda), AttentionKernel::automatic) << "no checkpoint";
  const std::string bad =
      error_of([&] { recorded_attention(checkpoint("bad", "train: {attention: wmma}\n"), Device::cuda); });
  EXPECT_NE(bad.find("train_state.json: train.attention"), std::string::npos) << bad;
}

TEST(CkptCheckpoint, TrainStateIntegersMustBeIntegersInRange) {
  const Tensors t(0.25f);
  const nlohmann::json good = train_state_to_json(t.state(7));
  EXPECT_EQ(train_state_from_json(good, "ts.json").batch, 3);
  for (const auto& [key, value, message] :
       {std::tuple{"batch", nlohmann::json(4.88e82), "ts.json: data: 'batch' is 4.88e+82, expected an integer"},
        std::tuple{"batch", nlohmann::json(2.5), "'batch' is 2.5, expected an integer"},
        std::tuple{"epoch", nlohmann::json(-1), "'epoch' is -1, expected an integer in [0, "},
        std::tuple{"seq_len", nlohmann::json(0), "'seq_len' is 0, expected an integer in [1, "}}) {
    nlohmann::json bad = good;
    bad["data"][key] = value;
    EXPECT_NE(error_of([&] { train_state_from_json(bad, "ts.json"); }).find(message), std::string::npos)
        << error_of([&] { train_state_from_json(bad, "ts.json"); });
  }
  nlohmann::json huge_step = good;
  huge_step["step"] = nlohmann::json(18446744073709551615ull);
  EXPECT_NE(error_of([&] { train_state_from_json(huge_step, "ts.json"); }).find("'step' is 18446744073709551615"),
            std::string::npos);
}

TEST(CkptCheckpoint, ManifestNamesTheBadFile) {
  testing::TestDir d;
  const std::string dir = Tensors(1.0f).write(d.path, 3);
  verify_manifest(dir, {"model.safetensors"});
  flip_byte(fs::path(dir) / "optim.safetensors", 4000);
  EXPECT_NE(error_of([&] { verify_manifest(dir, {}); }).find("optim.safetensors: checksum mismatch"),
            std::string::npos);
  fs::resize_file(fs::path(dir) / "model.safetensors", 100);
  EXPECT_NE(error_of([&] {
              read_checkpoint_state(dir, CheckpointRead::weights);
            }).find("model.safetensors: 100 bytes, MANIFEST.json says"),
            std::string::npos);
  fs::remove(fs::path(dir) / "MANIFEST.json");
  EXPECT_NE(error_of([&] { verify_manifest(dir, {}); }).find("missing MANIFEST.json"), std::string::npos);
}

// Review 2026-12-03, case 89: step 6's weights copied into step 4 with their manifest lines resumed silently. The
// tensor files name their step; the copy is refused by name, while a manifest-consistent checkpoint still reads.
TEST(CkptCheckpoint, TensorsOfAnotherStepAreRefusedEvenWithTheirManifestLines) {
  testing::TestDir d;
  const Tensors t(1.0f);
  const std::string four = t.write(d.path, 4), six = Tensors(2.0f).write(d.path, 6);
  const fs::path manifest = fs::path(four) / "MANIFEST.json";
  nlohmann::json m = nlohmann::json::parse(read_text_file(manifest.string()));
  const nlohmann::json m6 = nlohmann::json::parse(read_text_file((fs::path(six) / "MANIFEST.json").string()));
  for (const char* file : {"model.safetensors", "optim.safetensors"}) {
    fs::copy_file(fs::path(six) / file, fs::path(four) / file, fs::copy_options::overwrite_existing);
    m["files"][file] = m6["files"][file];
  }
  write_text_file_atomic(manifest.string(), m.dump());
  read_checkpoint_state(four, CheckpointRead::weights_and_optimizer);  // the manifest agrees with the files
  std::vector<float> p(t.table.total());
  OptimizerState state;
  state.names = kAdamW;
  const std::string e = error_of([&] { read_checkpoint_tensors(four, t.table, p.data(), &state); });
  EXPECT_NE(e.find("model.safetensors: holds the tensors of step 6, but train_state.json beside it is step 4"),
            std::string::npos)
      << e;
  read_checkpoint_tensors(six, t.table, p.data(), &state);
  EXPECT_EQ(p[0], 2.0f);
}

// Review 2026-12-03, W3 (cases 86-88): a manifest that leaves a file out, or of another format, verified nothing.
TEST(CkptCheckpoint, ManifestMustListWhatIsReadAndBeOfThisFormat) {
  testing::TestDir d;
  const std::string dir = Tensors(1.0f).write(d.path, 3);
  const fs::path path = fs::path(dir) / "MANIFEST.json";
  const nlohmann::json good = nlohmann::json::parse(read_text_file(path.string()));
  auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json m = good;
    edit(m);
    write_text_file_atomic(path.string(), m.dump());
  };
  with([](nlohmann::json& m) { m["files"].erase("model.safetensors"); });
  EXPECT_NE(error_of([&] {
              read_checkpoint_state(dir, CheckpointRead::weights);
            }).find("does not list model.safetensors, which the checkpoint holds and replica reads"),
            std::string::npos);
  with([](nlohmann::json& m) { m["files"].erase("optim.safetensors"); });
  EXPECT_NO_THROW(read_checkpoint_state(dir, CheckpointRead::weights));  // generate reads no moments
  EXPECT_NE(error_of([&] {
              read_checkpoint_state(dir, CheckpointRead::weights_and_optimizer);
            }).find("does not list optim.safetensors"),
            std::string::npos);
  with([](nlohmann::json& m) { m["version"] = 99; });
  EXPECT_NE(error_of([&] { verify_manifest(dir, {}); }).find("'version' is 99, expected 1"), std::string::npos);
  with([](nlohmann::json& m) { m["hash"] = "md5"; });
  EXPECT_NE(error_of([&] { verify_manifest(dir, {}); }).find("'hash' is \"md5\", expected \"xxh3_128\""),
            std::string::npos);
  with([](nlohmann::json& m) { m.erase("version"); });
  EXPECT_NE(error_of([&] { verify_manifest(dir, {}); }).find("'version' is missing"), std::string::npos);
}

// Review 2026-12-03, W1 (case 90): a step directory linked in from another run was counted as this run's, and
// rotation deleted that run's MANIFEST.json through the link.
TEST(CkptCheckpoint, RotationNeverFollowsALinkedStepDirectory) {
  testing::TestDir d;
  const fs::path mine = d.path / "mine", theirs = d.path / "theirs";
  const std::string victim = Tensors(2.0f).write(theirs, 4);
  fs::create_directories(mine);
  fs::create_directory_symlink(fs::path("..") / "theirs" / "step00000004", mine / "step00000001");
  const IncompleteCheckpoints said = set_aside_incomplete_checkpoints(mine.string(), "");
  ASSERT_EQ(said.linked.size(), 1u);
  EXPECT_NE(said.linked[0].find("a symbolic link (to ../theirs/step00000004)"), std::string::npos) << said.linked[0];
  EXPECT_TRUE(said.set_aside.empty());
  EXPECT_EQ(find_latest_checkpoint(mine.string()), "");  // the link is not a checkpoint of this run
  const Tensors t(1.0f);
  t.write(mine, 5, /*keep=*/1);
  t.write(mine, 6, /*keep=*/1);
  EXPECT_TRUE(fs::exists(fs::path(victim) / "MANIFEST.json"));  // the other run's checkpoint is whole
  EXPECT_NO_THROW(verify_manifest(victim, {"model.safetensors", "optim.safetensors", "train_state.json"}));
  EXPECT_TRUE(fs::is_symlink(mine / "step00000001"));  // not ours to delete either
  EXPECT_FALSE(fs::exists(mine / "step00000005"));     // rotation of our own still works
}

TEST(CkptCheckpoint, RefusesBf16TensorsAndOtherModels) {
  testing::TestDir d;
  const Tensors t(1.0f);
  const std::string dir = t.write(d.path, 2);
  std::vector<StTensorOut> bf16;
  for (const model::ParamEntry& e : t.table.entries())
    bf16.push_back({e.name, e.shape, t.params.data() + e.offset, StDtype::BF16});
  write_safetensors((fs::path(dir) / "model.safetensors").string(), bf16);
  write_manifest(dir, {"model.safetensors", "optim.safetensors", "train_state.json"});
  std::vector<float> out(t.table.total());
  EXPECT_NE(error_of([&] { read_checkpoint_tensors(dir, t.table, out.data()); }).find("is not F32"), std::string::npos);
  model::ModelConfig wider = t.config;
  wider.ffn_hidden = 32;
  EXPECT_NE(error_of([&] { check_same_model(t.config, wider, dir); })
                .find("different model: intermediate_size: checkpoint 24, expected 32"),
            std::string::npos);
}

TEST(CkptCheckpoint, RetentionKeepsTheNewest) {
  testing::TestDir d;
  const Tensors t(1.0f);
  for (int64_t step = 1; step <= 5; step++) t.write(d.path, step, 2);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(d.path)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"latest", "step00000004", "step00000005"}));
  // A resumed older timeline: the checkpoint just written always stays, newer ones are left alone.
  t.write(d.path, 2, 1);
  EXPECT_TRUE(fs::exists(d.path / "step00000002"));
  EXPECT_TRUE(fs::exists(d.path / "step00000005"));
  EXPECT_EQ(find_latest_checkpoint(d.path.string()), (d.path / "step00000002").string());
}

TEST(CkptCheckpoint, LatestAndIncompleteCheckpoints) {
  testing::TestDir d;
  EXPECT_EQ(find_latest_checkpoint(d.path.string()), "");
  const Tensors t(1.0f);
  t.write(d.path, 4);
  t.write(d.path, 8);
  // A crash mid-save leaves a .partial directory; a crash mid-deletion a directory without manifest.
  fs::create_directories(d.path / "step00000012.partial");
  fs::copy(d.path / "step00000008", d.path / "step00000016");
  fs::remove(d.path / "step00000016" / "MANIFEST.json");
  EXPECT_EQ(find_latest_checkpoint(d.path.string()), (d.path / "step00000008").string());
  fs::remove(d.path / "latest");  // a crash between the rename and `latest`: the highest complete step
  EXPECT_EQ(find_latest_checkpoint(d.path.string()), (d.path / "step00000008").string());
  fs::copy(d.path / "step00000008", d.path / "step00000020");  // the one train.resume_from names
  fs::remove(d.path / "step00000020" / "MANIFEST.json");
  const IncompleteCheckpoints said =
      set_aside_incomplete_checkpoints(d.path.string(), (d.path / "step00000020").string());
  EXPECT_FALSE(fs::exists(d.path / "step00000012.partial"));
  EXPECT_FALSE(fs::exists(d.path / "step00000016"));
  EXPECT_TRUE(fs::exists(d.path / "step00000004"));
  // Nothing a user may want is deleted: a step directory without a manifest is set aside, and said so.
  EXPECT_TRUE(fs::exists(d.path / "step00000016.incomplete" / "model.safetensors"));
  EXPECT_TRUE(fs::exists(d.path / "step00000020" / "model.safetensors"));
  ASSERT_EQ(said.removed.size(), 1u);
  ASSERT_EQ(said.set_aside.size(), 1u);
  EXPECT_NE(said.removed[0].find("step00000012.partial"), std::string::npos);
  EXPECT_NE(said.set_aside[0].find("step00000016.incomplete"), std::string::npos);
  // A second one of the same name does not overwrite the first.
  fs::copy(d.path / "step00000008", d.path / "step00000016");
  fs::remove(d.path / "step00000016" / "MANIFEST.json");
  set_aside_incomplete_checkpoints(d.path.string(), "");
  EXPECT_TRUE(fs::exists(d.path / "step00000016.incomplete.2"));
  EXPECT_FALSE(fs::exists(d.path / "step00000020"));
}

// Reliability review #17: `latest` naming another run's checkpoint was followed silently.
TEST(CkptCheckpoint, LatestNamingAnotherRunIsRefused) {
  testing::TestDir d;
  const fs::path run = d.path / "run" / "checkpoints", other = d.path / "other" / "checkpoints";
  fs::create_directories(run);
  fs::create_directories(other);
  const Tensors t(1.0f);
  t.write(run, 2);
  t.write(other, 4);
  for (const std::string& name :
       {std::string("../../other/checkpoints/step00000004"), (other / "step00000004").string(), std::string("..")}) {
    write_text_file_atomic((run / "latest").string(), name + "\n");
    const std::string message = error_of([&] { find_latest_checkpoint(run.string()); });
    EXPECT_NE(message.find("latest: names '" + name + "', which is not a checkpoint directory of this run"),
              std::string::npos)
        << message;
  }
  write_text_file_atomic((run / "latest").string(), "step00000002\n");
  EXPECT_EQ(find_latest_checkpoint(run.string()), (run / "step00000002").string());
}

TEST(CkptCheckpoint, SaverWritesTheSnapshot) {
  testing::TestDir d;
  Tensors t(1.0f);
  std::vector<float> m = t.m;
  CheckpointSaver saver(d.path.string(), 0, kAdamW);
  const size_t bytes = t.table.total() * sizeof(float);
  EXPECT_FALSE(saver.save(t.table, [&](float* p_out, OptimizerState& state) {
    ASSERT_EQ(state.names, kAdamW);
    std::memcpy(p_out, t.params.data(), bytes);
    std::memcpy(state.tensors[0].data(), m.data(), bytes);
    std::memcpy(state.tensors[1].data(), t.v.data(), bytes);
  }, t.state(1)));
  const std::vector<float> saved = t.params;
  std::fill(t.params.begin(), t.params.end(), -1.0f);  // training goes on while the save runs
  std::fill(m.begin(), m.end(), -1.0f);
  const std::optional<SaveResult> r = saver.wait();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->step, 1);
  EXPECT_EQ(r->dir, (d.path / "step00000001").string());
  std::vector<float> p(t.table.total());
  OptimizerState read;
  read.names = kAdamW;
  read_checkpoint_tensors(r->dir, t.table, p.data(), &read);
  const model::ParamEntry& e = t.table.at("lm_head.weight");
  EXPECT_EQ(p[e.offset + 5], saved[e.offset + 5]);
  EXPECT_EQ(read.tensors[0][e.offset + 5], t.m[e.offset + 5]);
  EXPECT_FALSE(saver.poll());
}

TEST(CkptCheckpoint, MetricsTruncatedToTheResumedStep) {
  testing::TestDir d;
  const std::string path = (d.path / "metrics.jsonl").string();
  write_text_file_atomic(path, "{\"step\":0,\"eval\":{}}\n{\"step\":1,\"loss\":2.5}\n{\"step\":2,\"loss\":2.25}\n"
                               "{\"step\":2,\"eval\":{}}\n{\"step\":3,\"loss\":2.0}\n{\"step\":4,\"lo");
  train::truncate_metrics(path, 2);
  EXPECT_EQ(read_text_file(path),
            "{\"step\":0,\"eval\":{}}\n{\"step\":1,\"loss\":2.5}\n{\"step\":2,\"loss\":2.25}\n"
            "{\"step\":2,\"eval\":{}}\n");
  train::truncate_metrics(path, -1);  // a fresh start
  EXPECT_EQ(read_text_file(path), "");
}

// Review 2026-12-03, cases 24-25: every line that did not parse was dropped, so a corrupt line in the middle (or a
// metrics.jsonl replaced by an HTML page) lost the history without a word.
TEST(CkptCheckpoint, MetricsTruncationRefusesACorruptLineBeforeTheLast) {
  testing::TestDir d;
  const std::string path = (d.path / "metrics.jsonl").string();
  const std::string text = "{\"step\":1,\"loss\":2.5}\nGARBAGE{not json\n{\"step\":2,\"loss\":2.25}\n";
  write_text_file_atomic(path, text);
  EXPECT_NE(error_of([&] { train::truncate_metrics(path, 2); }).find("metrics.jsonl:2: not a metrics record"),
            std::string::npos);
  EXPECT_EQ(read_text_file(path), text);  // untouched
  write_text_file_atomic(path, "<!DOCTYPE html>\n<html>\n");
  EXPECT_NE(error_of([&] { train::truncate_metrics(path, 2); }).find("metrics.jsonl:1: not a metrics record"),
            std::string::npos);
  write_text_file_atomic(path, "{\"step\":1,\"loss\":2.5}\n\n{\"step\":2,\"loss\":2.25}");  // unterminated, whole
  train::truncate_metrics(path, 2);
  EXPECT_EQ(read_text_file(path), "{\"step\":1,\"loss\":2.5}\n{\"step\":2,\"loss\":2.25}\n");
}

}  // namespace
}  // namespace replica::ckpt
