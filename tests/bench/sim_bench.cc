// Throughput of the simulator's hot path (DESIGN §10): plan building, ledger
// replay (fast and exact domains) of real presets at world 8 and 64, and the
// whole default sweep. Targets: replay
// of a 52-layer preset at world 8 >= 20,000 cases/s on one core; plan
// building >= 100,000 plans/s; the default sweep under 30 s wall.
#include <benchmark/benchmark.h>

#include <cassert>
#include <thread>

#include "seam/mutants/campaign.h"
#include "seam/properties/check.h"
#include "seam/properties/sweep.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/ledger.h"

namespace seam {
namespace {

Case presetCase(const char* name, ParallelConfig config) {
  Case c;
  c.model = *modelFromPreset(**findPreset(name));
  c.config = config;
  c.batch.tokens.assign(config.attn_dp, 4);
  return c;
}

// World 8: tp=8. World 64: tp=64 with 8-way DP attention (attn_tp = 8), the
// shape of a large DP-attention deployment.
Case benchCase(int preset, int world) {
  // 2: a two-stage stack (DeepSeek-V3: 61 decoder layers = 122 stages + MTP).
  const char* name = preset == 0   ? "nemotron-h-8b"
                     : preset == 1 ? "nemotron-3-super"
                                   : "deepseek-v3";
  if (world == 8) return presetCase(name, {.tp = 8});
  return presetCase(name, {.tp = 64, .attn_dp = 8});
}

void BM_PlanBuild(benchmark::State& state) {
  const Case c = benchCase(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  std::int64_t ops = 0;
  for (auto _ : state) {
    auto plan = buildPlan(c, PolicyKind::kDeclared);
    assert(plan.hasValue());
    for (const auto& r : plan->ranks) ops += static_cast<std::int64_t>(r.size());
    benchmark::DoNotOptimize(plan);
  }
  state.SetLabel(c.model.name + " world " + std::to_string(c.config.world()));
  state.counters["plans/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["ops/plan"] = static_cast<double>(ops) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_PlanBuild)->ArgsProduct({{0, 1, 2}, {8, 64}})->Unit(benchmark::kMicrosecond);

void replayBench(benchmark::State& state, bool exact) {
  const Case c = benchCase(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  auto plan = buildPlan(c, PolicyKind::kDeclared);
  assert(plan.hasValue());
  Ledger ledger;
  LedgerOptions options;
  options.exact = exact;
  std::int64_t ops = 0;
  for (auto _ : state) {
    const LedgerResult r = ledger.replay(*plan, options);
    if (!r.holds()) state.SkipWithError("the benchmark case has a violation");
    ops += r.ops_executed;
  }
  state.SetLabel(c.model.name + " world " + std::to_string(c.config.world()));
  state.counters["cases/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["ops/case"] = static_cast<double>(ops) / static_cast<double>(state.iterations());
}
void BM_LedgerReplay(benchmark::State& state) { replayBench(state, false); }
void BM_LedgerReplayExact(benchmark::State& state) { replayBench(state, true); }
BENCHMARK(BM_LedgerReplay)->ArgsProduct({{0, 1, 2}, {8, 64}})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LedgerReplayExact)->ArgsProduct({{0, 1}, {8}})->Unit(benchmark::kMicrosecond);

// Plan + all six properties, as the sweep runs them per case.
void BM_CheckCase(benchmark::State& state) {
  const Case c = benchCase(static_cast<int>(state.range(0)), 8);
  Ledger ledger;
  for (auto _ : state) {
    auto plan = buildPlan(c, PolicyKind::kDeclared);
    const auto verdict = properties::checkPlan(*plan, ledger);
    if (!verdict.holds()) state.SkipWithError("the benchmark case has a violation");
  }
  state.SetLabel(c.model.name + " world 8");
  state.counters["cases/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CheckCase)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// The whole default sweep (every preset at world 8), on every core.
void BM_DefaultSweep(benchmark::State& state) {
  properties::SweepSpec spec;
  spec.models = properties::defaultSweepModels();
  spec.world = static_cast<int>(state.range(0));
  spec.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::int64_t cases = 0, checked = 0;
  for (auto _ : state) {
    auto r = properties::runSweep(spec);
    if (!r || r->violated != 0) state.SkipWithError("the default sweep failed");
    cases += r->cases;
    checked += r->checked;
  }
  state.counters["cases/s"] =
      benchmark::Counter(static_cast<double>(cases), benchmark::Counter::kIsRate);
  state.counters["checked/s"] =
      benchmark::Counter(static_cast<double>(checked), benchmark::Counter::kIsRate);
  state.counters["jobs"] = spec.jobs;
}
BENCHMARK(BM_DefaultSweep)
    ->Arg(8)
    ->Arg(16)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The whole default mutation campaign (every preset at worlds 1, 2, 4, 8, 16,
// every mutant), on every core. Target: under 60 s on the 2-core machine.
void BM_DefaultCampaign(benchmark::State& state) {
  mutants::CampaignSpec spec;
  spec.models = properties::defaultSweepModels();
  spec.worlds = {1, 2, 4, 8, 16};
  spec.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (auto _ : state) {
    auto r = mutants::runCampaign(spec);
    if (!r || !r->baseline_holds || r->survived() != 0)
      state.SkipWithError("the default campaign failed");
    state.counters["cases"] = static_cast<double>(r->cases);
    state.counters["killed"] = r->killed();
    state.counters["equivalent"] = r->equivalent();
  }
  state.counters["jobs"] = spec.jobs;
}
BENCHMARK(BM_DefaultCampaign)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace seam

BENCHMARK_MAIN();
