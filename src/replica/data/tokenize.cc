// Parallel tokenization: documents are gathered in chunks of ~32 MB, encoded by worker threads (each
// document independently), then written in input order, so the output never depends on the thread count.
#include "replica/data/tokenize.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/gzip_writer.h"
#include "replica/core/mapped_file.h"
#include "replica/core/npy.h"
#include "replica/core/pystr.h"
#include "replica/data/document_metadata.h"

namespace replica::data {

namespace {

// One input file's bytes: mapped, or inflated when its name ends in .gz (as smart_open opens dolma's inputs).
class InputText {
 public:
  explicit InputText(const std::string& path) : path_(path) {
    mapped_.emplace(path);
    if (path.ends_with(".gz")) {
      inflated_ = gunzip({mapped_->data(), mapped_->size()}, path);
      mapped_.reset();
    }
  }
  const std::string& path() const { return path_; }
  std::string_view bytes() const {
    return mapped_ ? std::string_view(mapped_->data(), mapped_->size()) : std::string_view(inflated_);
  }
  bool is_jsonl() const {
    std::string_view name = path_;
    if (name.ends_with(".gz")) name.remove_suffix(3);
    return name.ends_with(".jsonl") || name.ends_with(".json");
  }

 private:
  std::string path_;
  std::optional<MappedFile> mapped_;
  std::string inflated_;
};

struct Document {
  std::shared_ptr<const InputText> input;
  size_t begin = 0, end = 0;  // byte range in the input
  size_t line = 0;            // 1-based JSONL line, 0 for a plain-text file
};

// What a worker makes of one document.
struct Encoded {
  std::vector<uint32_t> ids;  // EOS included; empty when the document is skipped
  std::string id;             // the sidecar's id column
  bool has_id = true;
};

Encoded encode_document(const Tokenizer& tokenizer, const Document& doc, TextRules rules) {
  std::string_view text = doc.input->bytes().substr(doc.begin, doc.end - doc.begin);
  Encoded out;
  nlohmann::json line;
  if (doc.line == 0) {
    out.id = doc.input->path();
  } else {
    try {
      line = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      fail("{}:{}: invalid JSON ({})", doc.input->path(), doc.line, e.what());
    }
    auto field = line.is_object() ? line.find("text") : line.end();
    check(line.is_object() && field != line.end() && field->is_string(),
          "{}:{}: expected an object with a string \"text\"", doc.input->path(), doc.line);
    text = field->get_ref<const std::string&>();
    auto id = line.find("id");
    out.has_id = id != line.end() && id->is_string();
    if (out.has_id) out.id = id->get<std::string>();
  }
  if (rules == TextRules::verbatim) {
    tokenizer.encode_ordinary(text, out.ids);
    out.ids.push_back(kDolma2Eos);
    return out;
  }
  const std::string stripped = py::strip(text);
  if (stripped.empty()) return out;  // dolma: `if not (text := row.text.strip()): continue`
  tokenizer.encode_dolma(stripped, out.ids);
  if (out.ids.back() != kDolma2Eos) out.ids.push_back(kDolma2Eos);  // Tokenizer.add_special_tokens
  return out;
}

class Writer {
 public:
  Writer(const Tokenizer& tokenizer, const std::string& output, const TokenizeOptions& options)
      : tokenizer_(tokenizer), file_(output), options_(options) {
    // The token count is known at the end: a header of a fixed size now, rewritten with the shape by commit().
    if (options_.npy_header) file_.write(header().data(), kHeaderBytes);
    if (options_.metadata) {
      stats.metadata_path = document_metadata_path(output);
      metadata_.emplace(stats.metadata_path);
    }
  }

  void add(Document doc) {
    pending_bytes_ += doc.end - doc.begin;
    pending_.push_back(std::move(doc));
    if (pending_bytes_ >= kChunkBytes || pending_.size() >= kChunkDocs) flush();
  }

