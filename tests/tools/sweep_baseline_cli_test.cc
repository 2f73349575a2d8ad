// `seam sweep --baseline FILE` and `--write-baseline FILE`: a run whose
// findings are all in its baseline (a store or the JSON file) exits 0 and
// says so; a finding that is not, a new case or a known case found another
// way, fails it (exit 1) and is listed; a file that is no baseline is one
// line, exit 2, and nothing is written. The counts expected are read from
// the runs' stores, not from seam's summary.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "run_seam.h"
#include "seam/reports/store.h"

namespace {

using seam::testing::CliRun;
using seam::testing::readText;
using seam::testing::runSeam;

/// A space with engine findings at tp 4 (the fused kernel's group, the DP
/// return's reduce_scatterv: engine_findings_test.cc), swept in seconds.
const std::string kSpace = "sweep --world 4 --pattern 'M-*E' --jobs 2";

std::string temp(const std::string& name) {
  const std::string path = ::testing::TempDir() + "seam_sweep_baseline_" + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

/// The violated cases of the latest run of `db`, as their `seam check` lines.
std::vector<std::string> violated(const std::string& db) {
  std::vector<std::string> out;
  auto store = seam::reports::Store::open(db);
  EXPECT_TRUE(store.hasValue()) << (store ? "" : store.status().message());
  if (!store) return out;
  auto runs = store->runs();
  if (!runs || runs->empty()) return out;
  auto cases = store->cases(runs->back().id);
  if (!cases) return out;
  for (const auto& c : *cases)
    if (c.outcome == seam::reports::CaseOutcome::kViolated) out.push_back(c.reproduce);
  return out;
}

/// The last line of `text`.
std::string lastLine(const std::string& text) {
  const std::size_t end = text.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  const std::size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end - start);
}

std::string summary(const std::string& file, std::size_t findings, std::size_t known,
                    std::size_t fresh) {
  return "baseline \"" + file + "\": " + std::to_string(findings) + " findings, " +
         std::to_string(known) + " baselined, " + std::to_string(fresh) + " new";
}

TEST(SweepBaselineCli, ARunWhoseFindingsAreAllInItsBaselineExitsZeroFromJsonOrFromAStore) {
  const std::string json = temp("all.json"), first = temp("all_first.db");
  CliRun wrote = runSeam(kSpace + " --db " + first + " --write-baseline " + json);
  ASSERT_EQ(wrote.code, 1) << "the space has findings\n" << wrote.out << wrote.err;
  const std::size_t findings = violated(first).size();
  ASSERT_GT(findings, 0u);
  EXPECT_NE(wrote.out.find("wrote baseline \"" + json + "\": " + std::to_string(findings) +
                           " findings\n"),
            std::string::npos)
      << wrote.out;
  const auto doc = nlohmann::json::parse(readText(json));
  EXPECT_EQ(doc["findings"].size(), findings);

  for (const std::string& baseline : {json, first}) {
    const std::string db = temp("all_again.db");
    CliRun again = runSeam(kSpace + " --db " + db + " --baseline " + baseline);
    EXPECT_EQ(again.code, 0) << again.out << again.err;
    EXPECT_EQ(violated(db).size(), findings) << "the findings are still found";
    EXPECT_EQ(lastLine(again.out), summary(baseline, findings, findings, 0)) << again.out;
    EXPECT_EQ(again.out.find("NEW FINDING"), std::string::npos);
  }
}

TEST(SweepBaselineCli, ANewFindingOutsideANarrowerRunsBaselineFailsTheRunAndIsListed) {
  const std::string json = temp("narrow.json"), narrow_db = temp("narrow.db");
  CliRun narrow = runSeam(kSpace + " --fusion on --db " + narrow_db + " --write-baseline " + json);
  ASSERT_EQ(narrow.code, 1) << narrow.out << narrow.err;
  const std::size_t known = violated(narrow_db).size();
  const std::string db = temp("wide.db");
  CliRun wide = runSeam(kSpace + " --db " + db + " --baseline " + json);
  const std::vector<std::string> all = violated(db);
  std::size_t unfused = 0;
  for (const std::string& line : all) unfused += line.find(" --fusion off ") != std::string::npos;
  ASSERT_GT(unfused, 0u) << "the unfused cases have findings of their own";
  ASSERT_EQ(all.size(), known + unfused);
  EXPECT_EQ(wide.code, 1) << wide.out << wide.err;
  EXPECT_EQ(lastLine(wide.out), summary(json, all.size(), known, unfused));
  // Each new finding listed is an unfused case, with its `seam check` line.
  const std::regex listed("NEW FINDING: [^\n]+\n  (seam check [^\n]+)\n");
  int lines = 0;
  for (auto it = std::sregex_iterator(wide.out.begin(), wide.out.end(), listed);
       it != std::sregex_iterator(); ++it, ++lines) {
    EXPECT_NE((*it)[1].str().find(" --fusion off "), std::string::npos) << (*it)[1];
  }
  EXPECT_EQ(lines, static_cast<int>(std::min<std::size_t>(unfused, 20)));

  CliRun json_out =
      runSeam(kSpace + " --format json --db " + temp("wide_json.db") + " --baseline " + json);
  EXPECT_EQ(json_out.code, 1) << json_out.err;
  const auto doc = nlohmann::json::parse(json_out.out);
  EXPECT_EQ(doc["counts"]["violated"], all.size());
  EXPECT_EQ(doc["counts"]["baselined"], known);
  EXPECT_EQ(doc["counts"]["new"], unfused);
  EXPECT_EQ(doc["baseline"]["file"], json);
  EXPECT_EQ(doc["baseline"]["new_findings"].size(), std::min<std::size_t>(unfused, 20));
}

TEST(SweepBaselineCli, AKnownCaseWhoseFindingChangedCountsAsNew) {
  const std::string json = temp("changed.json");
  ASSERT_EQ(runSeam(kSpace + " --db " + temp("changed.db") + " --write-baseline " + json).code, 1);
  auto doc = nlohmann::json::parse(readText(json));
  const std::size_t findings = doc["findings"].size();
  ASSERT_GT(findings, 1u);
  // The first finding as it stands in the baseline moved: the same case, found another way.
  const std::string found = doc["findings"][0]["what"];
  doc["findings"][0]["what"] = found + ", token 99";
  std::ofstream(json) << doc.dump(2);
  CliRun r = runSeam(kSpace + " --db " + temp("changed_again.db") + " --baseline " + json);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(lastLine(r.out), summary(json, findings, findings - 1, 1) +
                                 "; 1 finding of the baseline not found by this run");
  EXPECT_NE(r.out.find("NEW FINDING: " + found + "\n"), std::string::npos) << r.out;
}

TEST(SweepBaselineCli, AFileThatIsNoBaselineIsOneLineNamingItExitTwoAndNothingWritten) {
  const std::string dir = temp("bad_inputs");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/a_directory");
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
    return dir + "/" + name;
  };
  const std::string engine_json =
      write("engine.json",
            R"({"format": "seam baseline 1", "command": "sweep --engine", "findings": []})");
  // A seam store with no sweep run, and one with a table dropped.
  const std::string prop_db = dir + "/prop.db";
  ASSERT_NE(runSeam("prop --cases 3 --world 2 --seed 1 --db " + prop_db).code, 2);
  const std::string damaged = dir + "/damaged.db";
  std::filesystem::copy_file(prop_db, damaged);
  ASSERT_EQ(std::system(("sqlite3 " + damaged + " 'DROP TABLE verdicts'").c_str()), 0);
  const std::string other_app = dir + "/other.db";
  ASSERT_EQ(std::system(("sqlite3 " + other_app + " 'CREATE TABLE t(x)'").c_str()), 0);
  const std::pair<std::string, std::string> bad[] = {
      {dir + "/missing.json", "cannot read it (No such file or directory)"},
      {dir + "/a_directory", "a directory, not a file"},
      {write("empty.json", ""), "neither a seam store nor seam baseline JSON"},
      {write("cut.json", R"({"format": "seam baseline 1", "findings": [)"),
       "neither a seam store nor seam baseline JSON (parse error"},
      {write("other.json", R"({"findings": []})"), "JSON, but not a seam baseline"},
      {engine_json, "a baseline of `seam sweep --engine`, not of `seam sweep`"},
      {write("text.txt", "hello\n"), "neither a seam store nor seam baseline JSON"},
      {prop_db, "a seam store with no finished `seam sweep` run"},
      {damaged, "a damaged seam store (table \"verdicts\" is missing)"},
      {other_app, "not a seam store"},
  };
  for (const auto& [file, why] : bad) {
    const std::string db = dir + "/run.db", out = dir + "/out.json";
    CliRun r = runSeam(kSpace + " --db " + db + " --baseline " + file + " --write-baseline " + out);
    EXPECT_EQ(r.code, 2) << file << "\n" << r.out << r.err;
    EXPECT_EQ(r.err.rfind("seam: --baseline \"" + file + "\": " + why, 0), 0u) << r.err;
    EXPECT_EQ(seam::testing::lineCount(r.err), 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_FALSE(std::filesystem::exists(db)) << file;
    EXPECT_FALSE(std::filesystem::exists(out)) << file;
  }
  std::filesystem::remove_all(dir);
}

TEST(SweepBaselineCli, TheBaselineWrittenMayReplaceItsJsonButNeverTheStoreItReads) {
  const std::string db = temp("own.db");
  CliRun same = runSeam(kSpace + " --db " + db + " --write-baseline " + db);
  EXPECT_EQ(same.code, 2) << same.err;
  EXPECT_NE(same.err.find("--write-baseline"), std::string::npos) << same.err;
  EXPECT_FALSE(std::filesystem::exists(db));
  ASSERT_EQ(runSeam(kSpace + " --fusion on --db " + db).code, 1);
  const std::string before = readText(db);
  CliRun over = runSeam(kSpace + " --db " + temp("other.db") + " --baseline " + db +
                        " --write-baseline " + db);
  EXPECT_EQ(over.code, 2) << over.err;
  EXPECT_EQ(readText(db), before);
  // A JSON baseline updated in place: read first, then written with every finding.
  const std::string json = temp("update.json");
  ASSERT_EQ(
      runSeam(kSpace + " --fusion on --db " + temp("u1.db") + " --write-baseline " + json).code, 1);
  const std::string wide = temp("u2.db");
  CliRun update =
      runSeam(kSpace + " --db " + wide + " --baseline " + json + " --write-baseline " + json);
  EXPECT_EQ(update.code, 1) << "the unfused findings were new\n" << update.out;
  const std::size_t all = violated(wide).size();
  EXPECT_EQ(nlohmann::json::parse(readText(json))["findings"].size(), all);
  CliRun after = runSeam(kSpace + " --db " + temp("u3.db") + " --baseline " + json);
  EXPECT_EQ(after.code, 0) << after.out;
}

}  // namespace
