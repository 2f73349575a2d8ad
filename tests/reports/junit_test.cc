#include "seam/reports/junit.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "junit_schema.h"
#include "seam/properties/engine_finding.h"
#include "store_test_support.h"

namespace seam::reports::store_test {
namespace {

Status write(const std::string& path, const std::string& name, std::vector<JunitCase> cases) {
  return writeJunit(path, JunitDoc{.name = name, .cases = std::move(cases)});
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Junit, WritesOneSuiteWithCountsFailuresAndSkips) {
  const std::string path = tempPath("junit.xml");
  const std::vector<JunitCase> cases = {
      {.classname = "nemotron-h", .name = "tp=2 dp=4", .seconds = 0.0125},
      {.classname = "nemotron-h",
       .name = "tp=4 dp=2",
       .seconds = 0.5,
       .failed = true,
       .message = "property 3: row 4 summed twice"},
      {.classname = "nemotron-h",
       .name = "cp=2",
       .seconds = 0,
       .skipped = true,
       .message = "attention CP is not supported"},
  };
  ASSERT_TRUE(write(path, "seam sweep", cases));
  EXPECT_FALSE(exists(path + ".tmp"));
  const std::string xml = readFile(path);
  // <testsuites> has no skipped attribute in the schema; each <testsuite> has.
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"seam sweep\" "
                      "tests=\"3\" failures=\"1\" errors=\"0\" time=\"0.512\">\n",
                      0),
            0u)
      << xml;
  EXPECT_NE(xml.find("  <testsuite name=\"seam sweep\" tests=\"3\" failures=\"1\" errors=\"0\" "
                     "skipped=\"1\" time=\"0.512\" timestamp=\""),
            std::string::npos)
      << xml;
  EXPECT_EQ(seam::testing::junitSchemaErrors(path), "");
  EXPECT_NE(xml.find("<testcase name=\"tp=2 dp=4\" classname=\"nemotron-h\" time=\"0.013\"/>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<failure message=\"property 3: row 4 summed twice\" type=\"violation\">"
                     "property 3: row 4 summed twice</failure>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<skipped message=\"attention CP is not supported\"/>"), std::string::npos)
      << xml;
  EXPECT_EQ(count(xml, "<testcase "), 3u);
  EXPECT_EQ(count(xml, "<testsuite "), 1u);
  EXPECT_TRUE(xml.ends_with("  </testsuite>\n</testsuites>\n")) << xml;
}

TEST(Junit, GroupsCasesIntoOneSuitePerSuiteInFirstSeenOrder) {
  const std::string path = tempPath("suites.xml");
  const std::vector<JunitCase> cases = {
      {.suite = "sweep b", .name = "1"},
      {.suite = "sweep a", .name = "2", .failed = true, .message = "x"},
      {.suite = "sweep b", .name = "3", .skipped = true},
      {.name = "4"},  // no suite: the run's
  };
  ASSERT_TRUE(write(path, "run", cases));
  const std::string xml = readFile(path);
  const auto b =
      xml.find("<testsuite name=\"sweep b\" tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"1\"");
  const auto a =
      xml.find("<testsuite name=\"sweep a\" tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\"");
  const auto run = xml.find("<testsuite name=\"run\" tests=\"1\" failures=\"0\"");
  ASSERT_NE(b, std::string::npos) << xml;
  ASSERT_NE(a, std::string::npos) << xml;
  ASSERT_NE(run, std::string::npos) << xml;
  EXPECT_LT(b, a);
  EXPECT_LT(a, run);
  EXPECT_LT(xml.find("name=\"3\""), a);  // case 3 sits in suite b, before suite a
  EXPECT_NE(xml.find("<testsuites name=\"run\" tests=\"4\" failures=\"1\" errors=\"0\" time="),
            std::string::npos);
  EXPECT_EQ(seam::testing::junitSchemaErrors(path), "");

  ASSERT_TRUE(write(path, "empty", {}));  // still one (empty) suite
  EXPECT_NE(readFile(path).find("<testsuite name=\"empty\" tests=\"0\""), std::string::npos);
}

