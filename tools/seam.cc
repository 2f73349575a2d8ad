// seam: the command line. A thin main (STYLE 3): each subcommand parses its
// options into a struct, calls one library entry point, prints what it
// returns and maps its Status to an exit code (DESIGN §9):
//   0 all properties hold, 1 a property failed, 2 bad input or usage,
//   3 internal error.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <iostream>
#include <optional>
#include <string>

#include "seam/reports/table.h"
#include "seam/sim/config_space.h"
#include "seam/sim/model.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 3;

int fail(const seam::Status& status) {
  std::cerr << "seam: " << status.message() << "\n";
  return status.code() == seam::StatusCode::kInvalidInput ? kExitBadInput : kExitInternal;
}

struct ModelsOptions {
  std::string format = "text";
};

int runModels(const ModelsOptions& o) {
  auto format = seam::reports::parseFormat(o.format);
  if (!format) return fail(format.status());
  std::cout << seam::reports::renderModels(*format);
  return kExitOk;
}

struct ConfigsOptions {
  int world = 8;
  std::string model;  // empty: every structurally valid config
  std::optional<int> pp, tp, dp, cp, ep, moe_dp;
  std::string shard = "0/1";
  std::string format = "text";
};

int runConfigs(const ConfigsOptions& o) {
  auto format = seam::reports::parseFormat(o.format);
  if (!format) return fail(format.status());
  auto shard = seam::parseShard(o.shard);
  if (!shard) return fail(shard.status());
  const seam::ModelPreset* model = nullptr;
  if (!o.model.empty()) {
    auto found = seam::findPreset(o.model);
    if (!found) return fail(found.status());
    model = *found;
  }
  seam::ConfigFilter filter{.pp = o.pp, .tp = o.tp, .attn_dp = o.dp, .attn_cp = o.cp, .moe_ep = o.ep,
                            .moe_dp = o.moe_dp};
  auto space = seam::ConfigSpace::build(o.world, model, filter);
  if (!space) return fail(space.status());
  std::cout << seam::reports::renderConfigs(*space, space->shardIndices(*shard), *format);
  return kExitOk;
}

bool isCommand(CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == name) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    CLI::App app{"seam: simulate and verify the collectives at the boundaries of distributed LLM decoder layers"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "seam 0.1.0");

    ModelsOptions models;
    auto* models_cmd = app.add_subcommand("models", "List the model presets (released checkpoints)");
    models_cmd->add_option("--format", models.format, "text|json|jsonl")->capture_default_str();

    ConfigsOptions configs;
    auto* configs_cmd = app.add_subcommand("configs", "List every valid parallel configuration of a world size");
    configs_cmd->add_option("--world", configs.world, "world size (pp * tp ranks)")->capture_default_str();
    configs_cmd->add_option("--model", configs.model, "only configs whose shapes fit this preset");
    configs_cmd->add_option("--pp", configs.pp, "fix the pipeline stages");
    configs_cmd->add_option("--tp", configs.tp, "fix tp (ranks per pipeline stage)");
    configs_cmd->add_option("--dp", configs.dp, "fix attention DP (attn_dp)");
    configs_cmd->add_option("--cp", configs.cp, "fix attention CP (attn_cp)");
    configs_cmd->add_option("--ep", configs.ep, "fix MoE expert parallel (moe_ep)");
    configs_cmd->add_option("--moe-dp", configs.moe_dp, "fix MoE data parallel (moe_dp)");
    configs_cmd->add_option("--shard", configs.shard, "take shard i/n of the space")->capture_default_str();
    configs_cmd->add_option("--format", configs.format, "text|json|jsonl")->capture_default_str();

    // CLI11 answers an unknown command with "A subcommand is required"; name it.
    if (argc > 1 && argv[1][0] != '-' && !isCommand(app, argv[1])) {
      std::string known;
      for (const CLI::App* sub : app.get_subcommands({})) known += (known.empty() ? "" : ", ") + sub->get_name();
      std::cerr << "seam: unknown command \"" << std::string(argv[1]).substr(0, 64) << "\" (commands: " << known
                << ")\n";
      return kExitBadInput;
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      std::cout << app.help();
      return kExitOk;
    } catch (const CLI::CallForAllHelp&) {
      std::cout << app.help("", CLI::AppFormatMode::All);
      return kExitOk;
    } catch (const CLI::CallForVersion&) {
      std::cout << "seam 0.1.0\n";
      return kExitOk;
    } catch (const CLI::ParseError& e) {
      // One line on stderr naming the bad value (DESIGN §9).
      std::string what = e.what();
      for (char& c : what) {
        if (c == '\n') c = ' ';
      }
      std::cerr << "seam: " << what << "\n";
      return kExitBadInput;
    }
    if (models_cmd->parsed()) return runModels(models);
    if (configs_cmd->parsed()) return runConfigs(configs);
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "seam: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
