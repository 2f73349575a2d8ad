// `seam mutate`: a mutation campaign over a case space (default: every preset at worlds
// 1-16). Exit 0, or 1 when the baseline fails or (--fail-on-survivor) a mutant survives.
#include <unistd.h>

#include <optional>

#include "command.h"
#include "memory_budget.h"
#include "mpi_runs.h"
#include "option_values.h"
#include "run_progress.h"
#include "seam/mutants/campaign.h"
#include "seam/properties/provenance.h"
#include "seam/reports/mutate_view.h"
#include "seam/reports/output_file.h"
#include "seam/reports/recorders.h"
#include "seam/reports/run_json.h"
#include "seam/reports/shard_rows.h"
#include "seam/reports/training_view.h"
#include "seam/sim/model/case_spec.h"

namespace seam::tools {

namespace {

struct MutateOptions {
  std::string worlds = "1,2,4,8,16";
  std::string model, pattern;
  std::vector<std::string> mutant_ids;
  int jobs = 0;
  bool fail_on_survivor = false;
  bool list = false;
  std::string db = "seam.db";
  bool resume = false;
  std::string junit;
  std::string format = "text";
  std::string family = "serving";
  std::string layout;
  std::uint64_t seed = 1;
  bool verbose = false;
};

int mutateTraining(const MutateOptions& o) {
  if (!o.pattern.empty())
    return fail(Status::invalid("--family training mutates presets, not a --pattern"));
  mutants::TrainingCampaignSpec spec;
  auto worlds = parseWorlds(o.worlds == "1,2,4,8,16" ? "2,4,8" : o.worlds);
  if (!worlds) return fail(worlds.status());
  spec.worlds = *worlds;
  auto space = trainingSpace(o.model, o.layout);
  if (!space) return fail(space.status());
  spec.models = space->models;
  spec.layouts = space->layouts;
  auto chosen = mutants::findMutants(o.mutant_ids, mutants::MutantFamily::kTraining);
  if (!chosen) return fail(chosen.status());
  spec.mutants = std::move(*chosen);
  auto jobs = workerThreads(o.jobs);
  if (!jobs) return fail(jobs.status());
  spec.jobs = *jobs;
  auto result = mutants::runTrainingCampaign(spec);
  if (!result) return fail(result.status());
  std::cout << reports::renderTrainingCampaign(spec, *result);
  if (!result->baseline_holds) return kExitPropertyFailed;
  if (o.fail_on_survivor && result->survived() > 0) return kExitPropertyFailed;
  return kExitOk;
}

Expected<mutants::CampaignSpec> servingSpec(const MutateOptions& o) {
  if (!o.layout.empty()) return Status::invalid("--layout applies to --family training");
  mutants::CampaignSpec spec;
  auto worlds = parseWorlds(o.worlds);
  if (!worlds) return worlds.status();
  spec.worlds = *worlds;
  auto jobs = workerThreads(o.jobs);
  if (!jobs) return jobs.status();
  spec.jobs = *jobs;
  auto models = properties::sweepModels(o.model, o.pattern);
  if (!models) return models.status();
  spec.models = std::move(*models);
  if (Status s = checkSpaceMemory(spec.worlds, spec.models, {}, spec.jobs); !s) return s;
  auto chosen = mutants::findMutants(o.mutant_ids, mutants::MutantFamily::kServing);
  if (!chosen) return chosen.status();
  spec.mutants = std::move(*chosen);
  spec.seed = o.seed;
  spec.bound_cases = true;
  return spec;
}

int mutateServing(const MutateOptions& o) {
  auto spec = servingSpec(o);
  if (!spec) return fail(spec.status());
  auto json = jsonFormat(o.format);
  if (!json) return fail(json.status());
  if (Status st = reports::checkJunitOutput(o.junit, o.db); !st) return fail(st);
  // Under mpirun rank 0 opens the store; every rank learns the outcome and the decided mutants.
  const MpiWorld& mpi = mpiWorld();
  std::optional<reports::StoredRun> opened;
  Status open_status;
  std::vector<std::string> decided;
  if (mpi.root()) {
    auto run =
        reports::openRun(o.db, "mutate", reports::campaignArgs(*spec), kSeamVersion, o.resume);
    if (run) {
      opened.emplace(std::move(*run));
    } else {
      open_status = run.status();
    }
    if (opened && o.resume && mpi.split()) {
      auto stored = opened->store.mutants(opened->run.id);
      if (!stored) open_status = stored.status();
      for (const reports::MutantRecord& m : stored ? *stored : std::vector<reports::MutantRecord>{})
        decided.push_back(m.id);
    }
  }
  if (mpi.split()) {
    return campaignUnderMpi(mpi, *spec, std::move(opened), open_status, decided,
                            {o.junit, o.fail_on_survivor, *json, o.verbose});
  }
  if (!open_status) return fail(open_status);
  reports::Store& store = opened->store;
  const std::int64_t run_id = opened->run.id;
  CampaignProgress progress(isatty(2));
  reports::CampaignRecorder recorder(store, run_id, *spec, &progress,
                                     {kSeamVersion, properties::seamCommit()});
  if (!recorder.status()) return fail(recorder.status());
  auto result = mutants::runCampaign(*spec, &recorder);
  if (!result) return fail(result.status());
  if (!recorder.status()) return fail(recorder.status());
  if (result->baseline_holds) {
    // A run resumed after an mpirun one holds its mutants in the order they were decided.
    auto rows = reports::putMutantRowsInOrder(store, run_id, campaignList(*spec));
    if (!rows) return fail(rows.status());
  }
  return finishCampaign(store, run_id, *spec, *result,
                        {o.junit, o.fail_on_survivor, *json, o.verbose});
}

}  // namespace

int finishCampaign(reports::Store& store, std::int64_t run_id, const mutants::CampaignSpec& spec,
                   const mutants::CampaignResult& result, const CampaignOutput& output) {
  if (Status st = store.finishRun(run_id); !st) return fail(st);
  if (!output.junit.empty()) {
    if (Status st = reports::writeCampaignJunit(result, output.junit); !st) return fail(st);
  }
  std::cout << (output.json ? reports::campaignJson(spec, result)
                            : reports::renderCampaign(spec, result, output.verbose));
  if (!result.baseline_holds) return kExitPropertyFailed;
  if (output.fail_on_survivor && result.survived() > 0) return kExitPropertyFailed;
  return kExitOk;
}

Command registerMutate(CLI::App& app) {
  auto o = std::make_shared<MutateOptions>();
  CLI::App* sub =
      app.add_subcommand("mutate", "Run a mutation campaign: how strong are the properties?");
  sub->add_option("--world", o->worlds, "world sizes, e.g. 8 or 2,4,8,16")->capture_default_str();
  sub->add_option("--model", o->model, "one preset (default: every preset)");
  sub->add_option("--pattern", o->pattern, "one bare single-stage pattern instead of the presets");
  sub->add_option("--mutant", o->mutant_ids, "run only these mutant ids (repeatable; see --list)");
  sub->add_option("--jobs", o->jobs, "worker threads (default: all cores)");
  sub->add_option("--seed", o->seed, "case order and sampled sites (0: case order)")
      ->capture_default_str();
  sub->add_flag("--fail-on-survivor", o->fail_on_survivor, "exit 1 when a mutant survives");
  sub->add_flag("--list", o->list, "list the mutation operators and exit");
  sub->add_flag("--verbose", o->verbose, "also print each mutant's wall time");
  sub->add_option("--db", o->db, "SQLite store the campaign is written to")->capture_default_str();
  sub->add_flag("--resume", o->resume,
                "continue the latest unfinished campaign with the same arguments in --db");
  sub->add_option("--junit", o->junit, "also write JUnit XML (a testcase per mutant) to this file");
  sub->add_option("--format", o->format, "text|json (one JSON object, for scripts)")
      ->capture_default_str();
  sub->add_option("--family", o->family,
                  "serving or training (the training mutants over the training layouts)")
      ->capture_default_str();
  sub->add_option("--layout", o->layout,
                  "--family training: only primerl or megatron (default: both)");
  return {sub, [o, sub]() {
            auto training = trainingFamily(o->family);
            if (!training) return fail(training.status());
            if (Status s = *training ? refuseStoreOptions(*sub) : Status::ok(); !s) return fail(s);
            if (o->list) {
              for (const mutants::Mutant* m :
                   *training ? mutants::trainingRegistry() : mutants::registry()) {
                std::cout << m->id() << "  [" << mutants::kindName(m->kind()) << "]  "
                          << m->description() << "\n";
              }
              return kExitOk;
            }
            return *training ? mutateTraining(*o) : mutateServing(*o);
          }};
}

}  // namespace seam::tools
