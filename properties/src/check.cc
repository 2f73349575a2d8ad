#include "seam/properties/check.h"

#include <map>
#include <string>
#include <tuple>

namespace seam::properties {

bool PlanVerdict::holds() const {
  for (const PropertyVerdict& p : properties) {
    if (!p.holds) return false;
  }
  return true;
}

std::optional<Violation> PlanVerdict::firstViolation() const {
  for (const PropertyVerdict& p : properties) {
    if (p.first) return p.first;
  }
  return std::nullopt;
}

namespace {

std::string handoffText(const Handoff& h) {
  return std::string(rowKindName(h.rows)) + " rows, owes " + std::string(sumGroupName(h.owes)) +
         ", completed by " + std::string(completerName(h.completer)) +
         (h.residual ? ", with residual" : ", no residual");
}

int communicatorOf(const Topology& topo, Axis axis, int rank) { return topo.communicator(axis, rank); }

}  // namespace

std::vector<Violation> checkBoundariesAgree(const Plan& plan) {
  std::vector<Violation> out;
  for (const Boundary& b : plan.boundaries) {
    if (b.exit == b.entry) continue;
    Violation v;
    v.property = Property::kBoundariesAgree;
    v.cls = ViolationClass::kBoundaryDisagrees;
    v.stack = b.stack;
    v.stage = b.to;
    v.layer = b.to;
    v.phase = Phase::kEntry;
    v.detail = "boundary " + std::to_string(b.from) + " -> " + std::to_string(b.to) + ": the exit hands on " +
               handoffText(b.exit) + " but the entry expects " + handoffText(b.entry);
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<Violation> checkCollectiveSequences(const Plan& plan) {
  std::vector<Violation> out;
  const Topology topo(plan.source.config);
  // communicator -> rank -> sequence of (kind, bytes, op index)
  std::map<int, std::map<int, std::vector<std::tuple<OpKind, std::int64_t, int>>>> seqs;
  for (int r = 0; r < plan.world(); ++r) {
    const auto& ops = plan.ranks[r];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op& op = ops[i];
      if (!communicates(op.kind) || !op.hasGroup() || op.kind == OpKind::kSend || op.kind == OpKind::kRecv) continue;
      if (topo.groupSize(op.groupAxis()) == 1) continue;
      seqs[communicatorOf(topo, op.groupAxis(), r)][r].emplace_back(op.kind, op.bytes, i);
    }
  }
  for (const auto& [comm, by_rank] : seqs) {
    // Every member of the communicator must appear, with the same sequence.
    const int axis = comm / Topology::kCommunicatorStride;
    const int rep = by_rank.begin()->first;
    const auto& members = topo.groupOf(static_cast<Axis>(axis), rep);
    const auto& ref = by_rank.begin()->second;
    for (int m : members) {
      auto it = by_rank.find(m);
      const std::vector<std::tuple<OpKind, std::int64_t, int>> empty;
      const auto& seq = it == by_rank.end() ? empty : it->second;
      const size_t n = std::max(seq.size(), ref.size());
      for (size_t k = 0; k < n; ++k) {
        const bool same = k < seq.size() && k < ref.size() && std::get<0>(seq[k]) == std::get<0>(ref[k]) &&
                          std::get<1>(seq[k]) == std::get<1>(ref[k]);
        if (same) continue;
        Violation v;
        v.property = Property::kCollectivesMatch;
        v.cls = ViolationClass::kCollectiveMismatch;
        v.rank = m;
        const auto describe = [](const std::vector<std::tuple<OpKind, std::int64_t, int>>& s, size_t k) {
          if (k >= s.size()) return std::string("nothing");
          return std::string(opName(std::get<0>(s[k]))) + " of " + std::to_string(std::get<1>(s[k])) + " bytes";
        };
        if (k < seq.size()) {
          const Op& op = plan.ranks[m][std::get<2>(seq[k])];
          v.op_index = std::get<2>(seq[k]);
          v.stack = op.stack;
          v.layer = op.layer;
          v.stage = op.stage;
          v.phase = op.phase;
          v.op = op.kind;
        }
        v.detail = "collective #" + std::to_string(k) + " on " + std::string(axisName(static_cast<Axis>(axis))) +
                   ": rank " + std::to_string(rep) + " issues " + describe(ref, k) + ", rank " + std::to_string(m) +
                   " issues " + describe(seq, k);
        out.push_back(std::move(v));
        break;
      }
      if (!out.empty()) return out;
    }
  }
  return out;
}

PlanVerdict checkPlan(const Plan& plan, Ledger& ledger, Depth depth) {
  PlanVerdict verdict;
  for (Property p : kPlanProperties) verdict.properties.push_back({p, true, true, std::nullopt});
  auto slot = [&](Property p) -> PropertyVerdict& {
    for (PropertyVerdict& v : verdict.properties) {
      if (v.property == p) return v;
    }
    return verdict.properties.front();
  };
  auto record = [&](const Violation& v) {
    PropertyVerdict& pv = slot(v.property);
    pv.holds = false;
    if (!pv.first) pv.first = v;
  };
  for (const Violation& v : checkBoundariesAgree(plan)) record(v);
  if (depth == Depth::kFirst && !verdict.holds()) return verdict;
  for (const Violation& v : checkCollectiveSequences(plan)) record(v);
  if (depth == Depth::kFirst && !verdict.holds()) return verdict;
  LedgerOptions options;
  options.max_violations = depth == Depth::kFirst ? 1 : 256;
  const LedgerResult result = ledger.replay(plan, options);
  verdict.ops_executed = result.ops_executed;
  bool deadlocked = false;
  for (const Violation& v : result.violations) {
    record(v);
    deadlocked = deadlocked || v.cls == ViolationClass::kDeadlock;
  }
  if (deadlocked) {
    // The replay stopped: properties it had not yet judged stay unjudged.
    for (PropertyVerdict& pv : verdict.properties) {
      if (pv.holds && pv.property != Property::kBoundariesAgree) pv.judged = false;
    }
  }
  return verdict;
}

}  // namespace seam::properties
