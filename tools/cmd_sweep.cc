// `seam sweep`: every case of the space (presets x configs of --world x the
// flags each model supports x a few batches, one with an idle DP rank).
// Exit 1 on any violation.
#include <unistd.h>

#include <limits>
#include <optional>

#include "command.h"
#include "engine_sweep.h"
#include "memory_budget.h"
#include "mpi_runs.h"
#include "mpi_world.h"
#include "option_values.h"
#include "progress.h"
#include "seam/properties/sweep.h"
#include "seam/reports/output_file.h"
#include "seam/reports/recorders.h"
#include "seam/reports/run_json.h"
#include "seam/reports/sweep_view.h"
#include "sweep_options.h"

namespace seam::tools {

namespace {

/// The refusal reasons a sweep's console summary lists without --verbose.
constexpr std::size_t kConsoleRefusals = 10;

Expected<properties::SweepSpec> servingSpec(const SweepOptions& o) {
  if (!o.layout.empty()) return Status::invalid("--layout applies to --family training");
  properties::SweepSpec spec;
  spec.world = o.world;
  auto shard = parseShard(o.shard);
  if (!shard) return shard.status();
  spec.shard = *shard;
  auto policy = parsePolicy(o.policy);
  if (!policy) return policy.status();
  spec.policy = *policy;
  auto jobs = workerThreads(o.jobs);
  if (!jobs) return jobs.status();
  spec.jobs = *jobs;
  spec.filter = o.fixed.filter();
  auto flags = buildFlagFilter(o.flags);
  if (!flags) return flags.status();
  spec.flags = std::move(*flags);
  auto models = properties::sweepModels(o.model, o.pattern);
  if (!models) return models.status();
  spec.models = std::move(*models);
  // Validate the fixed leaves once, with the message ConfigSpace gives.
  if (auto probe = ConfigSpace::build(spec.world, nullptr, spec.filter); !probe)
    return probe.status();
  if (Status s = checkSweepMemory(spec.world, spec.jobs); !s) return s;
  return spec;
}

int sweepServing(const SweepOptions& o) {
  auto spec = servingSpec(o);
  if (!spec) return fail(spec.status());
  auto json = jsonFormat(o.format);
  if (!json) return fail(json.status());
  if (Status st = reports::checkJunitOutput(o.junit, o.db); !st) return fail(st);
  auto baseline = prepareBaseline(o.baseline, reports::kSweepRun, o.db, o.junit);
  if (!baseline) return fail(baseline.status());
  const SweepOutput output{o.junit, *json, o.verbose, std::move(*baseline)};
  // Under mpirun rank 0 opens the store (and every rank learns whether it
  // could), each rank sweeps its part of the shard, and rank 0 writes every
  // rank's rows as they come and prints the one summary.
  const MpiWorld& mpi = mpiWorld();
  std::optional<reports::StoredRun> opened;
  Status open_status;
  if (mpi.root()) {
    auto run = reports::openSweepRun(o.db, &*spec, kSeamVersion, o.resume);
    if (run) {
      opened.emplace(std::move(*run));
    } else {
      open_status = run.status();
    }
  }
  if (mpi.split()) return sweepUnderMpi(mpi, *spec, std::move(opened), open_status, output);
  if (!open_status) return fail(open_status);
  ProgressLine progress;
  reports::SweepRecorder recorder(opened->store, opened->run.id, *spec,
                                  isatty(2) ? &progress : nullptr);
  auto live = properties::runSweep(*spec, &recorder);
  if (!live) return fail(live.status());
  if (Status st = recorder.flush(); !st) return fail(st);
  return finishSweep(*opened, *spec, *live, output);
}

}  // namespace

int finishSweep(reports::StoredRun& opened, const properties::SweepSpec& spec,
                const properties::SweepResult& live, const SweepOutput& out) {
  auto result = reports::finishSweepRun(opened, spec, live, out.junit);
  if (!result) return fail(result.status());
  auto end = endBaseline(out.baseline, opened.store, opened.run.id);
  if (!end) return fail(end.status());
  const std::size_t refusals =
      out.verbose ? std::numeric_limits<std::size_t>::max() : kConsoleRefusals;
  std::cout << withBaseline(
      out.json ? reports::sweepJson(spec, *result) : reports::renderSweep(spec, *result, refusals),
      *end, out.json);
  return baselineExit(result->violated > 0, *end);
}

Command registerSweep(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* sub = app.add_subcommand(
      "sweep", "Check every case of a space: presets x configs x flags x batches");
  sub->add_option("--world", o->world, "world size")->capture_default_str();
  sub->add_option("--model", o->model, "one preset (default: every preset)");
  sub->add_option("--pattern", o->pattern, "one bare single-stage pattern instead of the presets");
  addFilterOptions(sub, o->fixed);
  addFlagFilterOptions(sub, o->flags);
  addBaselineOptions(sub, o->baseline);
  sub->add_option("--jobs", o->jobs, "worker threads (default: all cores)");
  sub->add_option("--shard", o->shard, "take shard i/n of the case space")->capture_default_str();
  sub->add_option("--policy", o->policy, "boundary policy: declared|legacy|naive")
      ->capture_default_str();
  sub->add_option("--db", o->db, "SQLite store the run is written to")->capture_default_str();
  sub->add_flag("--resume", o->resume,
                "continue the latest unfinished run with the same arguments in --db");
  sub->add_option("--junit", o->junit,
                  "also write JUnit XML (a testcase per model x configuration) to this file");
  sub->add_option("--format", o->format, "text|json (one JSON object, for scripts)")
      ->capture_default_str();
  sub->add_option("--family", o->family,
                  "serving (the serving policies) or training (PrimeRL/Megatron layouts)")
      ->capture_default_str();
  sub->add_flag("--verbose", o->verbose,
                "list every refusal reason (default: the ten most frequent)");
  sub->add_option("--layout", o->layout,
                  "--family training: only primerl or megatron (default: both)");
  auto e = std::make_shared<EngineSweepOptions>();
  addEngineOptions(sub, e->engine);
  sub->add_option("--keep-recordings", e->keep, "--engine: keep the recordings in this folder");
  return {sub, [o, e, sub]() {
            if (!e->engine.asked() && !e->keep.empty())
              return fail(Status::invalid("--keep-recordings needs --engine or --engine-src"));
            if (e->engine.asked()) {
              auto json = jsonFormat(o->format);
              Status s = refuseGiven(*sub, {"--junit", "--policy", "--layout", "--family"},
                                     "a sweep without --engine (which runs serving cases and "
                                     "compares both policies' plans with the engine)");
              if (!s || !json) return fail(s ? json.status() : s);
              e->world = o->world, e->model = o->model, e->pattern = o->pattern,
              e->fixed = o->fixed, e->flags = o->flags, e->jobs = o->jobs, e->shard = o->shard,
              e->db = o->db, e->resume = o->resume, e->json = *json, e->baseline = o->baseline;
              return sweepEngine(*e);
            }
            auto training = trainingFamily(o->family);
            if (!training) return fail(training.status());
            if (*training) {
              // The training sweep runs its whole space, unsharded, and finds no engine findings.
              Status s = refuseGiven(*sub,
                                     {"--shard", "--a2a", "--fusion", "--dp-padding", "--reduction",
                                      "--mode", "--baseline", "--write-baseline"},
                                     "--family serving");
              if (s) s = refuseStoreOptions(*sub);
              if (!s) return fail(s);
            }
            return *training ? sweepTraining(*o) : sweepServing(*o);
          }};
}

}  // namespace seam::tools
