// Runs the built `seam check` and `seam plan` on single cases: exit codes
// (0 hold, 1 a property failed, 2 bad input or refused), the one-line stderr
// of DESIGN §9, the verdict JSON and the JSON shape of `seam plan`.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "run_seam.h"

namespace {

using seam::testing::CliRun;
CliRun seam(const std::string& args) { return seam::testing::runSeam(args); }

int lines(const std::string& s) { return seam::testing::lineCount(s); }

constexpr int kExitOk = 0;
constexpr int kExitBadInput = 2;

// ---- seam check ------------------------------------------------------------

/// `seam plan CASE --format jsonl --rank all`, each line passed through `edit`
/// (which may drop it: an empty string), then `seam check CASE --trace`.
template <class Edit>
CliRun checkEditedTrace(const std::string& the_case, Edit edit) {
  const std::string path =
      ::testing::TempDir() + "seam_check_edited_" + std::to_string(getpid()) + ".jsonl";
  CliRun plan = seam("plan " + the_case + " --format jsonl --rank all");
  EXPECT_EQ(plan.code, kExitOk) << plan.err;
  std::istringstream in(plan.out);
  std::ofstream out(path);
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("op")) continue;
    if (edit(j)) out << j.dump() << "\n";
  }
  out.close();
  CliRun r = seam("check " + the_case + " --trace " + path);
  std::remove(path.c_str());
  return r;
}

TEST(CheckCli, AnUneditedTraceHolds) {
  CliRun r = checkEditedTrace("--model nemotron-h-8b --tp 2 --capture 2,5",
                              [](nlohmann::json&) { return true; });
  EXPECT_EQ(r.code, kExitOk) << r.out << r.err;
}

TEST(CheckCli, ATraceWithEverySnapshotDroppedFailsSnapshots) {
  CliRun r = checkEditedTrace("--model nemotron-h-8b --tp 2 --capture 2,5", [](nlohmann::json& j) {
    return j["op"] != "snapshot" && j["tensor"] != "snapshot";
  });
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("snapshots violated (missing-snapshot)"), std::string::npos) << r.out;
}

TEST(CheckCli, ATraceWhoseAllReducesMoveTwiceTheirBytesOnEveryRankFailsCallSizes) {
  CliRun r = checkEditedTrace("--model nemotron-h-8b --tp 4 --fusion off", [](nlohmann::json& j) {
    if (j["op"] == "all_reduce") j["bytes"] = 2 * j["bytes"].get<std::int64_t>();
    return true;
  });
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("call-sizes violated (wrong-size)"), std::string::npos) << r.out;
}

