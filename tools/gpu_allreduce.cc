// `seam-gpu bench-allreduce --bytes N`: bare NCCL all-reduce over every
// visible GPU against the same all-reduce as the one op of a plan.
#include "gpu_command.h"
#include "gpu_records.h"
#include "gpu_views.h"
#include "seam/properties/gpu_json.h"
#include "seam/properties/provenance.h"

namespace seam::tools {

namespace {

int runBenchAllReduce(std::int64_t bytes, int iters, const std::string& json) {
  auto bench = backend::benchAllReduce(bytes, iters);
  if (!bench) return failGpu(bench.status());
  properties::GpuAllReduceRecord r = allReduceRecord(*bench);
  r.origin.version = kSeamVersion;
  properties::stampOrigin(&r.origin);
  printAllReduce(r);
  if (!json.empty()) {
    if (Status st = writeJson(json, properties::gpuResultJson(r)); !st) return failGpu(st);
  }
  return kExitOk;
}

}  // namespace

Command registerGpuBenchAllReduce(CLI::App& app) {
  struct Options {
    std::int64_t bytes = 64 << 20;
    int iters = 20;
    std::string json;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "bench-allreduce",
      "Bare NCCL all-reduce over every visible GPU against the same all-reduce as a one-op plan");
  cmd->add_option("--bytes", o->bytes, "message size in bytes (a multiple of 4)")
      ->capture_default_str();
  cmd->add_option("--iters", o->iters, "timed iterations")->capture_default_str();
  cmd->add_option("--json", o->json, "write the result as one JSON object to this file");
  return {cmd, [o] { return runBenchAllReduce(o->bytes, o->iters, o->json); }};
}

}  // namespace seam::tools
