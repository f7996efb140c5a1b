// libcurl requests: one easy handle per thread (so its connections are reused), header parsing, and the
// retry-or-fail decision for each outcome.
#include "replica/data/http_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>
#include <thread>

#include "replica/core/error.h"
#include "replica/core/parse_number.h"

namespace replica::data {
namespace {

void init_curl() {
  static std::once_flag global;
  std::call_once(global, [] { check(curl_global_init(CURL_GLOBAL_DEFAULT) == 0, "libcurl cannot initialise"); });
}

// DNS answers and TLS sessions shared by every thread: the loader reads each batch on threads of its own, whose
// connections are new, and a resumed TLS session saves their handshakes a round trip. Open connections are not
// shared: libcurl's shared connection cache corrupted the heap under 32 threads here (libcurl 7.88).
CURLSH* shared_pool() {
  static std::mutex locks[CURL_LOCK_DATA_LAST];
  static CURLSH* const share = [] {
    init_curl();
    CURLSH* s = curl_share_init();
    check(s != nullptr, "libcurl cannot create a share handle");
    curl_share_setopt(s, CURLSHOPT_LOCKFUNC, +[](CURL*, curl_lock_data data, curl_lock_access, void*) {
      locks[data].lock();
    });
    curl_share_setopt(s, CURLSHOPT_UNLOCKFUNC, +[](CURL*, curl_lock_data data, void*) { locks[data].unlock(); });
    for (curl_lock_data d : {CURL_LOCK_DATA_DNS, CURL_LOCK_DATA_SSL_SESSION})
      curl_share_setopt(s, CURLSHOPT_SHARE, d);
    return s;  // never cleaned up: handles of exiting threads use it until the process ends
  }();
  return share;
}

CURL* thread_handle() {
  init_curl();
  struct Handle {
    CURL* curl = curl_easy_init();
    ~Handle() { curl_easy_cleanup(curl); }
  };
  thread_local Handle handle;
  check(handle.curl != nullptr, "libcurl cannot create a request handle");
  return handle.curl;
}

// One response: its status, the headers replica checks, and the body written so far.
struct Response {
  long status = 0;
  std::string etag, last_modified, content_range;
  std::optional<uint64_t> content_length;
  std::span<char> body;   // where the body goes (empty for a HEAD)
  uint64_t received = 0;  // body bytes delivered
  bool overflow = false;  // the server sent more than was asked for
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool header_is(std::string_view name, std::string_view wanted) {
  return name.size() == wanted.size() && std::equal(name.begin(), name.end(), wanted.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto& r = *static_cast<Response*>(user);
  const std::string_view line(data, size * count);
  if (line.starts_with("HTTP/")) {  // a new response (after a redirect or a 100): forget the last one's headers
    r.etag.clear(), r.last_modified.clear(), r.content_range.clear(), r.content_length.reset();
    return size * count;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return size * count;
  const std::string_view name = line.substr(0, colon), value = trim(line.substr(colon + 1));
  if (header_is(name, "etag")) r.etag = value;
  if (header_is(name, "last-modified")) r.last_modified = value;
  if (header_is(name, "content-range")) r.content_range = value;
  if (header_is(name, "content-length")) r.content_length = parse_uint64(value);
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto& r = *static_cast<Response*>(user);
  const size_t n = size * count;
  if (n > r.body.size() - r.received) {
    r.overflow = true;
    return 0;  // libcurl stops with CURLE_WRITE_ERROR
  }
  std::copy(data, data + n, r.body.data() + r.received);
  r.received += n;
  return n;
}

// A transfer that failed for a reason that may pass: a reset, a timeout, a connection dropped mid-body.
bool transient(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

// Runs one request; `range` empty for a HEAD. Returns the response, or a description of a transient failure; a 404
// is a response too when `missing_ok` (the caller asks whether a file exists), else an Error as any 4xx.
struct Attempt {
  std::optional<Response> response;
  std::string transient_failure;
};

Attempt attempt(const std::string& url, const std::string& range, std::span<char> body, const HttpOptions& o,
                bool missing_ok) {
  CURL* curl = thread_handle();
  curl_easy_reset(curl);
  curl_easy_setopt(curl, CURLOPT_SHARE, shared_pool());
  Response r;
  r.body = body;
  char error[CURL_ERROR_SIZE] = "";
  const long timeout_ms = long(std::ceil(o.timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);  // under a byte a second for timeout_s: the server is gone
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, std::max(1L, long(std::ceil(o.timeout_s))));
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "replica");
  if (range.empty())
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  else
    curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  const CURLcode code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
  if (code == CURLE_WRITE_ERROR && r.overflow)
    fail("{}: the server sent more than the {} bytes asked for (Range {}); it ignores range requests or the file "
         "changed",
         url, body.size(), range);
  if (code != CURLE_OK) {
    if (transient(code)) return {std::nullopt, fmt::format("{} ({})", curl_easy_strerror(code), error)};
    fail("{}: request failed: {} ({})", url, curl_easy_strerror(code), error);
  }
  if (r.status >= 500) return {std::nullopt, fmt::format("HTTP {}", r.status)};
  if (missing_ok && r.status == 404) return {std::move(r), {}};
  check(r.status < 400, "{}: HTTP {}{}", url, r.status, r.status == 404 ? " (not found)" : "");
  return {std::move(r), {}};
}

// Runs attempts until one gives a response, waiting backoff_s, 2 backoff_s, ... (at most 8 s) between them.
Response with_retries(const std::string& url, const std::string& range, std::span<char> body, const HttpOptions& o,
                      bool missing_ok = false) {
  std::string last;
  for (int64_t i = 0; i <= o.retries; i++) {
    if (i > 0) {
      const double wait = std::min(8.0, o.backoff_s * std::pow(2.0, double(i - 1)));
      fmt::print(stderr, "{}: {}; retry {} of {} in {:.1f} s\n", url, last, i, o.retries, wait);
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }
    Attempt a = attempt(url, range, body, o, missing_ok);
    if (a.response) return std::move(*a.response);
    last = std::move(a.transient_failure);
  }
  fail("{}: {} attempts failed, the last with {}{}", url, o.retries + 1, last,
       range.empty() ? "" : fmt::format(" (Range {})", range));
}

void check_validators(const std::string& url, const RemoteIdentity& expected, const Response& r) {
  check(expected.etag.empty() || r.etag == expected.etag,
        "{}: the file changed on the server: ETag {} now, {} when it was first read; the data under a run must "
        "not change (a run records it in run.dir/remote_files.json: remove that file only if you mean to train on "
        "the new one)",
        url, r.etag.empty() ? "(none)" : r.etag, expected.etag);
  check(expected.last_modified.empty() || r.last_modified == expected.last_modified,
        "{}: the file changed on the server: Last-Modified {} now, {} when it was first read", url,
        r.last_modified.empty() ? "(none)" : r.last_modified, expected.last_modified);
}

}  // namespace

bool is_url(std::string_view path) { return path.starts_with("http://") || path.starts_with("https://"); }

RemoteIdentity http_head(const std::string& url, const HttpOptions& options) {
  return *http_head_if_found(url, options, false);
}

std::optional<RemoteIdentity> http_head_if_found(const std::string& url, const HttpOptions& options, bool missing_ok) {
  const Response r = with_retries(url, "", {}, options, missing_ok);
  if (r.status == 404) return std::nullopt;
  check(r.content_length.has_value(),
        "{}: the HEAD response has no Content-Length (a rate-limiting or DDoS-protecting server answers so), so the "
        "file's size is unknown",
        url);
  return RemoteIdentity{*r.content_length, r.etag, r.last_modified};
}

void http_get_range(const std::string& url, const RemoteIdentity& expected, uint64_t offset, std::span<char> out,
                    const HttpOptions& options) {
  check(offset <= expected.size && out.size() <= expected.size - offset,
        "{}: read of {} bytes at {} is past the end of the file ({} bytes)", url, out.size(), offset, expected.size);
  if (out.empty()) return;
  const std::string range = fmt::format("{}-{}", offset, offset + out.size() - 1);
  const Response r = with_retries(url, range, out, options);
  check_validators(url, expected, r);
  if (r.status == 200) {
    check(offset == 0 && out.size() == expected.size,
          "{}: HTTP 200 for the range {} of {} bytes: the server ignores range requests", url, range, expected.size);
  } else {
    check(r.status == 206, "{}: HTTP {} for the range {} (expected 206 Partial Content)", url, r.status, range);
    const std::string wanted = fmt::format("bytes {}/{}", range, expected.size);
    check(r.content_range == wanted,
          "{}: Content-Range '{}' for the range {} (expected '{}'): the file's size changed or the server answered "
          "another range",
          url, r.content_range, range, wanted);
  }
  check(r.received == out.size(),
        "{}: short body: {} of the {} bytes of range {} arrived in a complete response; nothing of it is used", url,
        r.received, out.size(), range);
}

}  // namespace replica::data
