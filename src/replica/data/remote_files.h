// The process's remote data files: how they are read (HttpOptions, the range cache) and what each one is (its
// RemoteIdentity from a HEAD, recorded in the run's remote index so that a restart neither repeats 1,016 HEADs nor
// reads a file again to fingerprint it, and every later response is checked against the first start's record).
//
//   configure_remote_files(config);             // once, from the recipe (train::loader_config) or the CLI flags
//   stat_remote_files(paths);                   // HEADs the URLs not yet known, kConnections at a time
//   auto file = open_remote_file(url);          // a ByteSource reading by range requests, through the cache
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "replica/data/byte_source.h"
#include "replica/data/http_client.h"

namespace replica::data {

// Requests in flight at once: for the HEADs at start and for a batch's instances (data/loader.cc).
inline constexpr int kConnections = 32;

struct RemoteConfig {
  HttpOptions http;          // data.http_retries, data.http_timeout
  std::string cache_dir;     // data.cache_dir: where ranges read are kept; empty: nowhere
  int64_t cache_bytes = int64_t(100) << 30;  // data.cache_bytes: the cache's bound
  // Where each remote file's size, ETag, Last-Modified and content hash are recorded (a JSON file: a training run's
  // run.dir/remote_files.json); empty: in memory only.
  std::string index_path;
};

// Replaces the process's settings and forgets every file it knew, then loads the index if there is one. Raises Error
// naming the index for one that is not replica's.
void configure_remote_files(const RemoteConfig& config);

// Makes sure every URL among `paths` is known: HEADs those that are not, in parallel, and keeps what they said
// (in the index at the next save_remote_index).
void stat_remote_files(const std::vector<std::string>& paths);

// A ByteSource for `url` (HEADed first if it is not known).
std::shared_ptr<const ByteSource> open_remote_file(const std::string& url);

// Writes the index when something was learned since it was read (HEADs, and content hashes as fingerprints compute
// them): DataLoader::fingerprint() calls it, which a run does once it holds run.dir.
void save_remote_index();

}  // namespace replica::data
