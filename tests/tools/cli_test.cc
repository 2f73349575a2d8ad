// Runs the built `seam` binary and checks exit codes, stdout and the one-line
// stderr of DESIGN §9.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "run_seam.h"
#include "seam/sim/model/config_space.h"
#include "seam/sim/model/model.h"

namespace {

using seam::testing::CliRun;
CliRun seam(const std::string& args) { return seam::testing::runSeam(args); }

using seam::testing::ownDb;

int lines(const std::string& s) { return seam::testing::lineCount(s); }

TEST(Cli, ModelsListsEveryPresetOfCheckpointsJson) {
  CliRun r = seam("models");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const seam::ModelPreset& p : seam::presets()) {
    EXPECT_NE(r.out.find(std::string(p.name)), std::string::npos) << p.name;
  }
  EXPECT_NE(r.out.find("17 models"), std::string::npos);
}

TEST(Cli, VersionNamesTheEngineReleaseTheRecorderPinsAndWhatEachPolicyModels) {
  CliRun r = seam("--version");
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream pins(std::string(SEAM_SOURCE_DIR) + "/recorder/requirements.txt");
  std::string line, engine;
  while (std::getline(pins, line))
    if (line.rfind("# ENGINE ", 0) == 0) engine = line.substr(9);
  ASSERT_FALSE(engine.empty());
  engine.replace(engine.find("=="), 2, " ");
  EXPECT_NE(r.out.find("engine: " + engine + " (what --engine sglang runs"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("policies: declared models SGLang's layer communicator"), std::string::npos)
      << r.out;
}

TEST(Cli, ConfigsPrintsEveryConfigurationOfWorldEightAndTheCount) {
  CliRun r = seam("configs --world 8");
  ASSERT_EQ(r.code, 0) << r.err;
  auto space = seam::ConfigSpace::build(8);
  ASSERT_TRUE(space.hasValue());
  // Header + one row per config + the count line.
  EXPECT_EQ(lines(r.out), space->size() + 2);
  EXPECT_NE(r.out.find("\n" + std::to_string(space->size()) + " configs\n"), std::string::npos);
}

TEST(Cli, ConfigsJsonIsOneDocumentWithTheCount) {
  CliRun r = seam("configs --world 4 --model nemotron-h-8b --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"count\""), std::string::npos);
  EXPECT_NE(r.out.find("\"attn_tp\""), std::string::npos);
}

struct BadArgs {
  const char* args;
  const char* needle;
};

class CliRefusal : public ::testing::TestWithParam<BadArgs> {};

TEST_P(CliRefusal, ExitsTwoWithOneLineNamingTheBadValue) {
  CliRun r = seam(GetParam().args);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(GetParam().needle), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Bad, CliRefusal,
    ::testing::Values(
        BadArgs{"configs --world 8 --tp 3", "tp=3 does not divide world=8"},
        BadArgs{"configs --world 8 --tp 4 --dp 8", "attn_dp*attn_cp=8 does not divide tp=4"},
        BadArgs{"configs --world 0", "world=0"}, BadArgs{"configs --world eight", "eight"},
        BadArgs{"configs --model gpt-5", "unknown model \"gpt-5\""},
        BadArgs{"configs --shard 3/3", "--shard \"3/3\""},
        BadArgs{"configs --format xml", "--format \"xml\""}, BadArgs{"models --bogus", "--bogus"},
        BadArgs{"frobnicate", "unknown command \"frobnicate\""},
        BadArgs{"sweep --world 8 --tp 3", "tp=3 does not divide world=8"},
        BadArgs{"sweep --world 8 --jobs -1", "--jobs -1"},
        BadArgs{"sweep --model nope", "unknown model \"nope\""},
        BadArgs{"sweep --pattern 'M-x'", "'x' at position 2"}, BadArgs{"", "subcommand"}),
    [](const ::testing::TestParamInfo<BadArgs>& info) {
      return "case" + std::to_string(info.index);
    });

