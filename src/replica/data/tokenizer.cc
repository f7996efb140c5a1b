// dolma2 / cl100k_base tokenizer: PCRE2-JIT pre-tokenisation, then tiktoken's lowest-rank byte-pair merge
// over each piece, with a hash map from token bytes to rank and a per-thread cache of recent pieces.
#include "replica/data/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "replica/core/error.h"
#include "replica/core/file.h"
#include "replica/core/sha256.h"

namespace replica::data {

namespace {

constexpr std::array<std::string_view, 22> kAddedTokens = {
    "<|extra_id_0|>",  "<|endoftext|>",  "<|fim_prefix|>",  "<|fim_middle|>",  "<|fim_suffix|>",
    "|||PHONE_NUMBER|||", "|||EMAIL_ADDRESS|||", "|||IP_ADDRESS|||", "<|im_start|>", "<|im_end|>",
    "<|extra_id_1|>",  "<|extra_id_2|>", "<|extra_id_3|>",  "<|extra_id_4|>",  "<|extra_id_5|>",
    "<|extra_id_6|>",  "<|extra_id_7|>", "<|extra_id_8|>",  "<|extra_id_9|>",  "<|extra_id_10|>",
    "<|endofprompt|>", "<|pad|>"};

// The added tokens AI2 marks "special": true in allenai_dolma2.json. The others (extra ids and Dolma's PII masks)
// are plain added tokens, which Hugging Face tokenizers matches in text even with encode_special_tokens.
constexpr std::array<std::string_view, 8> kSpecialTokens = {"<|endoftext|>",   "<|fim_prefix|>", "<|fim_middle|>",
                                                            "<|fim_suffix|>",  "<|im_start|>",   "<|im_end|>",
                                                            "<|endofprompt|>", "<|pad|>"};

// The cl100k pattern. `\s` is spelled out as Unicode White_Space (what Rust's regex, and so tiktoken,
// means by \s): PCRE2's UCP \s would also match U+180E, which is not White_Space since Unicode 6.3.
// PCRE2 10.42 knows Unicode 14; the Kaktovik numerals U+1D2C0..U+1D2D3 (Unicode 15, category No) are added
// to \p{N} by hand. tests/fixtures/data/tokenizer_codepoints.txt checks every code point against tiktoken.
#define WS "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define N "\\p{N}\\x{1D2C0}-\\x{1D2D3}"
constexpr const char* kPattern = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}" N "]?\\p{L}+|[" N "]{1,3}| ?[^" WS
                                 "\\p{L}" N "]+[\\r\\n]*|[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+";
#undef N
#undef WS

constexpr uint32_t kNone = UINT32_MAX;
std::atomic<uint64_t> next_id{1};

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Decodes standard base64 (with '=' padding) onto the end of `out`; false on a bad character.
bool base64_decode(std::string_view in, std::string& out) {
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    int v = base64_value(c);
    if (v < 0) return false;
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((acc >> bits) & 0xff);
    }
  }
  return true;
}

}  // namespace

std::span<const std::string_view> dolma2_added_tokens() { return kAddedTokens; }

bool is_dolma2_special(std::string_view content) {
  return std::find(kSpecialTokens.begin(), kSpecialTokens.end(), content) != kSpecialTokens.end();
}

std::string default_ranks_path() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("REPLICA_TOKENIZER")) {
    check(fs::is_regular_file(env),
          "REPLICA_TOKENIZER={}: no such file (expected the cl100k_base.tiktoken ranks the "
          "dolma2 tokenizer is built on; unset the variable to use data/tokenizer/)",
          env);
    return env;
  }
  const std::string candidates[] = {
      "data/tokenizer/cl100k_base.tiktoken",
      "tests/fixtures/data/cl100k_base.tiktoken",
  };
  for (const auto& path : candidates)
    if (fs::exists(path)) return path;
  fail("cl100k_base.tiktoken not found (looked in $REPLICA_TOKENIZER, data/tokenizer/, tests/fixtures/data/); "
       "run scripts/fetch-data.sh --tokenizer");
}

