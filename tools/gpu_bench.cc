// `seam-gpu bench CASE`: in one run on the same GPUs, the plan's collectives
// against bare NCCL, the fused ar_add_norm kernel against NCCL all-reduce +
// add+norm, and a captured decode step against eager launches and its ops'
// sum. Exit 1 when a check fails (a graph replay or the fused kernel in
// exact mode differs) or the plan hangs.
#include <iostream>

#include "gpu_bench_options.h"
#include "gpu_command.h"
#include "gpu_records.h"
#include "gpu_views.h"
#include "seam/backend/bench.h"
#include "seam/backend/device.h"
#include "seam/properties/gpu_json.h"
#include "seam/properties/gpu_verdict.h"
#include "seam/properties/provenance.h"

namespace seam::tools {

namespace {

/// The plan's sections (collectives, graph) into `bench`; false when it hung.
Expected<bool> benchPlanSections(const BenchOptions& o, const BenchPlan& p, const Plan& plan,
                                 const backend::GpuRunOptions& options,
                                 properties::GpuBenchRecord& bench) {
  auto run = backend::runPlanOnGpus(plan, options);
  if (!run) return run.status();
  bench.origin.device = run->device;
  bench.origin.versions = versionsRecord(run->versions);
  bench.ran_plan = true;
  bench.notes = run->notes;
  std::cout << "on " << run->device << " (" << run->versions.describe() << ")\n";
  for (const std::string& n : run->notes) std::cout << "note: " << n << "\n";
  if (run->hung) {
    std::cout << "HUNG: " << run->hang_report << "\n";
    bench.hung = true;
    bench.hang_report = run->hang_report;
    return false;
  }
  if (p.collectives) {
    auto rows = backend::benchPlanCollectives(plan, *run, o.iters, &bench.collectives_not_compared);
    if (!rows) return rows.status();
    bench.collectives = collectiveRecords(*rows);
    printCollectives(*bench.collectives, o.iters, bench.collectives_not_compared);
  }
  if (p.graph) {
    bench.graph = graphRecords(run->graph);
    printGraph(*bench.graph);
  }
  return true;
}

/// The fused-kernel table into `bench`, with the machine when the plan did not run.
Status benchFused(const BenchOptions& o, const BenchPlan& p, properties::GpuBenchRecord& bench) {
  auto rows =
      backend::benchFusedArAddNorm(p.fused_hidden, p.fused_tokens, o.fused_iters, p.protocol);
  if (!rows) return rows.status();
  if (!bench.origin.device) {
    auto devices = backend::listDevices();
    auto versions = backend::runtimeVersions();
    if (devices && !devices->empty())
      bench.origin.device = std::to_string(devices->size()) + "x " + devices->front().name;
    if (versions) bench.origin.versions = versionsRecord(*versions);
  }
  bench.fused = fusedRecords(*rows);
  printFused(*bench.fused, o.fused_iters);
  if (!rows->empty() && !rows->front().trace_error.empty()) {
    std::cout << "note: CUPTI could not trace the fused calls: " << rows->front().trace_error
              << "\n";
    bench.cupti_error = rows->front().trace_error;
  }
  return Status::ok();
}

int runBench(const BenchOptions& o, const std::string& command_line) {
  if (!o.c.trace.empty())
    return failGpu(Status::invalid("--trace: seam-gpu bench runs a policy's plan"));
  auto mode = parseNumeric(o.numeric);
  if (!mode) return failGpu(mode.status());
  auto p = benchPlan(o);
  if (!p) return failGpu(p.status());
  auto c = buildCase(o.c);
  if (!c) return failGpu(c.status());
  auto plan = buildPolicyPlan(o.c, *c);
  if (!plan) return failGpu(plan.status());
  backend::GpuRunOptions options;
  options.mode = *mode;
  options.shape = numeric::Shape{.hidden = o.hidden, .inner = o.inner};
  options.iters = o.iters;
  options.graph_replays = p->graph ? o.graph_replays : 0;
  options.fused_protocol = p->protocol;
  if (Status st = backend::validateRunOptions(options); !st) return failGpu(st);

  properties::GpuBenchRecord bench;
  bench.origin.version = kSeamVersion;
  bench.origin.command = command_line;
  properties::stampOrigin(&bench.origin);
  bench.c = caseRecord(*c, plan->policy, reproduceCommand(*c, plan->policy));
  bench.numeric = {o.numeric, o.hidden, o.inner};
  bench.iters = o.iters;
  std::cout << "seam-gpu bench: " << c->model.name << " (" << c->config.describe() << "; "
            << c->flags.describe() << "; tokens " << c->batch.describe() << "), " << o.numeric
            << " mode, hidden " << o.hidden << ", inner " << o.inner << "\n";
  if (p->collectives || p->graph) {
    auto ran = benchPlanSections(o, *p, *plan, options, bench);
    if (!ran) return failGpu(ran.status());
    if (!*ran) {
      if (!o.json.empty()) (void)writeJson(o.json, properties::gpuResultJson(bench));
      return kExitPropertyFailed;
    }
  }
  if (p->fused) {
    if (Status st = benchFused(o, *p, bench); !st) return failGpu(st);
  }
  bench.verdict = properties::judgeGpuBench(bench);
  if (!o.json.empty()) {
    if (Status st = writeJson(o.json, properties::gpuResultJson(bench)); !st) return failGpu(st);
  }
  return bench.verdict == "completed" ? kExitOk : kExitPropertyFailed;
}

}  // namespace

Command registerGpuBench(CLI::App& app, const std::string& command_line) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench",
                                     "In one run on the same GPUs: the plan's collectives "
                                     "against bare NCCL, the fused ar_add_norm kernel "
                                     "against NCCL all-reduce + add+norm, a captured "
                                     "decode step against eager launches and its ops' sum");
  addBenchOptions(cmd, *o);
  return {cmd, [o, &command_line] { return runBench(*o, command_line); }};
}

}  // namespace seam::tools