TEST(Cli, SweepEndsWithTheCaseCountViolationsAndRate) {
  CliRun r = seam("sweep --world 2 --pattern 'M-*E-' --jobs 2" + ownDb("cli_test1"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string last = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  EXPECT_TRUE(std::regex_match(last, std::regex("[0-9]+ cases, 0 violations, [0-9]+ cases/s\n")))
      << last;
}

// At tp 4 with ep 2 SGLang's own plans violate properties (docs/engine-findings.md):
// each is listed as an engine finding with the SGLang call, and the run exits 1.
TEST(Cli, SweepListsEngineFindingsWithTheSglangCallAndExitsOne) {
  CliRun r = seam("sweep --world 4 --pattern 'M-*E-' --jobs 2" + ownDb("cli_test2"));
  ASSERT_EQ(r.code, 1) << r.err;
  const std::string last = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(
      last, m,
      std::regex(
          "[0-9]+ cases, ([0-9]+) violations \\(([0-9]+) engine findings\\), [0-9]+ cases/s\n")))
      << last;
  EXPECT_EQ(m[1], m[2]) << "every violation is an engine finding";
  EXPECT_NE(r.out.find("ENGINE FINDING case #"), std::string::npos);
  EXPECT_NE(r.out.find("  SGLang calls "), std::string::npos);
  EXPECT_NE(r.out.find("by SGLang call:"), std::string::npos);
}

TEST(Cli, SweepOfTheDefaultModelsAtWorldEightViolatesOnlyAsEngineFindings) {
  CliRun r = seam("sweep --world 8" + ownDb("cli_test3"));
  ASSERT_EQ(r.code, 1) << r.out;
  std::smatch m;
  const std::string last = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  ASSERT_TRUE(
      std::regex_search(last, m, std::regex("([0-9]+) violations \\(([0-9]+) engine findings\\)")))
      << last;
  EXPECT_EQ(m[1], m[2]);
  EXPECT_NE(r.out.find("nemotron-3-super"), std::string::npos);
}

TEST(Cli, APlanTraceChecksImportsAndDiffsCleanAndAnEmptyTraceIsRefused) {
  const std::string trace =
      ::testing::TempDir() + "seam_cli_trace_" + std::to_string(getpid()) + ".jsonl";
  const std::string the_case = "--model nemotron-h-8b --tp 2 --dp 2 --tokens 3,0";
  CliRun w = seam("plan " + the_case + " --format jsonl --rank all > " + trace);
  ASSERT_EQ(w.code, 0) << w.err;
  CliRun c = seam("check " + the_case + " --trace " + trace);
  EXPECT_EQ(c.code, 0) << c.out << c.err;
  CliRun i = seam("import " + the_case + " --trace " + trace);
  EXPECT_EQ(i.code, 0) << i.err;
  EXPECT_NE(i.out.find("calls on 2 ranks"), std::string::npos) << i.out;
  CliRun d = seam("diff " + the_case + " --trace " + trace + " --against declared");
  EXPECT_EQ(d.code, 0);
  EXPECT_EQ(
      d.out,
      "identical\nbits on GPUs (real mode): identical, the same roundings in the same order\n");
  CliRun t = seam("check " + the_case + " --trace /dev/null");
  EXPECT_EQ(t.code, 2);
  EXPECT_EQ(lines(t.err), 1) << t.err;
  std::remove(trace.c_str());
}

TEST(Cli, ADiffOfAPlantedDecisionNamesThePlantedSideWhenBothSidesAreOnePolicy) {
  const CliRun d = seam(
      "diff --pattern '-M' --tp 2 --tokens 1 --policy declared --decision "
      "ffn-keeps-sum-from-mixer --against declared");
  EXPECT_EQ(d.code, 1) << d.err;
  EXPECT_EQ(d.out.rfind("values differ: declared with --decision ffn-keeps-sum-from-mixer: ", 0),
            0u)
      << d.out;
}

TEST(Cli, AGraphOfAnEngineFindingNamesTheViolationSeamCheckNamesAndAHealthyGraphNamesNone) {
  // docs/engine-findings.md: the MTP MoE layer under DP attention.
  const std::string c = " --pattern 'M-/*E' --tp 4 --dp 2 --reduction ar";
  const CliRun check = seam("check" + c);
  ASSERT_EQ(check.code, 1) << check.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(check.out, m,
                                std::regex(R"(first violation: (\S+) violated \([^)]*\) at (MTP )?)"
                                           R"(layer \d+ stage (\d+))")))
      << check.out;
  const std::string svg = ::testing::TempDir() + "seam_cli_finding.svg";
  const CliRun graph = seam("graph" + c + " -o " + svg);
  EXPECT_EQ(graph.code, 0) << graph.err;
  EXPECT_NE(graph.out.find("marked: " + m[1].str() + " violated at " + m[2].str() + "stage " +
                           m[3].str() + ", an engine finding"),
            std::string::npos)
      << graph.out;
  const CliRun healthy = seam("graph --model nemotron-h-8b --tp 4 -o " + svg);
  EXPECT_EQ(healthy.code, 0) << healthy.err;
  EXPECT_EQ(healthy.out.find("marked:"), std::string::npos) << healthy.out;
  std::remove(svg.c_str());
}

