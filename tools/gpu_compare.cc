// `seam-gpu compare CASE --policy A --against B`: two policies' plans of one
// case on the same GPUs. The simulator predicts bit-identity when every
// output row of both plans is computed by the same roundings in the same
// order (predictBitIdentity); the run observes it. Exit 1 when a predicted
// identity is refuted.
#include <fstream>
#include <iostream>

#include "case_options.h"
#include "gpu_command.h"
#include "mpi_world.h"
#include "seam/properties/gpu_json.h"
#include "seam/properties/gpu_verdict.h"
#include "seam/properties/provenance.h"

namespace seam::tools {

namespace {

struct CompareOptions {
  CaseOptions c;
  std::string against = "declared";
  std::string numeric = "real";
  int hidden = 512;
  int inner = 1024;
  std::string json;
};

const char* predictionLine(PredictionVerdict verdict) {
  switch (verdict) {
    case PredictionVerdict::kHolds:
      return "HOLDS";
    case PredictionVerdict::kRefuted:
      return "REFUTED";
    case PredictionVerdict::kUntested:
      break;
  }
  return "UNTESTED: other roundings gave the same bits here";
}

int runCompare(const CompareOptions& o, const std::string& command_line) {
  if (!o.c.trace.empty())
    return failGpu(Status::invalid(
        "--trace: seam-gpu runs a policy's plan; traces are for seam check and seam diff"));
  auto mode = parseNumeric(o.numeric);
  if (!mode) return failGpu(mode.status());
  auto c = buildCase(o.c);
  if (!c) return failGpu(c.status());
  auto pa = parsePolicy(o.c.policy);
  if (!pa) return failGpu(pa.status());
  auto pb = parsePolicy(o.against);
  if (!pb)
    return failGpu(Status::invalid("--against " +
                                   pb.status().message().substr(std::string("--policy ").size())));
  // Plan A is --policy's, with --decision planted when given (a planner bug
  // against its parent: values differ, and the run shows by how much).
  auto plan_a = buildPolicyPlan(o.c, *c);
  auto plan_b = buildPlan(*c, *pb);
  if (!plan_a) return failGpu(plan_a.status());
  if (!plan_b) return failGpu(plan_b.status());
  Ledger ledger;
  const properties::GpuComparePrediction p =
      properties::predictGpuCompare(*plan_a, *plan_b, ledger);
  backend::GpuRunOptions options;
  options.mode = *mode;
  options.shape = numeric::Shape{.hidden = o.hidden, .inner = o.inner};
  auto ga = backend::runPlanOnGpus(*plan_a, options, processGroup());
  if (!ga) return failGpu(ga.status());
  auto gb = backend::runPlanOnGpus(*plan_b, options, processGroup());
  if (!gb) return failGpu(gb.status());
  if (!mpiWorld().root()) return kExitOk;  // rank 0 holds both results
  const OutputDiff diff = compareOutputs(ga->output, gb->output);
  const PredictionVerdict verdict = judgePrediction(p.bits.identical, diff.identical);
  const std::string planted = o.c.decision.empty() ? "" : " with --decision " + o.c.decision;
  std::cout << "seam-gpu compare: " << c->model.name << " " << c->config.describe() << " tokens "
            << c->batch.describe() << "; " << policyName(*pa) << planted << " against "
            << policyName(*pb) << ", " << o.numeric << " mode, hidden " << o.hidden << ", on "
            << ga->device << "\n";
  std::cout << "simulator: " << properties::diffClassName(p.diff.cls)
            << (p.diff.detail.empty() ? "" : " (" + p.diff.detail + ")") << "; predicts "
            << (p.bits.identical ? "bit-identical" : "a difference: " + p.bits.reason) << "\n";
  std::cout << "observed: " << diff.describe() << "\n";
  std::cout << "PREDICTION " << predictionLine(verdict) << "\n";
  if (!o.json.empty()) {
    properties::GpuCompareRecord r;
    r.origin = {.version = kSeamVersion, .command = command_line, .device = ga->device};
    properties::stampOrigin(&r.origin);
    // The one-case `seam diff` line, the planted decision (plan A's) before --policy.
    std::string reproduce = properties::diffCommand(*c, *pa, *pb);
    if (!o.c.decision.empty())
      reproduce.insert(reproduce.rfind(" --policy "), " --decision " + o.c.decision);
    r.c = {.model = c->model.name,
           .config = c->config.describe(),
           .flags = c->flags.describe(),
           .tokens = c->batch.describe(),
           .reproduce = reproduce};
    r.numeric = {o.numeric, o.hidden, o.inner};
    r.diff_class = std::string(properties::diffClassName(p.diff.cls));
    r.detail = p.diff.detail;
    r.predicted_identical = p.bits.identical;
    r.prediction = p.bits.reason;
    r.verdict = std::string(predictionVerdictName(verdict));
    r.observed = diff;
    r.hash_a = ga->output.hash();
    r.hash_b = gb->output.hash();
    std::ofstream(o.json) << properties::gpuResultJson(r);
  }
  return verdict == PredictionVerdict::kRefuted ? kExitPropertyFailed : kExitOk;
}

}  // namespace

Command registerGpuCompare(CLI::App& app, const std::string& command_line) {
  auto o = std::make_shared<CompareOptions>();
  o->c.policy = "legacy";
  CLI::App* cmd = app.add_subcommand("compare",
                                     "Run two policies' plans of one case on the GPUs: is "
                                     "the simulator's bit-identity prediction right?");
  addCaseOptions(cmd, o->c);
  cmd->add_option("--against", o->against, "the policy compared with --policy")
      ->capture_default_str();
  cmd->add_option("--numeric", o->numeric, "numeric mode: exact|real")->capture_default_str();
  cmd->add_option("--hidden", o->hidden, "row width of the numeric model")->capture_default_str();
  cmd->add_option("--inner", o->inner, "inner width of every stage")->capture_default_str();
  cmd->add_option("--json", o->json, "write the comparison as one JSON object to this file");
  return {cmd, [o, &command_line] { return runCompare(*o, command_line); }};
}

}  // namespace seam::tools
