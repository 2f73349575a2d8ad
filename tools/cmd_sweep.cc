// `seam sweep`: every case of the space (presets x configs of --world x the
// flags each model supports x a few batches, one with an idle DP rank).
// Exit 1 on any violation.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>

#include "case_options.h"
#include "command.h"
#include "mpi_stream.h"
#include "mpi_world.h"
#include "seam/properties/sweep.h"
#include "seam/reports/recorders.h"
#include "seam/reports/shard_rows.h"
#include "seam/reports/sweep_view.h"
#include "seam/reports/training_view.h"

namespace seam::tools {

namespace {

/// A progress line on a TTY (stderr), rewritten in place.
class ProgressLine : public properties::SweepListener {
 public:
  void onProgress(std::int64_t done, std::int64_t total) override {
    if (done - last_ < total / 100 && done != total) return;
    last_ = done;
    std::fprintf(stderr, "\r  %lld/%lld cases", static_cast<long long>(done), static_cast<long long>(total));
    if (done == total) std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }

 private:
  std::int64_t last_ = 0;
};

/// Bytes of a list of case indices (what a resumed run skips), for the other ranks.
std::string encodeIndices(const std::vector<std::int64_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(std::int64_t));
}
std::vector<std::int64_t> decodeIndices(const std::string& bytes) {
  std::vector<std::int64_t> v(bytes.size() / sizeof(std::int64_t));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(std::int64_t));
  return v;
}

/// `mpirun -np N seam sweep`: rank r of N takes shard i + n*r of n*N (the
/// user's shard i/n split further; the cases a resumed run skips are global
/// indices, so a run may be resumed with another N). Each rank sends every
/// batch of rows to rank 0 as it finishes, and rank 0 writes each batch, its
/// own too, in a transaction of its own as it arrives (a killed run keeps
/// every batch written), then prints the summary of the whole shard. Rank 0
/// has opened the run (`opened`) or failed to (`open_status`).
int sweepUnderMpi(const MpiWorld& mpi, properties::SweepSpec spec, std::optional<reports::StoredRun> opened,
                  const Status& open_status, const std::string& junit) {
  if (mpi.broadcast(static_cast<std::int64_t>(open_status ? 1 : 0)) == 0) {
    return mpi.root() ? fail(open_status) : kExitOk;  // rank 0 says why; mpirun gives its code
  }
  spec.skip = decodeIndices(mpi.broadcast(encodeIndices(spec.skip)));
  const properties::SweepSpec whole = spec;  // what the run's summary describes
  spec.shard = {whole.shard.index + whole.shard.count * mpi.rank(), whole.shard.count * mpi.size()};

  ProgressLine progress;
  std::optional<properties::SweepResult> live;  // this rank's, once its work has ended
  Status stored;                                // rank 0: the first store error
  const std::vector<std::string> last_words = streamToRoot(
      mpi,
      [&](Outbox& outbox) {
        reports::SweepBatcher batcher(spec, mpi.root() && isatty(2) ? &progress : nullptr,
                                      [&outbox](std::vector<reports::CaseRows> batch) {
                                        reports::SweepShardRows rows;
                                        rows.cases = std::move(batch);
                                        outbox.post(reports::encodeSweepShard(rows));
                                      });
        auto result = properties::runSweep(spec, &batcher);
        batcher.flush();
        // Every rank has its last word, a failed one its message.
        if (!result) return "E" + result.status().message();
        reports::SweepShardRows totals;
        totals.run_here = result->run_here;
        totals.seconds = result->seconds;
        for (const auto& m : result->per_model) {
          totals.model_seconds.push_back(m.seconds);
          totals.model_run_here.push_back(m.run_here);
        }
        live = std::move(*result);
        return "R" + reports::encodeSweepShard(totals);
      },
      [&](const std::string& batch) {
        if (!stored) return;  // the other ranks' batches are still taken, not written
        auto rows = reports::decodeSweepShard(batch);
        stored = rows ? reports::writeCaseRows(opened->store, opened->run.id, std::move(rows->cases)) : rows.status();
      });
  if (!mpi.root()) return kExitOk;  // mpirun's code is rank 0's

  for (const std::string& word : last_words) {
    if (word[0] == 'E') return fail(Status::invalid(word.substr(1)));
  }
  if (!stored) return fail(stored);
  properties::SweepResult total = *live;
  total.run_here = 0;
  for (std::size_t r = 0; r < last_words.size(); ++r) {
    auto shard = reports::decodeSweepShard(last_words[r].substr(1));
    if (!shard) return fail(shard.status());
    total.run_here += shard->run_here;
    total.seconds = std::max(total.seconds, shard->seconds);
    for (std::size_t m = 0; r > 0 && m < total.per_model.size() && m < shard->model_seconds.size(); ++m) {
      total.per_model[m].seconds += shard->model_seconds[m];
    }
    for (std::size_t m = 0; r > 0 && m < total.per_model.size() && m < shard->model_run_here.size(); ++m) {
      total.per_model[m].run_here += shard->model_run_here[m];
    }
  }
  reports::Store& store = opened->store;
  const std::int64_t run_id = opened->run.id;
  if (Status st = store.finishRun(run_id); !st) return fail(st);
  auto result = reports::sweepResultFromStore(store, run_id, whole, total);
  if (!result) return fail(result.status());
  if (!junit.empty()) {
    if (Status st = reports::writeRunJunit(store, run_id, "sweep", junit); !st) return fail(st);
  }
  std::cout << reports::renderSweep(whole, *result);
  return result->violated == 0 ? kExitOk : kExitPropertyFailed;
}

}  // namespace