  // Encodes the pending documents on `jobs` threads and appends them in order.
  void flush() {
    std::vector<Encoded> encoded(pending_.size());
    std::atomic<size_t> next{0};
    std::vector<std::exception_ptr> errors(pending_.size());
    auto work = [&] {
      for (size_t i; (i = next.fetch_add(1)) < pending_.size();) {
        try {
          encoded[i] = encode_document(tokenizer_, pending_[i], options_.rules);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
    };
    std::vector<std::thread> threads;
    int n = std::min<int>(options_.jobs, int(pending_.size()));
    for (int t = 1; t < n; t++) threads.emplace_back(work);
    work();
    for (auto& thread : threads) thread.join();
    for (auto& error : errors)  // the first bad document in input order, whatever the thread timing
      if (error) std::rethrow_exception(error);
    std::string rows;
    for (size_t i = 0; i < pending_.size(); i++) {
      const std::vector<uint32_t>& ids = encoded[i].ids;
      if (ids.empty()) {
        stats.empty++;
        continue;
      }
      file_.write(ids.data(), ids.size() * sizeof(uint32_t));
      const Document& doc = pending_[i];
      rows += document_metadata_row(stats.tokens, stats.tokens + ids.size(), encoded[i].id, doc.input->path(),
                                    doc.line == 0 ? 1 : doc.line);
      stats.tokens += ids.size();
      stats.documents++;
      stats.without_id += !encoded[i].has_id;
    }
    if (metadata_) metadata_->write(rows);
    stats.bytes += pending_bytes_;
    pending_.clear();
    pending_bytes_ = 0;
    if (options_.progress)
      fmt::print(stderr, "\rtokenized {} documents, {:.1f} MB, {} tokens", stats.documents, stats.bytes / 1e6,
                 stats.tokens);
  }

  void commit(const std::vector<std::string>& inputs) {
    flush();
    if (options_.progress) fmt::print(stderr, "\n");
    // An empty token file is refused by every reader; nothing is written instead.
    check(stats.tokens > 0, "{}: no documents to tokenize (every input is empty or blank)", fmt::join(inputs, ", "));
    if (options_.npy_header) file_.overwrite(0, header().data(), kHeaderBytes);
    // The sidecar first: a reader that finds the new token file finds its documents too.
    if (metadata_) metadata_->commit();
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
  std::optional<GzipWriter> metadata_;
  const TokenizeOptions& options_;
  std::vector<Document> pending_;
  size_t pending_bytes_ = 0;
};

}  // namespace

TextRules parse_text_rules(const std::string& text, const std::string& key) {
  if (text == "dolma") return TextRules::dolma;
  if (text == "verbatim") return TextRules::verbatim;
  fail("{}: expected dolma or verbatim, got '{}'", key, text);
}

TokenizeStats tokenize_files(const Tokenizer& tokenizer, const std::vector<std::string>& inputs,
                             const std::string& output, const TokenizeOptions& given) {
  check(!inputs.empty(), "no input files to tokenize (give --input FILES... or --input-list FILE)");
  TokenizeOptions options = given;
  if (options.jobs <= 0) options.jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  options.progress = options.progress && isatty(2);
  // OLMo-core finds the sidecar by replacing ".npy" in the token file's name; without one there is nowhere to put it.
  options.metadata = options.metadata && std::filesystem::path(output).filename().string().find(".npy") != std::string::npos;
  auto start = std::chrono::steady_clock::now();
  Writer writer(tokenizer, output, options);
  for (const auto& path : inputs) {
    auto input = std::make_shared<const InputText>(path);
    const std::string_view bytes = input->bytes();
    if (!input->is_jsonl()) {
      writer.add({input, 0, bytes.size(), 0});
      continue;
    }
    // Python's text mode: "\n", "\r\n" and a lone "\r" each end a line.
    size_t line = 0;
    for (size_t pos = 0; pos < bytes.size();) {
      const size_t end = std::min(bytes.find_first_of("\r\n", pos), bytes.size());
      line++;
      if (bytes.substr(pos, end - pos).find_first_not_of(" \t") != std::string_view::npos)
        writer.add({input, pos, end, line});
      pos = end + (bytes.substr(end, 2) == "\r\n" ? 2 : 1);
    }
  }
  writer.commit(inputs);
  writer.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return writer.stats;
}

}  // namespace replica::data
