// Every scoring surface against tools/reference/eval_ref.py (float64 PyTorch, written from lm-eval's and
// OLMo-core's definitions) on a tiny random model with the real dolma2 vocabulary: held-out loss per truncated
// document, Paloma rolling-window perplexity and bits per byte, every task's per-choice log-likelihoods (with
// left truncation) and the acc / acc_norm / len_norm recomputed by hand from them, and KL / top-1 agreement.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numbers>

#include "cl100k_tokenizer.h"
#include "replica/ckpt/hf.h"
#include "replica/core/pystr.h"
#include "replica/data/tokenizer.h"
#include "replica/eval/heldout.h"
#include "replica/eval/kl.h"
#include "replica/eval/perplexity.h"
#include "replica/eval/task_scoring.h"

using namespace replica;
using namespace replica::eval;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

void python(const std::string& args) {
  const std::string cmd = "/usr/bin/python3 " + kSourceDir + "/tools/reference/eval_ref.py " + args;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

// Documents of real text (one non-ASCII, some longer than the 32-token window and the 48-token truncation).
std::vector<std::string> texts() {
  std::string long_text;
  for (int i = 0; i < 6; i++) long_text += "The quick brown fox jumps over the lazy dog number " + std::to_string(i) + ". ";
  return {long_text, "Short one.", "Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e \u2014 na\u00efve fa\u00e7ade, \u65e5\u672c\u8a9e.",
          "def f(x):\n    return x * 2  # doubles\n\nprint(f(21))\n" + long_text};
}

// Checks that every pass reports exactly the work it announced (the progress line's done / total).
struct CountingProgress final : Progress {
  std::string what;
  int64_t total = -1, done = 0;
  void start(const std::string& w, int64_t t) override {
    check_finished();
    what = w, total = t, done = 0;
  }
  void advance(int64_t amount) override { done += amount; }
  void check_finished() const {
    if (total >= 0) {
      EXPECT_EQ(done, total) << what;
    }
  }
};

}  // namespace

