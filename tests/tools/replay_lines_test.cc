// Every reproduce line seam saves (the console's, the JUnit file's, the
// store's) replays its failure when run as written: `seam check` with that
// line exits 1 with the same first violation, a planted decision or mutant
// included.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "run_seam.h"
#include "seam/reports/store.h"

namespace {

using seam::testing::CliRun;
CliRun seam(const std::string& args) { return seam::testing::runSeam(args); }

constexpr int kExitPropertyFailed = 1;

std::string tempPath(const std::string& name) {
  return ::testing::TempDir() + "replay_lines_" + std::to_string(getpid()) + "_" + name;
}

// The five predefined XML entities back to their characters (what a JUnit
// reader shows), and the character references seam writes for LF.
std::string unescapeXml(std::string text) {
  const std::pair<const char*, const char*> entities[] = {{"&lt;", "<"},    {"&gt;", ">"},
                                                          {"&quot;", "\""}, {"&apos;", "'"},
                                                          {"&#10;", "\n"},  {"&amp;", "&"}};
  for (const auto& [from, to] : entities) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + 1))
      text.replace(at, std::string(from).size(), to);
  }
  return text;
}

// The line of `text` that starts with `prefix` ("" when none does).
std::string lineStartingWith(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

// Runs a saved `seam check ...` line as written; returns its first violation.
std::string replay(const std::string& line) {
  EXPECT_EQ(line.rfind("seam check ", 0), 0u) << line;
  CliRun r = seam(line.substr(std::string("seam ").size()));
  EXPECT_EQ(r.code, kExitPropertyFailed) << line << "\n" << r.out << r.err;
  return lineStartingWith(r.out, "first violation: ")
      .substr(std::string("first violation: ").size());
}

seam::reports::Store openStore(const std::string& path) {
  auto store = seam::reports::Store::open(path);
  EXPECT_TRUE(store.hasValue()) << path;
  return std::move(*store);
}

TEST(ReplayLines, APropFailureUnderADecisionReplaysFromTheConsoleTheJunitAndTheStore) {
  const std::string db = tempPath("prop.db"), junit = tempPath("prop.xml");
  std::filesystem::remove(db);
  CliRun r = seam("prop --cases 500 --seed 7 --decision ffn-keeps-sum-from-mixer --db " + db +
                  " --junit " + junit);
  ASSERT_EQ(r.code, kExitPropertyFailed) << r.out << r.err;
  const std::string failed = lineStartingWith(r.out, "FAILED after ");
  const std::string failure = failed.substr(failed.find(" steps: ") + 8);
  const std::string console = lineStartingWith(r.out, "seam check ");
  ASSERT_NE(console.find(" --decision ffn-keeps-sum-from-mixer"), std::string::npos) << r.out;

  const std::string xml = unescapeXml(seam::testing::readText(junit));
  // The failure's text is the line; its message the property.
  const std::string opening = "type=\"violation\">";
  const auto body_start = xml.find(opening) + opening.size();
  const auto body_end = xml.find("</failure>");
  ASSERT_NE(body_end, std::string::npos) << xml;
  ASSERT_LT(body_start, body_end) << xml;
  const std::string from_junit = xml.substr(body_start, body_end - body_start);
  EXPECT_NE(xml.find("<failure message=\"" + failure.substr(0, failure.find(')') + 1) + "\""),
            std::string::npos)
      << xml;

  seam::reports::Store store = openStore(db);
  auto runs = store.runs();
  ASSERT_TRUE(runs.hasValue());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_NE(runs->back().args.find("decision=ffn-keeps-sum-from-mixer"), std::string::npos)
      << runs->back().args;
  auto cases = store.cases(runs->back().id);
  ASSERT_TRUE(cases.hasValue());
  ASSERT_EQ(cases->size(), 1u);

  EXPECT_EQ(from_junit, console);
  EXPECT_EQ(cases->front().reproduce, console);
  for (const std::string& line : {console, from_junit, cases->front().reproduce}) {
    EXPECT_EQ(replay(line), failure) << line;
  }
}

TEST(ReplayLines, EveryStoredKillLineOfACampaignReplaysItsKillWithItsMutantAndSite) {
  const std::string db = tempPath("mutate.db"), junit = tempPath("mutate.xml");
  std::filesystem::remove(db);
  // A decision mutant named by its id of earlier versions, a sampled-site
  // operator and a fixed one.
  CliRun r =
      seam("mutate --world 2 --model nemotron-h-4b --jobs 1 --db " + db + " --junit " + junit +
           " --mutant decision.ffn-not-leaving-sum-to-mixer --mutant "
           "plan.site-drop-collective --mutant plan.drop-completing-collective");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  seam::reports::Store store = openStore(db);
  auto runs = store.runs();
  ASSERT_TRUE(runs.hasValue());
  auto kills = store.kills(runs->back().id);
  ASSERT_TRUE(kills.hasValue());
  ASSERT_EQ(kills->size(), 3u);
  const std::string xml = unescapeXml(seam::testing::readText(junit));
  for (const seam::reports::KillRecord& k : *kills) {
    SCOPED_TRACE(k.mutant_id);
    EXPECT_NE(k.reproduce.find(" --mutant " + k.mutant_id), std::string::npos) << k.reproduce;
    if (k.mutant_id.rfind("plan.", 0) == 0) {
      EXPECT_NE(k.reproduce.find(" --site " + std::to_string(k.site)), std::string::npos);
    }
    EXPECT_NE(r.out.find("replay: " + k.reproduce + "\n"), std::string::npos) << r.out;
    EXPECT_NE(xml.find(k.reproduce), std::string::npos) << xml;
    EXPECT_EQ(replay(k.reproduce), k.text);
  }
  EXPECT_EQ(kills->front().mutant_id, "decision.ffn-keeps-sum-from-mixer")
      << "an old id is stored by the one name";
}

TEST(ReplayLines, ASweepsViolatedCasesReplayFromTheStoreAndTheJunit) {
  const std::string db = tempPath("sweep.db"), junit = tempPath("sweep.xml");
  std::filesystem::remove(db);
  // The engine findings of this space are violations the sweep stores.
  CliRun r = seam("sweep --world 4 --model nemotron-3-nano --db " + db + " --junit " + junit);
  ASSERT_EQ(r.code, kExitPropertyFailed) << r.out << r.err;
  seam::reports::Store store = openStore(db);
  auto runs = store.runs();
  ASSERT_TRUE(runs.hasValue());
  auto failures = store.firstFailures(runs->back().id);
  auto cases = store.cases(runs->back().id);
  ASSERT_TRUE(failures.hasValue() && cases.hasValue());
  ASSERT_FALSE(failures->empty());
  const std::string xml = unescapeXml(seam::testing::readText(junit));
  int replayed = 0;
  for (const auto& [index, verdict] : *failures) {
    if (++replayed > 3) break;  // a few suffice: each is a `seam check` run
    const std::string& line = (*cases)[static_cast<std::size_t>(index)].reproduce;
    // `seam check` prints the engine call behind an engine finding on a line of its own.
    EXPECT_EQ(replay(line), verdict.text.substr(0, verdict.text.find("; engine finding: ")))
        << line;
    EXPECT_NE(xml.find(line + "\n"), std::string::npos) << line;
  }
}

}  // namespace
