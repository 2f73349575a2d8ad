// The JUnit files of `seam sweep`, `seam prop` and `seam mutate`, as a CI
// reads them: valid under the JUnit schema, one testcase per model x
// configuration for a sweep with refusals as counts (never skipped
// testcases), stable names (no index, seed or case count), failures whose
// message is the property and whose text replays the case, kills that name
// the killing case.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "../reports/junit_schema.h"
#include "run_seam.h"
#include "seam/reports/store.h"

namespace {

using seam::testing::CliRun;
CliRun seam(const std::string& args) { return seam::testing::runSeam(args); }

std::string tempPath(const std::string& name) {
  return ::testing::TempDir() + "junit_cli_" + std::to_string(getpid()) + "_" + name;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// The values of attribute `name` over every element `tag` of `xml`.
std::vector<std::string> attributes(const std::string& xml, const std::string& tag,
                                    const std::string& name) {
  std::vector<std::string> out;
  for (auto at = xml.find("<" + tag + " "); at != std::string::npos;
       at = xml.find("<" + tag + " ", at + 1)) {
    const auto end = xml.find('>', at);
    const auto key = xml.find(" " + name + "=\"", at);
    if (key == std::string::npos || key > end) continue;
    const auto from = key + name.size() + 3;
    out.push_back(xml.substr(from, xml.find('"', from) - from));
  }
  return out;
}

TEST(JunitCli, ASweepHasOneTestcasePerModelAndCheckedConfigurationAndCountsItsRefusals) {
  const std::string db = tempPath("sweep.db"), junit = tempPath("sweep.xml");
  std::filesystem::remove(db);
  CliRun r = seam("sweep --world 4 --model nemotron-3-nano --db " + db + " --junit " + junit);
  ASSERT_EQ(r.code, 1) << "the engine findings of this space fail the sweep\n" << r.out << r.err;
  const std::string xml = seam::testing::readText(junit);
  EXPECT_EQ(seam::testing::junitSchemaErrors(junit), "");

  auto store = seam::reports::Store::open(db);
  ASSERT_TRUE(store.hasValue());
  auto runs = store->runs();
  ASSERT_TRUE(runs.hasValue());
  auto cases = store->cases(runs->back().id);
  ASSERT_TRUE(cases.hasValue());
  // Expected from the stored cases: the configurations with a checked case,
  // those with a violated one, and the refusals.
  std::set<std::string> checked, violated, refused_only, all;
  std::int64_t refused = 0;
  for (const auto& c : *cases) {
    all.insert(c.config);
    if (c.outcome == seam::reports::CaseOutcome::kRefused) {
      ++refused;
      continue;
    }
    checked.insert(c.config);
    if (c.outcome == seam::reports::CaseOutcome::kViolated) violated.insert(c.config);
  }
  for (const auto& c : all) {
    if (!checked.count(c)) refused_only.insert(c);
  }
  ASSERT_FALSE(violated.empty());
  ASSERT_FALSE(refused_only.empty());
  const std::vector<std::string> names = attributes(xml, "testcase", "name");
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), checked);
  EXPECT_EQ(names.size(), checked.size()) << "one testcase per configuration";
  EXPECT_EQ(count(xml, "<failure "), violated.size());
  EXPECT_EQ(count(xml, "<skipped"), 0u) << "refusals are counts, not skipped testcases";
  EXPECT_NE(xml.find("<property name=\"refused\" value=\"" + std::to_string(refused) + "\"/>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<property name=\"configurations_refused\" value=\"" +
                     std::to_string(refused_only.size()) + "\"/>"),
            std::string::npos)
      << xml;
  for (const std::string& n : names) EXPECT_EQ(n.find('#'), std::string::npos) << n;
  // The failure's message is the property, its text the lines that replay it.
  for (const std::string& m : attributes(xml, "failure", "message")) {
    EXPECT_NE(m.find(" violated ("), std::string::npos) << m;
  }
  const auto body = xml.find("type=\"violation\">");
  ASSERT_NE(body, std::string::npos);
  EXPECT_EQ(xml.compare(body + 17, 20, "seam check --model n"), 0) << xml.substr(body, 200);
}

TEST(JunitCli, APropTestcaseIsNamedByItsPropertyNotByItsSeedOrCaseCount) {
  const std::string a = tempPath("prop_a.xml"), b = tempPath("prop_b.xml");
  CliRun first =
      seam("prop --cases 20 --seed 3 --world 2 --db " + tempPath("p.db") + " --junit " + a);
  CliRun second =
      seam("prop --cases 30 --seed 4 --world 2 --db " + tempPath("p.db") + " --junit " + b);
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  ASSERT_EQ(second.code, 0) << second.out << second.err;
  const auto name_a = attributes(seam::testing::readText(a), "testcase", "name");
  const auto name_b = attributes(seam::testing::readText(b), "testcase", "name");
  ASSERT_EQ(name_a.size(), 1u);
  EXPECT_EQ(name_a, name_b);
  EXPECT_EQ(name_a[0].find("RC_PARAMS"), std::string::npos) << name_a[0];
  EXPECT_NE(seam::testing::readText(a).find(
                "<property name=\"rc_params\" value=\"seed=3 max_success=20 "),
            std::string::npos);
  EXPECT_EQ(seam::testing::junitSchemaErrors(a), "");
  EXPECT_EQ(seam::testing::junitSchemaErrors(b), "");
}

TEST(JunitCli, ACampaignsKillNamesItsKillingCaseAndItsBaselineIsATestcase) {
  const std::string junit = tempPath("mutate.xml");
  CliRun r = seam("mutate --world 2 --model nemotron-h-4b --jobs 1 --db " + tempPath("m.db") +
                  " --junit " + junit +
                  " --mutant plan.site-drop-collective --mutant decision.terminal-defers");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string xml = seam::testing::readText(junit);
  EXPECT_EQ(seam::testing::junitSchemaErrors(junit), "");
  EXPECT_EQ(attributes(xml, "testcase", "name"),
            (std::vector<std::string>{"every case of the space holds with no mutant",
                                      "plan.site-drop-collective", "decision.terminal-defers"}));
  EXPECT_NE(xml.find("<system-out>killed by case #"), std::string::npos) << xml;
  EXPECT_NE(xml.find("replay: seam check --model nemotron-h-4b "), std::string::npos) << xml;
  for (const std::string& t : attributes(xml, "testcase", "time")) {
    EXPECT_NE(t, "0.000") << "a mutant's time is measured\n" << xml;
  }
}

}  // namespace
