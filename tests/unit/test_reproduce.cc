// replica reproduce's pieces without a model: revision names, series directories and CSVs, pairing by step and by
// tokens, the verdict rule (tracking, drifting, diverged with what crossed first, the memorisation alarm), the
// streaming sha256, the file hashes remembered between runs, and the suite fingerprint that keys cached evaluations.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "replica/core/error.h"
#include "replica/core/sha256.h"
#include "replica/reproduce/checkpoint_series.h"
#include "replica/reproduce/content_hash.h"
#include "replica/reproduce/evaluation_cache.h"
#include "replica/reproduce/file_hash_cache.h"
#include "replica/reproduce/pairing.h"
#include "replica/reproduce/verdict.h"
#include "scratch_dir.h"

namespace replica::reproduce {
namespace {

namespace fs = std::filesystem;

void hf_dir(const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << "{}";
}

TEST(ReproduceSeries, RevisionNames) {
  auto c = parse_revision_name("stage2-ingredient1-step2000-tokens9B");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->stage, "stage2-ingredient1");
  EXPECT_EQ(c->step, 2000);
  ASSERT_TRUE(c->tokens);
  EXPECT_EQ(c->tokens->value, 9000000000);
  EXPECT_EQ(c->tokens->resolution, 1000000000);
  c = parse_revision_name("step1000");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->stage, "");
  EXPECT_FALSE(c->tokens);
  EXPECT_EQ(parse_revision_name("stage1-step1000")->label(), "stage1-step1000");
  EXPECT_FALSE(parse_revision_name("main"));
  EXPECT_FALSE(parse_revision_name("step1000.partial"));
  EXPECT_FALSE(parse_revision_name("stage1-stepX"));
}

TEST(ReproduceSeries, HfRevisionDirectoryAndCsv) {
  const fs::path dir = testing::scratch_dir("series_hf");
  for (const char* name : {"stage1-step2000-tokens9B", "stage1-step0", "stage1-step1000-tokens5B"}) hf_dir(dir / name);
  fs::create_directories(dir / "notes");  // not a revision: ignored
  const CheckpointSeries s = read_series(dir.string());
  EXPECT_EQ(s.kind, "HF revisions");
  ASSERT_EQ(s.checkpoints.size(), 3u);
  EXPECT_EQ(s.checkpoints[0].step, 0);
  EXPECT_EQ(s.checkpoints[2].step, 2000);
  EXPECT_EQ(s.checkpoints[2].tokens->value, 9000000000);

  const fs::path csv = dir / "series.csv";
  std::ofstream(csv) << "Stage,Step,Tokens,Checkpoint Directory\nstage1,1000,4194304000,stage1-step1000-tokens5B\n"
                        "stage1,0,0,"
                     << (dir / "stage1-step0").string() << "\nstage2,0,0,stage1-step0\n";
  EXPECT_THROW(read_series(csv.string()), Error);  // two stages without --stage
  const CheckpointSeries c = read_series(csv.string(), "stage1");
  EXPECT_EQ(c.kind, "CSV");
  ASSERT_EQ(c.checkpoints.size(), 2u);
  EXPECT_EQ(c.checkpoints[1].tokens->value, 4194304000);
  EXPECT_EQ(c.checkpoints[1].tokens->resolution, 0);

  std::ofstream(dir / "bad.csv") << "Stage,Step,Checkpoint Directory\nstage1,12x,stage1-step0\n";
  try {
    read_series((dir / "bad.csv").string());
    FAIL() << "a bad step was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv:2: Step '12x'"), std::string::npos) << e.what();
  }
  // A URL row is fetched when it is paired (reproduce/remote_checkpoint.h): read here as its URL, tokens from its name.
  std::ofstream(dir / "url.csv") << "Stage,Step,Checkpoint Directory\n"
                                    "stage1,1000,https://olmo-checkpoints.org/x/stage1-step1000-tokens5B/\n";
  const CheckpointSeries remote = read_series((dir / "url.csv").string());
  ASSERT_EQ(remote.checkpoints.size(), 1u);
  EXPECT_EQ(remote.checkpoints[0].url, "https://olmo-checkpoints.org/x/stage1-step1000-tokens5B/");
  EXPECT_EQ(remote.checkpoints[0].path, "");
  EXPECT_EQ(remote.checkpoints[0].tokens->value, 5000000000);
  std::ofstream(dir / "ftp.csv") << "Stage,Step,Checkpoint Directory\nstage1,0,ftp://olmo-checkpoints.org/x\n";
  EXPECT_THROW(read_series((dir / "ftp.csv").string()), Error);
  EXPECT_THROW(read_series((dir / "missing").string()), Error);
}

