// The watchdog's decisions (executor.h), kept free of CUDA so that they are
// tested on machines without a GPU: when a run counts as stalled, and the
// report that names where every rank was.
#include <string>

#include "seam/backend/executor.h"

namespace seam::backend {

bool StallDetector::update(const std::vector<std::int64_t>& progress, double now) {
  if (progress != last_ || last_.empty()) {
    last_ = progress;
    last_change_ = now;
  }
  last_seen_ = now;
  return now - last_change_ >= timeout_;
}

namespace {

std::string rankList(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ranks[i]);
  }
  s += ']';
  return s;
}

std::string fixed1(double v) {
  const long tenths = static_cast<long>(v * 10 + 0.5);
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10);
}

}  // namespace

std::string formatHangReport(const Plan& plan, const std::vector<RankPosition>& positions,
                             double idle_seconds, int total_iterations) {
  const Topology topo(plan.source.config);
  std::string out = "no progress for " + fixed1(idle_seconds) + " s:";
  for (size_t i = 0; i < positions.size(); ++i) {
    const RankPosition& p = positions[i];
    out += (i ? "; rank " : " rank ") + std::to_string(p.rank);
    if (p.setting_up) {
      out += " is creating its communicators";
      continue;
    }
    const auto& ops = plan.ranks[p.rank];
    if (p.finished || p.op_index < 0 || p.op_index >= static_cast<int>(ops.size())) {
      out += " has finished";
      continue;
    }
    const Op& op = ops[p.op_index];
    out += " waits in op " + std::to_string(p.op_index) + " (" + std::string(opName(op.kind));
    if (op.hasGroup()) {
      out += " on " + std::string(axisName(op.groupAxis())) + " " +
             rankList(topo.groupOf(op.groupAxis(), p.rank));
    }
    out += ", stack " + std::to_string(op.stack) + " layer " + std::to_string(op.layer) +
           " stage " + std::to_string(op.stage) + " " + std::string(phaseName(op.phase)) +
           ") in iteration " + std::to_string(p.iteration + 1) + " of " +
           std::to_string(total_iterations);
  }
  return out;
}

}  // namespace seam::backend
