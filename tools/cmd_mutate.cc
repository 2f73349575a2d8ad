// `seam mutate`: a mutation campaign over a case space (default: every
// preset at worlds 1, 2, 4, 8, 16). Exit 0, or 1 when the baseline fails or
// (with --fail-on-survivor) a mutant survives.
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <thread>

#include "case_options.h"
#include "command.h"
#include "seam/mutants/campaign.h"
#include "seam/reports/mutate_view.h"
#include "seam/reports/recorders.h"
#include "seam/reports/training_view.h"

namespace seam::tools {

namespace {

class CampaignProgress : public mutants::CampaignListener {
 public:
  explicit CampaignProgress(bool tty) : tty_(tty) {}
  void onBaseline(std::int64_t cases, bool holds) override {
    if (tty_) std::fprintf(stderr, "\r\033[K  baseline: %lld cases, %s", static_cast<long long>(cases), holds ? "ok" : "FAILS");
  }
  void onMutant(const mutants::MutantOutcome& o, int done, int total) override {
    if (tty_) {
      std::fprintf(stderr, "\r\033[K  %d/%d mutants (%s %s)", done, total, std::string(o.mutant->id()).c_str(),
                   std::string(mutants::statusName(o.status)).c_str());
      if (done == total) std::fprintf(stderr, "\r\033[K");
    }
  }

 private:
  bool tty_;
};


}  // namespace

Command registerMutate(CLI::App& app) {
  struct Options {
    std::string worlds = "1,2,4,8,16";
    std::string model;
    std::string pattern;
    std::vector<std::string> mutant_ids;
    int jobs = 0;
    bool fail_on_survivor = false;
    bool list = false;
    std::string db = "seam.db";
    bool resume = false;
    std::string junit;
    std::string family = "serving";
    std::string layout;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("mutate", "Run a mutation campaign: how strong are the properties?");
  sub->add_option("--world", o->worlds, "world sizes, e.g. 8 or 2,4,8,16")->capture_default_str();
  sub->add_option("--model", o->model, "one preset (default: every preset)");
  sub->add_option("--pattern", o->pattern, "one bare single-stage pattern instead of the presets");
  sub->add_option("--mutant", o->mutant_ids, "run only these mutant ids (repeatable; see --list)");
  sub->add_option("--jobs", o->jobs, "worker threads (default: all cores)");
  sub->add_flag("--fail-on-survivor", o->fail_on_survivor, "exit 1 when a mutant survives");
  sub->add_flag("--list", o->list, "list the mutation operators and exit");
  sub->add_option("--db", o->db, "SQLite store the campaign is written to")->capture_default_str();
  sub->add_flag("--resume", o->resume, "continue the latest unfinished campaign with the same arguments in --db");
  sub->add_option("--junit", o->junit, "also write JUnit XML (one testcase per mutant) to this file");
  sub->add_option("--family", o->family, "serving or training (the training mutants over the training layouts)")
      ->capture_default_str();
  sub->add_option("--layout", o->layout, "--family training: only primerl or megatron (default: both)");
  return {sub, [o]() {
            const bool training = o->family == "training";
            if (!training && o->family != "serving") {
              return fail(Status::invalid("--family \"" + o->family.substr(0, 64) + "\" is not serving or training"));
            }
            if (o->list) {
              for (const mutants::Mutant* m : training ? mutants::trainingRegistry() : mutants::registry()) {
                std::cout << m->id() << "  [" << mutants::kindName(m->kind()) << "]  " << m->description() << "\n";
              }
              return kExitOk;
            }
            if (training) {
              if (!o->pattern.empty()) return fail(Status::invalid("--family training mutates presets, not a --pattern"));
              mutants::TrainingCampaignSpec spec;
              auto worlds = parseWorlds(o->worlds == "1,2,4,8,16" ? "2,4,8" : o->worlds);
              if (!worlds) return fail(worlds.status());
              spec.worlds = *worlds;
              auto space = trainingSpace(o->model, o->layout);
              if (!space) return fail(space.status());
              spec.models = space->models;
              spec.layouts = space->layouts;
              for (const std::string& id : o->mutant_ids) {
                const mutants::Mutant* m = mutants::findMutant(id);
                if (m == nullptr || m->family() != mutants::MutantFamily::kTraining) {
                  return fail(Status::invalid("--mutant \"" + id.substr(0, 64) +
                                              "\" is not a training mutant id (see seam mutate --family training --list)"));
                }
                spec.mutants.push_back(m);
              }
              if (o->jobs < 0) return fail(Status::invalid("--jobs " + std::to_string(o->jobs) + " must be >= 1"));
              spec.jobs = o->jobs > 0 ? o->jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
              auto result = mutants::runTrainingCampaign(spec);
              if (!result) return fail(result.status());
              std::cout << reports::renderTrainingCampaign(spec, *result);
              if (!result->baseline_holds) return kExitPropertyFailed;
              if (o->fail_on_survivor && result->survived() > 0) return kExitPropertyFailed;
              return kExitOk;
            }
            if (!o->layout.empty()) return fail(Status::invalid("--layout applies to --family training"));
            mutants::CampaignSpec spec;
            auto worlds = parseWorlds(o->worlds);
            if (!worlds) return fail(worlds.status());
            spec.worlds = *worlds;
            if (o->jobs < 0) return fail(Status::invalid("--jobs " + std::to_string(o->jobs) + " must be >= 1"));
            spec.jobs = o->jobs > 0 ? o->jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
            if (!o->model.empty() && !o->pattern.empty()) return fail(Status::invalid("give --model or --pattern, not both"));
            if (o->model.empty() && o->pattern.empty()) {
              spec.models = properties::defaultSweepModels();
            } else {
              auto m = properties::sweepModel(o->model, o->pattern);
              if (!m) return fail(m.status());
              spec.models.push_back(std::move(*m));
            }
            for (const std::string& id : o->mutant_ids) {
              const mutants::Mutant* m = mutants::findMutant(id);
              if (m == nullptr || m->family() != mutants::MutantFamily::kServing) {
                return fail(Status::invalid("--mutant \"" + id.substr(0, 64) + "\" is not a mutant id (see seam mutate --list)"));
              }
              spec.mutants.push_back(m);
            }
            auto opened = reports::openRun(o->db, "mutate", reports::campaignArgs(spec), kSeamVersion, o->resume);
            if (!opened) return fail(opened.status());
            reports::Store* store = &opened->store;
            const reports::RunRecord run = opened->run;
            CampaignProgress progress(isatty(2));
            reports::CampaignRecorder recorder(*store, run.id, spec, &progress);
            if (!recorder.status()) return fail(recorder.status());
            auto result = mutants::runCampaign(spec, &recorder);
            if (!result) return fail(result.status());
            if (!recorder.status()) return fail(recorder.status());
            if (Status st = store->finishRun(run.id); !st) return fail(st);
            if (!o->junit.empty()) {
              if (Status st = reports::writeCampaignJunit(*result, o->junit); !st) return fail(st);
            }
            std::cout << reports::renderCampaign(spec, *result);
            if (!result->baseline_holds) return kExitPropertyFailed;
            if (o->fail_on_survivor && result->survived() > 0) return kExitPropertyFailed;
            return kExitOk;
          }};
}

}  // namespace seam::tools
