// How messages quote strings from outside: escaped, and cut after a bounded prefix with
// the full length (issue 13, item 11: a 1 MiB argument came back in full). Expectations
// are written out by hand.
#include "core/util/quote.h"

#include <string>

#include "gtest/gtest.h"

namespace distribute {
namespace {

TEST(QuotedTest, ShortStringsAreQuotedWhole) {
  EXPECT_EQ(Quoted(""), "''");
  EXPECT_EQ(Quoted("CPU:0"), "'CPU:0'");
  EXPECT_EQ(Quoted(std::string(kMaxQuotedBytes, 'a')), "'" + std::string(256, 'a') + "'");
}

TEST(QuotedTest, EscapesWhatIsNotPrintable) {
  EXPECT_EQ(Quoted("a'b"), "'a\\'b'");
  EXPECT_EQ(Quoted("line\nnext"), "'line\\nnext'");
  EXPECT_EQ(Quoted(std::string("nul\0x\xff", 6)), "'nul\\x00x\\xff'");
}

TEST(QuotedTest, LongStringsAreCutWithTheirLength) {
  const std::string huge(1 << 20, 'x');
  const std::string quoted = Quoted(huge);
  EXPECT_EQ(quoted, "'" + std::string(256, 'x') + "...' (1048576 bytes)");
  EXPECT_EQ(Quoted(std::string(257, 'y')), "'" + std::string(256, 'y') + "...' (257 bytes)");
  EXPECT_EQ(Quoted("abcdef", 3), "'abc...' (6 bytes)");
  // Escaping cannot make the cut form unbounded: 4 characters per byte at most.
  EXPECT_LE(Quoted(std::string(1 << 20, '\x01')).size(), 4 * kMaxQuotedBytes + 32);
}

}  // namespace
}  // namespace distribute
