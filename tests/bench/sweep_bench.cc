// Sweeps at deployment scale: the sweep of every preset at one world as
// `seam sweep` runs it (cases streamed into a fresh store, the summary rebuilt
// from it), each world in a forked child so that the peak RSS reported
// (getrusage of that child) is that world's alone, not the benchmark's
// cumulative peak; a shard of the largest worlds the same way (a whole world
// 128 sweep takes minutes on 2 cores; a shard takes every n-th model x
// configuration whole, and the peak is the largest case a worker holds, so a
// shard's peak can fall short of the whole run's); and ledger replay per op
// from world 8 to 128, whose cost should stay close to linear in the plan's
// ops. Targets: a world 64 sweep under 60 s on 2 cores; peak RSS under 256 MB
// at every world up to 128 (the counter under_256MB says whether it was met).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>
#include <thread>

#include "seam/properties/check.h"
#include "seam/properties/sweep.h"
#include "seam/reports/recorders.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/ledger.h"

namespace seam {
namespace {

/// The peak RSS target at every world up to 128, in MB (10^6 bytes).
constexpr double kPeakTargetMb = 256;

/// What the child reports back to the parent through a pipe.
struct ChildCounts {
  std::int64_t cases = -1, checked = 0, refused = 0, violated = 0;
  double seconds = 0;
};

/// The child's body: shard 0/`shards` of the default sweep of `world` (the
/// whole sweep when `shards` is 1) into a store at `db`.
ChildCounts sweepIntoStore(int world, int shards, const std::string& db) {
  properties::SweepSpec spec;
  spec.models = properties::defaultSweepModels();
  spec.world = world;
  spec.shard = {0, shards};
  spec.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ChildCounts out;
  const auto removeStore = [&db] {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((db + suffix).c_str());
  };
  removeStore();
  auto r = [&]() -> Expected<properties::SweepResult> {
    auto opened = reports::openSweepRun(db, &spec, "bench", false);
    if (!opened) return opened.status();
    reports::SweepRecorder recorder(opened->store, opened->run.id, spec, nullptr);
    auto live = properties::runSweep(spec, &recorder);
    if (!live) return live.status();
    if (Status st = recorder.flush(); !st) return st;
    return reports::finishSweepRun(*opened, spec, *live, "");
  }();
  removeStore();
  if (!r) return out;
  out = {r->cases, r->checked, r->refused, r->violated, r->seconds};
  return out;
}

void BM_SweepEveryPreset(benchmark::State& state) {
  const int world = static_cast<int>(state.range(0));
  const int shards = static_cast<int>(state.range(1));
  for (auto _ : state) {
    int fds[2];
    if (pipe(fds) != 0) return state.SkipWithError("pipe failed");
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      const ChildCounts c = sweepIntoStore(
          world, shards, "/tmp/seam_sweep_bench_" + std::to_string(getpid()) + ".db");
      const bool sent = write(fds[1], &c, sizeof c) == static_cast<ssize_t>(sizeof c);
      _exit(sent ? 0 : 1);
    }
    close(fds[1]);
    ChildCounts c;
    const bool got = read(fds[0], &c, sizeof c) == static_cast<ssize_t>(sizeof c);
    close(fds[0]);
    int status = 0;
    rusage usage{};
    wait4(pid, &status, 0, &usage);
    if (!got || c.cases < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      return state.SkipWithError("the sweep's child failed");
    state.SetIterationTime(c.seconds);
    state.counters["cases"] = static_cast<double>(c.cases);
    state.counters["checked"] = static_cast<double>(c.checked);
    state.counters["refused"] = static_cast<double>(c.refused);
    state.counters["violated"] = static_cast<double>(c.violated);
    state.counters["cases/s"] = static_cast<double>(c.cases) / c.seconds;
    const double peak_mb = static_cast<double>(usage.ru_maxrss) * 1024.0 / 1e6;  // KiB on Linux
    state.counters["peak_MB"] = peak_mb;
    state.counters["under_256MB"] = peak_mb < kPeakTargetMb ? 1 : 0;
  }
  state.SetLabel("every preset, world " + std::to_string(world) +
                 (shards > 1 ? ", shard 0/" + std::to_string(shards) : ""));
}
// {world, shards}: whole sweeps up to 128 (world 128 takes minutes on 2
// cores), shards of 64, 128 and 256.
BENCHMARK(BM_SweepEveryPreset)
    ->Args({8, 1})
    ->Args({32, 1})
    ->Args({64, 1})
    ->Args({64, 16})
    ->Args({128, 1})
    ->Args({128, 32})
    ->Args({256, 128})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

// nemotron-h-8b with attention TP 8 and world/8-way DP attention: the ops of
// a plan grow with the world, and the time per op should not.
void BM_ReplayPerOp(benchmark::State& state) {
  const int world = static_cast<int>(state.range(0));
  Case c;
  c.model = *modelFromPreset(**findPreset("nemotron-h-8b"));
  c.config = {.tp = world, .attn_dp = std::max(1, world / 8)};
  c.batch.tokens.assign(c.config.attn_dp, 4);
  auto plan = buildPlan(c, PolicyKind::kDeclared);
  if (!plan) return state.SkipWithError(plan.status().message().c_str());
  Ledger ledger;
  std::int64_t ops = 0;
  for (auto _ : state) {
    const LedgerResult r = ledger.replay(*plan, LedgerOptions{});
    if (!r.holds()) return state.SkipWithError("the benchmark case has a violation");
    ops += r.ops_executed;
  }
  state.SetLabel("nemotron-h-8b world " + std::to_string(world));
  state.counters["cases/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["ops/case"] = static_cast<double>(ops) / static_cast<double>(state.iterations());
  state.counters["ns/op"] = benchmark::Counter(
      static_cast<double>(ops) * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ReplayPerOp)->RangeMultiplier(2)->Range(8, 128)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace seam

BENCHMARK_MAIN();
