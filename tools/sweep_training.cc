#include "command.h"
#include "seam/properties/training_sweep.h"
#include "seam/reports/training_view.h"
#include "sweep_options.h"

namespace seam::tools {

int sweepTraining(const SweepOptions& o) {
  if (!o.pattern.empty())
    return fail(Status::invalid("--family training sweeps presets, not a --pattern"));
  const FilterOptions& f = o.fixed;
  if (f.pp || f.tp || f.dp || f.cp || f.ep || f.moe_dp) {
    return fail(Status::invalid(
        "--family training sweeps every config of --world; fixed leaves are not supported"));
  }
  if (o.policy != "declared") return fail(Status::invalid("--policy applies to --family serving"));
  properties::TrainingSweepSpec spec;
  spec.world = o.world;
  auto space = trainingSpace(o.model, o.layout);
  if (!space) return fail(space.status());
  spec.models = space->models;
  spec.layouts = space->layouts;
  auto jobs = workerThreads(o.jobs);
  if (!jobs) return fail(jobs.status());
  spec.jobs = *jobs;
  auto r = properties::runTrainingSweep(spec);
  if (!r) return fail(r.status());
  std::cout << reports::renderTrainingSweep(spec, *r);
  return r->violated == 0 ? kExitOk : kExitPropertyFailed;
}

}  // namespace seam::tools
