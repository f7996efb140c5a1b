// Fuzzes the W&B CSV export reader (report --reference and report runs), and checks what it promises of an
// export it accepts: every value it read is finite, and no metric was read from two columns.
#include <cmath>

#include "fuzz_input.h"
#include "replica/report/wandb_csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  const std::string path = fuzz::write_input("export.csv", data, size);
  fuzz::expect_only_replica_errors([&] {
    report::RunHistory run;
    report::read_wandb_csv(path, run);
    for (const auto* series : {&run.train, &run.heldout, &run.tasks})
      for (const auto& [name, points] : *series)
        for (const report::Point& p : points)
          if (!std::isfinite(p.value) || p.step < 0)
            fuzz::property_failed("a value read from the CSV is not finite, or a step is negative: " + name);
  });
  return 0;
}
