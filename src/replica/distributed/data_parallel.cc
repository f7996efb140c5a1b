// DataParallel: weight groups gathered as the model acquires them, gradient groups reduced as the backward completes
// them, the sharded norm, the update on the shard and, for checkpoints, the gathers and scatters of the weights and
// of each optimizer state tensor.
#include "replica/distributed/data_parallel.h"

#include <algorithm>
#include <cmath>

#include "replica/core/error.h"
#include "replica/distributed/collectives.h"
#include "replica/optim/clip.h"

namespace replica::distributed {

std::string micro_batch_hint(int64_t global_batch, int64_t micro_batch, int64_t data_ranks) {
  if (data_ranks <= 0 || global_batch <= 0 || global_batch % data_ranks != 0)
    return fmt::format("; no micro-batch size splits {} instances evenly over {} data-parallel ranks", global_batch,
                       data_ranks);
  const int64_t per_rank = global_batch / data_ranks;
  int64_t m = std::clamp<int64_t>(micro_batch, 1, per_rank);
  while (per_rank % m != 0) m--;
  return fmt::format("; data.micro_batch_size={} fits {} data-parallel ranks", m, data_ranks);
}

// L = G / (W M), after checking that it is a whole number (W: the data-parallel ranks).
static int64_t local_micro_batches(int64_t global_batch, int64_t micro_batch, int world, int context) {
  check(context > 0 && world % context == 0, "{} ranks do not split into context-parallel groups of {}", world,
        context);
  const int64_t data_ranks = world / context;
  if (micro_batch <= 0 || global_batch % (micro_batch * data_ranks) != 0)  // the hint is built only for the refusal
    fail("data.global_batch_size={} must be a multiple of data.micro_batch_size={} times the {} data-parallel ranks{}",
         global_batch, micro_batch, data_ranks, micro_batch_hint(global_batch, micro_batch, data_ranks));
  return global_batch / (micro_batch * data_ranks);
}

static size_t length(model::ParamTable::Range r) { return r.end - r.begin; }

DataParallel::DataParallel(Communicator& control, Communicator& data, Backend& backend, const model::ParamTable& table,
                           int64_t global_batch, int64_t micro_batch, Sharding sharding, int context)
    : control_(control),
      data_(data),
      be_(backend),
      local_micro_(local_micro_batches(global_batch, micro_batch, control.size(), context)),
      layout_(table, control.size()),
      sharding_(sharding),
      weights_(backend, sharding.weights ? layout_.shard_size(control.rank()) : table.total()),
      grads_(backend, layout_.shard_size(control.rank())),
      largest_group_(table.largest_group()),
      piece_(piece_floats(control.size(), sharding.receive_floats)) {
  check(data.size() == control.size() && data.rank() == control.rank(),
        "the data and control communicators disagree on rank or size");
  if (const size_t n = receive_buffer_floats(layout_, control.rank(), sharding.receive_floats); n > 0)
    received_ = DeviceArray<float>(backend, n);
  if (sharding.weights) gathered_ = std::make_unique<Gathered>(*this);
}

DataParallel::~DataParallel() = default;

size_t DataParallel::receive_buffer_floats(const ShardLayout& layout, int rank, size_t receive_floats) {
  const int W = layout.world();
  if (W == 1) return 0;
  size_t largest_part = 0;
  for (const ShardLayout::Part& p : layout.parts_of(rank)) largest_part = std::max(largest_part, p.length());
  return size_t(W - 1) * std::min(piece_floats(W, receive_floats), largest_part);
}

std::vector<optim::Optimizer::Part> DataParallel::shard_parts() const {
  std::vector<optim::Optimizer::Part> parts;
  for (const ShardLayout::Part& p : layout_.parts_of(control_.rank())) parts.push_back({p.begin, p.end, p.offset});
  return parts;
}

// Which group each of a few reusable buffers holds (at most two at once: a block or the head, and the embedding when
// the LM head is tied to it). take() hands out a free slot, a new one when all are taken; give_back() frees the slot
// that holds `range`.
class GroupSlots {
 public:
  size_t take(model::ParamTable::Range range) {
    size_t slot = 0;
    while (slot < held_.size() && held_[slot]) slot++;
    if (slot == held_.size()) held_.push_back({});
    held_[slot] = range;
    return slot;
  }
  size_t give_back(model::ParamTable::Range range, const char* what) {
    for (size_t slot = 0; slot < held_.size(); slot++)
      if (held_[slot] == range) {
        held_[slot].reset();
        return slot;
      }
    fail("{} group [{}, {}) handed back but not held", what, range.begin, range.end);
  }