struct Tokenizer::Impl {
  uint64_t id = next_id.fetch_add(1);  // identifies this tokenizer to the per-thread caches
  std::string bytes;              // every token's bytes, concatenated in rank order
  std::vector<uint32_t> offsets;  // token r is bytes[offsets[r], offsets[r+1])
  std::vector<uint32_t> table;    // open addressing: rank or kNone, indexed by hash & mask
  uint64_t mask = 0;
  std::array<uint32_t, 256> byte_rank{};
  pcre2_code* regex = nullptr;

  ~Impl() { pcre2_code_free(regex); }

  std::string_view token(uint32_t rank) const {
    return std::string_view(bytes).substr(offsets[rank], offsets[rank + 1] - offsets[rank]);
  }

  uint32_t rank_of(const char* p, size_t n) const {
    for (uint64_t slot = XXH3_64bits(p, n) & mask;; slot = (slot + 1) & mask) {
      uint32_t rank = table[slot];
      if (rank == kNone) return kNone;
      if (offsets[rank + 1] - offsets[rank] == n && std::memcmp(bytes.data() + offsets[rank], p, n) == 0)
        return rank;
    }
  }

  void build_table() {
    size_t n = offsets.size() - 1, capacity = 1;
    while (capacity < 2 * n) capacity *= 2;
    table.assign(capacity, kNone);
    mask = capacity - 1;
    for (uint32_t r = 0; r < n; r++) {
      std::string_view t = token(r);
      uint64_t slot = XXH3_64bits(t.data(), t.size()) & mask;
      while (table[slot] != kNone) slot = (slot + 1) & mask;
      table[slot] = r;
    }
  }

  void encode_piece(const char* p, size_t n, std::vector<uint32_t>& out) const;
  void merge_small(const char* p, size_t n, std::vector<uint32_t>& out, uint32_t rank_limit = kNone) const;
  void merge_large(const char* p, size_t n, std::vector<uint32_t>& out) const;
};

// Per-thread matching state and a direct-mapped cache of recently merged pieces (words that are not a
// single token). It belongs to one tokenizer at a time and is rebuilt when another one is used.
namespace {

struct CacheSlot {
  uint8_t length = 0, count = 0;  // piece bytes, token count; length 0 = empty
  char piece[30];
  uint32_t ids[8];
};

struct ThreadState {
  pcre2_match_data* match = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr);
  uint64_t owner = 0;  // Impl::id of the tokenizer the cache belongs to
  std::vector<CacheSlot> cache;

  ThreadState() {
    pcre2_jit_stack_assign(context, nullptr, stack);
    // A whitespace run is scanned twice (\s*[\r\n]+ fails, then \s+(?!\S) matches): linear, but a 10 MB run
    // exceeds PCRE2's default limit of 10 M steps.
    pcre2_set_match_limit(context, UINT32_MAX);
  }
  ~ThreadState() {
    pcre2_match_data_free(match);
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
  }
  void bind(uint64_t tokenizer) {
    if (owner == tokenizer) return;
    cache.assign(1 << 14, CacheSlot{});
    owner = tokenizer;
  }
};

thread_local ThreadState thread_state;

}  // namespace

// Lowest-rank merge for short pieces, as tiktoken does it: parts are byte ranges, pair_rank[i] is the rank
// of parts i and i+1 joined; merge the leftmost lowest pair, update its two neighbours, repeat (while that rank is
// below rank_limit).
void Tokenizer::Impl::merge_small(const char* p, size_t n, std::vector<uint32_t>& out, uint32_t rank_limit) const {
  uint32_t start[129], pair_rank[129];
  size_t parts = n;
  for (size_t i = 0; i <= n; i++) start[i] = uint32_t(i);
  auto joined_rank = [&](size_t i) {  // rank of parts i, i+1 joined (kNone past the end)
    if (i + 2 > parts) return kNone;
    return rank_of(p + start[i], start[i + 2] - start[i]);
  };
  for (size_t i = 0; i + 1 < parts; i++) pair_rank[i] = joined_rank(i);
  while (parts > 1) {
    uint32_t best = kNone;
    size_t at = 0;
    for (size_t i = 0; i + 1 < parts; i++)
      if (pair_rank[i] < best) best = pair_rank[i], at = i;
    if (best >= rank_limit) break;
    // Remove the boundary at+1.
    for (size_t i = at + 1; i < parts; i++) start[i] = start[i + 1];
    for (size_t i = at + 1; i + 1 < parts; i++) pair_rank[i] = pair_rank[i + 1];
    parts--;
    pair_rank[at] = joined_rank(at);
    if (at > 0) pair_rank[at - 1] = joined_rank(at - 1);
  }
  for (size_t i = 0; i < parts; i++) out.push_back(rank_of(p + start[i], start[i + 1] - start[i]));
}

