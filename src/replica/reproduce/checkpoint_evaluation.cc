// One checkpoint loaded (whole, or group by group from its files), evaluated, freed.
#include "replica/reproduce/checkpoint_evaluation.h"

#include <memory>

#include "replica/ckpt/model_source.h"
#include "replica/ckpt/streamed_weights.h"
#include "replica/model/transformer.h"

namespace replica::reproduce {

const char* weights_mode_name(WeightsMode mode) { return mode == WeightsMode::streamed ? "streamed" : "resident"; }

CheckpointOutputs evaluate_checkpoint(const std::string& path, const CheckpointJobs& jobs, const eval::SuiteSpec& spec,
                                      const data::Tokenizer& tokenizer, const KlTokens& tokens, Precision precision,
                                      WeightsMode mode, Backend& backend, eval::Progress& progress) {
  // Resident: the whole fp32 buffer (on the backend), the model's view of it. Streamed: nothing until acquired.
  std::unique_ptr<ckpt::HfModel> whole;
  std::unique_ptr<OnBackend> params;
  std::unique_ptr<ckpt::StreamedWeights> streamed;
  model::ModelConfig config;
  if (mode == WeightsMode::resident) {
    whole = std::make_unique<ckpt::HfModel>(ckpt::load_model_source(path));
    params = std::make_unique<OnBackend>(backend, whole->params);
    config = whole->config;
  } else {
    config = ckpt::load_model_source_config(path);
    streamed = std::make_unique<ckpt::StreamedWeights>(path, model::ParamTable(config), backend);
  }
  model::Transformer model(config, precision, model::Remat::none, backend);
  model::WeightSource& weights = streamed ? *streamed : model.whole_weights(params->data());
  model.use_attention(ckpt::recorded_attention(path, backend.device()));
  CheckpointOutputs out;
  if (jobs.suite) out.suite = eval::run_suite(model, weights, spec, tokenizer, progress).to_json();
  if (!jobs.write_logits.empty()) write_reference_logits(model, weights, tokens, jobs.write_logits);
  if (!jobs.compare_logits.empty())
    out.parity = compare_with_reference_logits(model, weights, tokens, jobs.compare_logits);
  return out;
}

}  // namespace replica::reproduce
