#include "engine_sweep.h"

#include <unistd.h>

#include <filesystem>

#include "command.h"
#include "seam/properties/sweep.h"
#include "seam/recordings/engine_sweep.h"
#include "seam/reports/engine_view.h"
#include "seam/reports/recorders.h"

namespace seam::tools {

namespace {

constexpr std::size_t kExamples = 3;
constexpr std::size_t kRowsPerBatch = 512;

/// The arguments a resumed engine sweep must match.
std::string engineSweepArgs(const EngineSweepOptions& o, const ConfigFilter& f,
                            const FlagFilter& flags) {
  auto leaf = [](const char* name, const std::optional<int>& v) {
    return v ? std::string(" ") + name + "=" + std::to_string(*v) : std::string();
  };
  return "world=" + std::to_string(o.world) + " shard=" + o.shard +
         (o.engine.engine_src.empty() ? " engine=" + o.engine.engine
                                      : " engine-src=" + o.engine.engine_src) +
         leaf("pp", f.pp) + leaf("tp", f.tp) + leaf("dp", f.attn_dp) + leaf("cp", f.attn_cp) +
         leaf("ep", f.moe_ep) + leaf("moe_dp", f.moe_dp) + flags.describe() + " model=" + o.model +
         " pattern=" + o.pattern;
}

}  // namespace

int sweepEngine(const EngineSweepOptions& o) {
  if (Status s = engineOptionsValid(o.engine); !s) return fail(s);
  recordings::EngineSweepSpec spec;
  const ConfigFilter filter = o.fixed.filter();
  if (auto probe = ConfigSpace::build(o.world, nullptr, filter); !probe)
    return fail(probe.status());
  auto flags = buildFlagFilter(o.flags);
  if (!flags) return fail(flags.status());
  auto models = properties::sweepModels(o.model, o.pattern);
  if (!models) return fail(models.status());
  for (const properties::SweepModel& m : *models) {
    spec.models.push_back({m.name, m.model ? "" : m.why_not,
                           m.model ? properties::enumerateCases(*m.model, o.world, filter, *flags)
                                   : std::vector<Case>{}});
  }
  auto shard = parseShard(o.shard);
  if (!shard) return fail(shard.status());
  spec.shard = *shard;
  auto jobs = workerThreads(o.jobs);
  if (!jobs) return fail(jobs.status());
  spec.jobs = *jobs;
  spec.run = recordings::defaultRecorderRun(SEAM_CHECKOUT);
  spec.run.engine_src = o.engine.engine_src;
  spec.run.timeout_s = o.engine.timeout_s;
  auto baseline = prepareBaseline(o.baseline, reports::kEngineSweepRun, o.db, "");
  if (!baseline) return fail(baseline.status());
  auto opened = reports::openRun(o.db, std::string(reports::kEngineSweepRun),
                                 engineSweepArgs(o, filter, *flags), kSeamVersion, o.resume);
  if (!opened) return fail(opened.status());
  reports::Store& store = opened->store;
  if (o.resume) {
    auto done = store.engineCaseIndices(opened->run.id);
    if (!done) return fail(done.status());
    spec.skip = std::move(*done);
  }
  auto dir = recordingsFolder(o.keep);
  if (!dir) return fail(dir.status());
  spec.dir = *dir;

  // Each model's line as it finishes (a world 8 sweep of every preset takes minutes).
  if (!o.json) {
    spec.on_model = [&](const recordings::EngineSweepModel& m) {
      std::cout << "sweep --engine: " << m.name << " world " << o.world;
      if (!m.not_modelled.empty()) {
        std::cout << ": not modelled (" << m.not_modelled << ")\n" << std::flush;
        return;
      }
      std::cout << ", shard " << o.shard << ": " << m.cases << " cases in " << m.runs
                << " engine runs (" << m.recorded << " recorded now, "
                << static_cast<int>(m.seconds) << " s)";
      for (const auto& [why, n] : m.left_out) std::cout << "; " << n << " left out (" << why << ")";
      std::cout << "\n" << std::flush;
    };
  }
  std::size_t pending = 0;
  Status batch = store.beginBatch();
  auto sink = [&](const reports::EngineCaseRecord& row) -> Status {
    if (Status s = store.addEngineCase(opened->run.id, row); !s) return s;
    if (++pending < kRowsPerBatch) return Status::ok();
    pending = 0;
    if (Status s = store.commitBatch(); !s) return s;
    return store.beginBatch();
  };
  auto result = batch ? recordings::runEngineSweep(spec, sink)
                      : Expected<recordings::EngineSweepResult>(batch);
  if (result) batch = store.commitBatch();
  if (o.keep.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(*dir, ec);
  }
  if (!result) {
    (void)store.rollbackBatch();
    return fail(result.status());
  }
  if (!batch) return fail(batch);
  if (Status s = store.finishRun(opened->run.id); !s) return fail(s);
  auto rows = store.engineCases(opened->run.id);
  if (!rows) return fail(rows.status());
  const reports::EngineConformance table = reports::foldEngineCases(*rows);
  auto end = endBaseline(*baseline, store, opened->run.id);
  if (!end) return fail(end.status());
  std::cout << withBaseline(o.json ? reports::conformanceJson(table, opened->run.args)
                                   : reports::renderConformance(table, kExamples) +
                                         "store: " + store.path() + ", run " +
                                         std::to_string(opened->run.id) + "\n",
                            *end, o.json);
  return baselineExit(table.declared_disagreements > 0, *end);
}

}  // namespace seam::tools
