// Repeat audit: per-instance delivery counts over the run and within each planned epoch.
#include "replica/data/audit.h"

#include <fmt/format.h>

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

std::string AuditReport::text() const {
  std::string out = fmt::format("instances in dataset  {}\ninstance reads        {}\n", num_instances, deliveries);
  const char* names[4] = {"0", "1", "2", "3+"};
  for (int k = 0; k < 4; k++)
    out += fmt::format("seen {:<2} times         {} ({:.2f} %)\n", names[k], seen[k],
                       num_instances ? 100.0 * double(seen[k]) / double(num_instances) : 0.0);
  out += fmt::format("epochs expected       {:.4f}\nepochs actual         {:.4f} (reads / distinct instances)\n",
                     expected_epochs, actual_epochs);
  for (const auto& [label, tokens] : tokens_per_source) out += fmt::format("tokens from {:<10} {}\n", label, tokens);
  if (padding_tokens > 0) {
    uint64_t read = padding_tokens;
    for (const auto& source : tokens_per_source) read += source.second;
    out += fmt::format("padding tokens        {} ({:.2f} % of tokens read)\n", padding_tokens,
                       100.0 * double(padding_tokens) / double(read));
  }
  out += ok() ? "OK: no instance was read twice within a planned epoch\n"
              : fmt::format("ERROR: {} reads ({:.2f} % of all reads) repeat an instance within its planned epoch\n",
                            repeats_within_epoch, 100.0 * repeat_fraction());
  return out;
}

}  // namespace replica::data
