// Fuzzes the JSON-lines engine-trace reader (reports/trace.h importTrace,
// what `seam check --trace`, `seam diff --trace` and `seam import` read) and
// the checks `seam check --trace` then runs on whatever it accepted.
// Input: one byte choosing the case the trace is read onto (kCases), then
// the trace file. Contracts: a refused trace is one line, never an internal
// error; an accepted trace has only ops on the case's ranks, each with the
// layer of its stage, and replaying
// it through properties 1-6, 8 and 9 never crashes, however wrong its ops are.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "seam/properties/check.h"
#include "seam/reports/trace.h"
#include "seam/sim/model/case_spec.h"
#include "seam/sim/policy/policy.h"

namespace {

using seam::fuzz::require;

/// The cases a trace is read onto: the cases of tests/reports/trace_test.cc
/// (an MTP tail, DP attention with an idle shard, a pipeline cut), one with
/// MoE expert parallelism over all-to-all, and two-stage decoder layers
/// (attention then FFN, DeepSeek-style MTP layer).
struct TraceCase {
  const char* pattern;
  const char* family;
  int pp, tp, dp, ep;
  const char* tokens;
  const char* a2a;
};
constexpr std::array<TraceCase, 5> kCases = {{
    {"M-*E-/*E", "single-stage", 1, 2, 1, 1, "4", "none"},
    {"M-M*E", "single-stage", 1, 4, 2, 1, "3,0", "none"},
    {"M-|*E", "single-stage", 2, 2, 1, 1, "2", "none"},
    {"ME*E", "single-stage", 1, 2, 1, 2, "3", "deepep"},
    {"*-*E/*E", "two-stage", 1, 2, 2, 1, "2,1", "none"},
}};

std::vector<seam::Plan> skeletons() {
  std::vector<seam::Plan> out;
  for (const TraceCase& t : kCases) {
    seam::CaseSpec o;
    o.pattern = t.pattern;
    o.family = t.family;
    o.pp = t.pp;
    o.tp = t.tp;
    o.dp = t.dp;
    o.ep = t.ep;
    o.tokens = t.tokens;
    o.a2a = t.a2a;
    auto c = seam::buildCase(o);
    require(c.hasValue(), "a skeleton case is refused");
    auto plan = seam::buildPlan(*c, seam::PolicyKind::kDeclared);
    require(plan.hasValue(), "a skeleton plan is refused");
    out.push_back(std::move(*plan));
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<seam::Plan> kSkeletons = skeletons();
  static const std::string kPath = seam::fuzz::scratchPath("trace.jsonl");
  if (size == 0) return 0;
  const seam::Plan& skeleton = kSkeletons[data[0] % kSkeletons.size()];
  seam::fuzz::writeFile(kPath, data + 1, size - 1);
  auto plan = seam::reports::importTrace(kPath, skeleton);
  std::remove(kPath.c_str());
  if (!plan) {
    seam::fuzz::requireOneLineError(plan.status());
    return 0;
  }
  require(plan->world() == skeleton.world(), "an imported trace changed the world");
  // Every accepted op carries the layer the planner gives its stage, read
  // here from the skeleton's own ops (not from the reader's rule).
  for (const auto& ops : plan->ranks) {
    for (const seam::Op& op : ops) {
      for (const auto& planned : skeleton.ranks) {
        for (const seam::Op& p : planned) {
          require(p.stack != op.stack || p.stage != op.stage || p.layer == op.layer,
                  "an accepted trace line names another layer than its stage's");
        }
      }
    }
  }
  seam::Ledger ledger;
  (void)seam::properties::checkPlan(*plan, ledger, seam::properties::Depth::kAll);
  return 0;
}
