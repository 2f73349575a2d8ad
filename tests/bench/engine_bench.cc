// Recording speed: the whole world-W space of every preset that the recorder
// runs, recorded on the engine itself (SGLang's own layers on the CPU, one
// forked process per rank) with no recording cached, and every case judged
// against the declared and the legacy plan, as `seam sweep --engine sglang
// --world W` does. Target: world 8 under 10 minutes on 2 cores. One
// iteration per world (a world 8 run takes minutes); counters: cases, engine
// runs, cases and runs per second. Skipped when the recorder's interpreter
// is not installed (tools/setup.sh installs it).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>
#include <thread>

#include "seam/properties/sweep.h"
#include "seam/recordings/engine_sweep.h"

namespace seam {
namespace {

void BM_EngineSweepEveryPreset(benchmark::State& state) {
  const int world = static_cast<int>(state.range(0));
  recordings::EngineSweepSpec spec;
  for (const properties::SweepModel& m : properties::defaultSweepModels())
    if (m.model) spec.models.push_back({m.name, "", properties::enumerateCases(*m.model, world)});
  spec.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  spec.run = recordings::defaultRecorderRun(SEAM_CHECKOUT);
  if (!std::filesystem::exists(spec.run.python)) {
    state.SkipWithError(("no recorder interpreter at " + spec.run.python).c_str());
    return;
  }
  std::int64_t cases = 0, runs = 0;
  for (auto _ : state) {
    std::string dir =
        (std::filesystem::temp_directory_path() / "seam-engine-bench-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) {
      state.SkipWithError("cannot make a scratch folder");
      return;
    }
    spec.dir = dir;
    cases = 0;
    auto result = recordings::runEngineSweep(spec, [&](const reports::EngineCaseRecord& row) {
      if (row.policy == "declared") ++cases;
      return Status::ok();
    });
    std::filesystem::remove_all(dir);
    if (!result) {
      state.SkipWithError(result.status().message().c_str());
      return;
    }
    runs = 0;
    for (const recordings::EngineSweepModel& m : result->models) runs += m.runs;
  }
  state.counters["cases"] = static_cast<double>(cases);
  state.counters["engine_runs"] = static_cast<double>(runs);
  state.counters["cases_per_s"] =
      benchmark::Counter(static_cast<double>(cases), benchmark::Counter::kIsRate);
  state.counters["runs_per_s"] =
      benchmark::Counter(static_cast<double>(runs), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EngineSweepEveryPreset)
    ->Arg(2)
    ->Arg(8)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace
}  // namespace seam

BENCHMARK_MAIN();
