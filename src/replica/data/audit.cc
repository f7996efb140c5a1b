// Repeat audit: per-instance delivery counts over the run and within each planned epoch.
#include "replica/data/audit.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "replica/core/error.h"

namespace replica::data {

AuditReport audit(const DataLoader& loader, const AuditPlan& plan, const RankReader& reader) {
  const InstanceSource& dataset = loader.dataset();
  const int64_t global_batch = loader.config().global_batch, per_epoch = loader.batches_per_epoch();
  check(plan.steps > 0, "the audit needs a positive number of steps");
  check(plan.world_size > 0 && global_batch % plan.world_size == 0, "global batch {} is not divisible by world size {}",
        global_batch, plan.world_size);
  const int64_t rank_rows = global_batch / plan.world_size;

  AuditReport report;
  report.num_instances = dataset.num_instances();
  report.batches_per_epoch = per_epoch;
  std::vector<uint8_t> run_count(report.num_instances, 0), epoch_seen(report.num_instances, 0);
  std::vector<uint64_t> file_tokens(dataset.num_files(), 0);
  uint64_t current_epoch = 0;
  for (int64_t step = 0; step < plan.steps; step++) {
    auto [epoch, b] = loader.position(step, plan.first_epoch);
    if (epoch != current_epoch) std::fill(epoch_seen.begin(), epoch_seen.end(), 0), current_epoch = epoch;
    for (int rank = 0; rank < plan.world_size; rank++) {
      // What the trainer's rank reads: the same call, micro-batch order included (counting ignores the order).
      std::vector<uint32_t> rows =
          reader ? reader(step, rank) : loader.batch_instances(epoch, b, rank, plan.world_size, plan.micro_batch);
      check(int64_t(rows.size()) == rank_rows, "step {} rank {}: {} rows, expected {}", step, rank, rows.size(),
            rank_rows);
      for (uint32_t id : rows) {
        check(id < report.num_instances, "step {} rank {}: instance {} out of range", step, rank, id);
        report.deliveries++;
        if (run_count[id] < 255) run_count[id]++;
        if (epoch_seen[id]) report.repeats_within_epoch++;
        epoch_seen[id] = 1;
        for (auto [file, tokens] : dataset.token_sources(id)) file_tokens[file] += tokens;
      }
    }
  }
  uint64_t distinct = 0;
  for (uint8_t c : run_count) {
    report.seen[std::min<int>(c, 3)]++;
    distinct += c > 0;
  }
  report.expected_epochs = double(plan.steps) / double(per_epoch);
  report.actual_epochs = distinct ? double(report.deliveries) / double(distinct) : 0;
  std::map<std::string, uint64_t> per_source;
  report.padding_tokens = report.deliveries * uint64_t(dataset.seq_len());
  for (size_t f = 0; f < dataset.num_files(); f++) {
    per_source[dataset.label(f)] += file_tokens[f];
    report.padding_tokens -= file_tokens[f];
  }
  report.tokens_per_source.assign(per_source.begin(), per_source.end());
  return report;
}

// One row per line, the values in one column whatever the source labels' length.
std::string AuditReport::text() const {
  std::vector<std::pair<std::string, std::string>> rows;
  auto percent = [](uint64_t part, uint64_t whole) { return whole ? 100.0 * double(part) / double(whole) : 0.0; };
  rows.emplace_back("batches per epoch", fmt::format("{}", batches_per_epoch));
  rows.emplace_back("instances in dataset", fmt::format("{}", num_instances));
  rows.emplace_back("instance reads", fmt::format("{}", deliveries));
  const char* names[4] = {"0 times", "1 time", "2 times", "3+ times"};
  for (int k = 0; k < 4; k++)
    rows.emplace_back(fmt::format("seen {}", names[k]),
                      fmt::format("{} ({:.2f} %)", seen[k], percent(seen[k], num_instances)));
  rows.emplace_back("epochs planned", fmt::format("{:.4f} (steps / batches per epoch)", expected_epochs));
  const uint64_t distinct = num_instances - seen[0];
  rows.emplace_back("instances read",
                    fmt::format("{} of {} ({:.2f} %)", distinct, num_instances, percent(distinct, num_instances)));
  rows.emplace_back("reads per instance read",
                    fmt::format("{:.4f} (reads / instances read; above 1: some were read again)", actual_epochs));
  uint64_t read = padding_tokens;
  for (const auto& source : tokens_per_source) read += source.second;
  for (const auto& [label, tokens] : tokens_per_source)
    rows.emplace_back("tokens from " + label, fmt::format("{} ({:.2f} %)", tokens, percent(tokens, read)));
  if (padding_tokens > 0)
    rows.emplace_back("padding tokens",
                      fmt::format("{} ({:.2f} % of tokens read)", padding_tokens, percent(padding_tokens, read)));
  size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.first.size());
  std::string out;
  for (const auto& [name, value] : rows) out += fmt::format("{:<{}}  {}\n", name, width, value);
  out += ok() ? "OK: no instance was read twice within a planned epoch\n"
              : fmt::format("ERROR: {} reads ({:.2f} % of all reads) repeat an instance within its planned epoch\n",
                            repeats_within_epoch, 100.0 * repeat_fraction());
  return out;
}

}  // namespace replica::data
