#include "seam/reports/table.h"

#include <gtest/gtest.h>

namespace seam::reports {
namespace {

TEST(Table, PadsColumnsAndRightAlignsNumbers) {
  Table t({"name", "n"}, {false, true});
  t.addRow({"a", "1"});
  t.addRow({"long", "100"});
  EXPECT_EQ(t.render(), "name    n\na       1\nlong  100\n");
}

TEST(Format, ParsesTheThreeFormatsAndRefusesOthers) {
  EXPECT_EQ(*parseFormat("json"), Format::kJson);
  auto bad = parseFormat("yaml");
  ASSERT_FALSE(bad.hasValue());
  EXPECT_EQ(bad.status().message(), "--format \"yaml\" is not one of text, json, jsonl");
}

TEST(RenderConfigs, EndsWithTheCount) {
  auto space = ConfigSpace::build(2);
  ASSERT_TRUE(space.hasValue());
  std::string out = renderConfigs(*space, space->shardIndices({}), Format::kText);
  EXPECT_NE(out.find("\n" + std::to_string(space->size()) + " configs\n"), std::string::npos);
}

}  // namespace
}  // namespace seam::reports
