#include "seam/properties/check.h"

#include <array>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "seam/properties/call_arguments.h"
#include "seam/sim/replay/judge_dp.h"
#include "seam/sim/replay/judge_rows.h"
#include "static_judges.h"

namespace seam::properties {

static_assert(std::is_trivially_copyable_v<Op>, "SameOps compares ops as bytes");

void SameOps::compare(const Plan& plan) {
  same_.assign(plan.ranks.size(), 0);
  for (size_t r = 1; r < plan.ranks.size(); ++r) {
    const std::vector<Op>& ops = plan.ranks[r];
    const std::vector<Op>& before = plan.ranks[r - 1];
    same_[r] =
        ops.size() == before.size() &&
        (ops.empty() || std::memcmp(ops.data(), before.data(), ops.size() * sizeof(Op)) == 0);
  }
}

bool PlanVerdict::holds() const {
  for (const PropertyVerdict& p : properties) {
    if (!p.holds) return false;
  }
  return true;
}

std::optional<Violation> PlanVerdict::firstViolation() const {
  if (earliest) return earliest;
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
    v.detail = "boundary " + std::to_string(b.from) + " -> " + std::to_string(b.to) +
               ": the exit hands on " + handoffText(b.exit) + " but the entry expects " +
               handoffText(b.entry);
    out.push_back(std::move(v));
  }
  return out;
}

namespace {

/// The DP buffers property 4 lowers DP ops on, from the judges' geometry of
/// the case (judge_dp.h), never the planner's DpGeometry: for the batch and
/// each TBO half, the buffer in the judges' padding mode and in the other
/// (a plan may name either), built at the lane's first DP op.
class DpBuffers {
 public:
  DpBuffers(const Plan& plan, const JudgeGeometry& g) : plan_(plan), g_(g) {}

  /// The buffer of `half` whose gathered rows number `full_rows` (the
  /// judges' mode first); nullptr when neither mode's has.
  const JudgeDpBuffer* ofFullRows(Half half, int full_rows) {
    auto& lane = lanes_[static_cast<int>(half)];
    if (!lane) {
      const Case& c = plan_.source;
      const std::vector<int> n = tokensOf(half);
      const DpPadding other =
          g_.padding == DpPadding::kMaxLen ? DpPadding::kSumLen : DpPadding::kMaxLen;
      // A half runs on its tbo_padded_len where the split is the judges'.
      const bool padded = half != Half::kWhole && !plan_.tbo_split.empty() && !g_.tbo_split.empty();
      const std::vector<int> none;
      const std::vector<int>& held = padded ? g_.tbo_rows[half == Half::kA ? 0 : 1] : none;
      lane.emplace(judgeDpBuffer(c.config, n, g_.padding, c.flags.dp_gatherv, g_.cp_layout,
                                 g_.attention_pad, held),
                   judgeDpBuffer(c.config, n, other, c.flags.dp_gatherv, g_.cp_layout,
                                 g_.attention_pad, held));
    }
    if (lane->first.rows == full_rows) return &lane->first;
    if (lane->second.rows == full_rows) return &lane->second;
    return nullptr;
  }

 private:
  /// Each DP shard's tokens in `half`. Whether the batch runs split is the
  /// plan's (its ops run on halves); where it splits is the judges' (the
  /// ledger's rule, replay_run.h).
  std::vector<int> tokensOf(Half half) const {
    const std::vector<int>& n = plan_.source.batch.tokens;
    if (half == Half::kWhole) return n;
    const std::vector<int>& split =
        plan_.tbo_split.empty() || g_.tbo_split.empty() ? plan_.tbo_split : g_.tbo_split;
    std::vector<int> out(n.size(), 0);
    for (size_t d = 0; d < n.size() && d < split.size(); ++d)
      out[d] = half == Half::kA ? split[d] : n[d] - split[d];
    return out;
  }