TEST(CheckCli, TheMStarEExampleAtTpTwoHoldsAndSaysSo) {
  CliRun r = seam("check --pattern 'M-*E-' --tp 2");
  EXPECT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_NE(r.out.find("all properties hold"), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(CheckCli, JsonFormatIsOneObjectThatHolds) {
  CliRun r = seam("check --pattern 'M-*E-' --tp 2 --format json");
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << "not one JSON document:\n" << r.out;
  ASSERT_TRUE(j.is_object()) << r.out;
  ASSERT_TRUE(j.contains("holds"));
  EXPECT_EQ(j["holds"], true);
  ASSERT_TRUE(j.contains("properties"));
  ASSERT_TRUE(j["properties"].is_array());
  EXPECT_EQ(j["properties"].size(), 8u);  // properties 1-6, 8 and 9 of DESIGN §4
  for (const auto& p : j["properties"]) EXPECT_EQ(p["holds"], true) << p.dump();
}

TEST(CheckCli, ADpCaseWithAnIdleShardHolds) {
  CliRun r = seam("check --pattern 'M-*E' --tp 4 --dp 2 --tokens 3,0 --reduction rs");
  EXPECT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_NE(r.out.find("all properties hold"), std::string::npos) << r.out;
}

struct BadArgs {
  const char* args;
  const char* needle;
};

void PrintTo(const BadArgs& b, std::ostream* os) { *os << b.args; }

class CheckCliRefusal : public ::testing::TestWithParam<BadArgs> {};

TEST_P(CheckCliRefusal, ExitsTwoWithOneStderrLineNamingTheProblem) {
  CliRun r = seam(GetParam().args);
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(GetParam().needle), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Bad, CheckCliRefusal,
    ::testing::Values(
        // Nemotron-H refuses attention CP (make_stage_boundary, reference §9.2 (4)/(5)).
        BadArgs{"check --model nemotron-h-8b --tp 4 --cp 2", "attention context parallel"},
        BadArgs{"check --pattern 'M-' --dp 1 --tokens 4,0", "--tokens \"4,0\""},
        BadArgs{"check --pattern 'M-' --fusion maybe", "--fusion \"maybe\""},
        BadArgs{"check --pattern 'M-' --policy bogus", "--policy \"bogus\""},
        BadArgs{"check --pattern 'M-x'", "'x' at position 2"},
        BadArgs{"plan --model nemotron-h-8b --tp 2 --rank 5", "--rank 5"}),
    [](const ::testing::TestParamInfo<BadArgs>& info) {
      return "case" + std::to_string(info.index);
    });

// ---- seam plan ---------------------------------------------------------------

TEST(PlanCli, JsonHasTheKeysOfDesignSectionNine) {
  CliRun r = seam("plan --model nemotron-h-8b --tp 2 --format json");
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_TRUE(j.is_object());
  for (const char* key : {"model", "pattern", "policy", "config", "rank", "ops", "summary"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["model"], "nemotron-h-8b");
  EXPECT_EQ(j["policy"], "declared");
  EXPECT_EQ(j["rank"], 0);
  const auto& config = j["config"];
  for (const char* key :
       {"world", "pp", "tp", "attn_tp", "attn_dp", "attn_cp", "moe_ep", "moe_tp", "moe_dp"}) {
    EXPECT_TRUE(config.contains(key)) << key;
  }
  EXPECT_EQ(config["world"], 2);
  EXPECT_EQ(config["tp"], 2);
  EXPECT_EQ(config["attn_tp"], 2);
  ASSERT_TRUE(j["ops"].is_array());
  ASSERT_FALSE(j["ops"].empty());
  std::map<std::string, int> counted;
  for (const auto& op : j["ops"]) {
    for (const char* key : {"layer", "stage", "phase", "op", "tensor", "group", "group_size",
                            "ranks", "rows_in", "rows_out", "bytes"}) {
      EXPECT_TRUE(op.contains(key)) << key << " in " << op.dump();
    }
    // group: an axis name, or null for ops that do not communicate.
    if (!op["group"].is_null()) {
      const std::string g = op["group"];
      EXPECT_TRUE(g == "attn_tp" || g == "tp" || g == "attn_cp" || g == "moe_ep" || g == "moe_tp" ||
                  g == "moe_dp" || g == "pp")
          << g;
    }
    ++counted[op["op"].get<std::string>()];
  }
  // The summary counts the ops of the printed rank.
  ASSERT_TRUE(j["summary"].is_object());
  std::map<std::string, int> summary;
  for (const auto& [op, count] : j["summary"].items()) summary[op] = count.get<int>();
  EXPECT_EQ(summary, counted);
}

// ---- seam check --mutant: a campaign's kill lines replay --------------------

/// The text after `key` on the line of `text` that contains `key`.
std::string afterOnLine(const std::string& text, const std::string& key) {
  const auto at = text.find(key);
  if (at == std::string::npos) return "";
  const auto end = text.find('\n', at);
  return text.substr(at + key.size(), end - at - key.size());
}

TEST(CheckCli, EveryKillLineOfACampaignReplaysTheKillAndWithoutTheMutantHolds) {
  const std::string dir = ::testing::TempDir();
  const std::string db = dir + "check_mutant.db", junit = dir + "check_mutant.xml";
  std::remove(db.c_str());
  CliRun m = seam(
      "mutate --pattern 'M-M' --world 4 --mutant plan.site-regroup --mutant "
      "decision.mixer-weights-over-tp --seed 5 --jobs 1 --db " +
      db + " --junit " + junit);
  ASSERT_EQ(m.code, kExitOk) << m.out << m.err;
  for (const std::string id : {"plan.site-regroup", "decision.mixer-weights-over-tp"}) {
    const std::string line = afterOnLine(m.out, "killed " + id + ": replay: seam ");
    ASSERT_FALSE(line.empty()) << m.out;
    EXPECT_NE(line.find("--mutant " + id), std::string::npos) << line;
    CliRun replay = seam(line);
    EXPECT_EQ(replay.code, 1) << line << "\n" << replay.out << replay.err;
    const std::string plain = line.substr(0, line.find(" --mutant "));
    EXPECT_EQ(seam(plain).code, kExitOk) << plain;
    std::ifstream in(junit);
    const std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(xml.find("--mutant " + id), std::string::npos) << xml;
  }
}

TEST(CheckCli, MutantAndSiteMistakesAreOneLineWithExitTwo) {
  const struct {
    const char* args;
    const char* says;
  } cases[] = {
      {"check --pattern 'M-' --tp 2 --mutant plan.nope", "is not a mutant id"},
      {"check --pattern 'M-' --tp 2 --site 1", "--site 1 needs --mutant"},
      {"check --pattern 'M-' --tp 2 --mutant plan.site-drop-collective --site 99",
       "--site 99: plan.site-drop-collective has"},
      {"check --pattern 'M-' --tp 2 --mutant plan.site-drop-collective --site -1", "must be >= 0"},
      {"check --pattern 'M-' --tp 2 --mutant decision.terminal-defers --site 1",
       "is a decision mutant"},
  };
  for (const auto& c : cases) {
    CliRun r = seam(c.args);
    EXPECT_EQ(r.code, kExitBadInput) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
  }
}

}  // namespace
