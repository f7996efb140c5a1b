// What a DataLoader reads: numbered instances of seq_len tokens drawn from token files, either fixed-length
// chunks (FslDataset) or packed documents (PackedDataset).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "replica/data/token_file.h"

namespace replica::data {

class InstanceSource {
 public:
  virtual ~InstanceSource() = default;

  virtual uint64_t num_instances() const = 0;
  virtual int64_t seq_len() const = 0;
  virtual size_t num_files() const = 0;  // in dataset order
  virtual const TokenFile& file(size_t i) const = 0;
  virtual const std::string& label(size_t i) const = 0;
  // Writes the seq_len token ids of `instance` to `out` (ids checked against the vocab size).
  virtual void read_instance(uint64_t instance, int32_t* out) const = 0;
  // How many of the instance's tokens each file supplies, as (file, tokens) pairs; padding is no file's.
  virtual std::vector<std::pair<size_t, uint64_t>> token_sources(uint64_t instance) const = 0;
};

}  // namespace replica::data