namespace {

// A binary min-heap of parts keyed by (rank of the part's pair with its right neighbour, part): the lowest rank first,
// ties to the leftmost pair. An entry holds its key, so comparisons read the heap alone; each part has at most one
// entry and knows its slot, so a merge re-keys the pairs it changed in place instead of leaving stale entries behind.
class PairHeap {
 public:
  struct Entry {
    uint32_t rank, part;
    bool before(const Entry& o) const { return rank != o.rank ? rank < o.rank : part < o.part; }
  };

  // The pairs that have a rank (entries in any order), heapified in O(n); `parts` bounds their part numbers.
  PairHeap(std::vector<Entry> entries, size_t parts) : heap_(std::move(entries)), slot_(parts, kAbsent) {
    for (size_t i = 0; i < heap_.size(); i++) slot_[heap_[i].part] = uint32_t(i);
    for (size_t i = heap_.size() / 2; i-- > 0;) sift_down(i);
  }
  bool empty() const { return heap_.empty(); }
  uint32_t top() const { return heap_[0].part; }

  // The part's pair now has `rank` (kNone: it has none): moves its entry, adds it, or removes it.
  void set(uint32_t part, uint32_t rank) {
    if (rank == kNone) return remove(part);
    size_t i = slot_[part];
    if (i == kAbsent) {
      i = heap_.size();
      heap_.push_back({rank, part});
    }
    heap_[i].rank = rank;
    sift_up(i);
    sift_down(slot_[part]);
  }
  void remove(uint32_t part) {
    const size_t i = slot_[part];
    if (i == kAbsent) return;
    slot_[part] = kAbsent;
    const Entry last = heap_.back();
    heap_.pop_back();
    if (i == heap_.size()) return;
    place(i, last);
    sift_up(i);
    sift_down(slot_[last.part]);
  }

 private:
  static constexpr uint32_t kAbsent = UINT32_MAX;
  void place(size_t i, Entry e) {
    heap_[i] = e;
    slot_[e.part] = uint32_t(i);
  }
  void sift_up(size_t i) {
    const Entry e = heap_[i];
    for (; i > 0 && e.before(heap_[(i - 1) / 2]); i = (i - 1) / 2) place(i, heap_[(i - 1) / 2]);
    place(i, e);
  }
  void sift_down(size_t i) {
    const Entry e = heap_[i];
    for (size_t child; (child = 2 * i + 1) < heap_.size(); i = child) {
      if (child + 1 < heap_.size() && heap_[child + 1].before(heap_[child])) child++;
      if (!heap_[child].before(e)) break;
      place(i, heap_[child]);
    }
    place(i, e);
  }

  std::vector<Entry> heap_;
  std::vector<uint32_t> slot_;
};

}  // namespace

