// Test helper: writes pickles opcode by opcode (protocol 4 framing omitted), the way CPython's pickler lays out
// dataclasses (STACK_GLOBAL, EMPTY_TUPLE, NEWOBJ, a state dict, BUILD), for the ckpt/pickle and ckpt/dcp tests.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace replica::testing {

class PickleBuilder {
 public:
  PickleBuilder() { out_ = "\x80\x04"; }
  PickleBuilder& op(char c) { return raw(std::string(1, c)); }
  PickleBuilder& raw(const std::string& bytes) {
    out_ += bytes;
    return *this;
  }
  PickleBuilder& str(const std::string& s) {  // SHORT_BINUNICODE or BINUNICODE
    if (s.size() < 256) return raw("\x8c" + std::string(1, char(s.size())) + s);
    return raw("X" + le(s.size(), 4) + s);
  }
  PickleBuilder& integer(int64_t v) {
    if (v >= 0 && v < 256) return raw("K" + std::string(1, char(v)));
    return raw("\x8a\x08" + le(uint64_t(v), 8));  // LONG1 of 8 bytes
  }
  PickleBuilder& global(const std::string& module, const std::string& name) { return str(module).str(name).op('\x93'); }
  PickleBuilder& mark() { return op('('); }
  PickleBuilder& tuple() { return op('t'); }  // of the values since the mark
  PickleBuilder& tuple1() { return op('\x85'); }
  PickleBuilder& empty_list() { return op(']'); }
  PickleBuilder& appends() { return op('e'); }  // the values since the mark onto the list below it
  PickleBuilder& empty_dict() { return op('}'); }
  PickleBuilder& setitems() { return op('u'); }  // the key-value pairs since the mark into the dict below it
  PickleBuilder& none() { return op('N'); }
  PickleBuilder& reduce() { return op('R'); }
  PickleBuilder& build() { return op('b'); }
  // An object of a dataclass: NEWOBJ of module.name with no arguments, then the state the caller pushes and build().
  PickleBuilder& object(const std::string& module, const std::string& name) {
    return global(module, name).op(')').op('\x81');
  }
  // torch.Size((dims...))
  PickleBuilder& size(const std::vector<int64_t>& dims) {
    global("torch", "Size").mark();
    for (int64_t d : dims) integer(d);
    return tuple().tuple1().reduce();
  }
  std::string done() { return out_ + "."; }

  static std::string le(uint64_t v, int bytes) {
    std::string s;
    for (int i = 0; i < bytes; i++) s += char((v >> (8 * i)) & 0xff);
    return s;
  }

 private:
  std::string out_;
};

}  // namespace replica::testing