  const Plan& plan_;
  const JudgeGeometry& g_;
  std::optional<std::pair<JudgeDpBuffer, JudgeDpBuffer>> lanes_[kHalfLanes];
};

/// Calls fn(rank, axis, kind, bytes, op index) for every collective a rank
/// issues on a group of more than one rank, in the rank's order; a DP op by
/// the collectives it really issues, group by group (an idle rank's too):
/// the judges' lowering (judgeLowerDp) in the padding mode its rows name, on
/// its half's batch under TBO. Groups, communicators (communicator(axis,
/// rank)) and the rank's place are the judges' (JudgeGroups), not the
/// planner's Topology. A DP op whose rows name neither mode is the ledger's
/// to report. A TBO half's calls are other calls than the other half's or
/// the batch's: their kind is offset by kOpKindCount per half.
class CollectiveWalk {
 public:
  CollectiveWalk(const Plan& plan, const JudgeGroups& groups, const JudgeGeometry& g)
      : plan_(plan), groups_(groups), g_(g), dp_(plan, g) {
    for (int a = 0; a < kAxisCount; ++a) alone_[a] = groups.groupSize(static_cast<Axis>(a)) == 1;
  }

  /// Rank `r`'s collectives; true when it has a DP op that communicates (its
  /// collectives depend on the rank's place, not on its ops alone).
  template <class Fn>
  bool rank(int r, Fn fn) {
    const KindFacts& kinds = kindFacts();
    bool dp_ops = false;
    const auto& ops = plan_.ranks[r];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op& op = ops[i];
      if (!kinds.communicating(op.kind)) continue;
      const int call = static_cast<int>(op.half) * kOpKindCount;
      if (kinds.dpOp(op.kind)) {
        dp_ops = true;
        const JudgeDpBuffer* buffer = dp_.ofFullRows(op.half, dpFullRowsOf(op));
        if (buffer == nullptr) continue;
        judgeLowerDp(op, groups_.config(), *buffer, groups_.rankIn(Axis::kAttnTp, r),
                     groups_.rankIn(Axis::kAttnCp, r), groups_.rankIn(Axis::kAttnDp, r),
                     g_.row_bytes, &steps_);
        for (const DpStep& s : steps_) {
          if (!isCollectiveStep(s.kind) || alone_[static_cast<size_t>(s.axis)]) continue;
          fn(r, static_cast<Axis>(s.axis), call + static_cast<int>(s.opKind()), s.bytes, i);
        }
        continue;
      }
      if (!op.hasGroup() || op.kind == OpKind::kSend || op.kind == OpKind::kRecv) continue;
      if (alone_[static_cast<size_t>(op.axis)]) continue;
      fn(r, op.groupAxis(), call + static_cast<int>(op.kind), op.bytes, i);
    }
    return dp_ops;
  }

 private:
  const Plan& plan_;
  const JudgeGroups& groups_;
  const JudgeGeometry& g_;
  DpBuffers dp_;
  DpLowering steps_;
  std::array<bool, kAxisCount> alone_{};  // [axis]: its groups have one rank
};