TEST(Junit, EscapesMarkupAndDropsControlCharacters) {
  const std::string path = tempPath("escape.xml");
  const std::string nasty =
      std::string("a&b <c> \"d\" 'e'\x01\x1f\x7f|\tline\nnext\r") + "\xC3\xA9 bad:\xFF\xC3";
  const std::vector<JunitCase> cases = {
      {.classname = nasty, .name = nasty, .failed = true, .message = nasty},
      {.classname = "c", .name = "skip", .skipped = true, .message = nasty},
  };
  ASSERT_TRUE(write(path, nasty, cases));
  const std::string xml = readFile(path);
  const std::string attribute =
      "a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos;\x7f|&#9;line&#10;next&#13;\xC3\xA9 "
      "bad:\xEF\xBF\xBD\xEF\xBF\xBD";
  const std::string text =
      "a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos;\x7f|\tline\nnext&#13;\xC3\xA9 "
      "bad:\xEF\xBF\xBD\xEF\xBF\xBD";
  EXPECT_NE(xml.find("<testsuites name=\"" + attribute + "\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase name=\"" + attribute + "\" classname=\"" + attribute + "\""),
            std::string::npos)
      << xml;
  EXPECT_NE(
      xml.find("<failure message=\"" + attribute + "\" type=\"violation\">" + text + "</failure>"),
      std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<skipped message=\"" + attribute + "\"/>"), std::string::npos) << xml;
  for (const char c : xml) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 || c == '\n' || c == '\t') << "control character " << int(u);
  }
  EXPECT_EQ(seam::testing::junitSchemaErrors(path), "");
}

TEST(Junit, SuitesCarryTheirTimestampHostnameAndPropertiesAndAFailureItsReplayLine) {
  const std::string path = tempPath("doc.xml");
  JunitDoc doc;
  doc.name = "sweep";
  doc.started_ms = 1700000000123;  // 2023-11-14T22:13:20 UTC
  doc.hostname = "ci-runner-7";
  doc.suites = {{"sweep.m", {{"refused", "12"}, {"refused: a & b", "3"}}}};
  doc.cases = {{.suite = "sweep.m",
                .classname = "sweep.m",
                .name = "pp=1 tp=2",
                .seconds = 0.0004,
                .failed = true,
                .message = "owed-once violated (never-completed)",
                .body = "seam check --pattern 'M-' --tp 2",
                .output = "3 cases"}};
  ASSERT_TRUE(writeJunit(path, doc));
  const std::string xml = readFile(path);
  EXPECT_NE(xml.find("timestamp=\"2023-11-14T22:13:20\" hostname=\"ci-runner-7\">\n    "
                     "<properties>\n      <property name=\"refused\" value=\"12\"/>\n      "
                     "<property name=\"refused: a &amp; b\" value=\"3\"/>\n    </properties>\n"),
            std::string::npos)
      << xml;
  // Under a millisecond a time keeps its microseconds rather than reading 0.
  EXPECT_NE(xml.find("classname=\"sweep.m\" time=\"0.000400\">"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"owed-once violated (never-completed)\" "
                     "type=\"violation\">seam check --pattern &apos;M-&apos; --tp 2</failure>\n"
                     "      <system-out>3 cases</system-out>"),
            std::string::npos)
      << xml;
  EXPECT_EQ(seam::testing::junitSchemaErrors(path), "");

  // A document the schema refuses is told apart (the check can fail).
  writeFile(path, "<testsuites skipped=\"1\"><testsuite/></testsuites>");
  EXPECT_NE(seam::testing::junitSchemaErrors(path), "");
}

TEST(Junit, ReplacesAnExistingFileAndRefusesAMissingDirectoryNamingThePath) {
  const std::string path = tempPath("replace.xml");
  writeFile(path, "old");
  ASSERT_TRUE(write(path, "s", {{.name = "n"}}));
  EXPECT_NE(readFile(path).find("<testcase name=\"n\""), std::string::npos);
  EXPECT_FALSE(exists(path + ".tmp"));

  const std::string missing = tempPath("no_such_junit_dir");
  const std::string bad = missing + "/junit.xml";
  const Status refused = write(bad, "s", {});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(refused.message(),
            "--junit \"" + bad + "\": the directory \"" + missing + "\" does not exist");
}

/// A sweep's case row of `model` (its group) at `config`.
CaseRecord sweepRow(std::int64_t index, const std::string& model, const std::string& config,
                    CaseOutcome outcome, const std::string& refusal = "") {
  CaseRecord c = sampleCase(index, outcome);
  c.group = model;
  c.config = config;
  c.refusal = refusal;
  c.reproduce = "seam check #" + std::to_string(index);
  return c;
}

