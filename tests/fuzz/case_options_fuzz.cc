// Fuzzes the option parsing that turns a command line into a Case: the CLI11
// setup of tools/case_options.h (addCaseOptions, addFilterOptions), seam's
// parseCommandLine, buildCase (sim/case_spec.h), buildPolicyPlan, and the
// list parsers of the space-wide commands (--world lists, --shard,
// ConfigSpace filters).
// Input: the arguments after `seam`, each ended by a NUL byte (as argv
// strings are; any other byte, newlines included, can be part of one). Contracts: a refusal is
// exactly one line (exit code 2, never 3); an accepted case reproduces
// itself through its `seam check` line; planning and checking a small
// accepted case never crashes.
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "case_options.h"
#include "command.h"
#include "fuzz_support.h"
#include "seam/properties/check.h"
#include "seam/sim/model/config_space.h"
#include "seam/sim/model/model.h"

namespace {

using seam::fuzz::require;
using seam::fuzz::requireOneLine;
using seam::fuzz::requireOneLineError;

// Plans and ledger replays grow with world x tokens x layers; the fuzzer
// replays only cases of the size a sweep runs, so that a slow input is a
// finding and not the size of the case it asked for.
constexpr int kMaxReplayWorld = 64;
constexpr int kMaxReplayTokens = 512;
constexpr int kMaxReplayLayers = 256;
constexpr int kMaxArguments = 64;

/// Captures std::cout and std::cerr while alive.
class Captured {
 public:
  Captured() : out_(std::cout.rdbuf(out.rdbuf())), err_(std::cerr.rdbuf(err.rdbuf())) {}
  ~Captured() {
    std::cout.rdbuf(out_);
    std::cerr.rdbuf(err_);
  }
  std::ostringstream out, err;

 private:
  std::streambuf* out_;
  std::streambuf* err_;
};

/// The apps of the commands that parse cases and spaces, as tools/ sets them up.
struct Commands {
  CLI::App app{"seam"};
  seam::tools::CaseOptions c;
  std::string format = "text";
  int world = 8;
  std::string worlds = "1,2,4,8,16";
  std::string shard = "0/1";
  std::string model, pattern;
  seam::tools::FilterOptions fixed;
  CLI::App* check = nullptr;
  CLI::App* sweep = nullptr;
  CLI::App* mutate = nullptr;

  Commands() {
    app.require_subcommand(1);
    check = app.add_subcommand("check", "one case");
    seam::tools::addCaseOptions(check, c);
    check->add_option("--format", format, "text|json");
    sweep = app.add_subcommand("sweep", "a space");
    sweep->add_option("--world", world, "world size");
    sweep->add_option("--model", model, "preset");
    sweep->add_option("--pattern", pattern, "pattern");
    sweep->add_option("--shard", shard, "i/n");
    seam::tools::addFilterOptions(sweep, fixed);
    mutate = app.add_subcommand("mutate", "a campaign");
    mutate->add_option("--world", worlds, "world sizes");
    mutate->add_option("--model", model, "preset");
    mutate->add_option("--pattern", pattern, "pattern");
  }

  /// parseCommandLine's exit code (-1: parsed), its output checked.
  int parse(std::vector<std::string> args) {
    args.insert(args.begin(), "seam");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    Captured captured;
    const int rc =
        seam::tools::parseCommandLine(app, static_cast<int>(args.size()), argv.data(), "seam");
    require(rc == -1 || rc == seam::tools::kExitOk || rc == seam::tools::kExitBadInput,
            "parseCommandLine gave exit code " + std::to_string(rc));
    if (rc == seam::tools::kExitBadInput) requireOneLine(captured.err.str());
    return rc;
  }
};

/// `seam check ... --model X --tp 2 ...` split into arguments.
std::vector<std::string> splitReproduce(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string word;
  in >> word;  // "seam"
  while (in >> word) {
    if (word.size() >= 2 && word.front() == '\'' && word.back() == '\'')
      word = word.substr(1, word.size() - 2);
    out.push_back(word);
  }
  return out;
}

void fuzzCheck(const Commands& cmd) {
  auto built = seam::buildCase(cmd.c);
  if (!built) {
    requireOneLineError(built.status());
    return;
  }
  const seam::Case& c = *built;
  require(c.config.world() >= 1 && static_cast<int>(c.batch.tokens.size()) == c.config.attn_dp,
          "an accepted case whose batch does not match its config");

  // The reproduce line of an accepted case builds the same case.
  Commands again;
  const std::string line = seam::reproduceCommand(c, "declared");
  require(again.parse(splitReproduce(line)) == -1, "the reproduce line does not parse: " + line);
  auto rebuilt = seam::buildCase(again.c);
  require(rebuilt.hasValue(), "the reproduce line is refused: " + line);
  require(rebuilt->model.name == c.model.name && rebuilt->model.pattern == c.model.pattern &&
              rebuilt->config == c.config && rebuilt->flags == c.flags && rebuilt->batch == c.batch,
          "the reproduce line builds another case: " + line);

  if (c.config.world() > kMaxReplayWorld || c.batch.total() > kMaxReplayTokens ||
      c.model.pattern.size() > kMaxReplayLayers) {
    return;
  }
  auto plan = seam::tools::buildPolicyPlan(cmd.c, c);
  if (!plan) {
    requireOneLineError(plan.status());
    return;
  }
  require(plan->world() == c.config.world(), "a plan with another world than its case");
  seam::Ledger ledger;
  (void)seam::properties::checkPlan(*plan, ledger, seam::properties::Depth::kAll);
}

void fuzzSweep(const Commands& cmd) {
  auto shard = seam::parseShard(cmd.shard);
  if (!shard) {
    requireOneLineError(shard.status());
    return;
  }
  require(shard->index >= 0 && shard->index < shard->count, "an accepted shard outside 0..n-1");
  const seam::ModelPreset* preset = nullptr;
  if (!cmd.model.empty()) {
    auto found = seam::findPreset(cmd.model);
    if (!found) {
      requireOneLineError(found.status());
      return;
    }
    preset = *found;
  }
  auto space = seam::ConfigSpace::build(cmd.world, preset, cmd.fixed.filter());
  if (!space) {
    requireOneLineError(space.status());
    return;
  }
  for (const int i : space->shardIndices(*shard)) {
    require(i >= 0 && i < space->size() && i % shard->count == shard->index,
            "a shard index outside its shard");
    require((*space)[i].world() == cmd.world, "a config of another world");
  }
}

void fuzzMutate(const Commands& cmd) {
  auto worlds = seam::parseWorlds(cmd.worlds);
  if (!worlds) {
    requireOneLineError(worlds.status());
    return;
  }
  for (const int w : *worlds)
    require(w >= 1 && w <= seam::kMaxWorld, "an accepted world outside 1..kMaxWorld");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args(1);
  for (std::size_t i = 0; i < size; ++i) {
    const char ch = static_cast<char>(data[i]);
    if (ch == '\0') {
      if (static_cast<int>(args.size()) == kMaxArguments) break;
      args.emplace_back();
    } else {
      args.back() += ch;
    }
  }
  if (size == 0) args.clear();
  Commands cmd;
  if (cmd.parse(args) != -1) return 0;
  if (cmd.check->parsed()) fuzzCheck(cmd);
  if (cmd.sweep->parsed()) fuzzSweep(cmd);
  if (cmd.mutate->parsed()) fuzzMutate(cmd);
  return 0;
}
