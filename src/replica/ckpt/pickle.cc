// The restricted pickle reader: a stack machine over the opcodes of protocols 2 to 5 that builds values and runs
// nothing (the opcodes' meanings: CPython's Lib/pickletools.py).
#include "replica/ckpt/pickle.h"

#include <fmt/core.h>

#include <bit>
#include <unordered_map>

#include "replica/core/error.h"

namespace replica::ckpt {

using Kind = PyValue::Kind;

// ---- values ----

Kind PyValue::kind() const { return data_->nodes[id_].kind; }

void PyValue::wrong(const char* expected) const {
  fail("{}: expected {}, found {}", data_->source, expected, describe());
}

int64_t PyValue::as_int() const {
  if (!is(Kind::integer)) wrong("an integer");
  return data_->nodes[id_].integer;
}

double PyValue::as_float() const {
  if (is(Kind::integer)) return double(data_->nodes[id_].integer);
  if (!is(Kind::floating)) wrong("a float");
  return data_->nodes[id_].floating;
}

const std::string& PyValue::as_string() const {
  if (!is(Kind::string)) wrong("a string");
  return data_->nodes[id_].text;
}

const std::vector<PyValue>& PyValue::items() const {
  const Kind k = kind();
  if (k != Kind::tuple && k != Kind::list && k != Kind::call && k != Kind::persistent) wrong("a tuple or a list");
  const PickleNode& n = data_->nodes[id_];
  return k == Kind::call ? data_->nodes[n.args].items : n.items;
}

const std::vector<std::pair<PyValue, PyValue>>& PyValue::entries() const {
  if (!is(Kind::dict)) wrong("a dict");
  return data_->nodes[id_].entries;
}

const std::string& PyValue::module() const {
  if (!is(Kind::global)) wrong("a global");
  return data_->nodes[id_].text;
}

const std::string& PyValue::name() const {
  if (!is(Kind::global)) wrong("a global");
  return data_->nodes[id_].name;
}

PyValue PyValue::callee() const {
  if (!is(Kind::call)) wrong("an object");
  return PyValue(data_, data_->nodes[id_].callee);
}

PyValue PyValue::state() const {
  if (!is(Kind::call)) wrong("an object");
  return PyValue(data_, data_->nodes[id_].state);
}

std::string PyValue::call_of() const {
  if (!is(Kind::call)) return "";
  const PyValue c = callee();
  return c.is(Kind::global) ? c.module() + "." + c.name() : "";
}

const PyValue* PyValue::find(std::string_view key) const {
  for (const auto& [k, v] : entries())
    if (k.is(Kind::string) && k.as_string() == key) return &v;
  return nullptr;
}

std::string PyValue::describe() const {
  const PickleNode& n = data_->nodes[id_];
  switch (n.kind) {
    case Kind::none:
      return "None";
    case Kind::boolean:
      return n.integer ? "True" : "False";
    case Kind::integer:
      return fmt::format("the integer {}", n.integer);
    case Kind::floating:
      return fmt::format("the float {}", n.floating);
    case Kind::string:
      return n.text.size() <= 60 ? fmt::format("'{}'", n.text) : fmt::format("a string of {} bytes", n.text.size());
    case Kind::tuple:
      return fmt::format("a tuple of {}", n.items.size());
    case Kind::list:
      return fmt::format("a list of {}", n.items.size());
    case Kind::dict:
      return fmt::format("a dict of {}", n.entries.size());
    case Kind::global:
      return n.text + "." + n.name;
    case Kind::call: {
      const std::string of = call_of();
      return of.empty() ? "a call" : "a " + of;
    }
    case Kind::persistent:
      return "a persistent id";
  }
  return "?";
}

PyValue PickleTree::root() const { return PyValue(data_.get(), root_); }

// ---- the reader ----

class PickleReader {
 public:
  PickleReader(std::string_view bytes, const std::set<std::string>& allowed, const std::string& source)
      : in_(bytes), allowed_(allowed) {
    tree_.data_ = std::make_unique<PickleData>();
    tree_.data_->source = source;
    tree_.data_->nodes.emplace_back();  // None
  }

