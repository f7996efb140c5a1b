// A restricted reader of Python pickles (protocols 2 to 5): it builds a tree of plain values and never runs
// anything. A class or function the pickle names (GLOBAL, STACK_GLOBAL) must be on the caller's allow-list, or the
// read fails naming it; calling one (REDUCE, NEWOBJ) and setting its state (BUILD) only record that it was done,
// for the caller to interpret. What torch.distributed.checkpoint's .metadata and torch.save's data.pkl hold.
#pragma once
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace replica::ckpt {

struct PickleData;

// One value of a pickle: a handle into the PickleTree that owns it, valid while the tree lives. An accessor of the
// wrong kind raises replica::Error naming the pickle, what was expected and what was found.
class PyValue {
 public:
  enum class Kind {
    none,
    boolean,
    integer,  // fits in int64 (larger ones are refused when read)
    floating,
    string,  // str (UTF-8) and bytes
    tuple,
    list,
    dict,        // entries in pickle order; keys may be any value
    global,      // a module and a name, e.g. torch / float32
    call,        // callee(*args), from REDUCE or NEWOBJ, with the state BUILD gave it (None when it had none)
    persistent,  // BINPERSID: a persistent id (one item; what it names is the caller's business)
  };

  Kind kind() const;
  bool is(Kind k) const { return kind() == k; }

  int64_t as_int() const;
  double as_float() const;  // a float, or an integer
  const std::string& as_string() const;
  const std::vector<PyValue>& items() const;                        // tuple, list, call (its args), persistent
  const std::vector<std::pair<PyValue, PyValue>>& entries() const;  // dict
  const std::string& module() const;                                // global
  const std::string& name() const;                                  // global
  PyValue callee() const;                                           // call
  PyValue state() const;                                            // call: its BUILD state, or None
  // The callee's "module.name" when this is a call of a global; "" otherwise.
  std::string call_of() const;
  // A dict with string keys: the value of `key`, or nullptr when absent.
  const PyValue* find(std::string_view key) const;

  std::string describe() const;  // for error messages: "a tuple of 3", "torch.float32", "'abc'"

 private:
  friend class PickleReader;
  friend class PickleTree;
  PyValue(const PickleData* data, uint32_t id) : data_(data), id_(id) {}
  [[noreturn]] void wrong(const char* expected) const;
  const PickleData* data_ = nullptr;
  uint32_t id_ = 0;
};

struct PickleNode {
  PyValue::Kind kind = PyValue::Kind::none;
  int64_t integer = 0;  // also the boolean
  double floating = 0;
  std::string text, name;  // string; global: module and name
  std::vector<PyValue> items;
  std::vector<std::pair<PyValue, PyValue>> entries;
  uint32_t callee = 0, args = 0, state = 0;  // call: a global, a tuple, its BUILD state (node 0 is None)
};

// The nodes live on the heap, so a PickleTree can move without invalidating its values.
struct PickleData {
  std::vector<PickleNode> nodes;  // nodes[0] is None
  std::string source;             // names the pickle in errors: a file, or a file and the entry inside it
};

class PickleTree {
 public:
  PyValue root() const;
  const std::string& source() const { return data_->source; }

 private:
  friend class PickleReader;
  std::unique_ptr<PickleData> data_;
  uint32_t root_ = 0;
};

// Reads a whole pickle: it must end at STOP with nothing after it. `allowed` holds "module.name" of every global the
// pickle may name. Raises replica::Error naming `source`, the byte offset and what was wrong: an unknown opcode, a
// global not allowed, truncated data, an integer beyond 64 bits, a malformed stack or memo.
PickleTree read_pickle(std::string_view bytes, const std::set<std::string>& allowed, const std::string& source);

}  // namespace replica::ckpt