// The expectation is worked out by hand from the rows below, not taken from
// a run of seam: m1 tp=2 has cases 0, 1, 2 and 15 (15 comes after m2's rows,
// so a writer that only merges consecutive rows splits it in two), m1 tp=4 is
// refused outright (a count, no testcase), m2 tp=1 has eleven violations (ten
// replay lines and a note).
TEST(SweepJunit, ReadsTheRowsOneByOneIntoATestcasePerModelAndConfiguration) {
  const std::string path = tempPath("sweep-rows.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun();
  run.host = "ci";
  ASSERT_TRUE(store.beginRun(run));
  const VerdictRecord twice{.property = 2,
                            .holds = false,
                            .violation_class = "counted-k-times",
                            .text = "row 4 summed twice"};
  const VerdictRecord engine{
      .property = 4,
      .holds = false,
      .violation_class = "mismatched",
      .text = "sizes differ" + std::string(properties::kEngineFindingMark) + "x.all_gather"};
  const std::string gap = "not modelled yet: cp";
  ASSERT_TRUE(store.addCase(run.id, sweepRow(0, "m1", "tp=2", CaseOutcome::kHolds), {}));
  ASSERT_TRUE(store.addCase(run.id, sweepRow(1, "m1", "tp=2", CaseOutcome::kRefused, gap), {}));
  ASSERT_TRUE(store.addCase(run.id, sweepRow(2, "m1", "tp=2", CaseOutcome::kViolated), {twice}));
  ASSERT_TRUE(store.addCase(run.id, sweepRow(3, "m1", "tp=4", CaseOutcome::kRefused, "no"), {}));
  for (int i = 4; i < 15; ++i) {
    ASSERT_TRUE(store.addCase(run.id, sweepRow(i, "m2", "tp=1", CaseOutcome::kViolated), {engine}));
  }
  ASSERT_TRUE(store.addCase(run.id, sweepRow(15, "m1", "tp=2", CaseOutcome::kViolated), {engine}));
  const std::string out = tempPath("sweep-rows.xml");
  ASSERT_TRUE(writeSweepJunit(store, run, properties::SweepResult{}, out));
  std::string m2_lines;
  for (int i = 4; i < 14; ++i) m2_lines += "seam check #" + std::to_string(i) + "\n";
  const std::string expected =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"sweep\" tests=\"2\" failures=\"2\" errors=\"0\" time=\"0.000\">\n"
      "  <testsuite name=\"sweep.m1\" tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\" "
      "time=\"0.000\" timestamp=\"2023-11-14T22:13:20\" hostname=\"ci\">\n"
      "    <properties>\n"
      "      <property name=\"cases\" value=\"5\"/>\n"
      "      <property name=\"checked\" value=\"3\"/>\n"
      "      <property name=\"refused\" value=\"2\"/>\n"
      "      <property name=\"not_modelled\" value=\"1\"/>\n"
      "      <property name=\"violated\" value=\"2\"/>\n"
      "      <property name=\"configurations_refused\" value=\"1\"/>\n"
      "      <property name=\"refused: no\" value=\"1\"/>\n"
      "      <property name=\"refused: not modelled yet: cp\" value=\"1\"/>\n"
      "    </properties>\n"
      "    <testcase name=\"tp=2\" classname=\"sweep.m1\" time=\"0.000\">\n"
      "      <failure message=\"owed-once violated (counted-k-times); collectives-match violated "
      "(mismatched), an engine finding\" type=\"violation\">seam check #2\nseam check #15\n"
      "</failure>\n"
      "      <system-out>4 cases: 3 checked, 1 refused by the engine (1 of them not modelled by "
      "seam), 2 violated\nfirst violation: row 4 summed twice</system-out>\n"
      "    </testcase>\n"
      "  </testsuite>\n"
      "  <testsuite name=\"sweep.m2\" tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\" "
      "time=\"0.000\" timestamp=\"2023-11-14T22:13:20\" hostname=\"ci\">\n"
      "    <properties>\n"
      "      <property name=\"cases\" value=\"11\"/>\n"
      "      <property name=\"checked\" value=\"11\"/>\n"
      "      <property name=\"refused\" value=\"0\"/>\n"
      "      <property name=\"not_modelled\" value=\"0\"/>\n"
      "      <property name=\"violated\" value=\"11\"/>\n"
      "      <property name=\"configurations_refused\" value=\"0\"/>\n"
      "    </properties>\n"
      "    <testcase name=\"tp=1\" classname=\"sweep.m2\" time=\"0.000\">\n"
      "      <failure message=\"collectives-match violated (mismatched), an engine finding\" "
      "type=\"violation\">" +
      m2_lines + "(1 more violating cases: the store&apos;s run " + std::to_string(run.id) +
      ")\n</failure>\n"
      "      <system-out>11 cases: 11 checked, 0 refused by the engine (0 of them not modelled by "
      "seam), 11 violated\nfirst violation: sizes differ" +
      std::string(properties::kEngineFindingMark) +
      "x.all_gather</system-out>\n"
      "    </testcase>\n"
      "  </testsuite>\n"
      "</testsuites>\n";
  EXPECT_EQ(readFile(out), expected);
  EXPECT_EQ(seam::testing::junitSchemaErrors(out), "");
}

}  // namespace
}  // namespace seam::reports::store_test