  PickleTree run() {
    while (true) {
      check(pos_ < in_.size(), "{}: truncated at byte {} (no STOP opcode)", source(), pos_);
      op_at_ = pos_;
      const uint8_t op = uint8_t(in_[pos_++]);
      if (op == '.') break;
      step(op);
    }
    check(pos_ == in_.size(), "{}: {} bytes after the STOP opcode at byte {}", source(), in_.size() - pos_, op_at_);
    check(stack_.size() == 1 && marks_.empty(), "{}: STOP at byte {} with {} values and {} marks on the stack",
          source(), op_at_, stack_.size(), marks_.size());
    tree_.root_ = stack_.back();
    return std::move(tree_);
  }

 private:
  const std::string& source() const { return tree_.data_->source; }
  PickleNode& node(uint32_t id) { return tree_.data_->nodes[id]; }
  PyValue value(uint32_t id) const { return PyValue(tree_.data_.get(), id); }

  [[noreturn]] void bad(const std::string& what) const {
    fail("{}: {} (opcode 0x{:02x} at byte {})", source(), what, uint8_t(in_[op_at_]), op_at_);
  }

  const char* take(uint64_t n) {
    if (n > in_.size() - pos_)
      bad(fmt::format("truncated: needs {} more bytes, the pickle has {}", n, in_.size() - pos_));
    const char* p = in_.data() + pos_;
    pos_ += n;
    return p;
  }
  uint64_t little(int bytes) {
    const char* p = take(uint64_t(bytes));
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = v << 8 | uint8_t(p[i]);
    return v;
  }
  std::string line() {
    const size_t end = in_.find('\n', pos_);
    if (end == std::string_view::npos) bad("truncated: a line without its newline");
    std::string s(in_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }

  uint32_t make(PickleNode n) {
    check(tree_.data_->nodes.size() < UINT32_MAX, "{}: too many values", source());
    tree_.data_->nodes.push_back(std::move(n));
    return uint32_t(tree_.data_->nodes.size() - 1);
  }
  uint32_t make_int(int64_t v) {
    PickleNode n;
    n.kind = Kind::integer;
    n.integer = v;
    return make(std::move(n));
  }
  uint32_t make_string(const char* p, uint64_t n) {
    PickleNode s;
    s.kind = Kind::string;
    s.text.assign(p, n);
    return make(std::move(s));
  }
  uint32_t make_sequence(Kind kind, std::vector<uint32_t> ids) {
    PickleNode n;
    n.kind = kind;
    for (uint32_t id : ids) n.items.push_back(value(id));
    return make(std::move(n));
  }
  uint32_t make_global(std::string module, std::string name) {
    const std::string full = module + "." + name;
    if (!allowed_.count(full))
      bad(fmt::format("refers to '{}', which is not one of the classes this reader knows", full));
    PickleNode n;
    n.kind = Kind::global;
    n.text = std::move(module);
    n.name = std::move(name);
    return make(std::move(n));
  }
  uint32_t make_call(uint32_t callee, uint32_t args) {
    if (node(callee).kind != Kind::global)
      bad(fmt::format("calls {}, not a class or function", value(callee).describe()));
    if (node(args).kind != Kind::tuple)
      bad(fmt::format("calls with {} as arguments, not a tuple", value(args).describe()));
    PickleNode n;
    n.kind = Kind::call;
    n.callee = callee;
    n.args = args;  // shared, not copied: a tuple never changes
    return make(std::move(n));
  }

  void push(uint32_t id) { stack_.push_back(id); }
  uint32_t pop() {
    if (stack_.size() <= floor()) bad("pops an empty stack");
    const uint32_t id = stack_.back();
    stack_.pop_back();
    return id;
  }
  uint32_t top() {
    if (stack_.size() <= floor()) bad("reads an empty stack");
    return stack_.back();
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::vector<uint32_t> pop_mark() {
    if (marks_.empty()) bad("needs a MARK that is not there");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<uint32_t> ids(stack_.begin() + ptrdiff_t(mark), stack_.end());
    stack_.resize(mark);
    return ids;
  }

  void memo_put(uint64_t index) {
    const uint32_t id = top();
    memo_[index] = id;
  }
  void memo_get(uint64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) bad(fmt::format("reads memo entry {}, which was never stored", index));
    push(it->second);
  }

  void append(uint32_t list, const std::vector<uint32_t>& ids) {
    if (node(list).kind != Kind::list) bad(fmt::format("appends to {}, not a list", value(list).describe()));
    for (uint32_t id : ids) node(list).items.push_back(value(id));
  }
  void set_items(uint32_t dict, const std::vector<uint32_t>& ids) {
    if (node(dict).kind != Kind::dict) bad(fmt::format("sets items of {}, not a dict", value(dict).describe()));
    if (ids.size() % 2) bad("sets items from an odd number of values");
    for (size_t i = 0; i < ids.size(); i += 2) node(dict).entries.emplace_back(value(ids[i]), value(ids[i + 1]));
  }

  int64_t long_value(uint64_t n) {
    const char* p = take(n);
    if (n == 0) return 0;
    // Little-endian two's complement; beyond 8 bytes only sign extension fits in int64.
    const bool negative = uint8_t(p[n - 1]) & 0x80;
    for (uint64_t i = 8; i < n; i++)
      if (uint8_t(p[i]) != (negative ? 0xff : 0x00)) bad("an integer beyond 64 bits");
    if (n > 8 && bool(uint8_t(p[7]) & 0x80) != negative) bad("an integer beyond 64 bits");
    uint64_t v = negative ? ~uint64_t(0) : 0;
    for (uint64_t i = std::min<uint64_t>(n, 8); i-- > 0;) v = v << 8 | uint8_t(p[i]);
    if (n < 8 && negative) v |= ~uint64_t(0) << (8 * n);
    return std::bit_cast<int64_t>(v);
  }

  void step(uint8_t op) {
    switch (op) {
      case 0x80: {  // PROTO
        const uint64_t v = little(1);
        if (v < 2 || v > 5) bad(fmt::format("pickle protocol {} (this reader knows 2 to 5)", v));
        break;
      }
      case 0x95:
        little(8);
        break;  // FRAME: a buffering hint
      case '(':
        marks_.push_back(stack_.size());
        break;
      case '0':
        pop();
        break;
      case '1':
        pop_mark();
        break;
      case '2':
        push(top());
        break;
      case 'N':
        push(0);
        break;
      case 0x88:
      case 0x89: {
        PickleNode n;
        n.kind = Kind::boolean;
        n.integer = op == 0x88;
        push(make(std::move(n)));
        break;
      }
      case 'J':
        push(make_int(int32_t(uint32_t(little(4)))));
        break;
      case 'K':
        push(make_int(int64_t(little(1))));
        break;
      case 'M':
        push(make_int(int64_t(little(2))));
        break;
      case 0x8a:
        push(make_int(long_value(little(1))));
        break;
      case 0x8b:
        push(make_int(long_value(little(4))));
        break;
      case 'G': {
        const char* p = take(8);
        uint64_t bits = 0;
        for (int i = 0; i < 8; i++) bits = bits << 8 | uint8_t(p[i]);  // big-endian
        PickleNode n;
        n.kind = Kind::floating;
        n.floating = std::bit_cast<double>(bits);
        push(make(std::move(n)));
        break;
      }
      case 'X':
      case 'B': {
        const uint64_t n = little(4);
        push(make_string(take(n), n));
        break;
      }
      case 0x8c:
      case 'C':
      case 'U': {
        const uint64_t n = little(1);
        push(make_string(take(n), n));
        break;
      }
      case 0x8d:
      case 0x8e: {
        const uint64_t n = little(8);
        push(make_string(take(n), n));
        break;
      }
      case 'T': {
        const int64_t n = int32_t(uint32_t(little(4)));
        if (n < 0) bad("a string of negative length");
        push(make_string(take(uint64_t(n)), uint64_t(n)));
        break;
      }
      case ')':
        push(make_sequence(Kind::tuple, {}));
        break;
      case 't':
        push(make_sequence(Kind::tuple, pop_mark()));
        break;
      case 0x85:
      case 0x86:
      case 0x87: {
        std::vector<uint32_t> ids(size_t(op - 0x84));
        for (size_t i = ids.size(); i-- > 0;) ids[i] = pop();
        push(make_sequence(Kind::tuple, ids));
        break;
      }
      case ']':
        push(make_sequence(Kind::list, {}));
        break;
      case 'l':
        push(make_sequence(Kind::list, pop_mark()));
        break;
      case 'a': {
        const uint32_t item = pop();
        append(top(), {item});
        break;
      }
      case 'e': {
        const std::vector<uint32_t> ids = pop_mark();
        append(top(), ids);
        break;
      }
      case '}':
      case 'd': {
        PickleNode n;
        n.kind = Kind::dict;
        const uint32_t dict = make(std::move(n));
        if (op == 'd') set_items(dict, pop_mark());
        push(dict);
        break;
      }
      case 's': {
        const uint32_t v = pop(), k = pop();
        set_items(top(), {k, v});
        break;
      }
      case 'u': {
        const std::vector<uint32_t> ids = pop_mark();
        set_items(top(), ids);
        break;
      }
      case 'c': {
        std::string module = line();
        std::string name = line();
        push(make_global(std::move(module), std::move(name)));
        break;
      }
      case 0x93: {
        const uint32_t name = pop(), module = pop();
        if (node(module).kind != Kind::string || node(name).kind != Kind::string)
          bad("STACK_GLOBAL of values that are not strings");
        push(make_global(node(module).text, node(name).text));
        break;
      }
      case 'R':
      case 0x81: {
        const uint32_t args = pop(), callee = pop();
        push(make_call(callee, args));
        break;
      }
      case 0x92: {  // NEWOBJ_EX: cls, args, kwargs
        const uint32_t kwargs = pop(), args = pop(), callee = pop();
        if (node(kwargs).kind != Kind::dict || !node(kwargs).entries.empty()) bad("NEWOBJ_EX with keyword arguments");
        push(make_call(callee, args));
        break;
      }
      case 'b': {
        const uint32_t state = pop(), object = top();
        if (node(object).kind != Kind::call) bad(fmt::format("BUILD of {}, not an object", value(object).describe()));
        if (node(object).state != 0) bad("a second BUILD of one object");
        node(object).state = state;
        break;
      }
      case 'Q': {
        PickleNode n;
        n.kind = Kind::persistent;
        n.items.push_back(value(pop()));
        push(make(std::move(n)));
        break;
      }
      case 'q':
        memo_put(little(1));
        break;
      case 'r':
        memo_put(little(4));
        break;
      case 0x94:
        memo_put(memo_.size());
        break;
      case 'h':
        memo_get(little(1));
        break;
      case 'j':
        memo_get(little(4));
        break;
      default:
        bad("an opcode this reader does not know");
    }
  }

  std::string_view in_;
  const std::set<std::string>& allowed_;
  size_t pos_ = 0, op_at_ = 0;
  PickleTree tree_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
};

PickleTree read_pickle(std::string_view bytes, const std::set<std::string>& allowed, const std::string& source) {
  return PickleReader(bytes, allowed, source).run();
}

}  // namespace replica::ckpt
