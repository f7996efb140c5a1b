// DataParallel: weight groups gathered as the model acquires them, gradient groups reduced as the backward completes
// them, the sharded norm, the update on the shard and the weight and moment gathers and scatters for checkpoints.
#include "replica/dist/data_parallel.h"

#include <algorithm>
#include <cmath>

#include "replica/core/error.h"
#include "replica/dist/collectives.h"

namespace replica {

// L = G / (W M), after checking that it is a whole number.
static int64_t local_micro_batches(int64_t global_batch, int64_t micro_batch, int world) {
  check(micro_batch > 0 && global_batch % (micro_batch * world) == 0,
        "data.global_batch_size={} must be a multiple of data.micro_batch_size={} times the {} ranks", global_batch,
        micro_batch, world);
  return global_batch / (micro_batch * world);
}

// The part of `range` inside shard [bounds[rank], bounds[rank + 1]) (empty when end <= begin).
static ParamTable::Range part_in_shard(ParamTable::Range range, const std::vector<size_t>& bounds, size_t rank) {
  return {std::max(range.begin, bounds[rank]), std::min(range.end, bounds[rank + 1])};
}

static size_t length(ParamTable::Range r) { return r.end > r.begin ? r.end - r.begin : 0; }

DataParallel::DataParallel(Communicator& control, Communicator& data, Backend& backend, const ParamTable& table,
                           AdamWConfig config, int64_t global_batch, int64_t micro_batch, Sharding sharding)
    : control_(control),
      data_(data),
      be_(backend),
      local_micro_(local_micro_batches(global_batch, micro_batch, control.size())),
      bounds_(shard_bounds(table.total(), control.size())),
      adamw_(table, config, bounds_[size_t(control.rank())], bounds_[size_t(control.rank()) + 1], backend),
      sharding_(sharding),
      weights_(backend, sharding.weights ? adamw_.end() - adamw_.begin() : table.total()),
      grads_(backend, adamw_.end() - adamw_.begin()),
      largest_group_(table.largest_group()),
      piece_(piece_floats(control.size(), sharding.receive_floats)) {
  check(data.size() == control.size() && data.rank() == control.rank(),
        "the data and control communicators disagree on rank or size");
  // Room for the other ranks' copies of one piece of this rank's largest part of a group.
  size_t largest_part = 0;
  for (ParamTable::Range g : table.groups())
    largest_part = std::max(largest_part, length(part_in_shard(g, bounds_, size_t(control.rank()))));
  if (control.size() > 1)
    received_ = DeviceArray<float>(backend, size_t(control.size() - 1) * std::min(piece_, largest_part));
  if (sharding.weights) gathered_ = std::make_unique<Gathered>(*this);
}

DataParallel::~DataParallel() = default;

void DataParallel::arrange(std::vector<int32_t>& rows, int64_t row_len) const {
  const int64_t L = local_micro_, M = int64_t(rows.size()) / (row_len * L);
  std::vector<int32_t> out(rows.size());
  for (int64_t k = 0; k < L; k++)
    for (int64_t i = 0; i < M; i++)
      std::copy_n(rows.begin() + (k + L * i) * row_len, row_len, out.begin() + (k * M + i) * row_len);
  rows.swap(out);
}

// The sink the backward writes into: each open group gets a zeroed buffer of group_grads_ (at most two are open at
// once: a block, and the embedding when the LM head is tied to it); closing it reduces the group.
class DataParallel::Groups final : public GradientSink {
 public:
  explicit Groups(DataParallel& dp) : dp_(dp) {}

  // At W = 1 the first micro-batch's groups go straight into the zeroed sum: the model adds into zeros either way,
  // and 0 + g is g up to the sign of a zero gradient, which neither the norm nor AdamW can see. This saves the
  // single-device step (L = 1) a pass over the group buffers without changing a bit of the weights or moments.
  bool direct = false;

  float* open(ParamTable::Range range) override {
    if (direct) return dp_.grads_.data() + range.begin;
    size_t slot = 0;
    while (slot < open_.size() && open_[slot]) slot++;
    if (slot == open_.size()) open_.push_back({});
    if (slot == dp_.group_grads_.size()) dp_.group_grads_.emplace_back(dp_.be_, dp_.largest_group_);
    open_[slot] = range;
    float* g = dp_.group_grads_[slot].data();
    dp_.be_.zero(g, length(range));
    return g;
  }

  void close(ParamTable::Range range) override {
    if (direct) return;
    for (size_t slot = 0; slot < open_.size(); slot++)
      if (open_[slot] && open_[slot]->begin == range.begin && open_[slot]->end == range.end) {
        dp_.reduce_group(range, dp_.group_grads_[slot].data());
        open_[slot].reset();
        return;
      }
    fail("gradient group [{}, {}) closed but not open", range.begin, range.end);
  }

