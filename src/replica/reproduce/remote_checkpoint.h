// A checkpoint directory at an http(s):// URL — a row of AI2's CSV (OLMo-3-1025-7B.csv) naming
// https://olmo-checkpoints.org/.../stage1/step1000/ — fetched once into the reproduce cache:
//   DIR/cache/remote/<16 hex of the URL's sha256>/   config.json, model.safetensors or model.safetensors.index.json
//                                                    and the shards it names, and FETCHED.json (written last)
// Every file is HEADed and read by range requests, each checked against the HEAD's size, ETag and Last-Modified
// (data/http_client.h), to a temp name renamed when complete; its sha256 is computed as it arrives and, where the
// server's ETag is a sha256 (the Hugging Face hub's are, for weight files), must equal it. FETCHED.json records each
// file's URL, size, validators and sha256. A rerun HEADs the files again: a server whose file changed since is an
// Error naming the URL (the reference must not change under a reproduction), a local copy whose size or modification
// time changed is fetched again, and an unchanged one is used as it is, without reading it.
#pragma once
#include <functional>
#include <string>

#include "replica/data/http_client.h"
#include "replica/reproduce/file_hash_cache.h"

namespace replica::reproduce {

// The local directory holding the checkpoint at `url`, fetched into `cache_dir`/remote/ unless it already is there.
// `say` gets a line per file fetched; the sha256 of each file goes into `hashes` (so the content hash reads nothing).
std::string fetch_remote_checkpoint(const std::string& url, const std::string& cache_dir, FileHashCache& hashes,
                                    const data::HttpOptions& http, const std::function<void(const std::string&)>& say);

}  // namespace replica::reproduce
