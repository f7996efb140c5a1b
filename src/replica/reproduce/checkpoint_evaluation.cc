// One checkpoint loaded, evaluated, freed.
#include "replica/reproduce/checkpoint_evaluation.h"

#include "replica/ckpt/model_source.h"
#include "replica/model/transformer.h"

namespace replica::reproduce {

CheckpointOutputs evaluate_checkpoint(const std::string& path, const CheckpointJobs& jobs, const eval::SuiteSpec& spec,
                                      const data::Tokenizer& tokenizer, const KlTokens& tokens, Precision precision,
                                      Backend& backend, eval::Progress& progress) {
  ckpt::HfModel m = ckpt::load_model_source(path);
  model::Transformer model(m.config, precision, model::Remat::none, backend);
  model.use_attention(ckpt::recorded_attention(path, backend.device()));
  const OnBackend params(backend, m.params);
  model::WeightSource& weights = model.whole_weights(params.data());
  CheckpointOutputs out;
  if (jobs.suite) out.suite = eval::run_suite(model, weights, spec, tokenizer, progress).to_json();
  if (!jobs.write_logits.empty()) write_reference_logits(model, weights, tokens, jobs.write_logits);
  if (!jobs.compare_logits.empty())
    out.parity = compare_with_reference_logits(model, weights, tokens, jobs.compare_logits);
  return out;
}

}  // namespace replica::reproduce
