// `seam prop`: rapidcheck generates cases (patterns, configs, flags, uneven
// batches with idle ranks) and checks properties 1-6, 8 and 9 of each declared plan;
// a failure is shrunk to a minimal case and printed with the RC_PARAMS value
// and the `seam check` command that reproduce it. RC_PARAMS in the
// environment (seed, max_success, max_size, noshrink) overrides --seed and
// --cases, as it does for rapidcheck's own tests. Exit 0 all cases hold,
// 1 a property failed, 2 bad input.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "command.h"
#include "option_values.h"
#include "run_progress.h"
#include "seam/properties/prop.h"
#include "seam/reports/output_file.h"
#include "seam/reports/recorders.h"
#include "seam/reports/run_json.h"
#include "seam/sim/model/pattern.h"

namespace seam::tools {

Command registerProp(CLI::App& app) {
  struct Options {
    int cases = 100;
    std::uint64_t seed = 0;
    int world = 0;
    int max_layers = properties::kDefaultMaxLayers;
    std::string decision;
    std::string db = "seam.db";
    std::string junit;
    std::string format = "text";
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub =
      app.add_subcommand("prop", "Property-based run: generated cases, shrunk failures");
  sub->add_option("--cases", o->cases, "passing cases before the property holds")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "rapidcheck seed (the same seed replays the same run)")
      ->capture_default_str();
  sub->add_option("--world", o->world, "world size (0: generated from 1,2,4,8,16)")
      ->capture_default_str();
  // A generated pattern holds its layers, a pipeline cut at most between
  // each two, and an MTP tail: past this it could not be parsed, and
  // rapidcheck would give up on it, so the value is refused when parsed.
  constexpr int kMostLayers = static_cast<int>((kMaxPatternLength - 16) / 2);
  sub->add_option("--max-layers", o->max_layers, "longest generated pattern")
      ->capture_default_str()
      ->check(CLI::Range(1, kMostLayers));
  sub->add_option("--decision", o->decision,
                  "planner decision to flip, e.g. ffn-keeps-sum-from-mixer");
  sub->add_option("--db", o->db, "SQLite store the run is written to")->capture_default_str();
  sub->add_option("--junit", o->junit, "also write JUnit XML (one testcase) to this file");
  sub->add_option("--format", o->format, "text|json (one JSON object, for scripts)")
      ->capture_default_str();
  return {
      sub, [o]() {
        properties::PropSpec spec;
        spec.cases = o->cases;
        spec.seed = o->seed;
        spec.world = o->world;
        spec.max_layers = o->max_layers;
        if (!o->decision.empty()) {
          auto d = properties::parseDecision(o->decision);
          if (!d) return fail(d.status());
          spec.schema = Schema::with(*d);
        }
        const char* env = std::getenv("RC_PARAMS");
        if (env != nullptr && *env != '\0') {
          if (Status st = properties::applyRcParams(env, spec); !st) return fail(st);
        }
        auto json = jsonFormat(o->format);
        if (!json) return fail(json.status());
        if (Status st = reports::checkJunitOutput(o->junit, o->db); !st) return fail(st);
        // runProp checks the spec first, so that bad input prints one line only.
        // The store is opened after the run: bad options write no file.
        RateLine progress(isatty(2));
        spec.on_progress = [&progress, &spec](int cases, int shrinks) {
          progress.update("cases", cases, spec.cases,
                          shrinks > 0 ? "shrinking: " + std::to_string(shrinks) + " tried" : "");
        };
        auto result = properties::runProp(spec);
        progress.clear();
        if (!result) return fail(result.status());
        auto store = reports::Store::open(o->db);
        if (!store) return fail(store.status());
        if (Status st = reports::recordProp(*store, spec, *result, kSeamVersion); !st)
          return fail(st);
        if (!o->junit.empty()) {
          if (Status st = reports::writePropJunit(spec, *result, o->junit); !st) return fail(st);
        }
        if (*json) {
          std::cout << reports::propJson(spec, *result);
          return result->passed ? kExitOk : kExitPropertyFailed;
        }
        std::cout << "seam prop: " << spec.cases << " cases, seed " << spec.seed << ", world "
                  << (spec.world == 0 ? std::string("generated (1,2,4,8,16)")
                                      : std::to_string(spec.world))
                  << ", patterns of 1.." << spec.max_layers << " layers, policy declared, decision "
                  << properties::decisionList(spec.schema)
                  << (env != nullptr && *env != '\0' ? ", RC_PARAMS from the environment" : "")
                  << "\n";
        if (result->passed) {
          if (result->refused > 0) {
            std::cout << "  " << result->refused
                      << " of them refused by the engine (they hold vacuously)\n";
          }
          std::cout << result->cases_run << " cases passed (seed " << spec.seed << ")\n";
          return kExitOk;
        }
        std::cout << "FAILED after " << result->cases_run << " cases, shrunk in " << result->shrinks
                  << " steps: " << result->failure << "\n";
        std::cout << "RC_PARAMS=\"" << result->rc_params << "\"\n";
        if (!result->reproduce.empty()) std::cout << result->reproduce << "\n";
        return kExitPropertyFailed;
      }};
}

}  // namespace seam::tools