 private:
  DataParallel& dp_;
  std::vector<std::optional<ParamTable::Range>> open_;  // by slot of group_grads_
};

// The model's view of sharded weights: each acquired group is gathered into a buffer of its own (at most two are
// acquired at once: the head group, and the embedding when the LM head is tied to it), every rank sending its part of
// the group to every other rank, and rounded to bf16 there when the model asks for bf16.
class DataParallel::Gathered final : public WeightSource {
 public:
  explicit Gathered(DataParallel& dp) : dp_(dp) {}

  GroupWeights acquire(ParamTable::Range range, Precision precision) override {
    size_t slot = 0;
    while (slot < acquired_.size() && acquired_[slot]) slot++;
    if (slot == acquired_.size()) {
      acquired_.push_back({});
      f32_.emplace_back(dp_.be_, dp_.largest_group_);
      b16_.emplace_back();
    }
    acquired_[slot] = range;
    float* group = f32_[slot].data();
    const size_t W = size_t(dp_.control_.size()), me = size_t(dp_.control_.rank());
    const ParamTable::Range mine = part_in_shard(range, dp_.bounds_, me);
    const float* my_part = length(mine) > 0 ? dp_.weights_.data() + (mine.begin - dp_.bounds_[me]) : nullptr;
    std::vector<Transfer> sends, recvs;
    for (size_t r = 0; r < W; r++) {
      if (r == me) continue;
      if (my_part) sends.push_back({int(r), const_cast<float*>(my_part), length(mine) * sizeof(float)});
      const ParamTable::Range theirs = part_in_shard(range, dp_.bounds_, r);
      if (length(theirs) > 0)
        recvs.push_back({int(r), group + (theirs.begin - range.begin), length(theirs) * sizeof(float)});
    }
    if (my_part) dp_.be_.copy(group + (mine.begin - range.begin), my_part, length(mine));
    if (W > 1) dp_.data_.exchange(sends, recvs);
    if (precision != Precision::bf16) return {group, nullptr, range.begin};
    if (b16_[slot].empty()) b16_[slot] = DeviceArray<bf16>(dp_.be_, dp_.largest_group_);
    dp_.be_.convert_to_bf16(group, b16_[slot].data(), length(range));
    return {group, b16_[slot].data(), range.begin};
  }

  void release(ParamTable::Range range) override {
    for (std::optional<ParamTable::Range>& r : acquired_)
      if (r && r->begin == range.begin && r->end == range.end) {
        r.reset();
        return;
      }
    fail("weight group [{}, {}) released but not acquired", range.begin, range.end);
  }