 private:
  std::vector<std::optional<model::ParamTable::Range>> held_;
};

// The sink the backward writes into: each open group gets a zeroed buffer of group_grads_; closing it reduces the
// group.
class DataParallel::Groups final : public model::GradientSink {
 public:
  explicit Groups(DataParallel& dp) : dp_(dp) {}

  // At W = 1 the first micro-batch's groups go straight into the zeroed sum: the model adds into zeros either way,
  // and 0 + g is g up to the sign of a zero gradient, which neither the norm nor AdamW can see. This saves the
  // single-device step (L = 1) a pass over the group buffers without changing a bit of the weights or moments.
  bool direct = false;

  float* open(model::ParamTable::Range range) override {
    if (direct) return dp_.grads_.data() + range.begin;
    const size_t slot = open_.take(range);
    if (slot == dp_.group_grads_.size()) dp_.group_grads_.emplace_back(dp_.be_, dp_.largest_group_);
    float* g = dp_.group_grads_[slot].data();
    dp_.be_.zero(g, length(range));
    return g;
  }

  void close(model::ParamTable::Range range) override {
    if (!direct) dp_.reduce_group(range, dp_.group_grads_[open_.give_back(range, "gradient")].data());
  }

 private:
  DataParallel& dp_;
  GroupSlots open_;  // by slot of group_grads_
};

// The model's view of sharded weights: each acquired group is gathered into a buffer of its own, every rank sending
// its part of the group to every other rank, and rounded to bf16 there when the model asks for bf16.
class DataParallel::Gathered final : public model::WeightSource {
 public:
  explicit Gathered(DataParallel& dp) : dp_(dp) {}

  model::GroupWeights acquire(model::ParamTable::Range range, Precision precision) override {
    const size_t slot = acquired_.take(range);
    if (slot == f32_.size()) {
      f32_.emplace_back(dp_.be_, dp_.largest_group_);
      b16_.emplace_back();
    }
    float* group = f32_[slot].data();
    const int W = dp_.control_.size(), me = dp_.control_.rank();
    const size_t g = dp_.layout_.group_at(range.begin);
    const ShardLayout::Part& mine = dp_.layout_.part(g, me);
    float* my_part = dp_.weights_.data() + mine.offset;
    std::vector<Send> sends;
    std::vector<Recv> recvs;
    for (int r = 0; r < W; r++) {
      if (r == me) continue;
      const ShardLayout::Part& theirs = dp_.layout_.part(g, r);
      if (mine.length() > 0) sends.push_back({r, my_part, mine.length() * sizeof(float)});
      if (theirs.length() > 0)
        recvs.push_back({r, group + (theirs.begin - range.begin), theirs.length() * sizeof(float)});
    }
    if (mine.length() > 0) dp_.be_.copy(group + (mine.begin - range.begin), my_part, mine.length());
    if (W > 1) dp_.data_.exchange(sends, recvs);
    if (precision != Precision::bf16) return {group, nullptr, range.begin};
    if (b16_[slot].empty()) b16_[slot] = DeviceArray<bf16>(dp_.be_, dp_.largest_group_);
    dp_.be_.convert_to_bf16(group, b16_[slot].data(), length(range));
    return {group, b16_[slot].data(), range.begin};
  }

  void release(model::ParamTable::Range range) override { acquired_.give_back(range, "weight"); }

