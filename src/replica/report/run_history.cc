// RunHistory: lookups that treat a metric the source did not record as an empty series.
#include "replica/report/run_history.h"

namespace replica::report {

const Series& RunHistory::train_series(const std::string& metric) const {
  static const Series none;
  const auto it = train.find(metric);
  return it == train.end() ? none : it->second;
}

}  // namespace replica::report
