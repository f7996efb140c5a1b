// The PyTorch reference's fixture cases (tools/reference/make_fixtures.py, written at build time): where they are,
// which there are, and one case loaded (model, token ids, targets). Shared by the tests that compare with them.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "replica/ckpt/hf.h"
#include "replica/core/npy.h"
#include "replica/kernels/backend.h"
#include "replica/model/document_offsets.h"
#include "replica/model/transformer.h"

namespace replica {

// The build's fixtures, or $FIXTURES (as the integration tests take them) when the tests run elsewhere,
// e.g. unpacked on a GPU machine (scripts/device-bundle.sh).
inline std::filesystem::path fixture_dir() {
  const char* dir = std::getenv("FIXTURES");
  return dir && *dir ? std::filesystem::path(dir) : std::filesystem::path(REPLICA_FIXTURE_DIR);
}

// The case names in `list` (cases.json, packed_cases.json) of the fixture directory.
inline std::vector<std::string> fixture_cases(const char* list = "cases.json") {
  std::ifstream in(fixture_dir() / list);
  if (!in) return {};
  return nlohmann::json::parse(in).get<std::vector<std::string>>();
}

// max |a − b| / max |b|: the error relative to the scale of the reference values.
inline double max_relative_error(const float* a, const float* b, size_t n) {
  double max_diff = 0.0, max_ref = 0.0;
  for (size_t i = 0; i < n; i++) {
    max_diff = std::max(max_diff, std::fabs(double(a[i]) - double(b[i])));
    max_ref = std::max(max_ref, std::fabs(double(b[i])));
  }
  return max_diff / max_ref;
}

struct Case {
  std::string dir;
  ckpt::HfModel model;
  std::vector<int32_t> ids, targets;
  int64_t B = 0, T = 0;
  std::vector<int32_t> doc_offsets;  // packed cases (doc_lens.json): the rows' documents

  explicit Case(const std::string& name) : dir((fixture_dir() / name).string()) {
    model = ckpt::load_hf_model(dir);
    std::vector<int64_t> shape;
    std::vector<int64_t> ids64 = read_npy_ids(dir + "/tokens.npy", &shape);
    B = shape[0];
    T = shape[1];
    ids.assign(ids64.begin(), ids64.end());
    targets = model::shifted_targets(ids.data(), B, T);
    if (std::ifstream lens{dir + "/doc_lens.json"})
      doc_offsets =
          model::document_offsets(nlohmann::json::parse(lens).get<std::vector<std::vector<int32_t>>>(), T, 0);
  }
  model::MicroBatch batch() const { return {ids.data(), targets.data(), B, T, doc_offsets}; }
  nlohmann::json json(const std::string& file) const {
    std::ifstream in(dir + "/" + file);
    return nlohmann::json::parse(in);
  }
};

}  // namespace replica

#define SKIP_WITHOUT_CUDA()                                                                          \
  if (!::replica::cuda_available())                                                                  \
  GTEST_SKIP() << "no CUDA device visible to this process (or a build without CUDA): runs on a GPU " \
                  "machine (bench/gpu/run.sh)"
