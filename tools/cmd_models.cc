// `seam models`: one row per preset.
#include "command.h"
#include "seam/reports/table.h"

namespace seam::tools {

Command registerModels(CLI::App& app) {
  struct Options {
    std::string format = "text";
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("models", "List the model presets (released checkpoints)");
  sub->add_option("--format", o->format, "text|json|jsonl")->capture_default_str();
  return {sub, [o]() {
            auto format = reports::parseFormat(o->format);
            if (!format) return fail(format.status());
            std::cout << reports::renderModels(*format);
            return kExitOk;
          }};
}

}  // namespace seam::tools
