// A model's weights read from disk one group at a time (the embedding, each block, the head group: ParamTable's
// ranges), as the forward acquires them, and freed when it releases them: a model evaluated this way holds one group
// of weights in memory (two when the LM head is tied to the embedding), not the whole model, so a 7B model (29 GB in
// fp32) is evaluated in about 1.6 GB of weights. The values are the file's, so the results are bitwise those of the
// model read whole (WholeWeights): the same fp32 numbers, and in bf16 precision the same rounding, group by group.
// Each forward reads the model again (from the page cache when it fits there, else from disk).
#pragma once
#include <map>
#include <string>

#include "replica/ckpt/model_tensors.h"
#include "replica/kernels/backend.h"
#include "replica/model/weight_source.h"

namespace replica::ckpt {

class StreamedWeights final : public model::WeightSource {
 public:
  // An HF model directory or a replica checkpoint, laid out by `table` (of the model's config); opened and checked
  // here (ModelTensors), read on acquire.
  StreamedWeights(const std::string& dir, const model::ParamTable& table, Backend& backend);

  model::GroupWeights acquire(model::ParamTable::Range range, Precision precision) override;
  void release(model::ParamTable::Range range) override;

  // The most weight bytes held at once so far (fp32 and bf16 copies), and how many group reads there were.
  size_t peak_bytes() const { return peak_bytes_; }
  int64_t reads() const { return reads_; }

  // The most weight bytes a forward holds at once: the largest group, or the head group with the embedding when the
  // LM head is tied to it (its loss holds both); with their bf16 copies in bf16 precision.
  static size_t planned_bytes(const model::ParamTable& table, Precision precision);

 private:
  struct Held {
    DeviceArray<float> f32;
    DeviceArray<bf16> b16;
    int users = 0;
  };
  ModelTensors tensors_;
  Backend& be_;
  std::map<size_t, Held> held_;  // by range.begin
  size_t held_bytes_ = 0, peak_bytes_ = 0;
  int64_t reads_ = 0;
};

}  // namespace replica::ckpt