Command registerSweep(CLI::App& app) {
  struct Options {
    int world = 8;
    std::string model;
    std::string pattern;
    FilterOptions fixed;
    int jobs = 0;
    std::string shard = "0/1";
    std::string policy = "declared";
    std::string db = "seam.db";
    bool resume = false;
    std::string junit;
    std::string family = "serving";
    std::string layout;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("sweep", "Check every case of a space: presets x configs x flags x batches");
  sub->add_option("--world", o->world, "world size")->capture_default_str();
  sub->add_option("--model", o->model, "one preset (default: every preset)");
  sub->add_option("--pattern", o->pattern, "one bare single-stage pattern instead of the presets");
  addFilterOptions(sub, o->fixed);
  sub->add_option("--jobs", o->jobs, "worker threads (default: all cores)");
  sub->add_option("--shard", o->shard, "take shard i/n of the case space")->capture_default_str();
  sub->add_option("--policy", o->policy, "boundary policy: declared")->capture_default_str();
  sub->add_option("--db", o->db, "SQLite store the run is written to")->capture_default_str();
  sub->add_flag("--resume", o->resume, "continue the latest unfinished run with the same arguments in --db");
  sub->add_option("--junit", o->junit, "also write JUnit XML of every case to this file");
  sub->add_option("--family", o->family, "serving (the serving policies) or training (PrimeRL/Megatron layouts)")
      ->capture_default_str();
  sub->add_option("--layout", o->layout, "--family training: only primerl or megatron (default: both)");
  return {sub, [o]() {
            if (o->family == "training") {
              if (!o->pattern.empty()) return fail(Status::invalid("--family training sweeps presets, not a --pattern"));
              if (o->fixed.pp || o->fixed.tp || o->fixed.dp || o->fixed.cp || o->fixed.ep || o->fixed.moe_dp) {
                return fail(Status::invalid("--family training sweeps every config of --world; fixed leaves are not supported"));
              }
              if (o->policy != "declared") return fail(Status::invalid("--policy applies to --family serving"));
              properties::TrainingSweepSpec spec;
              spec.world = o->world;
              auto space = trainingSpace(o->model, o->layout);
              if (!space) return fail(space.status());
              spec.models = space->models;
              spec.layouts = space->layouts;
              if (o->jobs < 0) return fail(Status::invalid("--jobs " + std::to_string(o->jobs) + " must be >= 1"));
              spec.jobs = o->jobs > 0 ? o->jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
              auto r = properties::runTrainingSweep(spec);
              if (!r) return fail(r.status());
              std::cout << reports::renderTrainingSweep(spec, *r);
              return r->violated == 0 ? kExitOk : kExitPropertyFailed;
            }
            if (o->family != "serving") {
              return fail(Status::invalid("--family \"" + o->family.substr(0, 64) + "\" is not serving or training"));
            }
            if (!o->layout.empty()) return fail(Status::invalid("--layout applies to --family training"));
            properties::SweepSpec spec;
            spec.world = o->world;
            auto shard = parseShard(o->shard);
            if (!shard) return fail(shard.status());
            spec.shard = *shard;
            auto policy = parsePolicy(o->policy);
            if (!policy) return fail(policy.status());
            spec.policy = *policy;
            if (o->jobs < 0) return fail(Status::invalid("--jobs " + std::to_string(o->jobs) + " must be >= 1"));
            spec.jobs = o->jobs > 0 ? o->jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
            spec.filter = o->fixed.filter();
            if (!o->model.empty() && !o->pattern.empty()) {
              return fail(Status::invalid("give --model or --pattern, not both"));
            }
            if (o->model.empty() && o->pattern.empty()) {
              spec.models = properties::defaultSweepModels();
            } else {
              auto m = properties::sweepModel(o->model, o->pattern);
              if (!m) return fail(m.status());
              spec.models.push_back(std::move(*m));
            }
            // Validate the fixed leaves once, with the message ConfigSpace gives.
            if (auto probe = ConfigSpace::build(spec.world, nullptr, spec.filter); !probe) return fail(probe.status());
            // Under mpirun rank 0 opens the store (and every rank learns
            // whether it could), each rank sweeps its part of the shard, and
            // rank 0 writes every rank's rows as they come and prints the one
            // summary.
            const MpiWorld& mpi = mpiWorld();
            std::optional<reports::StoredRun> opened;
            Status open_status;
            if (mpi.root()) {
              auto run = reports::openRun(o->db, "sweep", reports::sweepArgs(spec), kSeamVersion, o->resume);
              if (run) {
                opened.emplace(std::move(*run));
              } else {
                open_status = run.status();
              }
              if (opened && o->resume) {
                auto done = opened->store.caseIndices(opened->run.id);
                if (done) {
                  spec.skip = std::move(*done);
                  std::sort(spec.skip.begin(), spec.skip.end());
                } else {
                  open_status = done.status();  // under mpirun every rank must hear of it
                }
              }
            }
            if (mpi.split()) return sweepUnderMpi(mpi, spec, std::move(opened), open_status, o->junit);
            if (!open_status) return fail(open_status);
            reports::Store* store = &opened->store;
            const reports::RunRecord run = opened->run;
            ProgressLine progress;
            reports::SweepRecorder recorder(*store, run.id, spec, isatty(2) ? &progress : nullptr);
            auto live = properties::runSweep(spec, &recorder);
            if (!live) return fail(live.status());
            if (Status st = recorder.flush(); !st) return fail(st);
            if (Status st = store->finishRun(run.id); !st) return fail(st);
            auto result = reports::sweepResultFromStore(*store, run.id, spec, *live);
            if (!result) return fail(result.status());
            if (!o->junit.empty()) {
              if (Status st = reports::writeRunJunit(*store, run.id, "sweep", o->junit); !st) return fail(st);
            }
            std::cout << reports::renderSweep(spec, *result);
            return result->violated == 0 ? kExitOk : kExitPropertyFailed;
          }};
}

}  // namespace seam::tools
