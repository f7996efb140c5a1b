// ckpt/pickle: the restricted unpickler builds values from the opcodes DCP's metadata and torch.save use, runs
// nothing, and refuses, naming the byte, what it does not allow or cannot read.
#include <gtest/gtest.h>

#include <string>

#include "error_of.h"
#include "pickle_builder.h"
#include "replica/ckpt/pickle.h"
#include "replica/core/error.h"

namespace replica::ckpt {
namespace {

using testing::PickleBuilder;
using Kind = PyValue::Kind;

const std::set<std::string> kAllowed = {"pkg.Point", "torch.Size"};

std::string pickle_error(const std::string& bytes, const std::set<std::string>& allowed = kAllowed) {
  return error_of([&] { read_pickle(bytes, allowed, "test.pkl"); });
}

TEST(Pickle, ReadsADataclassAsACallWithItsState) {
  // Point() with __dict__ {"x": 3, "ys": [torch.Size((4, 5)), None], "name": "p"}
  PickleBuilder b;
  b.object("pkg", "Point").empty_dict().mark();
  b.str("x").integer(3).str("ys").empty_list().mark().size({4, 5}).none().appends().str("name").str("p");
  const std::string bytes = b.setitems().build().done();
  const PickleTree tree = read_pickle(bytes, kAllowed, "test.pkl");
  const PyValue root = tree.root();
  EXPECT_EQ(root.call_of(), "pkg.Point");
  EXPECT_TRUE(root.items().empty());
  EXPECT_EQ(root.state().find("x")->as_int(), 3);
  EXPECT_EQ(root.state().find("name")->as_string(), "p");
  EXPECT_EQ(root.state().find("absent"), nullptr);
  const std::vector<PyValue>& ys = root.state().find("ys")->items();
  ASSERT_EQ(ys.size(), 2u);
  EXPECT_EQ(ys[0].call_of(), "torch.Size");
  EXPECT_EQ(ys[0].items()[0].items()[1].as_int(), 5);
  EXPECT_TRUE(ys[1].is(Kind::none));
}

TEST(Pickle, SharesMemoizedValuesAndSeesLaterChanges) {
  // l = [] (memo 0); l.append(7) through the memo; then (l, l): both are the list with its 7.
  const std::string get0 = std::string("h") + '\0';
  const std::string bytes = PickleBuilder()
                                .empty_list()
                                .op('\x94')
                                .op('0')
                                .raw(get0)
                                .integer(7)
                                .op('a')
                                .op('0')
                                .raw(get0)
                                .raw(get0)
                                .op('\x86')
                                .done();
  const PickleTree tree = read_pickle(bytes, {}, "t");
  ASSERT_EQ(tree.root().items().size(), 2u);
  for (const PyValue& l : tree.root().items()) {
    ASSERT_EQ(l.items().size(), 1u);
    EXPECT_EQ(l.items()[0].as_int(), 7);
  }
}

TEST(Pickle, ReadsNegativeAndWideIntegersAndBigEndianFloats) {
  const std::string minus_two = PickleBuilder().raw("\x8a\x01\xfe").done();
  EXPECT_EQ(read_pickle(minus_two, {}, "t").root().as_int(), -2);
  const std::string sign_extended = PickleBuilder().raw("\x8a\x09" + std::string(8, '\xff') + "\xff").done();
  EXPECT_EQ(read_pickle(sign_extended, {}, "t").root().as_int(), -1);
  const std::string int32 = PickleBuilder().raw("J\xff\xff\xff\xff").done();
  EXPECT_EQ(read_pickle(int32, {}, "t").root().as_int(), -1);
  const std::string half = PickleBuilder().raw(std::string("G\x3f\xe0", 3) + std::string(6, '\0')).done();
  EXPECT_EQ(read_pickle(half, {}, "t").root().as_float(), 0.5);
}

TEST(Pickle, RefusesAGlobalNotOnTheAllowListNamingIt) {
  // The classic exploit: os.system("...") on load.
  const std::string exploit = std::string("\x80\x02") + "cos\nsystem\nX\x04\x00\x00\x00true\x85R.";
  const std::string error = pickle_error(exploit);
  EXPECT_NE(error.find("'os.system'"), std::string::npos) << error;
  EXPECT_NE(error.find("test.pkl"), std::string::npos) << error;
  EXPECT_NE(pickle_error(PickleBuilder().global("builtins", "eval").done()).find("'builtins.eval'"), std::string::npos);
}

TEST(Pickle, RefusesTruncatedAndTrailingBytesAndUnknownOpcodes) {
  EXPECT_NE(pickle_error(PickleBuilder().str("abc").done().substr(0, 5)).find("truncated"), std::string::npos);
  EXPECT_NE(pickle_error(PickleBuilder().none().done() + "N").find("after the STOP"), std::string::npos);
  EXPECT_NE(pickle_error(PickleBuilder().raw("\x8f").done()).find("opcode 0x8f at byte 2"), std::string::npos);
  EXPECT_NE(pickle_error("\x80\x06N.").find("protocol 6"), std::string::npos);
  EXPECT_NE(pickle_error(PickleBuilder().raw("\x8a\x09" + std::string(8, '\0') + "\x01").done()).find("64 bits"),
            std::string::npos);
}

TEST(Pickle, RefusesAMalformedStackOrMemo) {
  EXPECT_NE(pickle_error(PickleBuilder().op('a').done()).find("empty stack"), std::string::npos);
  EXPECT_NE(pickle_error(PickleBuilder().none().tuple().done()).find("MARK"), std::string::npos);
  EXPECT_NE(pickle_error(PickleBuilder().raw("h\x05").done()).find("memo entry 5"), std::string::npos);
  EXPECT_NE(pickle_error(PickleBuilder().none().raw("K\x01").op('a').done()).find("not a list"), std::string::npos);
  EXPECT_NE(pickle_error(PickleBuilder().str("f").op(')').reduce().done()).find("not a class"), std::string::npos);
  EXPECT_NE(pickle_error(PickleBuilder().integer(1).none().build().done()).find("BUILD of"), std::string::npos);
}

TEST(Pickle, ASelfContainingListIsHarmless) {
  // l = []; l.append(l): a cycle through the memo; values are handles into the tree, so nothing leaks or loops.
  const std::string bytes = PickleBuilder().empty_list().op('\x94').raw(std::string("h") + '\0').op('a').done();
  const PickleTree tree = read_pickle(bytes, {}, "t");
  EXPECT_EQ(tree.root().items().size(), 1u);
  EXPECT_EQ(tree.root().items()[0].describe(), "a list of 1");
}

TEST(Pickle, AccessorsOfTheWrongKindNameWhatTheyFound) {
  const PickleTree tree = read_pickle(PickleBuilder().str("abc").done(), {}, "meta.pkl");
  try {
    tree.root().as_int();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "meta.pkl: expected an integer, found 'abc'");
  }
}

}  // namespace
}  // namespace replica::ckpt