CheckpointSeries series(const std::vector<std::pair<int64_t, int64_t>>& step_tokens) {
  CheckpointSeries s{"s", "replica run", {}};
  for (auto [step, tokens] : step_tokens)
    s.checkpoints.push_back({step, "", "ckpt" + std::to_string(step), TokensSeen{tokens, 0}, ""});
  return s;
}

TEST(ReproducePairing, ByStepListsOneSidedSteps) {
  const CheckpointSeries ref = series({{2, 64}, {4, 128}, {8, 256}}), cand = series({{2, 64}, {4, 128}, {6, 192}, {8, 256}});
  const Pairing p = pair_series(ref, cand, PairBy::automatic);
  EXPECT_EQ(p.by, PairBy::step);
  EXPECT_NE(p.rule.find("32 tokens per step"), std::string::npos) << p.rule;
  ASSERT_EQ(p.pairs.size(), 3u);
  ASSERT_EQ(p.candidate_only.size(), 1u);
  EXPECT_EQ(p.candidate_only[0].step, 6);
  EXPECT_TRUE(p.reference_only.empty());
  const Pairing only = pair_series(ref, cand, PairBy::step, {4, 6});
  ASSERT_EQ(only.pairs.size(), 1u);
  EXPECT_EQ(only.pairs[0].candidate.step, 4);
}

TEST(ReproducePairing, ByTokensWhenTokensPerStepDiffer) {
  // The reference at 32 tokens per step, the candidate at 64: candidate step 2 pairs with reference step 4.
  const CheckpointSeries ref = series({{2, 64}, {4, 128}, {6, 192}, {8, 256}}), cand = series({{1, 64}, {2, 128}, {4, 256}});
  const Pairing p = pair_series(ref, cand, PairBy::automatic);
  EXPECT_EQ(p.by, PairBy::tokens);
  ASSERT_EQ(p.pairs.size(), 3u);
  EXPECT_EQ(p.pairs[1].candidate.step, 2);
  EXPECT_EQ(p.pairs[1].reference.step, 4);
  ASSERT_EQ(p.reference_only.size(), 1u);
  EXPECT_EQ(p.reference_only[0].step, 6);
  // A revision's rounded tokens pair within its resolution.
  CheckpointSeries hf = ref;
  hf.checkpoints[1].tokens = TokensSeen{100, 100};
  EXPECT_EQ(pair_series(hf, cand, PairBy::tokens).pairs.size(), 3u);
  CheckpointSeries unknown = ref;
  unknown.checkpoints[0].tokens.reset();
  EXPECT_THROW(pair_series(unknown, cand, PairBy::tokens), Error);
  EXPECT_EQ(pair_series(unknown, cand, PairBy::automatic).by, PairBy::step);
}

PairMeasure measure(int64_t step, double kl, double heldout_delta, std::optional<double> train_loss = std::nullopt) {
  PairMeasure m;
  m.step = m.reference_step = step;
  m.parity.positions = 10;
  m.parity.kl_sum = 10 * kl;
  m.surfaces = {{"heldout/loss", 3.0, 3.0 + heldout_delta}, {"perplexity/ppl", 20.0, 25.0}};
  m.train_loss = train_loss;
  return m;
}