TEST(Cli, HelpExitsZero) {
  CliRun r = seam("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("configs"), std::string::npos);
}

}  // namespace

namespace {

// ---- --family training ----------------------------------------------------------

TEST(CliTraining, SweepAtWorldTwoChecksBothLayoutsAndEndsWithTheSummaryLine) {
  CliRun r = seam("sweep --family training --world 2 --jobs 2");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("nemotron-3-super  primerl"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nemotron-3-super  megatron"), std::string::npos) << r.out;
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex("\n[0-9]+ cases, 0 violations, [0-9.]+ cases/s\n$")))
      << r.out;
}

TEST(CliTraining, CheckOfAPrimeRlUlyssesCaseHoldsAndNamesItsReproduceLine) {
  CliRun r =
      seam("check --family training --layout primerl --model nemotron-3-super --cp 4 --ep 4");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(
      r.out.find(
          "seam check --family training --layout primerl --model nemotron-3-super --dp 1 --cp 4"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("owed-once holds"), std::string::npos) << r.out;
}

TEST(CliTraining, PlanJsonHasTheShapeOfDesignNineWithTrainingFields) {
  CliRun r = seam(
      "plan --family training --layout megatron --model nemotron-3-super --tp 2 --cp 2 --format "
      "json --rank 3");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* key :
       {"\"model\"", "\"pattern\"", "\"policy\": \"training-megatron\"", "\"config\"",
        "\"rank\": 3", "\"ops\"", "\"summary\"", "\"phase\": \"backward\"",
        "\"a2a\": \"seq->head\"", "\"transform\": \"reorder\"", "\"conjugate_of\""}) {
    EXPECT_NE(r.out.find(key), std::string::npos) << key;
  }
}

TEST(CliTraining, PlanTextCutsLongTensorListsSoRowsStayReadable) {
  // An FSDP block's all-gather writes a dozen parameters; the text row names
  // the first and counts the rest, the JSON plan names every one.
  CliRun r = seam("plan --family training --model nemotron-3-nano --ep 2 --cp 2");
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream in(r.out);
  std::size_t widest = 0;
  for (std::string line; std::getline(in, line);) widest = std::max(widest, line.size());
  EXPECT_LE(widest, 240u);
  EXPECT_NE(r.out.find("param:L0.norm,param:L0.in_proj,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" more"), std::string::npos);
  CliRun j = seam("plan --family training --model nemotron-3-nano --ep 2 --cp 2 --format json");
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_NE(j.out.find("param:L0.out_proj"), std::string::npos);
}

TEST(CliTraining, MutateListsTheTrainingOperatorsOnly) {
  CliRun r = seam("mutate --family training --list");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("training.kv-replica-grads-not-summed"), std::string::npos);
  EXPECT_NE(r.out.find("training.cp-ring-last-dkv-step-dropped"), std::string::npos);
  EXPECT_EQ(r.out.find("plan.drop-completing-collective"), std::string::npos);
  EXPECT_EQ(lines(r.out), 20);
}

}  // namespace

