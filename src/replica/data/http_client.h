// HTTP(S) reads of remote files through libcurl, as OLMo-core's io.py reads AI2's data: a HEAD for a file's size and
// validators (ETag, Last-Modified), a GET with a Range header for bytes. Every response is checked against what was
// recorded; what may pass by itself (a 5xx, a reset, a timeout, a connection dropped mid-body) is retried with
// backoff, anything else (a 4xx, a changed file, a short body) is an Error naming the URL at once.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace replica::data {

// An http:// or https:// path (OLMo-core's is_url for the schemes replica reads).
bool is_url(std::string_view path);

// What a HEAD says a remote file is; a later response must say the same.
struct RemoteIdentity {
  uint64_t size = 0;
  std::string etag;           // empty when the server sends none
  std::string last_modified;  // likewise
};

struct HttpOptions {
  int64_t retries = 5;     // attempts after the first for a 5xx, a reset or a timeout (OLMo-core: 2)
  double timeout_s = 60;   // connecting, or receiving no byte, for this long is a timeout
  double backoff_s = 0.5;  // the wait before the first retry, doubling up to 8 s (OLMo-core: 0.5 s doubling to 3 s)
};

// HEAD: the file's size (Content-Length) and validators. Raises Error naming the URL for a 4xx, a response without
// Content-Length, or when retries run out.
RemoteIdentity http_head(const std::string& url, const HttpOptions& options);
// The same, but none when the server answers 404 (a file that may or may not be there: an HF directory's
// model.safetensors.index.json), unless `missing_ok` is false.
std::optional<RemoteIdentity> http_head_if_found(const std::string& url, const HttpOptions& options,
                                                 bool missing_ok = true);

// GET bytes [offset, offset + out.size()) into `out`, all of them or an Error naming the URL: the response must be
// a 206 for exactly that range of a file of `expected.size` bytes (or a 200 of the whole file), carry the recorded
// ETag and Last-Modified, and deliver every byte. `out` is only complete when this returns.
void http_get_range(const std::string& url, const RemoteIdentity& expected, uint64_t offset, std::span<char> out,
                    const HttpOptions& options);

}  // namespace replica::data
