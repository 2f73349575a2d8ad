// `seam-gpu run CASE`: the case's plan on the GPUs against the CPU executor
// and the reference. Exit 0: exact mode bit-identical on every rank (real
// mode: completed, ranks agree, outputs finite); 1 otherwise or hung.
#include <iostream>
#include <optional>

#include "case_options.h"
#include "gpu_command.h"
#include "gpu_records.h"
#include "gpu_views.h"
#include "mpi_world.h"
#include "seam/properties/gpu_json.h"
#include "seam/properties/gpu_verdict.h"
#include "seam/properties/provenance.h"
#include "seam/sim/replay/numeric_executor.h"

namespace seam::tools {

namespace {

struct RunOptions {
  CaseOptions c;
  std::string numeric = "exact";
  int hidden = numeric::Shape{}.hidden;
  int inner = numeric::Shape{}.inner;
  int warmup = backend::GpuRunOptions{}.warmup;
  int iters = backend::GpuRunOptions{}.iters;
  double watchdog = backend::GpuRunOptions{}.watchdog_seconds;
  int rank = 0;  ///< whose ops the timing table shows
  std::string fused = "on";
  std::string fused_protocol = "auto";
  int graph_replays = 0;
  bool check_unfused = false;  ///< run again with ar_add_norm unfused and compare
  std::string json;
};

void addRunOptions(CLI::App* cmd, RunOptions& o) {
  addCaseOptions(cmd, o.c);
  cmd->add_option("--numeric", o.numeric, "numeric mode: exact|real")->capture_default_str();
  cmd->add_option("--hidden", o.hidden, "row width of the numeric model")->capture_default_str();
  cmd->add_option("--inner", o.inner, "inner width of every stage")->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "untimed runs of the plan")->capture_default_str();
  cmd->add_option("--iters", o.iters, "timed runs of the plan")->capture_default_str();
  cmd->add_option("--watchdog", o.watchdog, "seconds without progress before a run counts as hung")
      ->capture_default_str();
  cmd->add_option("--rank", o.rank, "whose ops the timing table shows")->capture_default_str();
  cmd->add_option("--fused", o.fused,
                  "ar_add_norm as the fused peer-memory kernel where possible: on|off")
      ->capture_default_str();
  cmd->add_option("--fused-protocol", o.fused_protocol, protocolHelp())->capture_default_str();
  cmd->add_flag("--check-unfused", o.check_unfused,
                "run the plan again with ar_add_norm unfused and compare the outputs");
  cmd->add_option(
         "--graph-replays", o.graph_replays,
         "also time eager steps and replays of the step captured in a CUDA graph (0: none)")
      ->capture_default_str();
  cmd->add_option("--json", o.json, "write everything as one JSON object to this file");
}

Expected<bool> parseOnOff(const std::string& text, const char* option) {
  if (text == "on") return true;
  if (text == "off") return false;
  return Status::invalid(std::string(option) + " \"" + text.substr(0, 64) +
                         "\" is not one of on, off");
}

/// The backend's options from --hidden .. --graph-replays, checked.
Expected<backend::GpuRunOptions> gpuRunOptions(const RunOptions& o, numeric::Mode mode,
                                               const Plan& plan) {
  if (o.rank < 0 || o.rank >= plan.world()) {
    return Status::invalid("--rank " + std::to_string(o.rank) + " is not a rank of the world of " +
                           std::to_string(plan.world()));
  }
  auto fused = parseOnOff(o.fused, "--fused");
  if (!fused) return fused.status();
  auto protocol = parseProtocol(o.fused_protocol);
  if (!protocol) return protocol.status();
  backend::GpuRunOptions options;
  options.mode = mode;
  options.shape = numeric::Shape{.hidden = o.hidden, .inner = o.inner};
  options.warmup = o.warmup;
  options.iters = o.iters;
  options.watchdog_seconds = o.watchdog;
  options.fuse_ar_add_norm = *fused;
  options.fused_protocol = *protocol;
  options.graph_replays = o.graph_replays;
  if (Status st = backend::validateRunOptions(options); !st) return st;
  return options;
}

int runRun(const RunOptions& o, const std::string& command_line) {
  if (!o.c.trace.empty())
    return failGpu(Status::invalid(
        "--trace: seam-gpu runs a policy's plan; traces are for seam check and seam diff"));
  auto mode = parseNumeric(o.numeric);
  if (!mode) return failGpu(mode.status());
  auto c = buildCase(o.c);
  if (!c) return failGpu(c.status());
  auto plan = buildPolicyPlan(o.c, *c);
  if (!plan) return failGpu(plan.status());
  auto options = gpuRunOptions(o, *mode, *plan);
  if (!options) return failGpu(options.status());

  auto gpu = backend::runPlanOnGpus(*plan, *options, processGroup());
  if (!gpu) return failGpu(gpu.status());
  std::optional<OutputDiff> vs_unfused;
  if (o.check_unfused && !gpu->hung) {
    backend::GpuRunOptions unfused = *options;
    unfused.fuse_ar_add_norm = false;
    unfused.graph_replays = 0;
    auto other = backend::runPlanOnGpus(*plan, unfused, processGroup());
    if (!other) return failGpu(other.status());
    if (!other->hung) vs_unfused = compareOutputs(gpu->output, other->output);
  }
  // Under mpirun rank 0 holds the whole result; the others are done.
  if (!mpiWorld().root()) return kExitOk;
  const NumericRun cpu = runPlanNumeric(*plan, options->mode, options->shape);
  const NumericOutput reference = runReference(*c, options->mode, options->shape);

  properties::GpuRunRecord run = runRecord(*plan, *gpu, cpu, reference);
  run.origin.version = kSeamVersion;
  run.origin.command = command_line;
  properties::stampOrigin(&run.origin);
  run.c = caseRecord(*c, plan->policy,
                     reproduceCommand(*c, plan->policy) +
                         (o.c.decision.empty() ? "" : " --decision " + o.c.decision));
  run.numeric = {o.numeric, o.hidden, o.inner};
  run.warmup = o.warmup;
  run.iters = o.iters;
  run.fused_vs_unfused = vs_unfused;
  const properties::GpuRunJudgement judgement = properties::judgeGpuRun(run, gpu->output);
  run.verdict = judgement.verdict;

  printRunHeader(run, o.c.decision);
  if (run.hung) {
    std::cout << "HUNG: " << run.hang_report << "\n";
  } else {
    printRunComparisons(run);
    printTimings(*plan, gpu->timings, o.rank, o.iters);
    printRunVerdict(run, judgement);
  }
  if (!o.json.empty()) {
    if (Status st = writeJson(o.json, properties::gpuResultJson(run)); !st) return failGpu(st);
  }
  return judgement.ok ? kExitOk : kExitPropertyFailed;
}

}  // namespace

Command registerGpuRun(CLI::App& app, const std::string& command_line) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run a case's plan on the GPUs; compare with the CPU executor and the reference. Exit 0: "
      "exact mode "
      "bit-identical on every rank (real mode: completed, ranks agree, outputs finite)");
  addRunOptions(cmd, *o);
  return {cmd, [o, &command_line] { return runRun(*o, command_line); }};
}

}  // namespace seam::tools
