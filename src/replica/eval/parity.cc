// Logit parity statistics.
#include "replica/eval/parity.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <vector>

namespace replica::eval {

ParityStats& ParityStats::operator+=(const ParityStats& o) {
  positions += o.positions;
  kl_sum += o.kl_sum;
  kl_max = std::max(kl_max, o.kl_max);
  top1_agree += o.top1_agree;
  top10_overlap_sum += o.top10_overlap_sum;
  max_abs_logit_diff = std::max(max_abs_logit_diff, o.max_abs_logit_diff);
  return *this;
}

nlohmann::json ParityStats::to_json() const {
  return {{"positions", positions}, {"kl_mean", kl_mean()},        {"kl_max", kl_max},
          {"top1", top1()},         {"top10_overlap", top10()},    {"max_abs_logit_diff", max_abs_logit_diff}};
}

namespace {

double log_sum_exp(const float* x, int64_t V) {
  const double m = *std::max_element(x, x + V);
  double s = 0.0;
  for (int64_t v = 0; v < V; v++) s += std::exp(double(x[v]) - m);
  return m + std::log(s);
}

// Indices of the k largest values, ties broken by the lower index (as torch.topk on CPU does in practice).
std::vector<int64_t> top_k(const float* x, int64_t V, int64_t k) {
  std::vector<int64_t> idx(static_cast<size_t>(V));
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min(k, V);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int64_t a, int64_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
  idx.resize(size_t(k));
  return idx;
}

}  // namespace

ParityStats compare_logits(const float* reference, const float* candidate, int64_t rows, int64_t V) {
  std::vector<ParityStats> per_row(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    const float* p = reference + r * V;
    const float* q = candidate + r * V;
    const double lse_p = log_sum_exp(p, V), lse_q = log_sum_exp(q, V);
    double kl = 0.0, max_diff = 0.0;
    for (int64_t v = 0; v < V; v++) {
      const double log_p = double(p[v]) - lse_p, log_q = double(q[v]) - lse_q;
      kl += std::exp(log_p) * (log_p - log_q);
      max_diff = std::max(max_diff, std::fabs(double(p[v]) - double(q[v])));
    }
    ParityStats& s = per_row[size_t(r)];
    s.positions = 1;
    s.kl_sum = s.kl_max = std::max(kl, 0.0);  // rounding can make an exact match a hair negative
    const std::vector<int64_t> tp = top_k(p, V, 10), tq = top_k(q, V, 10);
    s.top1_agree = tp[0] == tq[0];
    int64_t overlap = 0;
    for (int64_t a : tp) overlap += std::count(tq.begin(), tq.end(), a);
    s.top10_overlap_sum = double(overlap) / double(tp.size());
    s.max_abs_logit_diff = max_diff;
  }
  ParityStats total;
  for (const ParityStats& s : per_row) total += s;  // fixed order
  return total;
}

}  // namespace replica::eval