 private:
  DataParallel& dp_;
  GroupSlots acquired_;  // by slot of f32_ and b16_
  std::vector<DeviceArray<float>> f32_;
  std::vector<DeviceArray<bf16>> b16_;
};

model::WeightSource& DataParallel::gathered_weights() {
  check(gathered_ != nullptr, "DataParallel: the weights are not sharded");
  return *gathered_;
}

void DataParallel::load_weights(const float* whole) {
  const size_t n = weights_.size();
  const bool root = control_.rank() == 0;
  std::vector<float> host(root && !sharding_.weights ? 0 : n);
  if (sharding_.weights) {
    scatter_shards(whole, host.data());
  } else if (control_.size() > 1) {
    broadcast(control_, root ? const_cast<float*>(whole) : host.data(), n * sizeof(float));
  }
  be_.to_device(weights_.data(), host.empty() ? whole : host.data(), n * sizeof(float));
  weights_version_.bump();
}

void DataParallel::gather_weights(float* whole) {
  if (!sharding_.weights) {
    if (control_.rank() == 0) be_.to_host(whole, weights_.data(), weights_.size() * sizeof(float));
    return;
  }
  std::vector<float> shard(weights_.size());
  be_.to_host(shard.data(), weights_.data(), shard.size() * sizeof(float));
  gather_shards(shard.data(), whole);
}

// Every rank sends each other rank the part of the group in that rank's shard, and adds the W copies of its own part
// (its own included) into grads_ in rank order: in round k those are micro-batches c = W k + rank, so over the rounds
// every element sees micro-batch 0, 1, 2, ... in turn, whatever W is. The parts go in pieces of at most piece_ floats,
// every rank sending and receiving in each piece's exchange, so the receive buffer stays bounded and no link idles
// while another one carries a whole part.
void DataParallel::reduce_group(model::ParamTable::Range range, const float* group_grads) {
  const size_t W = size_t(control_.size()), me = size_t(control_.rank());
  const size_t g = layout_.group_at(range.begin);
  size_t pieces = 0;
  for (size_t r = 0; r < W; r++) {
    const size_t n = layout_.part(g, int(r)).length();
    if (n > 0) pieces = std::max(pieces, (n - 1) / piece_ + 1);
  }
  const ShardLayout::Part& my_part = layout_.part(g, int(me));
  for (size_t t = 0; t < pieces; t++) {
    auto piece = [&](size_t r) {  // piece t of rank r's part (empty once the part is done)
      const ShardLayout::Part& p = layout_.part(g, int(r));
      const size_t begin = p.begin + t * piece_;
      return begin < p.end ? model::ParamTable::Range{begin, begin + std::min(piece_, p.end - begin)}
                           : model::ParamTable::Range{0, 0};
    };
    const model::ParamTable::Range mine = piece(me);
    const size_t n = length(mine);
    std::vector<const float*> copies(W);  // every rank's copy of this rank's piece, by rank
    std::vector<Send> sends;
    std::vector<Recv> recvs;
    for (size_t r = 0; r < W; r++) {
      if (r == me) {
        if (n > 0) copies[r] = group_grads + (mine.begin - range.begin);
        continue;
      }
      const model::ParamTable::Range theirs = piece(r);
      if (length(theirs) > 0)
        sends.push_back({int(r), group_grads + (theirs.begin - range.begin), length(theirs) * sizeof(float)});
      if (n > 0) {
        float* slot = received_.data() + recvs.size() * n;
        recvs.push_back({int(r), slot, n * sizeof(float)});
        copies[r] = slot;
      }
    }
    if (W > 1) data_.exchange(sends, recvs);
    if (n == 0) continue;
    float* sum = grads_.data() + my_part.offset + (mine.begin - my_part.begin);
    for (const float* copy : copies) be_.add(sum, sum, copy, int64_t(n));
  }
}

LossSums DataParallel::gradients(const std::function<LossSums(int64_t k, model::GradientSink& sink)>& backward) {
  const int64_t L = local_micro_;
  const int W = control_.size();
  be_.zero(grads_.data(), grads_.size());
  clip_scale_ = 1.0f;  // a new gradient, not clipped yet
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
  const double norm = std::sqrt(sum_of_squares());
  const double coef = optim::clip_coefficient(norm, max_norm);
  clip_scale_ = coef < 1.0 ? float(coef) : 1.0f;
  return norm;
}

void DataParallel::step(optim::Optimizer& optimizer, double lr) {
  check(optimizer.size() == grads_.size(), "DataParallel: the optimizer holds {} floats, the shard {}",
        optimizer.size(), grads_.size());
  optimizer.step(weights_.data(), grads_.data(), lr, !sharding_.weights, clip_scale_);
  if (!sharding_.weights && data_.size() > 1) all_gather_weights();
  weights_version_.bump();
}

// One rank's shard is the whole buffer in flat order (its parts tile it), so the state goes straight to or from
// `whole`, without a shard-sized staging copy on the host.
void DataParallel::gather_state(const optim::Optimizer& optimizer, size_t i, float* whole) {
  if (control_.size() == 1) return optimizer.state_to_host(i, whole);
  std::vector<float> shard(optimizer.size());
  optimizer.state_to_host(i, shard.data());
  gather_shards(shard.data(), whole);
}

void DataParallel::load_state(optim::Optimizer& optimizer, size_t i, const float* whole) {
  if (control_.size() == 1) return optimizer.state_from_host(i, whole);
  std::vector<float> shard(optimizer.size());
  scatter_shards(whole, shard.data());
  optimizer.state_from_host(i, shard.data());
}

// The norm's block sums: each rank's of its parts, in flat order, sent to every rank, which places them by block
// number and adds them in that order: the same double whatever W is.
double DataParallel::sum_of_squares() {
  const int W = control_.size(), me = control_.rank();
  std::vector<std::vector<double>> sums(static_cast<size_t>(W));  // each rank's block sums, its parts in flat order
  for (int r = 0; r < W; r++)
    for (const ShardLayout::Part& p : layout_.parts_of(r)) {
      std::vector<double>& s = sums[size_t(r)];
      if (r != me) {
        s.resize(s.size() + p.blocks());  // received below
      } else {
        const std::vector<double> part = be_.block_sums_of_squares(grads_.data() + p.offset, p.length());
        s.insert(s.end(), part.begin(), part.end());
      }
    }
  const std::vector<double>& mine = sums[size_t(me)];
  std::vector<Send> sends;
  std::vector<Recv> recvs;
  for (int r = 0; r < W; r++) {
    if (r == me) continue;
    if (!mine.empty()) sends.push_back({r, mine.data(), mine.size() * sizeof(double)});
    if (!sums[size_t(r)].empty()) recvs.push_back({r, sums[size_t(r)].data(), sums[size_t(r)].size() * sizeof(double)});
  }
  if (W > 1) control_.exchange(sends, recvs);
  std::vector<double> blocks(layout_.blocks(), 0.0);
  for (int r = 0; r < W; r++) {
    size_t next = 0;
    for (size_t g = 0; g < layout_.groups(); g++) {
      const ShardLayout::Part& p = layout_.part(g, r);
      for (size_t b = 0; b < p.blocks(); b++) blocks[p.first_block + b] = sums[size_t(r)][next++];
    }
  }
  double total = 0.0;
  for (double s : blocks) total += s;
  return total;
}

// Whole weights after the update: every rank sends its parts to every other rank, straight from and into their place
// in the flat buffer.
void DataParallel::all_gather_weights() {
  const int W = control_.size(), me = control_.rank();
  std::vector<Send> sends;
  std::vector<Recv> recvs;
  for (int r = 0; r < W; r++) {
    if (r == me) continue;
    for (size_t g = 0; g < layout_.groups(); g++) {
      const ShardLayout::Part &mine = layout_.part(g, me), &theirs = layout_.part(g, r);
      if (mine.length() > 0) sends.push_back({r, weights_.data() + mine.begin, mine.length() * sizeof(float)});
      if (theirs.length() > 0) recvs.push_back({r, weights_.data() + theirs.begin, theirs.length() * sizeof(float)});
    }
  }
  data_.exchange(sends, recvs);
}

// Rank 0 receives each rank's shard (host memory) in turn and puts its parts in place in `whole`.
void DataParallel::gather_shards(const float* shard, float* whole) {
  const int W = control_.size(), me = control_.rank();
  if (me != 0) {
    control_.exchange({{0, shard, layout_.shard_size(me) * sizeof(float)}}, {});
    return;
  }
  std::vector<float> received;
  for (int r = 0; r < W; r++) {
    const float* from = shard;
    if (r != 0) {
      received.resize(layout_.shard_size(r));
      control_.exchange({}, {{r, received.data(), received.size() * sizeof(float)}});
      from = received.data();
    }
    for (const ShardLayout::Part& p : layout_.parts_of(r)) std::copy_n(from + p.offset, p.length(), whole + p.begin);
  }
}

// The reverse: rank 0 packs each rank's parts of `whole` and sends them; every rank receives its shard.
void DataParallel::scatter_shards(const float* whole, float* shard) {
  const int W = control_.size(), me = control_.rank();
  if (me != 0) {
    control_.exchange({}, {{0, shard, layout_.shard_size(me) * sizeof(float)}});
    return;
  }
  std::vector<float> packed;
  for (int r = 0; r < W; r++) {
    if (r != 0) packed.resize(layout_.shard_size(r));
    float* to = r == 0 ? shard : packed.data();
    for (const ShardLayout::Part& p : layout_.parts_of(r)) std::copy_n(whole + p.begin, p.length(), to + p.offset);
    if (r != 0) control_.exchange({{r, to, layout_.shard_size(r) * sizeof(float)}}, {});
  }
}

}  // namespace replica::distributed
