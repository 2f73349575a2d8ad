// `seam mutate`: a mutation campaign over a case space (default: every
// preset at worlds 1, 2, 4, 8, 16). Exit 0, or 1 when the baseline fails or
// (with --fail-on-survivor) a mutant survives.
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <optional>
#include <set>
#include <thread>

#include "case_options.h"
#include "command.h"
#include "mpi_stream.h"
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


/// The campaign's mutants in the order it runs them (empty: the registry).
std::vector<const mutants::Mutant*> campaignList(const mutants::CampaignSpec& spec) {
  if (!spec.mutants.empty()) return spec.mutants;
  return {mutants::registry().begin(), mutants::registry().end()};
}

/// `mpirun -np N seam mutate`: the mutants not yet decided (with --resume,
/// those rank 0 found no row of) are dealt out by rank (the p-th of them to
/// rank p mod N, so a run may be resumed with another N); every rank runs the
/// baseline and its mutants over the whole case space (a mutant stops at its
/// first kill in case order, so each mutant's verdict is the one-process
/// verdict). Each rank sends a mutant's rows to rank 0 as soon as it is
/// decided and rank 0 writes each, its own too, in a transaction of its own
/// as it arrives (a killed campaign keeps every mutant written); at the end
/// rank 0 puts the rows in list order and prints the one summary. Rank 0 has
/// opened the run (`opened`) or failed to (`open_status`).
int campaignUnderMpi(const MpiWorld& mpi, const mutants::CampaignSpec& spec, std::optional<reports::StoredRun> opened,
                     const Status& open_status, const std::vector<std::string>& decided, const std::string& junit,
                     bool fail_on_survivor) {
  if (mpi.broadcast(static_cast<std::int64_t>(open_status ? 1 : 0)) == 0) {
    return mpi.root() ? fail(open_status) : kExitOk;  // rank 0 says why; mpirun gives its code
  }
  const std::vector<const mutants::Mutant*> all = campaignList(spec);
  std::string lines;  // rank 0's decided ids, one a line, for every rank
  for (const std::string& id : decided) lines += id + "\n";
  lines = mpi.broadcast(lines);
  std::set<std::string> done;
  for (std::size_t begin = 0, end; (end = lines.find('\n', begin)) != std::string::npos; begin = end + 1) {
    done.insert(lines.substr(begin, end - begin));
  }
  std::set<std::string> share;
  std::size_t position = 0;
  for (const mutants::Mutant* m : all) {
    if (done.count(std::string(m->id())) > 0) continue;
    if (position++ % static_cast<std::size_t>(mpi.size()) == static_cast<std::size_t>(mpi.rank())) {
      share.insert(std::string(m->id()));
    }
  }

  CampaignProgress progress(mpi.root() && isatty(2));
  std::optional<mutants::CampaignResult> mine;  // this rank's, once its work has ended
  Status stored;                                // rank 0: the first store error
  const std::vector<std::string> last_words = streamToRoot(
      mpi,
      [&](Outbox& outbox) {
        reports::CampaignShare listener(spec.policy, share, &progress, [&outbox](reports::MutantRows rows) {
          reports::CampaignShardRows one;
          one.mutants.push_back(std::move(rows));
          outbox.post(reports::encodeCampaignShard(one));
        });
        mutants::CampaignSpec whole = spec;
        whole.mutants = all;
        auto result = mutants::runCampaign(whole, &listener);
        if (!result) return "E" + result.status().message();
        reports::CampaignShardRows baseline;
        baseline.cases = result->cases;
        baseline.baseline_refused = result->baseline_refused;
        baseline.baseline_holds = result->baseline_holds;
        mine = std::move(*result);
        return "R" + reports::encodeCampaignShard(baseline);
      },
      [&](const std::string& batch) {
        if (!stored) return;  // the other ranks' mutants are still taken, not written
        auto rows = reports::decodeCampaignShard(batch);
        stored = rows ? reports::writeMutantRows(opened->store, opened->run.id, rows->mutants) : rows.status();
      });
  if (!mpi.root()) return kExitOk;  // mpirun's code is rank 0's

  for (const std::string& word : last_words) {
    if (word[0] == 'E') return fail(Status::invalid(word.substr(1)));
  }
  if (!stored) return fail(stored);
  mutants::CampaignResult total = *mine;
  total.outcomes.clear();
  reports::Store& store = opened->store;
  const std::int64_t run_id = opened->run.id;
  if (total.baseline_holds) {
    auto rows = reports::putMutantRowsInOrder(store, run_id, all);
    if (!rows) return fail(rows.status());
    for (std::size_t i = 0; i < all.size(); ++i) total.outcomes.push_back(reports::outcomeFromRows(all[i], (*rows)[i]));
  }
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
            // Under mpirun rank 0 opens the store (and every rank learns
            // whether it could) and says which mutants a resumed run has.
            const MpiWorld& mpi = mpiWorld();
            std::optional<reports::StoredRun> opened;
            Status open_status;
            std::vector<std::string> decided;
            if (mpi.root()) {
              auto run = reports::openRun(o->db, "mutate", reports::campaignArgs(spec), kSeamVersion, o->resume);
              if (run) {
                opened.emplace(std::move(*run));
              } else {
                open_status = run.status();
              }
              if (opened && o->resume && mpi.split()) {
                auto stored = opened->store.mutants(opened->run.id);
                if (!stored) open_status = stored.status();
                for (const reports::MutantRecord& m : stored ? *stored : std::vector<reports::MutantRecord>{}) {
                  decided.push_back(m.id);
                }
              }
            }
            if (mpi.split()) {
              return campaignUnderMpi(mpi, spec, std::move(opened), open_status, decided, o->junit,
                                      o->fail_on_survivor);
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
            if (result->baseline_holds) {
              // A run resumed after an mpirun one holds its mutants in the order they were decided.
              if (auto rows = reports::putMutantRowsInOrder(*store, run.id, campaignList(spec)); !rows) {
                return fail(rows.status());
              }
            }
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