namespace {

TEST(Cli, AnIntegerWithLeadingZerosReadsAsDecimalInEveryOption) {
  // CLI11's own options (--tp, --world of configs, --rank) and seam's lists
  // (--tokens, --shard) alike: 010 is ten, 08 is eight.
  const std::pair<std::string, std::string> same[] = {
      {"configs --world 16 --tp 08", "configs --world 16 --tp 8"},
      {"configs --world 010", "configs --world 10"},
      {"configs --world 8 --shard 01/04", "configs --world 8 --shard 1/4"},
      {"plan --pattern M- --tp 02 --dp 02 --rank 01 --tokens 04,03",
       "plan --pattern M- --tp 2 --dp 2 --rank 1 --tokens 4,3"},
  };
  for (const auto& [zeros, plain] : same) {
    const CliRun a = seam(zeros), b = seam(plain);
    ASSERT_EQ(b.code, 0) << plain << "\n" << b.err;
    EXPECT_EQ(a.code, 0) << zeros << "\n" << a.err;
    EXPECT_EQ(a.out, b.out) << zeros;
  }
}

// arg_groups/overrides.py (_a2a_ep_size): with an all-to-all backend SGLang
// sets ep_size to tp_size and runs, so seam plans that case and says so.
TEST(Cli, ADeepepCaseRunsWithMoeEpSetToTpAndThePlanHeaderSaysSo) {
  CliRun given = seam("plan --model nemotron-3-nano --tp 2 --a2a deepep");
  ASSERT_EQ(given.code, 0) << given.err;
  EXPECT_NE(given.out.find("moe_ep=2"), std::string::npos) << given.out;
  const std::string note = "engine override: moe_ep 1 -> 2: SGLang's _a2a_ep_size";
  const size_t at = given.out.find(note);
  ASSERT_NE(at, std::string::npos) << given.out;
  CliRun explicit_ep = seam("plan --model nemotron-3-nano --tp 2 --ep 2 --a2a deepep");
  ASSERT_EQ(explicit_ep.code, 0) << explicit_ep.err;
  EXPECT_EQ(explicit_ep.out.find("engine override"), std::string::npos);
  std::string without_note = given.out;
  without_note.erase(at, without_note.find('\n', at) + 1 - at);
  EXPECT_EQ(without_note, explicit_ep.out);
}

// arg_groups/boundary_reduction.py @0fbe7e46 (model_boundary_reduction):
// rsv for LongcatFlashForCausalLM, ar for Qwen3ForCausalLM, rs+rsv for the
// rest (NemotronHForCausalLM, DeepseekV3ForCausalLM, ...). Without
// --reduction a DP case runs that default and its header names it; the same
// case with the value given is the same plan without the note.
TEST(Cli, WithoutReductionADpCaseRunsTheModelsSglangDefaultAndTheHeaderSaysSo) {
  struct Expect {
    const char* args;
    const char* reduction;
    const char* architecture;
  };
  for (const Expect& e :
       {Expect{"--model nemotron-h-8b --tp 2 --dp 2", "rs+rsv", "NemotronHForCausalLM"},
        Expect{"--model deepseek-v3 --tp 8 --dp 8 --tokens 1,1,1,1,1,1,1,1", "rs+rsv",
               "DeepseekV3ForCausalLM"},
        Expect{"--model qwen3-8b --tp 2 --dp 2", "ar", "Qwen3ForCausalLM"},
        Expect{"--model longcat-flash --tp 8 --dp 8 --tokens 1,1,1,1,1,1,1,1", "rsv",
               "LongcatFlashForCausalLM"}}) {
    CliRun given = seam(std::string("plan ") + e.args);
    ASSERT_EQ(given.code, 0) << e.args << given.err;
    const std::string note = std::string("engine default: reduction ") + e.reduction +
                             ": SGLang's model_boundary_reduction for " + e.architecture + "\n";
    const size_t at = given.out.find(note);
    ASSERT_NE(at, std::string::npos) << e.args << "\n" << given.out;
    CliRun explicit_red = seam(std::string("plan ") + e.args + " --reduction " + e.reduction);
    ASSERT_EQ(explicit_red.code, 0) << explicit_red.err;
    std::string without_note = given.out;
    without_note.erase(at, note.size());
    EXPECT_EQ(without_note, explicit_red.out) << e.args;
  }
  CliRun no_dp = seam("plan --model nemotron-h-8b --tp 2");
  ASSERT_EQ(no_dp.code, 0) << no_dp.err;
  EXPECT_EQ(no_dp.out.find("engine default"), std::string::npos) << no_dp.out;
  CliRun bad = seam("plan --model nemotron-h-8b --reduction rsvv");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--reduction \"rsvv\" is not one of auto, ar, rs, rsv, rs+rsv"),
            std::string::npos)
      << bad.err;
}

}  // namespace
