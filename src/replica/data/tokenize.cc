// Parallel tokenization: documents are gathered in chunks of ~32 MB, encoded by worker threads (each
// document independently), then written in input order, so the output never depends on the thread count.
#include "replica/data/tokenize.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/mapped_file.h"
#include "replica/core/npy.h"

namespace replica::data {

namespace {

struct Document {
  std::shared_ptr<const MappedFile> file;
  size_t begin = 0, end = 0;  // byte range in the file
  size_t line = 0;            // 1-based JSONL line, 0 for a plain-text file
};

bool is_jsonl(const std::string& path) {
  auto ends_with = [&](const char* suffix) {
    size_t n = std::strlen(suffix);
    return path.size() >= n && path.compare(path.size() - n, n, suffix) == 0;
  };
  return ends_with(".jsonl") || ends_with(".json");
}

// Encodes one document (parsing its JSON line first when it has one) into `out`, without the EOS.
void encode_document(const Tokenizer& tokenizer, const Document& doc, std::vector<uint32_t>& out) {
  std::string_view bytes(doc.file->data() + doc.begin, doc.end - doc.begin);
  if (doc.line == 0) {
    tokenizer.encode_ordinary(bytes, out);
    return;
  }
  nlohmann::json line;
  try {
    line = nlohmann::json::parse(bytes);
  } catch (const nlohmann::json::exception& e) {
    fail("{}:{}: invalid JSON ({})", doc.file->path(), doc.line, e.what());
  }
  auto text = line.is_object() ? line.find("text") : line.end();
  check(line.is_object() && text != line.end() && text->is_string(), "{}:{}: expected an object with a string \"text\"",
        doc.file->path(), doc.line);
  tokenizer.encode_ordinary(text->get_ref<const std::string&>(), out);
}

class Writer {
 public:
  Writer(const Tokenizer& tokenizer, const std::string& output, int jobs, bool npy_header, bool progress)
      : tokenizer_(tokenizer), file_(output), jobs_(jobs), npy_header_(npy_header), progress_(progress) {
    // The token count is known at the end: a header of a fixed size now, rewritten with the shape by commit().
    if (npy_header_) file_.write(header().data(), kHeaderBytes);
  }

  void add(Document doc) {
    pending_bytes_ += doc.end - doc.begin;
    pending_.push_back(std::move(doc));
    if (pending_bytes_ >= kChunkBytes || pending_.size() >= kChunkDocs) flush();
  }

  // Encodes the pending documents on `jobs` threads and appends them in order.
  void flush() {
    std::vector<std::vector<uint32_t>> ids(pending_.size());
    std::atomic<size_t> next{0};
    std::vector<std::exception_ptr> errors(pending_.size());
    auto work = [&] {
      for (size_t i; (i = next.fetch_add(1)) < pending_.size();) {
        try {
          encode_document(tokenizer_, pending_[i], ids[i]);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
    };
    std::vector<std::thread> threads;
    int n = std::min<int>(jobs_, int(pending_.size()));
    for (int t = 1; t < n; t++) threads.emplace_back(work);
    work();
    for (auto& thread : threads) thread.join();
    for (auto& error : errors)  // the first bad document in input order, whatever the thread timing
      if (error) std::rethrow_exception(error);
    for (size_t i = 0; i < pending_.size(); i++) {
      ids[i].push_back(kDolma2Eos);
      file_.write(ids[i].data(), ids[i].size() * sizeof(uint32_t));
      stats.tokens += ids[i].size();
    }
    stats.documents += pending_.size();
    stats.bytes += pending_bytes_;
    pending_.clear();
    pending_bytes_ = 0;
    if (progress_)
      fmt::print(stderr, "\rtokenized {} documents, {:.1f} MB, {} tokens", stats.documents, stats.bytes / 1e6,
                 stats.tokens);
  }

  void commit(const std::vector<std::string>& inputs) {
    flush();
    if (progress_) fmt::print(stderr, "\n");
    // An empty token file is refused by every reader; nothing is written instead.
    check(stats.tokens > 0, "{}: no documents to tokenize (every input is empty or blank)", fmt::join(inputs, ", "));
    if (npy_header_) file_.overwrite(0, header().data(), kHeaderBytes);
    file_.commit();
  }

  TokenizeStats stats;

 private:
  // Room for the header of any uint32 shape (a 20-digit token count included), a multiple of 64 as NumPy writes it.
  static constexpr size_t kHeaderBytes = 128;
  std::string header() const {
    const std::string h = npy_header(NpyType::u32, {int64_t(stats.tokens)}, kHeaderBytes);
    check(h.size() == kHeaderBytes, "npy header of {} tokens takes {} bytes", stats.tokens, h.size());
    return h;
  }

  static constexpr size_t kChunkBytes = size_t(32) << 20, kChunkDocs = 65536;
  const Tokenizer& tokenizer_;
  AtomicFile file_;
  int jobs_;
  bool npy_header_, progress_;
  std::vector<Document> pending_;
  size_t pending_bytes_ = 0;
};

}  // namespace

TokenizeStats tokenize_files(const Tokenizer& tokenizer, const std::vector<std::string>& inputs,
                             const std::string& output, int jobs, bool npy_header, bool progress) {
  check(!inputs.empty(), "no input files to tokenize (give --input FILES... or --input-list FILE)");
  if (jobs <= 0) jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  auto start = std::chrono::steady_clock::now();
  Writer writer(tokenizer, output, jobs, npy_header, progress && isatty(2));
  for (const auto& path : inputs) {
    auto file = std::make_shared<const MappedFile>(path);
    if (!is_jsonl(path)) {
      writer.add({file, 0, file->size(), 0});
      continue;
    }
    size_t line = 0;
    for (size_t pos = 0; pos < file->size();) {
      const char* eol = static_cast<const char*>(std::memchr(file->data() + pos, '\n', file->size() - pos));
      size_t end = eol ? size_t(eol - file->data()) : file->size();
      line++;
      std::string_view text(file->data() + pos, end - pos);
      if (text.find_first_not_of(" \t\r") != std::string_view::npos) writer.add({file, pos, end, line});
      pos = end + 1;
    }
  }
  writer.commit(inputs);
  writer.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return writer.stats;
}

}  // namespace replica::data