/// True when every member of every communicator issues the same sequence
/// of (kind, bytes): compared as a hash and a count per (communicator axis,
/// rank), without building the sequences (the sweep's hot path; a plan that
/// fails it is compared call by call to say where). A rank with the ops of
/// the rank before and no DP op issues, on every axis, the calls of the rank
/// before: its hash and count are copied.
bool sequencesAgree(const Plan& plan, const JudgeGroups& groups, const JudgeGeometry& g,
                    const SameOps& same) {
  const int world = plan.world();
  std::vector<std::uint64_t> hash(static_cast<size_t>(kAxisCount) * world, 0);
  std::vector<int> count(hash.size(), 0);
  std::array<bool, kAxisCount> used{};
  // The axis of each axis's communicator (an axis whose group is the whole
  // TP group shares the TP group object): the same on every rank.
  std::array<int, kAxisCount> object{};
  for (int a = 0; a < kAxisCount; ++a)
    object[a] = groups.communicator(static_cast<Axis>(a), 0) / JudgeGroups::kCommunicatorStride;
  CollectiveWalk walk(plan, groups, g);
  bool dp_ops = true;  // whether the rank before has DP ops
  for (int r = 0; r < world; ++r) {
    if (same.asBefore(r) && !dp_ops) {
      for (int axis = 0; axis < kAxisCount; ++axis) {
        const size_t k = static_cast<size_t>(axis) * world + r;
        hash[k] = hash[k - 1];
        count[k] = count[k - 1];
      }
      continue;
    }
    dp_ops = walk.rank(r, [&](int, Axis on, int call, std::int64_t bytes, int) {
      const int axis = object[static_cast<int>(on)];
      const size_t k = static_cast<size_t>(axis) * world + r;
      std::uint64_t h = hash[k] ^ (static_cast<std::uint64_t>(call) * 0x9e3779b97f4a7c15ULL +
                                   static_cast<std::uint64_t>(bytes) * 0xc2b2ae3d27d4eb4fULL);
      h *= 0xbf58476d1ce4e5b9ULL;
      hash[k] = h ^ (h >> 31);
      ++count[k];
      used[axis] = true;
    });
  }
  // Every rank against the first member of its group on the axis.
  for (int axis = 0; axis < kAxisCount; ++axis) {
    if (!used[axis]) continue;
    const size_t base = static_cast<size_t>(axis) * world;
    for (int r = 0; r < world; ++r) {
      const size_t first = base + groups.groupOf(static_cast<Axis>(axis), r).front();
      if (hash[base + r] != hash[first] || count[base + r] != count[first]) return false;
    }
  }
  return true;
}

}  // namespace

std::vector<Violation> checkCollectiveSequences(const Plan& plan) {
  return checkCollectiveSequences(plan, judgeGeometry(plan.source));
}

std::vector<Violation> checkCollectiveSequences(const Plan& plan, const JudgeGeometry& g) {
  JudgeScratch scratch;
  scratch.same_ops.compare(plan);
  return checkCollectiveSequences(plan, g, scratch);
}

