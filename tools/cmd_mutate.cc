// `seam mutate`: a mutation campaign over a case space (default: every
// preset at worlds 1, 2, 4, 8, 16). Exit 0, or 1 when the baseline fails or
// (with --fail-on-survivor) a mutant survives.
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <map>
#include <optional>
#include <thread>

#include "case_options.h"
#include "command.h"
#include "mpi_world.h"
#include "seam/mutants/campaign.h"
#include "seam/reports/mutate_view.h"
#include "seam/reports/recorders.h"
#include "seam/reports/shard_rows.h"
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


/// `mpirun -np N seam mutate`: the mutants are dealt out by rank (mutant p
/// of the list to rank p mod N), every rank runs the baseline and its
/// mutants over the whole case space (a mutant stops at its first kill in
/// case order, so each mutant's verdict is the one-process verdict), rank 0
/// gathers the rows over MPI, writes them in list order and prints the one
/// summary. Rank 0 has opened the run (`opened`) or failed to (`open_status`).
int campaignUnderMpi(const MpiWorld& mpi, const mutants::CampaignSpec& spec, std::optional<reports::StoredRun> opened,
                     const Status& open_status, const std::string& junit, bool fail_on_survivor) {
  if (mpi.broadcast(static_cast<std::int64_t>(open_status ? 1 : 0)) == 0) {
    return mpi.root() ? fail(open_status) : kExitOk;  // rank 0 says why; mpirun gives its code
  }
  std::vector<const mutants::Mutant*> all = spec.mutants;
  if (all.empty()) all.assign(mutants::registry().begin(), mutants::registry().end());
  mutants::CampaignSpec mine = spec;
  mine.mutants.clear();
  for (std::size_t p = static_cast<std::size_t>(mpi.rank()); p < all.size(); p += static_cast<std::size_t>(mpi.size())) {
    mine.mutants.push_back(all[p]);
  }
  CampaignProgress progress(mpi.root() && isatty(2));
  reports::CampaignCollector collector(spec.policy, &progress);
  std::optional<Expected<mutants::CampaignResult>> result;
  std::string part = "R" + reports::encodeCampaignShard({});
  if (!mine.mutants.empty()) {  // an empty list would mean the whole registry
    result.emplace(mutants::runCampaign(mine, &collector));
    if (!*result) {
      part = "E" + result->status().message();
    } else {
      reports::CampaignShardRows rows;
      rows.cases = (*result)->cases;
      rows.baseline_refused = (*result)->baseline_refused;
      rows.baseline_holds = (*result)->baseline_holds;
      rows.mutants = std::move(collector.rows());
      part = "R" + reports::encodeCampaignShard(rows);
    }
  }
  const std::vector<std::string> parts = mpi.gather(part);
  if (!mpi.root()) return kExitOk;  // mpirun's code is rank 0's

  for (const std::string& p : parts) {
    if (p[0] == 'E') return fail(Status::invalid(p.substr(1)));
  }
  // Rank 0 always has mutant 0, so a result of its own.
  mutants::CampaignResult total = **result;
  total.outcomes.clear();
  std::vector<reports::MutantRows> rows;
  if (total.baseline_holds) {
    std::map<std::string, reports::MutantRows> by_id;
    for (const std::string& p : parts) {
      auto shard = reports::decodeCampaignShard(p.substr(1));
      if (!shard) return fail(shard.status());
      for (reports::MutantRows& m : shard->mutants) by_id[m.mutant.id] = std::move(m);
    }
    for (const mutants::Mutant* m : all) {
      const auto it = by_id.find(std::string(m->id()));
      if (it == by_id.end()) return fail(Status::internal("no rank decided mutant " + std::string(m->id())));
      total.outcomes.push_back(reports::outcomeFromRows(m, it->second));
      rows.push_back(std::move(it->second));
    }
  }
  reports::Store& store = opened->store;
  const std::int64_t run_id = opened->run.id;
  if (Status st = reports::writeMutantRows(store, run_id, rows); !st) return fail(st);
  if (Status st = store.finishRun(run_id); !st) return fail(st);
  if (!junit.empty()) {
    if (Status st = reports::writeCampaignJunit(total, junit); !st) return fail(st);
  }
  std::cout << reports::renderCampaign(spec, total);
  if (!total.baseline_holds) return kExitPropertyFailed;
  if (fail_on_survivor && total.survived() > 0) return kExitPropertyFailed;
  return kExitOk;
}

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
            const MpiWorld& mpi = mpiWorld();
            if (mpi.split() && o->resume) {
              return fail(Status::invalid("--resume under mpirun: resume the campaign as one process"));
            }
            std::optional<reports::StoredRun> opened;
            Status open_status;
            if (mpi.root()) {
              auto run = reports::openRun(o->db, "mutate", reports::campaignArgs(spec), kSeamVersion, o->resume);
              if (run) {
                opened.emplace(std::move(*run));
              } else {
                open_status = run.status();
              }
            }
            if (mpi.split()) {
              return campaignUnderMpi(mpi, spec, std::move(opened), open_status, o->junit, o->fail_on_survivor);
            }
            if (!open_status) return fail(open_status);
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
