// `--format json` of sweep, prop, mutate and diff: one JSON object that
// parses, whose counts are the numbers the text summary of the same run
// prints, and whose findings carry the lines that replay them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "run_seam.h"

namespace {

using seam::testing::CliRun;
CliRun seam(const std::string& args) { return seam::testing::runSeam(args); }

std::string db(const std::string& name) {
  return ::testing::TempDir() + "json_cli_" + std::to_string(getpid()) + "_" + name + ".db";
}

/// The integers the first match of `pattern` captures in `text`.
std::vector<std::int64_t> numbers(const std::string& text, const std::string& pattern) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(text, m, std::regex(pattern))) << pattern << "\n" << text;
  std::vector<std::int64_t> out;
  for (std::size_t i = 1; i < m.size(); ++i) out.push_back(std::stoll(m[i].str()));
  return out;
}

/// Runs `args` as text and as JSON; returns the text and the parsed object.
std::pair<std::string, nlohmann::json> both(const std::string& args, int code) {
  CliRun text = seam(args + " --db " + db("text"));
  CliRun json = seam(args + " --db " + db("json") + " --format json");
  EXPECT_EQ(text.code, code) << text.out << text.err;
  EXPECT_EQ(json.code, code) << json.out << json.err;
  nlohmann::json j = nlohmann::json::parse(json.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << json.out;
  EXPECT_TRUE(j.is_object()) << json.out;
  EXPECT_TRUE(j["seconds"].is_number()) << json.out;
  return {text.out, j};
}

TEST(JsonCli, ASweepsCountsAreTheConsolesAndEachFailureHasItsReproduceLine) {
  auto [text, j] = both("sweep --world 4 --model nemotron-3-nano", 1);
  EXPECT_EQ(j["command"], "sweep");
  const auto line = numbers(text, R"((\d+) cases, (\d+) violations \((\d+) engine findings\))");
  const auto counts = numbers(text, R"(checked (\d+), refused (\d+), not modelled (\d+);)");
  EXPECT_EQ(j["counts"]["cases"], line[0]);
  EXPECT_EQ(j["counts"]["violated"], line[1]);
  EXPECT_EQ(j["counts"]["engine_findings"], line[2]);
  EXPECT_EQ(j["counts"]["checked"], counts[0]);
  EXPECT_EQ(j["counts"]["refused"], counts[1]);
  EXPECT_EQ(j["counts"]["not_modelled"], counts[2]);
  ASSERT_FALSE(j["failures"].empty());
  for (const auto& f : j["failures"]) {
    EXPECT_EQ(f["reproduce"].get<std::string>().rfind("seam check --model nemotron-3-nano ", 0),
              0u);
    EXPECT_NE(text.find(f["reproduce"].get<std::string>()), std::string::npos);
  }
}

TEST(JsonCli, APropFailuresCountsAndLineAreTheConsoles) {
  auto [text, j] = both("prop --cases 500 --seed 7 --decision ffn-keeps-sum-from-mixer", 1);
  EXPECT_EQ(j["command"], "prop");
  EXPECT_EQ(j["passed"], false);
  EXPECT_EQ(j["counts"]["cases"], numbers(text, R"(FAILED after (\d+) cases)")[0]);
  EXPECT_EQ(j["failure"]["shrinks"], numbers(text, R"(shrunk in (\d+) steps)")[0]);
  EXPECT_NE(text.find("\n" + j["failure"]["reproduce"].get<std::string>() + "\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("RC_PARAMS=\"" + j["rc_params"].get<std::string>() + "\""),
            std::string::npos);
}

TEST(JsonCli, ACampaignsCountsScoreAndKillLinesAreTheConsoles) {
  auto [text, j] = both(
      "mutate --world 2 --model nemotron-h-4b --jobs 1 --mutant plan.site-drop-collective "
      "--mutant decision.terminal-defers --mutant plan.drop-completing-collective",
      0);
  EXPECT_EQ(j["command"], "mutate");
  const auto score = numbers(
      text,
      R"(mutation score: (\d+)/(\d+) \(.*\), (\d+) survived; coverage: (\d+)/(\d+) reached \((\d+) not covered\), (\d+) equivalent, (\d+) planner errors)");
  EXPECT_EQ(j["counts"]["killed"], score[0]);
  EXPECT_EQ(j["counts"]["survived"], score[2]);
  EXPECT_EQ(j["counts"]["mutants"], score[4]);
  EXPECT_EQ(j["counts"]["not_covered"], score[5]);
  EXPECT_EQ(j["counts"]["equivalent"], score[6]);
  EXPECT_EQ(j["counts"]["planner_errors"], score[7]);
  const auto space = numbers(text, R"(: (\d+) cases \((\d+) refused by the engine)");
  EXPECT_EQ(j["counts"]["cases"], space[0]);
  EXPECT_EQ(j["counts"]["baseline_refused"], space[1]);
  for (const auto& m : j["mutants"]) {
    EXPECT_TRUE(m["seconds"].is_number());
    if (m["status"] != "killed") continue;
    const std::string line = m["kill"]["reproduce"];
    EXPECT_NE(text.find("killed " + m["id"].get<std::string>() + ": replay: " + line + "\n"),
              std::string::npos)
        << text;
  }
}

TEST(JsonCli, ADiffsClassCountsAreTheConsoles) {
  auto [text, j] = both("diff --world 2 --model nemotron-h-4b", 0);
  EXPECT_EQ(j["command"], "diff");
  EXPECT_EQ(j["counts"]["cases"], numbers(text, R"(, (\d+) cases \()")[0]);
  for (const auto& c : j["classes"]) {
    if (c["cases"] == 0) continue;  // the table lists the classes that have cases
    const std::string name = c["class"];
    EXPECT_EQ(c["cases"], numbers(text, "\n" + name + R"( +(\d+) )")[0]) << name;
    EXPECT_EQ(j["counts"][c["key"].get<std::string>()], c["cases"]);
    EXPECT_NE(text.find(c["smallest"]["reproduce"].get<std::string>()), std::string::npos);
  }
}

TEST(JsonCli, AnotherFormatIsOneLineWithExitTwo) {
  for (const char* args : {"sweep --world 2 --format xml", "prop --cases 3 --format xml",
                           "mutate --world 1 --format yaml", "diff --world 1 --format csv"}) {
    CliRun r = seam(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_NE(r.err.find(" is not text or json"), std::string::npos) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

}  // namespace
