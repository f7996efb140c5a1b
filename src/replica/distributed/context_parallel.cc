// ContextParallel: per chunk of KV heads, the gathers of K and V, the kernel over this rank's queries and the
// reduce-scatter of dK and dV, in a fixed order, the next chunk's exchanges in flight while this chunk's kernel runs.
#include "replica/distributed/context_parallel.h"

#include <algorithm>

#include "replica/core/error.h"
#include "replica/model/document_offsets.h"

namespace replica::distributed {

// KV heads [g0, g0 + Kc) and their query heads [h0, h0 + Hc); `all` when that is every head (nothing to stage).
struct ContextParallel::Chunk {
  int64_t g0, Kc, h0, Hc;
  bool all;
};

// Grows `a` to at least n floats (contents not kept).
static float* at_least(DeviceArray<float>& a, Backend& backend, size_t n) {
  if (a.size() < n) a = DeviceArray<float>(backend, n);
  return a.data();
}

// Heads [src_h0, src_h0 + heads) of src [rows, src_heads, D] into heads [dst_h0, …) of dst [rows, dst_heads, D].
static void copy_heads(Backend& be, float* dst, int64_t dst_heads, int64_t dst_h0, const float* src, int64_t src_heads,
                       int64_t src_h0, int64_t heads, int64_t rows, int64_t D) {
  if (heads == dst_heads && heads == src_heads) return be.copy(dst, src, size_t(rows * heads * D));
  be.copy_rows(dst + dst_h0 * D, size_t(dst_heads * D), src + src_h0 * D, size_t(src_heads * D), size_t(heads * D),
               size_t(rows));
}

ContextParallel::ContextParallel(Communicator& group, Backend& backend, int64_t head_stride)
    : group_(group), be_(backend), head_stride_(head_stride) {}

void ContextParallel::set_sequence(int64_t T, std::span<const int32_t> doc_offsets) {
  const int64_t N = group_.size();
  check(T % N == 0, "context parallelism: a sequence of {} tokens does not split over {} ranks", T, N);
  slice_ = T / N;
  key_offsets_ = model::leading_document_offsets(doc_offsets, position() + slice_);
  docs_ = {};
  if (key_offsets_.empty()) return;
  docs_ = {key_offsets_.data(), int64_t(key_offsets_.size()) - 1};
  if (be_.host_memory()) return;
  if (key_offsets_device_.size() < key_offsets_.size())
    key_offsets_device_ = DeviceArray<int32_t>(be_, size_t(T + 1));
  be_.to_device(key_offsets_device_.data(), key_offsets_.data(), key_offsets_.size() * sizeof(int32_t));
  docs_.offsets = key_offsets_device_.data();
}

int64_t ContextParallel::chunks(const AttentionShape& local) const {
  const int64_t stride = head_stride_ > 0 ? std::min(head_stride_, local.K) : local.K;
  return (local.K + stride - 1) / stride;
}

ContextParallel::Chunk ContextParallel::chunk(const AttentionShape& local, int64_t c) const {
  check(local.B == 1 && local.T == slice_ && local.queries == 0,
        "context parallelism: attention over [{}, {}] tokens, expected this rank's slice [1, {}]", local.B, local.T,
        slice_);
  const int64_t stride = head_stride_ > 0 ? std::min(head_stride_, local.K) : local.K, g0 = c * stride;
  const int64_t Kc = std::min(stride, local.K - g0), group = local.H / local.K;
  return {g0, Kc, g0 * group, Kc * group, Kc == local.K};
}

std::unique_ptr<PendingExchange> ContextParallel::start_gather(Slot& slot, const float* k, const float* v,
                                                               const Chunk& ch, const AttentionShape& local) {
  const int N = group_.size(), me = group_.rank();
  const size_t n = size_t(slice_ * ch.Kc * local.D);
  float* kw = at_least(slot.k, be_, size_t(N) * n);
  float* vw = at_least(slot.v, be_, size_t(N) * n);
  copy_heads(be_, kw + size_t(me) * n, ch.Kc, 0, k, local.K, ch.g0, ch.Kc, slice_, local.D);
  copy_heads(be_, vw + size_t(me) * n, ch.Kc, 0, v, local.K, ch.g0, ch.Kc, slice_, local.D);
  std::vector<Send> sends;
  std::vector<Recv> recvs;
  for (int p = 0; p < N; p++)
    if (p != me)
      for (float* whole : {kw, vw}) {
        sends.push_back({p, whole + size_t(me) * n, n * sizeof(float)});
        recvs.push_back({p, whole + size_t(p) * n, n * sizeof(float)});
      }
  return group_.start_exchange(sends, recvs);
}

// The received dK and dV of peer i (the i-th rank other than this one) are 2i and 2i + 1 of the slot's received.
std::unique_ptr<PendingExchange> ContextParallel::start_reduce_scatter(Slot& slot, const Chunk& ch,
                                                                       const AttentionShape& local) {
  const int N = group_.size(), me = group_.rank();
  const size_t n = size_t(slice_ * ch.Kc * local.D);
  float* received = at_least(slot.received, be_, 2 * size_t(N - 1) * n);
  std::vector<Send> sends;
  std::vector<Recv> recvs;
  for (int p = 0; p < N; p++)
    if (p != me)
      for (float* whole : {slot.dk.data(), slot.dv.data()}) {
        sends.push_back({p, whole + size_t(p) * n, n * sizeof(float)});
        recvs.push_back({p, received + recvs.size() * n, n * sizeof(float)});
      }
  return group_.start_exchange(sends, recvs);
}

void ContextParallel::add_scattered(float* dk, float* dv, Slot& slot, const Chunk& ch, const AttentionShape& local) {
  const int N = group_.size(), me = group_.rank();
  const size_t n = size_t(slice_ * ch.Kc * local.D);
  for (int which = 0; which < 2; which++) {  // dK, then dV
    float* x = which == 0 ? dk : dv;
    const float* whole = which == 0 ? slot.dk.data() : slot.dv.data();
    std::vector<const float*> copies;  // every rank's dK (dV) of this rank's slice, by rank
    for (int p = 0, peer = 0; p < N; p++)
      copies.push_back(p == me ? whole + size_t(me) * n : slot.received.data() + size_t(2 * peer++ + which) * n);
    float* sum = ch.all ? x : at_least(kv_local_, be_, n);
    be_.copy(sum, copies[0], n);
    for (size_t p = 1; p < copies.size(); p++) be_.add(sum, sum, copies[p], int64_t(n));
    if (!ch.all) copy_heads(be_, x, local.K, ch.g0, sum, ch.Kc, 0, ch.Kc, slice_, local.D);
  }
}

// Chunk c + 1's gather starts before chunk c's kernel is queued, into the other slot, which the kernel of chunk
// c − 1 (queued before it) was the last to read.
void ContextParallel::forward(int64_t, float* out, float* lse, const float* q, const float* k, const float* v,
                              const AttentionShape& local, Precision precision, AttentionKernel kernel) {
  const int64_t D = local.D, end = position() + slice_, n_chunks = chunks(local);
  std::unique_ptr<PendingExchange> gathered = start_gather(slot(0), k, v, chunk(local, 0), local);
  for (int64_t c = 0; c < n_chunks; c++) {
    const Chunk ch = chunk(local, c);
    gathered->wait();
    if (c + 1 < n_chunks) gathered = start_gather(slot(c + 1), k, v, chunk(local, c + 1), local);
    const float* qc = q;
    float* oc = out;
    if (!ch.all) {
      float* staged = at_least(q_, be_, size_t(slice_ * ch.Hc * D));
      copy_heads(be_, staged, ch.Hc, 0, q, local.H, ch.h0, ch.Hc, slice_, D);
      qc = staged;
      oc = at_least(out_, be_, size_t(slice_ * ch.Hc * D));
    }
    const AttentionShape s{1, end, ch.Hc, ch.Kc, D, local.window, slice_};
    be_.attention_forward(oc, lse + ch.h0 * slice_, qc, slot(c).k.data(), slot(c).v.data(), s, docs_, precision,
                          kernel);
    if (!ch.all) copy_heads(be_, out, local.H, ch.h0, oc, ch.Hc, 0, ch.Hc, slice_, D);
  }
}

// As the forward, and chunk c's reduce-scatter starts once its kernel is queued; chunk c − 1's is waited for (and
// added) after that, so that it is done before chunk c + 1's kernel writes the same slot's dK and dV.
void ContextParallel::backward(int64_t, float* dq, float* dk, float* dv, const float* dout, const float* out,
                               const float* lse, const float* q, const float* k, const float* v,
                               const AttentionShape& local, Precision precision, AttentionKernel kernel) {
  const int64_t D = local.D, end = position() + slice_, keys = slice_ * group_.size(), n_chunks = chunks(local);
  std::unique_ptr<PendingExchange> gathered = start_gather(slot(0), k, v, chunk(local, 0), local), scattered;
  for (int64_t c = 0; c < n_chunks; c++) {
    const Chunk ch = chunk(local, c);
    Slot& sl = slot(c);
    gathered->wait();
    if (c + 1 < n_chunks) gathered = start_gather(slot(c + 1), k, v, chunk(local, c + 1), local);
    const size_t whole_floats = size_t(keys * ch.Kc * D), tail = size_t(end * ch.Kc * D);
    float* dkw = at_least(sl.dk, be_, whole_floats);
    float* dvw = at_least(sl.dv, be_, whole_floats);
    const float *qc = q, *outc = out, *doutc = dout;
    float* dqc = dq;
    if (!ch.all) {
      const size_t n = size_t(slice_ * ch.Hc * D);
      float* qs = at_least(q_, be_, n);
      float* os = at_least(out_, be_, n);
      float* ds = at_least(dout_, be_, n);
      copy_heads(be_, qs, ch.Hc, 0, q, local.H, ch.h0, ch.Hc, slice_, D);
      copy_heads(be_, os, ch.Hc, 0, out, local.H, ch.h0, ch.Hc, slice_, D);
      copy_heads(be_, ds, ch.Hc, 0, dout, local.H, ch.h0, ch.Hc, slice_, D);
      qc = qs, outc = os, doutc = ds;
      dqc = at_least(dq_, be_, n);
    }
    const AttentionShape s{1, end, ch.Hc, ch.Kc, D, local.window, slice_};
    be_.attention_backward(dqc, dkw, dvw, doutc, outc, lse + ch.h0 * slice_, qc, sl.k.data(), sl.v.data(), s, docs_,
                           precision, kernel);
    be_.zero(dkw + tail, whole_floats - tail);  // keys after this slice: no query of it sees them
    be_.zero(dvw + tail, whole_floats - tail);
    if (!ch.all) copy_heads(be_, dq, local.H, ch.h0, dqc, ch.Hc, 0, ch.Hc, slice_, D);
    std::unique_ptr<PendingExchange> this_chunk = start_reduce_scatter(sl, ch, local);
    if (scattered) {
      scattered->wait();
      add_scattered(dk, dv, slot(c - 1), chunk(local, c - 1), local);
    }
    scattered = std::move(this_chunk);
  }
  scattered->wait();
  add_scattered(dk, dv, slot(n_chunks - 1), chunk(local, n_chunks - 1), local);
}

size_t ContextParallel::bytes(int64_t T, int64_t N, int64_t H, int64_t K, int64_t D, int64_t stride) {
  const int64_t Kc = stride > 0 ? std::min(stride, K) : K, Hc = Kc * (H / K), slice = T / N;
  size_t floats = size_t(4 * T * Kc * D + 2 * (N - 1) * slice * Kc * D);  // gathered K, V, dK, dV; received dK, dV
  if (Kc < K) floats = 2 * floats + size_t(4 * slice * Hc * D + slice * Kc * D);  // two slots; staged heads, a sum
  return floats * sizeof(float);
}

}  // namespace replica::distributed