// The same merge order for long pieces in O(n log n) time and 20 bytes of memory a byte: the parts are a linked list
// over the piece (a part ends where the next begins), and a PairHeap holds each part's pair with its right
// neighbour. A merge removes the absorbed part's entry and re-keys the two pairs it changed, so the heap never holds
// more than one entry a part (a heap of stale entries took 1 GB for a 30 MB piece of one letter, review case 103).
void Tokenizer::Impl::merge_large(const char* p, size_t n, std::vector<uint32_t>& out) const {
  std::vector<uint32_t> next(n), prev(n);
  for (uint32_t i = 0; i < n; i++) next[i] = i + 1, prev[i] = i - 1;
  auto rank_of_pair = [&](uint32_t left) {  // the part at `left` joined with the next one
    return next[left] < n ? rank_of(p + left, next[next[left]] - left) : kNone;
  };
  std::vector<PairHeap::Entry> pairs;
  pairs.reserve(n);
  for (uint32_t i = 0; i + 1 < n; i++)
    if (const uint32_t rank = rank_of_pair(i); rank != kNone) pairs.push_back({rank, i});
  PairHeap heap(std::move(pairs), n);
  while (!heap.empty()) {
    const uint32_t left = heap.top(), right = next[left];
    heap.remove(right);
    next[left] = next[right];
    if (next[left] < n) prev[next[left]] = left;
    heap.set(left, rank_of_pair(left));
    if (left > 0) heap.set(prev[left], rank_of_pair(prev[left]));
  }
  for (uint32_t i = 0; i < n; i = next[i]) out.push_back(rank_of(p + i, next[i] - i));
}

void Tokenizer::Impl::encode_piece(const char* p, size_t n, std::vector<uint32_t>& out) const {
  if (n == 1) {
    out.push_back(byte_rank[uint8_t(p[0])]);
    return;
  }
  uint32_t whole = rank_of(p, n);
  if (whole != kNone) {
    out.push_back(whole);
    return;
  }
  if (n > sizeof(CacheSlot::piece)) {
    n <= 128 ? merge_small(p, n, out) : merge_large(p, n, out);
    return;
  }
  CacheSlot& slot = thread_state.cache[XXH3_64bits(p, n) & (thread_state.cache.size() - 1)];
  if (slot.length == n && std::memcmp(slot.piece, p, n) == 0) {
    out.insert(out.end(), slot.ids, slot.ids + slot.count);
    return;
  }
  size_t first = out.size();
  merge_small(p, n, out);
  size_t count = out.size() - first;
  if (count <= std::size(slot.ids)) {
    slot.length = uint8_t(n);
    slot.count = uint8_t(count);
    std::memcpy(slot.piece, p, n);
    std::copy(out.begin() + first, out.end(), slot.ids);
  }
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& ranks_path, bool verify) {
  std::string text = read_text_file(ranks_path);
  if (verify) {
    std::string digest = sha256_hex(text.data(), text.size());
    check(digest == kCl100kSha256, "{}: sha256 {} is not cl100k_base's {} (corrupt or wrong file)", ranks_path,
          digest, kCl100kSha256);
  }
  auto impl = std::make_unique<Impl>();
  impl->offsets.push_back(0);
  size_t line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    line_no++;
    if (line.empty()) continue;
    size_t space = line.find(' ');
    check(space != std::string_view::npos, "{}:{}: expected '<base64> <rank>'", ranks_path, line_no);
    uint32_t rank = uint32_t(std::strtoul(std::string(line.substr(space + 1)).c_str(), nullptr, 10));
    check(rank == impl->offsets.size() - 1, "{}:{}: expected rank {}, found {}", ranks_path, line_no,
          impl->offsets.size() - 1, rank);
    check(base64_decode(line.substr(0, space), impl->bytes), "{}:{}: bad base64", ranks_path, line_no);
    check(impl->bytes.size() > impl->offsets.back(), "{}:{}: empty token", ranks_path, line_no);
    impl->offsets.push_back(uint32_t(impl->bytes.size()));
  }
  uint32_t num_ranks = uint32_t(impl->offsets.size() - 1);
  check(!verify || num_ranks == kCl100kRanks, "{}: {} ranks, expected {}", ranks_path, num_ranks, kCl100kRanks);
  impl->build_table();
  for (int b = 0; b < 256; b++) {
    char c = char(b);
    impl->byte_rank[b] = impl->rank_of(&c, 1);
    check(impl->byte_rank[b] != kNone, "{}: byte {} has no rank (every single byte must be a token)", ranks_path, b);
  }
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  impl->regex = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                              PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &error_offset, nullptr);
  if (!impl->regex) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    fail("tokenizer regex does not compile at {}: {}", error_offset, reinterpret_cast<char*>(message));
  }
  check(pcre2_jit_compile(impl->regex, PCRE2_JIT_COMPLETE) == 0, "PCRE2 JIT is not available on this machine");
  return Tokenizer(std::move(impl));
}

