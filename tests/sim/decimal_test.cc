// seam/sim/base/decimal.h: every integer seam reads is decimal, whole, and in range.
#include "seam/sim/base/decimal.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace {

using seam::parseDecimal;
using seam::parseDecimalUnsigned;

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

TEST(Decimal, LeadingZerosReadAsDecimalNotOctal) {
  EXPECT_EQ(parseDecimal("010", kMin, kMax), 10);
  EXPECT_EQ(parseDecimal("08", kMin, kMax), 8);
  EXPECT_EQ(parseDecimal("-010", kMin, kMax), -10);
  EXPECT_EQ(parseDecimalUnsigned("0007"), 7u);
}

TEST(Decimal, AnythingButDigitsAfterOneMinusIsRefused) {
  for (const char* text : {"", "-", "+1", " 1", "1 ", "0x10", "1e3", "1.0", "--1", "1,2"}) {
    EXPECT_FALSE(parseDecimal(text, kMin, kMax)) << text;
    EXPECT_FALSE(parseDecimalUnsigned(text)) << text;
  }
  EXPECT_FALSE(parseDecimalUnsigned("-1"));
}

TEST(Decimal, AValueOutsideTheRangeIsRefusedNotClamped) {
  EXPECT_EQ(parseDecimal("5", 0, 5), 5);
  EXPECT_FALSE(parseDecimal("6", 0, 5));
  EXPECT_FALSE(parseDecimal("-1", 0, 5));
  EXPECT_FALSE(parseDecimal("9223372036854775808", kMin, kMax));
  EXPECT_EQ(parseDecimalUnsigned("18446744073709551615"),
            std::numeric_limits<std::uint64_t>::max());
  EXPECT_FALSE(parseDecimalUnsigned("18446744073709551616"));
}

}  // namespace