TEST(ReproduceVerdict, TrackingDriftingDiverged) {
  const Bounds b;  // KL 0.01, loss 0.01, window 3, fraction 0.5
  SeriesVerdict v = judge({measure(1, 0, 0), measure(2, 0, 0), measure(3, 0, 0)}, b);
  EXPECT_EQ(v.verdict, Verdict::tracking);
  EXPECT_FALSE(v.diverged_at);
  // The bound use rises 0.2 → 0.4 → 0.7: drifting at the third pair (perplexity/ppl has no bound).
  v = judge({measure(1, 0.002, 0), measure(2, 0.004, 0), measure(3, 0.007, 0)}, b);
  EXPECT_EQ(v.verdict, Verdict::drifting);
  EXPECT_EQ(v.pairs[1].verdict, Verdict::tracking);
  // Rising but below half a bound, or not rising: tracking.
  EXPECT_EQ(judge({measure(1, 0.001, 0), measure(2, 0.002, 0), measure(3, 0.003, 0)}, b).verdict, Verdict::tracking);
  EXPECT_EQ(judge({measure(1, 0.006, 0), measure(2, 0.009, 0), measure(3, 0.008, 0)}, b).verdict, Verdict::tracking);
  // Diverged at the first pair outside, naming what is furthest over its bound there.
  v = judge({measure(1, 0, 0), measure(2, 0.02, 0.05), measure(3, 0.5, 0.5), measure(4, 0, 0)}, b);
  EXPECT_EQ(v.verdict, Verdict::diverged);
  EXPECT_EQ(v.diverged_at, 2);
  EXPECT_EQ(v.first_crossed, "heldout/loss");  // 5x its bound, KL 2x
  ASSERT_EQ(v.pairs[1].crossed.size(), 2u);
  EXPECT_EQ(v.pairs[1].crossed[1].name, "kl_mean");
  EXPECT_NE(v.summary().find("diverged at step 2 (heldout/loss"), std::string::npos) << v.summary();
}

TEST(ReproduceVerdict, MemorisationAlarm) {
  const Bounds b;
  // Training loss falls while the held-out Δ grows at every pair of the window (all within bounds).
  SeriesVerdict v = judge({measure(1, 0, 0.001, 5.0), measure(2, 0, 0.002, 4.5), measure(3, 0, 0.004, 4.0)}, b);
  ASSERT_TRUE(v.memorisation_alarm);
  EXPECT_EQ(v.memorisation_alarm->from_step, 1);
  EXPECT_EQ(v.memorisation_alarm->step, 3);
  v = judge({measure(1, 0, 0.001, 5.0), measure(2, 0, 0.002, 4.5), measure(3, 0, 0.001, 4.0)}, b);
  EXPECT_FALSE(v.memorisation_alarm);
  v = judge({measure(1, 0, 0.001), measure(2, 0, 0.002), measure(3, 0, 0.004)}, b);  // no training loss logged
  EXPECT_FALSE(v.memorisation_alarm);
}