void Tokenizer::encode_ordinary(std::string_view text, std::vector<uint32_t>& out) const {
  const Impl& impl = *impl_;
  thread_state.bind(impl.id);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos < text.size()) {
    int rc = pcre2_jit_match(impl.regex, subject, text.size(), pos, 0, thread_state.match, thread_state.context);
    size_t begin = text.size(), end = text.size();
    if (rc > 0) {
      PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(thread_state.match);
      begin = ovector[0], end = ovector[1];
    } else if (rc != PCRE2_ERROR_NOMATCH) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      fail("tokenizer regex failed at byte {}: {}", pos, reinterpret_cast<char*>(message));
    }
    if (begin > pos) impl.encode_piece(text.data() + pos, begin - pos, out);  // ill-formed UTF-8 bytes
    if (end > begin) impl.encode_piece(text.data() + begin, end - begin, out);
    pos = end;
  }
}

// Hugging Face's AddedVocabulary::find_matches over the 22 added tokens: leftmost-longest, non-overlapping matches
// (its Aho-Corasick automaton's order); a special token's match is consumed and skipped, so its text stays in the
// surrounding piece. Every flag (single_word, lstrip, rstrip, normalized) is false in dolma2, so a match is exact.
void Tokenizer::encode_dolma(std::string_view text, std::vector<uint32_t>& out) const {
  size_t piece = 0;  // start of the text not yet encoded
  for (size_t pos = 0; (pos = text.find_first_of("<|", pos)) != std::string_view::npos;) {
    size_t best = kAddedTokens.size();
    for (size_t i = 0; i < kAddedTokens.size(); i++)
      if (text.substr(pos).starts_with(kAddedTokens[i]) &&
          (best == kAddedTokens.size() || kAddedTokens[i].size() > kAddedTokens[best].size()))
        best = i;
    if (best == kAddedTokens.size()) {
      pos++;
      continue;
    }
    if (!is_dolma2_special(kAddedTokens[best])) {
      encode_ordinary(text.substr(piece, pos - piece), out);
      out.push_back(kCl100kRanks + uint32_t(best));
      piece = pos + kAddedTokens[best].size();
    }
    pos += kAddedTokens[best].size();
  }
  encode_ordinary(text.substr(piece), out);
}

std::vector<uint32_t> Tokenizer::encode_ordinary(std::string_view text) const {
  std::vector<uint32_t> out;
  out.reserve(text.size() / 3 + 8);
  encode_ordinary(text, out);
  return out;
}

std::vector<int32_t> Tokenizer::encode_model_input(std::string_view text) const {
  const std::vector<uint32_t> ids = encode_ordinary(text);
  return {ids.begin(), ids.end()};
}

std::string_view Tokenizer::token_bytes(uint32_t id) const {
  if (id < num_ranks()) return impl_->token(id);
  check(id >= kCl100kRanks && id < kDolma2VocabSize, "token id {} is outside the vocabulary (size {})", id,
        kDolma2VocabSize);
  return kAddedTokens[id - kCl100kRanks];
}

uint32_t Tokenizer::num_ranks() const { return uint32_t(impl_->offsets.size() - 1); }

std::vector<uint32_t> Tokenizer::merge_below(std::string_view bytes, uint32_t rank_limit) const {
  check(!bytes.empty() && bytes.size() <= 128, "merge_below: {} bytes, expected 1 to 128 (a token's length)",
        bytes.size());
  std::vector<uint32_t> parts;
  impl_->merge_small(bytes.data(), bytes.size(), parts, rank_limit);
  return parts;
}

std::string Tokenizer::decode(std::span<const uint32_t> ids) const {
  std::string out;
  for (uint32_t id : ids) out += token_bytes(id);
  return out;
}

uint32_t Tokenizer::added_token_id(std::string_view content) const {
  for (size_t i = 0; i < kAddedTokens.size(); i++)
    if (kAddedTokens[i] == content) return uint32_t(kCl100kRanks + i);
  fail("'{}' is not one of dolma2's added tokens", content);
}

}  // namespace replica::data