std::vector<Violation> checkCollectiveSequences(const Plan& plan, const JudgeGeometry& g,
                                                JudgeScratch& scratch) {
  std::vector<Violation> out;
  const JudgeGroups& groups = scratch.groups(plan.source.config);
  if (sequencesAgree(plan, groups, g, scratch.same_ops)) return out;
  // communicator -> rank -> sequence of (kind, bytes, op index)
  std::map<int, std::map<int, std::vector<std::tuple<int, std::int64_t, int>>>> seqs;
  CollectiveWalk walk(plan, groups, g);
  for (int r = 0; r < plan.world(); ++r) {
    walk.rank(r, [&](int rank, Axis on, int call, std::int64_t bytes, int i) {
      seqs[groups.communicator(on, rank)][rank].emplace_back(call, bytes, i);
    });
  }
  for (const auto& [comm, by_rank] : seqs) {
    // Every member of the communicator must appear, with the same sequence.
    const int axis = comm / JudgeGroups::kCommunicatorStride;
    const int rep = by_rank.begin()->first;
    const auto& members = groups.groupOf(static_cast<Axis>(axis), rep);
    const auto& ref = by_rank.begin()->second;
    for (int m : members) {
      auto it = by_rank.find(m);
      const std::vector<std::tuple<int, std::int64_t, int>> empty;
      const auto& seq = it == by_rank.end() ? empty : it->second;
      const size_t n = std::max(seq.size(), ref.size());
      for (size_t k = 0; k < n; ++k) {
        const bool same = k < seq.size() && k < ref.size() &&
                          std::get<0>(seq[k]) == std::get<0>(ref[k]) &&
                          std::get<1>(seq[k]) == std::get<1>(ref[k]);
        if (same) continue;
        Violation v;
        v.property = Property::kCollectivesMatch;
        v.cls = ViolationClass::kCollectiveMismatch;
        v.rank = m;
        const auto describe = [&plan](const std::vector<std::tuple<int, std::int64_t, int>>& s,
                                      size_t k, int rank) {
          if (k >= s.size()) return std::string("nothing");
          const Op& from = plan.ranks[rank][std::get<2>(s[k])];
          const int call = std::get<0>(s[k]);
          const std::string half =
              call >= kOpKindCount
                  ? "half " + std::string(halfName(static_cast<Half>(call / kOpKindCount))) + "'s "
                  : "";
          return half + std::string(opName(static_cast<OpKind>(call % kOpKindCount))) + " of " +
                 std::to_string(std::get<1>(s[k])) + " bytes" +
                 (isDpOp(from.kind) ? " (of " + std::string(opName(from.kind)) + ")" : "");
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
        v.detail = "collective #" + std::to_string(k) + " on " +
                   std::string(axisName(static_cast<Axis>(axis))) + ": rank " +
                   std::to_string(rep) + " issues " + describe(ref, k, rep) + ", rank " +
                   std::to_string(m) + " issues " + describe(seq, k, m);
        out.push_back(std::move(v));
        break;
      }
      if (!out.empty()) return out;
    }
  }
  return out;
}

PlanVerdict checkPlan(const Plan& plan, Ledger& ledger, Depth depth) {
  JudgeScratch scratch;
  return checkPlan(plan, ledger, scratch, depth);
}

PlanVerdict checkPlan(const Plan& plan, Ledger& ledger, JudgeScratch& scratch, Depth depth) {
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
  // After each judge, the first to have failed fixes `earliest` (the lowest
  // property among what it found, as Depth::kFirst would stop there).
  auto settle = [&] {
    if (!verdict.earliest && !verdict.holds()) verdict.earliest = verdict.firstViolation();
  };
  // A trace's boundaries are judged from its own ops: the skeleton's
  // declarations it was imported onto are the policy's, not the trace's.
  if (plan.policy != "trace") {
    for (const Violation& v : checkBoundariesAgree(plan)) record(v);
  }
  settle();
  if (depth == Depth::kFirst && !verdict.holds()) return verdict;
  // Every judge after property 1 reads the case through the judges' geometry.
  const JudgeGeometry geometry = judgeGeometry(plan.source);
  scratch.same_ops.compare(plan);
  const SameOps& same = scratch.same_ops;
  for (const Violation& v : checkCollectiveSequences(plan, geometry, scratch)) record(v);
  for (const Violation& v : checkCallArguments(plan, scratch)) record(v);
  settle();
  if (depth == Depth::kFirst && !verdict.holds()) return verdict;
  LedgerOptions options;
  options.max_violations = depth == Depth::kFirst ? 1 : 256;
  const LedgerResult result = ledger.replay(plan, options);
  verdict.ops_executed = result.ops_executed;
  if (!verdict.earliest && !result.violations.empty()) verdict.earliest = result.violations.front();
  bool deadlocked = false;
  for (const Violation& v : result.violations) {
    record(v);
    deadlocked = deadlocked || v.cls == ViolationClass::kDeadlock;
  }
  if (!deadlocked && (depth == Depth::kAll || verdict.holds())) {
    // The judges that read the ops against the case, after the ledger so that
    // a fault the ledger sees keeps its first violation there.
    const auto judge = [&](const std::vector<Violation>& found) {
      for (const Violation& v : found) record(v);
      settle();
      return depth == Depth::kFirst && !verdict.holds();
    };
    if (judge(checkPlanGeometry(plan, geometry)) || judge(checkCallSizes(plan, geometry, same)) ||
        judge(checkRequestedSnapshots(plan, geometry, same)) ||
        judge(checkResidualOnce(plan, same)) || judge(checkOpBoundaries(plan, same))) {
      return verdict;
    }
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