TEST(ReproduceSha256, StreamingMatchesWhole) {
  std::string text;
  for (int i = 0; i < 1000; i++) text += std::to_string(i * 7919);
  for (size_t piece : {size_t(1), size_t(7), size_t(63), size_t(64), size_t(65), size_t(1000)}) {
    Sha256 sha;
    for (size_t at = 0; at < text.size(); at += piece) sha.update(text.data() + at, std::min(piece, text.size() - at));
    EXPECT_EQ(sha.hex(), sha256_hex(text.data(), text.size())) << piece;
  }
  EXPECT_EQ(sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ReproduceFileHashes, RememberedByPathSizeAndModificationTime) {
  const fs::path dir = testing::scratch_dir("file_hashes");
  const fs::path file = dir / "model.safetensors", cache = dir / "file_hashes.json";
  std::ofstream(file) << "weights, version 1";
  const std::string first = file_sha256(file.string());
  {
    FileHashCache hashes(cache.string());
    EXPECT_EQ(hashes.sha256(file.string()), first);
    EXPECT_EQ(hashes.sha256(file.string()), first);
    EXPECT_EQ(hashes.computed(), 1);  // read once, then remembered
    EXPECT_EQ(hashes.reused(), 1);
  }
  {
    FileHashCache hashes(cache.string());  // a later run: nothing read
    EXPECT_EQ(hashes.sha256(file.string()), first);
    EXPECT_EQ(hashes.computed(), 0);
    // The same size, new bytes, a new modification time: read again.
    std::ofstream(file) << "weights, version 2";
    fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(5));
    const std::string second = hashes.sha256(file.string());
    EXPECT_EQ(second, file_sha256(file.string()));
    EXPECT_NE(second, first);
    EXPECT_EQ(hashes.computed(), 1);
    // A hash given for the file as it is now (a download's) is taken as it is.
    hashes.remember(file.string(), std::string(64, 'a'));
    EXPECT_EQ(hashes.sha256(file.string()), std::string(64, 'a'));
    EXPECT_EQ(hashes.computed(), 1);
  }
  std::ofstream(cache) << "{\"format\": \"something else\", \"files\": {}}";
  EXPECT_THROW(FileHashCache(cache.string()), Error);
  std::ofstream(cache) << "{not json";
  EXPECT_THROW(FileHashCache(cache.string()), Error);
}

TEST(ReproduceFileHashes, AnHfDirectoryIsHashedOnceAcrossRuns) {
  const fs::path dir = testing::scratch_dir("content_hash_cached");
  hf_dir(dir / "hf");
  std::ofstream(dir / "hf" / "model.safetensors") << std::string(3 << 20, 'w');
  const std::string uncached = checkpoint_content_hash((dir / "hf").string());
  FileHashCache first((dir / "hashes.json").string());
  EXPECT_EQ(checkpoint_content_hash((dir / "hf").string(), &first), uncached);
  EXPECT_EQ(first.computed(), 2);  // config.json and the weights
  FileHashCache again((dir / "hashes.json").string());
  EXPECT_EQ(checkpoint_content_hash((dir / "hf").string(), &again), uncached);
  EXPECT_EQ(again.computed(), 0);
  EXPECT_EQ(again.reused(), 2);
}

// Every file an enabled surface reads is in the fingerprint (eval::Surface::input_files), so that new bytes in any
// of them mean evaluating again; a disabled surface's files are not.
TEST(ReproduceSuiteFingerprint, CoversTheFilesOfEveryEnabledSurface) {
  const fs::path dir = testing::scratch_dir("suite_fingerprint");
  auto file = [&](const std::string& name) {
    std::ofstream(dir / name) << "version 1";
    return (dir / name).string();
  };
  eval::SuiteSpec spec;
  spec.heldout.enabled = spec.perplexity.enabled = spec.tasks.enabled = spec.needle.enabled = true;
  spec.heldout.files = {{"heldout", file("heldout.npy")}};
  spec.perplexity.files = {{"wiki", file("wiki.npy")}};
  spec.tasks.list = {{"piqa", file("piqa.jsonl"), file("piqa_train.jsonl")}};
  spec.needle.files = {{"haystack", file("haystack.npy")}};
  spec.kl.files = {{"kl", file("kl.npy")}};  // no kl.reference: the KL surface is off
  std::string before = suite_fingerprint("suite.yaml", spec, "bf16");
  for (const char* name : {"heldout.npy", "wiki.npy", "piqa.jsonl", "piqa_train.jsonl", "haystack.npy"}) {
    std::ofstream(dir / name) << "version 2";
    const std::string after = suite_fingerprint("suite.yaml", spec, "bf16");
    EXPECT_NE(after, before) << name;
    before = after;
  }
  std::ofstream(dir / "kl.npy") << "version 2";
  EXPECT_EQ(suite_fingerprint("suite.yaml", spec, "bf16"), before);
}

}  // namespace
}  // namespace replica::reproduce
