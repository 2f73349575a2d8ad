// `seam configs`: every valid parallel configuration of a world size.
#include <optional>

#include "case_options.h"
#include "command.h"
#include "seam/reports/table.h"
#include "seam/sim/model/config_space.h"
#include "seam/sim/model/model.h"

namespace seam::tools {

Command registerConfigs(CLI::App& app) {
  struct Options {
    int world = 8;
    std::string model;  // empty: every structurally valid config
    FilterOptions fixed;
    std::string shard = "0/1";
    std::string format = "text";
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub =
      app.add_subcommand("configs", "List every valid parallel configuration of a world size");
  sub->add_option("--world", o->world, "world size (pp * tp ranks)")->capture_default_str();
  sub->add_option("--model", o->model, "only configs whose shapes fit this preset");
  addFilterOptions(sub, o->fixed);
  sub->add_option("--shard", o->shard, "take shard i/n of the space")->capture_default_str();
  sub->add_option("--format", o->format, "text|json|jsonl")->capture_default_str();
  return {sub, [o]() {
            auto format = reports::parseFormat(o->format);
            if (!format) return fail(format.status());
            auto shard = parseShard(o->shard);
            if (!shard) return fail(shard.status());
            const ModelPreset* model = nullptr;
            if (!o->model.empty()) {
              auto found = findPreset(o->model);
              if (!found) return fail(found.status());
              model = *found;
            }
            auto space = ConfigSpace::build(o->world, model, o->fixed.filter());
            if (!space) return fail(space.status());
            std::cout << reports::renderConfigs(*space, space->shardIndices(*shard), *format);
            return kExitOk;
          }};
}

}  // namespace seam::tools