 private:
  DataParallel& dp_;
  std::vector<std::optional<ParamTable::Range>> acquired_;  // by slot
  std::vector<DeviceArray<float>> f32_;
  std::vector<DeviceArray<bf16>> b16_;
};

WeightSource& DataParallel::gathered_weights() {
  check(gathered_ != nullptr, "DataParallel: the weights are not sharded");
  return *gathered_;
}

void DataParallel::load_weights(const float* whole) {
  const size_t n = weights_.size();
  const bool root = control_.rank() == 0;
  std::vector<float> host(root && !sharding_.weights ? 0 : n);
  if (sharding_.weights) {
    scatter_from_root(control_, whole, bounds_, host.data());
  } else if (control_.size() > 1) {
    broadcast(control_, root ? const_cast<float*>(whole) : host.data(), n * sizeof(float));
  }
  be_.to_device(weights_.data(), host.empty() ? whole : host.data(), n * sizeof(float));
}

void DataParallel::gather_weights(float* whole) {
  if (!sharding_.weights) {
    if (control_.rank() == 0) be_.to_host(whole, weights_.data(), weights_.size() * sizeof(float));
    return;
  }
  std::vector<float> shard(weights_.size());
  be_.to_host(shard.data(), weights_.data(), shard.size() * sizeof(float));
  gather_to_root(control_, shard.data(), bounds_, whole);
}

// Every rank sends each other rank the part of the group in that rank's shard, and adds the W copies of its own part
// (its own included) into grads_ in rank order: in round k those are micro-batches c = W k + rank, so over the rounds
// every element sees micro-batch 0, 1, 2, ... in turn, whatever W is. The parts go in pieces of at most piece_ floats,
// every rank sending and receiving in each piece's exchange, so the receive buffer stays bounded and no link idles
// while another one carries a whole part.
void DataParallel::reduce_group(ParamTable::Range range, const float* group_grads) {
  const size_t W = size_t(control_.size()), me = size_t(control_.rank());
  std::vector<ParamTable::Range> parts(W);
  size_t pieces = 0;
  for (size_t r = 0; r < W; r++) {
    parts[r] = part_in_shard(range, bounds_, r);
    if (length(parts[r]) > 0) pieces = std::max(pieces, (length(parts[r]) - 1) / piece_ + 1);
  }
  for (size_t t = 0; t < pieces; t++) {
    auto piece = [&](size_t r) {  // piece t of rank r's part (empty once the part is done)
      const size_t begin = parts[r].begin + t * piece_;
      return begin < parts[r].end ? ParamTable::Range{begin, begin + std::min(piece_, parts[r].end - begin)}
                                  : ParamTable::Range{0, 0};
    };
    const ParamTable::Range mine = piece(me);
    const size_t n = length(mine);
    std::vector<const float*> copies(W);  // every rank's copy of this rank's piece, by rank
    std::vector<Transfer> sends, recvs;
    for (size_t r = 0; r < W; r++) {
      if (r == me) {
        if (n > 0) copies[r] = group_grads + (mine.begin - range.begin);
        continue;
      }
      const ParamTable::Range theirs = piece(r);
      if (length(theirs) > 0)
        sends.push_back(
            {int(r), const_cast<float*>(group_grads) + (theirs.begin - range.begin), length(theirs) * sizeof(float)});
      if (n > 0) {
        float* slot = received_.data() + recvs.size() * n;
        recvs.push_back({int(r), slot, n * sizeof(float)});
        copies[r] = slot;
      }
    }
    if (W > 1) data_.exchange(sends, recvs);
    if (n == 0) continue;
    float* sum = grads_.data() + (mine.begin - bounds_[me]);
    for (const float* copy : copies) be_.add(sum, sum, copy, int64_t(n));
  }
}

LossSums DataParallel::gradients(const std::function<LossSums(int64_t k, GradientSink& sink)>& backward) {
  const int64_t L = local_micro_;
  const int W = control_.size();
  be_.zero(grads_.data(), grads_.size());
  Groups groups(*this);
  // Loss sums of every micro-batch of the global batch, rank by rank: (ce, z, labels) of local micro-batch k.
  std::vector<double> sums(size_t(3 * L * W), 0.0);
  const size_t mine = size_t(3 * L * control_.rank());
  for (int64_t k = 0; k < L; k++) {
    groups.direct = W == 1 && k == 0;
    const LossSums s = backward(k, groups);
    sums[mine + size_t(3 * k)] = s.ce;
    sums[mine + size_t(3 * k + 1)] = s.z;
    sums[mine + size_t(3 * k + 2)] = double(s.n_labels);
  }
  std::vector<size_t> sum_bounds(size_t(W) + 1);
  for (int r = 0; r <= W; r++) sum_bounds[size_t(r)] = size_t(3 * L * r);
  all_gather(control_, sums.data(), sum_bounds);
  // Added in micro-batch order c = r + W k, as the gradients.
  LossSums total;
  for (int64_t k = 0; k < L; k++)
    for (int r = 0; r < W; r++) {
      const double* s = &sums[size_t(3 * (L * r + k))];
      total += LossSums{s[0], s[1], int64_t(s[2])};
    }
  return total;
}

double DataParallel::clip(double max_norm) {
  const double norm = std::sqrt(sum_of_squares(control_, be_, grads_.data(), bounds_));
  const double coef = std::min(1.0, max_norm / (norm + 1e-6));
  if (max_norm > 0 && coef < 1.0) be_.scale(grads_.data(), grads_.size(), float(coef));  // as optim/clip.cc
  return norm;
}

void DataParallel::step(double lr) {
  adamw_.step(my_weights(), grads_.data(), lr);
  if (!sharding_.weights && data_.size() > 1) all_gather(data_, weights_.data(), bounds_);
}

void DataParallel::gather_moments(float* exp_avg, float* exp_avg_sq) {
  std::vector<float> m(adamw_.end() - adamw_.begin()), v(m.size());
  adamw_.moments_to_host(m.data(), v.data());
  gather_to_root(control_, m.data(), bounds_, exp_avg);
  gather_to_root(control_, v.data(), bounds_, exp_avg_sq);
}

void DataParallel::load_moments(const float* exp_avg, const float* exp_avg_sq, int64_t step_count) {
  std::vector<float> m(adamw_.end() - adamw_.begin()), v(m.size());
  scatter_from_root(control_, exp_avg, bounds_, m.data());
  scatter_from_root(control_, exp_avg_sq, bounds_, v.data());
  adamw_.moments_from_host(m.data(), v.data());
  adamw_.step_count = step_count;
}

}  // namespace replica
