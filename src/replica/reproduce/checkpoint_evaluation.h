// Everything `replica reproduce` computes with one checkpoint's model, in one load: its suite results, its logits on
// the KL tokens written to disk (a reference), its KL against a reference's logits on disk (a candidate). The model
// is freed on return, so the series' models are in memory one at a time; with WeightsMode::streamed not even one
// model is: its weights are read from disk a group at a time (ckpt/streamed_weights.h), with bitwise the same results.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "replica/data/tokenizer.h"
#include "replica/eval/parity.h"
#include "replica/eval/progress.h"
#include "replica/eval/suite.h"
#include "replica/kernels/backend.h"
#include "replica/reproduce/logit_parity.h"

namespace replica::reproduce {

enum class WeightsMode { resident, streamed };
const char* weights_mode_name(WeightsMode mode);  // "resident", "streamed"

struct CheckpointJobs {
  bool suite = false;          // run the suite
  std::string write_logits;    // write the model's logits here (empty: no)
  std::string compare_logits;  // compare with the reference logits here (empty: no)
};

struct CheckpointOutputs {
  std::optional<nlohmann::json> suite;  // SuiteResults::to_json
  std::optional<eval::ParityStats> parity;
};

CheckpointOutputs evaluate_checkpoint(const std::string& path, const CheckpointJobs& jobs, const eval::SuiteSpec& spec,
                                      const data::Tokenizer& tokenizer, const KlTokens& tokens, Precision precision,
                                      WeightsMode mode, Backend& backend, eval::Progress& progress);

}  // namespace replica::reproduce