TEST(EvalReference, AllSurfacesMatchPyTorch) {
  const fs::path dir = fs::temp_directory_path() / ("replica_eval_ref_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  python("model --out " + (dir / "a").string() + " --seed 1");
  python("model --out " + (dir / "b").string() + " --seed 2");
  const data::Tokenizer tok = data::Tokenizer::load(kSourceDir + "/tests/fixtures/data/cl100k_base.tiktoken");
  const uint32_t eos = data::kDolma2Eos;
  std::vector<uint32_t> tokens;
  int64_t bytes = 0;
  for (const std::string& t : texts()) {
    tok.encode_ordinary(t, tokens);
    tokens.push_back(eos);
    bytes += int64_t(t.size());
  }
  const std::string token_file = (dir / "docs.npy").string();
  std::ofstream(token_file, std::ios::binary).write(reinterpret_cast<const char*>(tokens.data()), std::streamsize(tokens.size() * 4));

  ckpt::HfModel a = ckpt::load_hf_model((dir / "a").string()), b = ckpt::load_hf_model((dir / "b").string());
  model::Transformer model(a.config, Precision::fp32, model::Remat::none, cpu_backend()),
      other(b.config, Precision::fp32, model::Remat::none, cpu_backend());
  const std::vector<data::MixEntry> files = {{"docs", token_file}};

  data::FslDataset set(files, 48, data::TokenDtype::u32, uint32_t(a.config.vocab_size));
  model::WeightSource &weights = model.whole_weights(a.params.data()),
                      &other_weights = other.whole_weights(b.params.data());
  CountingProgress progress;
  const HeldoutResult h = heldout_loss(model, weights, set, 2, 0, progress);
  EXPECT_EQ(h.seq_len, 48);
  EXPECT_EQ(h.docs, int64_t(texts().size()));
  const PerplexityResult p = domain_perplexity(model, weights, tok, files, 32, 0, 96, progress);
  const std::vector<DomainKl> kl = domain_kl(model, weights, other, other_weights, files, 32, 100, progress);

  json jobs = json::array();
  const std::string A = (dir / "a").string();
  jobs.push_back({{"kind", "heldout"}, {"model", A}, {"tokens", token_file}, {"seq_len", 48}, {"eos", eos}});
  jobs.push_back({{"kind", "rolling"}, {"model", A}, {"tokens", token_file}, {"window", 32}, {"eos", eos}});
  jobs.push_back({{"kind", "kl"}, {"reference", A}, {"model", (dir / "b").string()}, {"tokens", token_file},
                  {"window", 32}, {"eos", eos}, {"max_positions", 100}});
  struct Case {
    Task task;
    TaskResult result;
    int64_t max_length;
  };
  std::vector<Case> cases;
  for (TaskFormat f : {TaskFormat::lm_eval, TaskFormat::olmes})
    for (const std::string& name : task_names()) {
      TaskSpec s;
      s.name = name;
      s.path = kSourceDir + "/tests/fixtures/eval/" + name + ".jsonl";
      if (name == "mmlu") s.fewshot_path = kSourceDir + "/tests/fixtures/eval/mmlu_dev.jsonl", s.num_fewshot = 5;
      const int64_t max_length = name == "mmlu" ? 64 : 0;  // 5-shot MMLU prompts are left-truncated to 64
      Task t = load_task(s, f);
      TaskResult r = evaluate_task(model, weights, tok, t, max_length, 256, progress);
      json reqs = json::array();
      for (const TaskDoc& d : t.docs)
        for (const Request& q : d.requests) {
          TokenPair pair = encode_pair(tok, q, f, int32_t(eos));
          reqs.push_back({{"context", pair.context}, {"continuation", pair.continuation}});
        }
      jobs.push_back({{"kind", "score"}, {"model", A}, {"max_length", max_length > 0 ? max_length : 512}, {"requests", reqs}});
      cases.push_back({std::move(t), std::move(r), max_length});
    }
  progress.check_finished();
  EXPECT_GT(progress.done, 0);
  std::ofstream(dir / "jobs.json") << jobs.dump();
  python("jobs " + (dir / "jobs.json").string() + " " + (dir / "out.json").string());
  json out;
  std::ifstream(dir / "out.json") >> out;

  // Held-out: Σ over truncated documents of the CE of the predicted tokens.
  EXPECT_EQ(h.tokens, out[0]["tokens"].get<int64_t>());
  EXPECT_NEAR(h.files[0].nll, out[0]["nll"].get<double>(), 1e-6 * out[0]["nll"].get<double>());
  EXPECT_EQ(h.files[0].docs, 4);
  // Perplexity: rolling windows score every token once; bytes are the UTF-8 bytes of the original text.
  const DomainPerplexity& d = p.domains[0];
  EXPECT_EQ(d.tokens, out[1]["tokens"].get<int64_t>());
  EXPECT_EQ(d.tokens, int64_t(tokens.size()) - 4);
  EXPECT_EQ(d.bytes, bytes);
  EXPECT_NEAR(d.nll, out[1]["nll"].get<double>(), 1e-6 * out[1]["nll"].get<double>());
  EXPECT_NEAR(d.bits_per_byte(), out[1]["nll"].get<double>() / (double(bytes) * std::numbers::ln2), 1e-5);
  // ppl = exp(nll / tokens): the nll's relative bound, in log space (an absolute bound on a ppl near 1e5 is not one).
  const double nll_per_token = out[1]["nll"].get<double>() / double(d.tokens);
  EXPECT_NEAR(std::log(d.ppl()), nll_per_token, 1e-6 * nll_per_token);
  // KL(a ‖ b) and top-1 agreement over the same windows.
  EXPECT_EQ(kl[0].stats.positions, 100);
  EXPECT_NEAR(kl[0].stats.kl_mean(), out[2]["kl_mean"].get<double>(), 1e-5);
  EXPECT_NEAR(kl[0].stats.kl_max, out[2]["kl_max"].get<double>(), 1e-4);
  EXPECT_NEAR(kl[0].stats.top1(), out[2]["top1"].get<double>(), 1e-12);
  EXPECT_GT(kl[0].stats.kl_mean(), 0.1);  // two different random models

  // Tasks: per-choice log-likelihoods, then the metrics by hand from the reference values.
  for (size_t c = 0; c < cases.size(); c++) {
    const Task& t = cases[c].task;
    const TaskResult& r = cases[c].result;
    const json& ref = out[3 + c];
    SCOPED_TRACE(t.name + " " + task_format_name(t.format));
    size_t k = 0;
    double acc = 0, norm = 0, bpb = 0;
    for (size_t i = 0; i < t.docs.size(); i++) {
      const TaskDoc& doc = t.docs[i];
      std::vector<double> ll, normed;
      for (size_t j = 0; j < doc.requests.size(); j++, k++) {
        ll.push_back(ref[k]["logprob"].get<double>());
        EXPECT_NEAR(r.logprobs[i][j], ll.back(), 2e-4 + 1e-6 * std::fabs(ll.back()));
        const std::string& unit = t.format == TaskFormat::lm_eval ? doc.choices[j] : doc.requests[j].continuation;
        normed.push_back(ll.back() / double(py::len(unit)));
      }
      acc += (std::max_element(ll.begin(), ll.end()) - ll.begin()) == doc.gold;
      norm += (std::max_element(normed.begin(), normed.end()) - normed.begin()) == doc.gold;
      bpb += -ll[size_t(doc.gold)] / double(doc.requests[size_t(doc.gold)].continuation.size()) * std::numbers::log2e;
    }
    const double n = double(t.docs.size());
    for (const MetricValue& m : r.metrics) {
      const double want = m.name == "acc" ? acc / n : m.name == "bpb" ? bpb / n : norm / n;
      EXPECT_NEAR(m.value, want, m.name == "bpb" ? 1e-5 : 1e-12) << m.name;
    }
  }
  // Shared forwards: MMLU's four one-token continuations share each document's input.
  EXPECT_EQ(cases[7].result.requests, 12);
  EXPECT_EQ(cases[7].result.forwards, 3);
  fs::remove_all(dir);
}
