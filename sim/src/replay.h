// Private to sim/: the replay of a plan on every rank, over a value domain.
// The op semantics below are the one definition of what each op kind does
// to rows (STYLE 6): the ledger runs them over symbolic domains
// (ledger_domains.h), the numeric CPU executor over rows of numbers
// (numeric_domain.h), and the CUDA backend follows them. The DP ops run
// through their lowering (dp_gather.h): SGLang's collectives, step by step.
#pragma once

#include <algorithm>
#include <cassert>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "ledger_domains.h"
#include "seam/sim/dp_gather.h"
#include "seam/sim/ledger.h"
#include "seam/sim/rows.h"
#include "seam/sim/tbo.h"

namespace seam {
namespace ledger_detail {

inline int communicatorOf(const Topology& topo, Axis axis, int rank) { return topo.communicator(axis, rank); }

inline std::string rankList(const std::vector<int>& g) {
  std::string s = "[";
  for (size_t i = 0; i < g.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(g[i]);
  }
  s += ']';
  return s;
}

/// What decides the order in which an executor adds the members' rows of
/// one reduction: the call (op or DP step kind and the layout it reduces),
/// the kind of communicator and its row count. NCCL picks its algorithm and
/// each element's order of additions from these; two plans issuing the same
/// call on the same rows get the same bits (the arithmetic domain of
/// bit_identity.h keys on it; the other domains add in member order). The
/// groups of one axis are taken to be alike (same size and stride on one
/// NVSwitch host), so replicas reducing over their own groups agree.
struct ReduceCall {
  int kind = 0;          ///< OpKind, or kDpStepTag + DpStepKind, with the input layout
  int communicator = 0;  ///< the communicator's axis (Topology::communicator / kCommunicatorStride)
  int rows = 0;          ///< rows per member in the call
};
inline constexpr int kDpStepTag = 1 << 12;

template <class Domain>
class Replay {
 public:
  using Value = typename Domain::Value;

  struct Buffer {
    RowKind kind = RowKind::kNone;
    bool present = false;
    /// For full rows: the padding layout the rows were written in. A plan
    /// that gathers in one mode and scatters in the other reads wrong slots.
    DpPadding full_mode = DpPadding::kMaxLen;
    std::vector<Value> v;
  };
  struct Snap {
    int stack, stage;
    Buffer buf;
  };
  /// A TBO plan's lanes not in use on a rank (indexed by lane).
  struct Parked {
    Buffer hidden[kHalfLanes], residual[kHalfLanes];
  };
  struct RankState {
    /// The hidden state and residual of the lane (tbo.h: the whole batch or
    /// a half) the rank's current op runs on; the other lanes' are parked.
    Buffer hidden, residual;
    int lane = 0;
    Buffer branch;  ///< a branch's copy of its input, then its contribution until merged
    std::vector<Snap> snaps;
    size_t pc = 0;
    bool final_done[2] = {false, false};
    Buffer finals[2];  ///< the final norm's output per stack (numeric runs read it)
  };

  Domain& domain() { return domain_; }
  const std::vector<RankState>& ranks() const { return ranks_; }
  const RowMap& rows() const { return *rows_; }

  /// The rows a finished run reports, in rank order: first every snapshot row
  /// of the main stack, on_snapshot(stage, token, value), then every final
  /// norm's row, on_final(stack, token, value). Padding rows are skipped.
  template <class OnFinal, class OnSnapshot>
  void visitOutputs(OnFinal&& on_final, OnSnapshot&& on_snapshot) const {
    for (size_t rank = 0; rank < ranks_.size(); ++rank) {
      for (const Snap& snap : ranks_[rank].snaps) {
        if (snap.stack != 0 || snap.stage < 0) continue;
        const auto& toks = rows_->tokens(snap.buf.kind, static_cast<int>(rank));
        for (size_t i = 0; i < toks.size() && i < snap.buf.v.size(); ++i) {
          if (toks[i] >= 0) on_snapshot(snap.stage, toks[i], snap.buf.v[i]);
        }
      }
    }
    for (size_t rank = 0; rank < ranks_.size(); ++rank) {
      for (int stack = 0; stack < 2; ++stack) {
        if (!ranks_[rank].final_done[stack]) continue;
        const Buffer& buf = ranks_[rank].finals[stack];
        const auto& toks = rows_->tokens(buf.kind, static_cast<int>(rank));
        for (size_t i = 0; i < toks.size() && i < buf.v.size(); ++i) {
          if (toks[i] >= 0) on_final(stack, toks[i], buf.v[i]);
        }
      }
    }
  }

  LedgerResult run(const Plan& plan, const LedgerOptions& options) {
    plan_ = &plan;
    options_ = options;
    result_ = LedgerResult{};
    topo_.emplace(plan.source.config);
    // Lane 0: the batch; lanes 1 and 2: the TBO halves, tokens numbered as in the batch.
    const DpPadding other = plan.padding == DpPadding::kMaxLen ? DpPadding::kSumLen : DpPadding::kMaxLen;
    map_lane_ = 0;
    rows_.emplace(*topo_, plan.source.batch, plan.padding, plan.cp_layout, nullptr, plan.local_split);
    other_rows_.emplace(*topo_, plan.source.batch, other, plan.cp_layout, nullptr, plan.local_split);
    dp_.emplace(plan.source.config, plan.source.batch, plan.padding, plan.source.flags.dp_gatherv, plan.cp_layout);
    tbo_ = !plan.tbo_split.empty();
    for (int lane = 1; tbo_ && lane < kHalfLanes; ++lane) {
      const Half half = static_cast<Half>(lane);
      const Batch batch = tboHalfBatch(plan.source.batch, plan.tbo_split, half);
      const std::vector<int> first = tboFirstTokens(plan.source.batch, plan.tbo_split, half);
      Lane& l = parked_lanes_[lane];
      l.rows.emplace(*topo_, batch, plan.padding, plan.cp_layout, &first, plan.local_split);
      l.other_rows.emplace(*topo_, batch, other, plan.cp_layout, &first, plan.local_split);
      l.dp.emplace(plan.source.config, batch, plan.padding, plan.source.flags.dp_gatherv, plan.cp_layout);
    }
    row_bytes_ = activationRowBytes(plan.source.model.shape);
    const int world = plan.world();
    stacks_.assign(2, {});
    for (const StageInfo& s : plan.stages) {
      StackShape& shape = stacks_[s.stack];
      const int index = static_cast<int>(shape.shards.size());
      shape.shards.push_back(s.shards);
      shape.joins_at.push_back(s.joins_at < 0 ? index + 1 : s.joins_at);
    }
    // Stages are stored stack 0 first, each stack in order.
    stage_base_[0] = 0;
    stage_base_[1] = static_cast<int>(stacks_[0].shards.size());
    if (stacks_[1].shards.empty()) stacks_.resize(1);
    domain_.prepare(stacks_, std::max(1, rows_->totalTokens()));
    ranks_.resize(world);
    if (tbo_) {
      parked_.resize(world);
      for (Parked& p : parked_) {
        for (int lane = 0; lane < kHalfLanes; ++lane) p.hidden[lane].present = p.residual[lane].present = false;
      }
    }
    for (RankState& st : ranks_) {
      st.hidden.present = false;
      st.residual.present = false;
      st.lane = 0;
      st.branch.present = false;
      st.snaps.clear();
      st.pc = 0;
      st.final_done[0] = st.final_done[1] = false;
    }
    // The embedding: complete on attention rows (VocabParallelEmbedding reduces itself).
    for (int r = 0; r < world; ++r) {
      Buffer& h = ranks_[r].hidden;
      h.kind = RowKind::kAttention;
      h.present = true;
      const auto& toks = rows_->tokens(RowKind::kAttention, r);
      h.v.resize(toks.size());
      // CP shard padding rows hold no token.
      for (size_t i = 0; i < toks.size(); ++i) h.v[i] = toks[i] == kPaddingRow ? freshJunk() : domain_.embed(0, toks[i]);
    }
    mailbox_.clear();
    junk_ = 0;
    schedule();
    useLane(0);
    if (!stopped()) finalChecks();
    return std::move(result_);
  }

 private:
  // ---- violations ---------------------------------------------------------
  bool stopped() const { return static_cast<int>(result_.violations.size()) >= options_.max_violations; }

  Violation at(int rank, Property p, ViolationClass c, std::string detail) {
    Violation v;
    v.property = p;
    v.cls = c;
    v.rank = rank;
    if (rank >= 0) {
      const auto& ops = plan_->ranks[rank];
      const size_t pc = std::min(ranks_[rank].pc, ops.empty() ? 0 : ops.size() - 1);
      if (!ops.empty()) {
        const Op& op = ops[pc];
        v.op_index = static_cast<int>(pc);
        v.stack = op.stack;
        v.layer = op.layer;
        v.stage = op.stage;
        v.phase = op.phase;
        v.op = op.kind;
      }
    }
    v.detail = std::move(detail);
    return v;
  }
  void report(Violation v) { result_.violations.push_back(std::move(v)); }

  void layoutViolation(int rank, Property p, const std::string& what) {
    report(at(rank, p, ViolationClass::kLayoutMismatch, what));
  }

  /// Checks every token row of `b` against the expected value; reports the first wrong row.
  bool checkRows(int rank, const Buffer& b, Expect e, int stack, int stage, Property p) {
    const auto& toks = tokensOf(b, rank);
    for (size_t i = 0; i < b.v.size() && i < toks.size(); ++i) {
      const int t = toks[i];
      if (t == kPaddingRow) continue;
      if (domain_.holds(b.v[i], e, stack, stage, t)) continue;
      Violation v = at(rank, p, ViolationClass::kNeverCompleted, "");
      v.token = t;
      if constexpr (std::is_same_v<Domain, ExactDomain>) {
        const Explanation x = domain_.explain(b.v[i], e, stack, stage, t);
        v.cls = x.cls;
        v.term = x.term;
        v.coefficient = x.coefficient;
        v.detail = describe(x, e, stack, stage, t);
      } else {
        v.detail = "row of token " + std::to_string(t) + " is not the expected value";
      }
      report(std::move(v));
      return false;
    }
    return true;
  }

  static std::string describe(const Explanation& x, Expect e, int stack, int stage, int t) {
    const std::string want = e == Expect::kComplete
                                 ? "the complete hidden state before stage " + std::to_string(stage)
                                 : "the normed input of stage " + std::to_string(stage);
    const std::string tok = "token " + std::to_string(t);
    switch (x.cls) {
      case ViolationClass::kNeverCompleted:
        return tok + " should hold " + want + " but " + x.term + " has coefficient 0: a sum never completed";
      case ViolationClass::kCountedTwice:
        return tok + " should hold " + want + " but " + x.term + " has coefficient " +
               std::to_string(x.coefficient) + ": counted " + std::to_string(x.coefficient) + " times";
      case ViolationClass::kForeignTerm:
        return tok + " should hold " + want + " but holds " + x.term +
               (x.foreign_token >= 0 ? " of token " + std::to_string(x.foreign_token) : "") +
               ": summed over the wrong group or mixed with other rows";
      case ViolationClass::kPaddingLeak:
        return tok + " should hold " + want + " but holds padding (" + x.term + "): a padding row read as a token";
      default: return tok + ": " + x.term;
    }
  }

  // ---- scheduling ---------------------------------------------------------
  void schedule() {
    const int world = plan_->world();
    while (!stopped()) {
      bool progress = false;
      bool all_done = true;
      for (int r = 0; r < world && !stopped(); ++r) progress |= runLocal(r);
      if (stopped()) return;
      for (int r = 0; r < world && !stopped(); ++r) {
        const auto& ops = plan_->ranks[r];
        if (ranks_[r].pc >= ops.size()) continue;
        all_done = false;
        const Op& op = ops[ranks_[r].pc];
        if (op.kind == OpKind::kRecv) {
          progress |= tryRecv(r);
        } else if (communicates(op.kind) && op.kind != OpKind::kSend) {
          progress |= tryCollective(r);
        } else {
          progress = true;  // advanced by a collective run from a lower rank this round
        }
      }
      if (stopped() || all_done) return;
      if (!progress) {
        reportDeadlock();
        return;
      }
    }
  }

  /// Runs rank r's local ops up to its next collective; true if any ran.
  bool runLocal(int r) {
    const auto& ops = plan_->ranks[r];
    bool ran = false;
    RankState& st = ranks_[r];
    while (st.pc < ops.size() && !stopped()) {
      const Op& op = ops[st.pc];
      if (tbo_) activate(r, op.half);
      if (op.kind == OpKind::kSend) {
        doSend(r, op);
      } else if (communicates(op.kind)) {
        // A "collective" on a group of one rank runs locally.
        if (!(op.hasGroup() && topo_->groupSize(op.groupAxis()) == 1 && op.kind != OpKind::kRecv)) break;
        execCollective(topo_->groupOf(op.groupAxis(), r), op);
        if (stopped()) return ran;
      } else {
        execLocal(r, op);
        if (stopped()) return ran;
      }
      ++st.pc;
      ++result_.ops_executed;
      ran = true;
    }
    return ran;
  }

  bool tryCollective(int r) {
    const Op& op = plan_->ranks[r][ranks_[r].pc];
    if (!op.hasGroup()) {
      report(at(r, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                std::string(opName(op.kind)) + " names no group"));
      return false;
    }
    const auto& members = topo_->groupOf(op.groupAxis(), r);
    if (members.front() != r) return false;  // the group's lowest rank runs it
    const int comm = communicatorOf(*topo_, op.groupAxis(), r);
    for (int m : members) {
      const auto& mops = plan_->ranks[m];
      if (ranks_[m].pc >= mops.size()) return false;
      const Op& mop = mops[ranks_[m].pc];
      if (!communicates(mop.kind) || mop.kind == OpKind::kSend || mop.kind == OpKind::kRecv) return false;
      if (!mop.hasGroup() || communicatorOf(*topo_, mop.groupAxis(), m) != comm) return false;
    }
    // Every member waits on this communicator: their calls must agree. The
    // two DP gathers issue the same collectives (their lowerings differ in
    // local steps only; runDpOp compares each collective).
    const auto gather = [](OpKind k) { return k == OpKind::kDpGatherPartial || k == OpKind::kDpGatherReplicate; };
    for (int m : members) {
      const Op& mop = plan_->ranks[m][ranks_[m].pc];
      if (mop.half != op.half) {
        // TBO: each half's collectives are calls of their own, on the same communicator.
        report(at(m, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                  "on " + std::string(axisName(op.groupAxis())) + " " + rankList(members) + " rank " +
                      std::to_string(r) + " issues half " + std::string(halfName(op.half)) + "'s " +
                      std::string(opName(op.kind)) + " while rank " + std::to_string(m) + " issues half " +
                      std::string(halfName(mop.half)) + "'s " + std::string(opName(mop.kind))));
        return false;
      }
      if ((mop.kind != op.kind && !(gather(mop.kind) && gather(op.kind))) || mop.bytes != op.bytes) {
        report(at(m, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                  "on " + std::string(axisName(op.groupAxis())) + " " + rankList(members) + " rank " +
                      std::to_string(r) + " issues " + std::string(opName(op.kind)) + " of " +
                      std::to_string(op.bytes) + " bytes while rank " + std::to_string(m) + " issues " +
                      std::string(opName(mop.kind)) + " of " + std::to_string(mop.bytes) + " bytes"));
        return false;
      }
    }
    if (tbo_) {
      for (int m : members) activate(m, op.half);
    }
    execCollective(members, op);
    if (stopped()) return false;
    for (int m : members) {
      ++ranks_[m].pc;
      ++result_.ops_executed;
    }
    return true;
  }

  void reportDeadlock() {
    const int world = plan_->world();
    for (int r = 0; r < world; ++r) {
      const auto& ops = plan_->ranks[r];
      if (ranks_[r].pc >= ops.size()) continue;
      const Op& op = ops[ranks_[r].pc];
      std::string detail = "rank " + std::to_string(r) + " waits in " + std::string(opName(op.kind));
      if (op.hasGroup()) {
        const auto& members = topo_->groupOf(op.groupAxis(), r);
        detail += " on " + std::string(axisName(op.groupAxis())) + " " + rankList(members);
        for (int m : members) {
          const auto& mops = plan_->ranks[m];
          if (ranks_[m].pc >= mops.size()) {
            detail += " but rank " + std::to_string(m) + " has finished";
            break;
          }
          const Op& mop = mops[ranks_[m].pc];
          if (m != r && (!mop.hasGroup() || communicatorOf(*topo_, mop.groupAxis(), m) !=
                                                 communicatorOf(*topo_, op.groupAxis(), r))) {
            detail += " while rank " + std::to_string(m) + " waits in " + std::string(opName(mop.kind)) +
                      (mop.hasGroup() ? " on " + std::string(axisName(mop.groupAxis())) : "");
            break;
          }
        }
      }
      report(at(r, Property::kCollectivesMatch, ViolationClass::kDeadlock, detail + ": a real run hangs"));
      return;
    }
  }

  // ---- lanes (TBO halves) ---------------------------------------------------
  /// The row maps and DP buffers of `lane` become the current ones (the
  /// current lane's are parked; swaps of a few vectors, TBO plans only).
  void useLane(int lane) {
    if (lane == map_lane_) return;
    for (int l : {map_lane_, lane}) {
      std::swap(rows_, parked_lanes_[l].rows);
      std::swap(other_rows_, parked_lanes_[l].other_rows);
      std::swap(dp_, parked_lanes_[l].dp);
    }
    map_lane_ = lane;
  }
  const RowMap& laneRows(int lane) const { return lane == map_lane_ ? *rows_ : *parked_lanes_[lane].rows; }
  /// Rank r's buffers and the row maps switch to the lane of `half`.
  void activate(int r, Half half) {
    const int lane = static_cast<int>(half);
    RankState& st = ranks_[r];
    if (st.lane != lane) {
      Parked& p = parked_[r];
      std::swap(st.hidden, p.hidden[st.lane]);
      std::swap(st.residual, p.residual[st.lane]);
      std::swap(st.hidden, p.hidden[lane]);
      std::swap(st.residual, p.residual[lane]);
      st.lane = lane;
    }
    useLane(lane);
  }
  /// The whole batch's hidden state or residual while a half's lane is active.
  Buffer& wholeBuffer(int r, Tensor t) { return t == Tensor::kResidual ? parked_[r].residual[0] : parked_[r].hidden[0]; }
  /// TBO split (slice) or merge (add: a copy) of the active half's rows (tbo.h):
  /// child A holds rows [0, split) of each shard's attention rows, B the rest.
  void tboMove(int r, const Op& op) {
    RankState& st = ranks_[r];
    if (!tbo_ || op.half == Half::kWhole || (op.tensor != Tensor::kHidden && op.tensor != Tensor::kResidual)) {
      layoutViolation(r, Property::kOwedOnce, tbo_ ? "a TBO split or merge names no half"
                                                   : "a TBO split or merge in a plan whose batch is not split");
      return;
    }
    Buffer& whole = wholeBuffer(r, op.tensor);
    Buffer& half = bufferOf(st, op.tensor);
    const RowMap& whole_rows = laneRows(0);
    const int offset = op.half == Half::kB ? laneRows(1).count(RowKind::kAttention, r) : 0;
    const int cnt = rows_->count(RowKind::kAttention, r);
    const int total = whole_rows.count(RowKind::kAttention, r);
    if (op.kind == OpKind::kSlice) {
      if (!whole.present || whole.kind != RowKind::kAttention || static_cast<int>(whole.v.size()) != total) {
        layoutViolation(r, Property::kOwedOnce, "the TBO split of half " + std::string(halfName(op.half)) +
                                                    " expects the batch's " + std::string(tensorName(op.tensor)) +
                                                    " on attention rows (" + std::to_string(total) + ") but finds " +
                                                    (whole.present ? std::string(rowKindName(whole.kind)) + " rows (" +
                                                                         std::to_string(whole.v.size()) + ")"
                                                                   : std::string("no value")));
        return;
      }
      half.kind = RowKind::kAttention;
      half.present = true;
      half.v.assign(whole.v.begin() + offset, whole.v.begin() + offset + cnt);
      if (op.half == Half::kB) whole.present = false;  // both halves took their rows
      return;
    }
    // The merge copies the half's real rows into the batch-sized tensor (rows
    // no half wrote stay zero, as a sum never completed would).
    if (!expectKind(r, half, RowKind::kAttention, op, tensorName(op.tensor).data())) return;
    if (whole.present && (whole.kind != RowKind::kAttention || static_cast<int>(whole.v.size()) != total)) {
      // The batch-sized tensor still holds another layout (a split that
      // never took it apart, then rows moved): a plan the engine cannot run.
      layoutViolation(r, Property::kOwedOnce, "the TBO merge of half " + std::string(halfName(op.half)) +
                                                  " writes into the batch's " + std::string(tensorName(op.tensor)) +
                                                  " on " + std::string(rowKindName(whole.kind)) + " rows (" +
                                                  std::to_string(whole.v.size()) + "), not its " +
                                                  std::to_string(total) + " attention rows");
      return;
    }
    if (!whole.present) {
      whole.kind = RowKind::kAttention;
      whole.present = true;
      whole.v.assign(total, domain_.zero());
    }
    assert(offset + static_cast<int>(half.v.size()) <= total && "a half's rows lie inside the batch's");
    std::copy(half.v.begin(), half.v.end(), whole.v.begin() + offset);
  }

  // ---- buffers ------------------------------------------------------------
  Buffer& bufferOf(RankState& st, Tensor t) {
    if (t == Tensor::kHidden) return st.hidden;
    if (t == Tensor::kResidual) return st.residual;
    if (t == Tensor::kBranch) return st.branch;
    if (st.snaps.empty()) st.snaps.push_back({0, -1, {}});
    return st.snaps.back().buf;
  }

  bool expectKind(int r, const Buffer& b, RowKind kind, const Op& op, const char* what) {
    const bool size_ok = kind == RowKind::kFull
                             ? static_cast<int>(b.v.size()) == fullMap(b.full_mode).count(kind, r)
                             : static_cast<int>(b.v.size()) == rows_->count(kind, r);
    if (b.present && b.kind == kind && size_ok) return true;
    layoutViolation(r, Property::kOwedOnce,
                    std::string(opName(op.kind)) + " expects " + what + " on " + std::string(rowKindName(kind)) +
                        " rows but finds " + (b.present ? std::string(rowKindName(b.kind)) + " rows (" +
                                                              std::to_string(b.v.size()) + ")"
                                                        : std::string("no value")));
    return false;
  }

  /// hidden and residual on the same rows: the residual follows (property 3).
  bool residualFollows(int r, const RankState& st, const Op& op) {
    if (!st.residual.present) return true;
    if (st.residual.kind == st.hidden.kind && st.residual.v.size() == st.hidden.v.size()) return true;
    layoutViolation(r, Property::kResidualFollows,
                    std::string(opName(op.kind)) + " adds a residual on " +
                        std::string(rowKindName(st.residual.kind)) + " rows (" + std::to_string(st.residual.v.size()) +
                        ") to a hidden state on " + std::string(rowKindName(st.hidden.kind)) + " rows (" +
                        std::to_string(st.hidden.v.size()) + ")");
    return false;
  }

  Value freshJunk() { return domain_.junk(++junk_); }

  const RowMap& fullMap(DpPadding mode) const { return mode == plan_->padding ? *rows_ : *other_rows_; }
  /// The tokens a buffer's rows hold by its layout.
  const std::vector<int>& tokensOf(const Buffer& b, int rank) const {
    if (b.kind == RowKind::kFull) return fullMap(b.full_mode).tokens(RowKind::kFull, rank);
    return rows_->tokens(b.kind, rank);
  }
  /// The padding mode a full-rows op of `count` rows assumes (its rows say it).
  bool modeOfCount(int count, int rank, DpPadding* mode) const {
    if (count == rows_->count(RowKind::kFull, rank)) {
      *mode = plan_->padding;
      return true;
    }
    if (count == other_rows_->count(RowKind::kFull, rank)) {
      *mode = plan_->padding == DpPadding::kMaxLen ? DpPadding::kSumLen : DpPadding::kMaxLen;
      return true;
    }
    return false;
  }
  /// Rows [slot, slot + B_d) of a full buffer, where the op's padding mode puts shard d.
  bool readSlot(int r, const Buffer& b, const Op& op, std::vector<Value>* out) {
    DpPadding mode;
    if (!modeOfCount(op.rows_in.count, r, &mode)) {
      layoutViolation(r, Property::kOwedOnce, std::string(opName(op.kind)) + " reads " +
                                                  std::to_string(op.rows_in.count) +
                                                  " full rows, which is neither padding mode's size");
      return false;
    }
    const int slot = fullMap(mode).fullSlot(topo_->attnDpRank(r));
    const int cnt = rows_->count(RowKind::kAttention, r);
    if (slot + cnt > static_cast<int>(b.v.size())) {
      layoutViolation(r, Property::kOwedOnce, std::string(opName(op.kind)) + " reads past the full rows");
      return false;
    }
    out->assign(b.v.begin() + slot, b.v.begin() + slot + cnt);
    return true;
  }

  /// norm at (stack, stage): checks the complete value, replaces it by n(s, t).
  void normInPlace(int r, Buffer& b, const Buffer& source, const Op& op) {
    const int n_stages = static_cast<int>(stacks_[op.stack].shards.size());
    const bool final_norm = op.stage == n_stages;
    if (!checkRows(r, source, Expect::kComplete, op.stack, op.stage,
                   final_norm ? Property::kOutputComplete : Property::kOwedOnce)) {
      return;
    }
    const auto& toks = tokensOf(source, r);
    if (source.v.size() != toks.size()) {
      layoutViolation(r, Property::kOwedOnce, "norm of a buffer of " + std::to_string(source.v.size()) +
                                                  " rows labelled " + std::string(rowKindName(source.kind)));
      return;
    }
    b.full_mode = source.full_mode;
    b.kind = source.kind;
    b.present = true;
    b.v.resize(source.v.size());
    for (size_t i = 0; i < b.v.size(); ++i) {
      b.v[i] = domain_.norm(source.v[i], op.stack, op.stage, toks[i], ++junk_);
    }
    if (final_norm) {
      // LayerNorm SP's final norm runs on the padded shards; the exit gather
      // after it (maybe_exit_gather) records the output.
      if (source.kind == RowKind::kLocal && rows_->localSplit() == LocalSplit::kPaddedEqual) return;
      if (source.kind != RowKind::kAttention || static_cast<int>(source.v.size()) != rows_->shardTokens(r)) {
        report(at(r, Property::kOutputComplete, ViolationClass::kMissingOutput,
                  "the final norm runs on " + std::string(rowKindName(source.kind)) +
                      " rows, not the attention rows the next consumer reads"));
        return;
      }
      // A CP-sharded output is the model's only after the boundary gathers it
      // (cp_gather_after_forward: the reorder onto sequence rows records it).
      if (!rows_->cpSharded(r)) recordFinal(r, op.stack, b);
    }
  }

  void recordFinal(int r, int stack, const Buffer& b) {
    ranks_[r].final_done[stack] = true;
    ranks_[r].finals[stack] = b;
  }

  void addInto(Buffer& dst, const Buffer& src) {
    for (size_t i = 0; i < dst.v.size(); ++i) domain_.add(dst.v[i], src.v[i]);
  }

  /// One reduction of `n` members' rows: `sum` holds member 0's rows (it may
  /// be them) and ends as the sum; rows_of(p) are member p's. In member order,
  /// unless the domain orders reductions by their call (reduceCall), which
  /// call_of() names only then (the ledger's domains never ask).
  template <class RowsOf, class CallOf>
  void reduceMembers(std::vector<Value>& sum, size_t n, const RowsOf& rows_of, const CallOf& call_of) {
    if constexpr (requires(Domain& d) { d.reduceCall(sum, n, rows_of, call_of()); }) {
      domain_.reduceCall(sum, n, rows_of, call_of());
    } else {
      for (size_t p = 1; p < n; ++p) {
        const std::vector<Value>& src = rows_of(p);
        for (size_t i = 0; i < sum.size(); ++i) domain_.add(sum[i], src[i]);
      }
    }
  }
  ReduceCall reduceCallOf(const Op& op, int rank, int rows) const {
    return {static_cast<int>(op.kind) * 16 + static_cast<int>(op.rows_in.kind),
            topo_->communicator(op.groupAxis(), rank) / Topology::kCommunicatorStride, rows};
  }

  /// Rank `src`'s local rows of `attention` (the shard's rows): its slice,
  /// and under LayerNorm SP's padded chunks the rows past the shard are the
  /// zero rows of the pad, which hold no token.
  void takeLocal(int src, const std::vector<Value>& attention, std::vector<Value>* out) {
    const int off = rows_->localOffset(src);
    const int cnt = rows_->count(RowKind::kLocal, src);
    out->clear();
    out->reserve(cnt);
    for (int p = off; p < off + cnt; ++p) {
      out->push_back(p < static_cast<int>(attention.size()) ? attention[p] : freshJunk());
    }
  }

  /// A plain all_gather / reduce_scatter between local and attention rows
  /// moves one chunk size from every member (ncclAllGather /
  /// ncclReduceScatter); unequal slices need the v-variants.
  bool equalChunks(const std::vector<int>& members, const Op& op) {
    if (op.kind != OpKind::kAllGather && op.kind != OpKind::kReduceScatter) return true;
    const int chunk = rows_->count(RowKind::kLocal, members.front());
    for (int m : members) {
      if (rows_->count(RowKind::kLocal, m) == chunk) continue;
      report(at(m, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                std::string(opName(op.kind)) + " of unequal chunks (" + std::to_string(chunk) + " and " +
                    std::to_string(rows_->count(RowKind::kLocal, m)) + " local rows): a real run corrupts memory"));
      return false;
    }
    return true;
  }

  // ---- local ops ------------------------------------------------------------
  void execLocal(int r, const Op& op) {
    RankState& st = ranks_[r];
    switch (op.kind) {
      case OpKind::kZeroFill: {
        Buffer& b = bufferOf(st, op.tensor);
        b.kind = op.rows_out.kind;
        b.present = true;
        b.v.assign(rows_->count(b.kind, r), domain_.zero());
        return;
      }
      case OpKind::kSlice: {
        if (op.tbo_move) {
          tboMove(r, op);
          return;
        }
        Buffer& b = bufferOf(st, op.tensor);
        if (op.rows_out.kind == RowKind::kSequence) {
          // cp_gather_after_forward's reorder: the gathered CP shards back in
          // sequence order; the final output once the final norm is behind it.
          // (Without attention DP the gathered CP shards are the full rows.)
          const bool gathered = b.kind == RowKind::kCpGathered ||
                                (b.kind == RowKind::kFull && topo_->config().attn_dp == 1);
          if (!b.present || !gathered || !rows_->cpSharded(r) ||
              static_cast<int>(b.v.size()) != rows_->count(RowKind::kCpGathered, r)) {
            layoutViolation(r, Property::kOutputComplete, "a reorder onto sequence rows of " +
                                                              std::string(rowKindName(b.kind)) +
                                                              " rows, not the CP shards gathered over attn_cp");
            return;
          }
          std::vector<Value> v;
          v.reserve(rows_->count(RowKind::kSequence, r));
          for (int i = 0; i < rows_->count(RowKind::kSequence, r); ++i) {
            v.push_back(b.v[rows_->gatheredRowOfSequence(r, i)]);
          }
          b.v = std::move(v);
          b.kind = RowKind::kSequence;
          const int n_stages = static_cast<int>(stacks_[op.stack].shards.size());
          if (op.tensor == Tensor::kHidden && op.stage == n_stages) {
            if (!checkRows(r, b, Expect::kNormed, op.stack, op.stage, Property::kOutputComplete)) return;
            recordFinal(r, op.stack, b);
          }
          return;
        }
        if (op.rows_in.kind == RowKind::kSequence) {
          // cp_shard_hidden_states (the MTP step's input under prefill CP):
          // this rank's CP shard of rows in sequence order, zero-padded.
          if (!expectKind(r, b, RowKind::kSequence, op, tensorName(op.tensor).data())) return;
          const auto& toks = rows_->tokens(RowKind::kAttention, r);
          // Token ids count over the DP shards; the sequence rows start at the shard's first.
          const auto& seq = rows_->tokens(RowKind::kSequence, r);
          const int first = seq.empty() ? 0 : seq.front();
          std::vector<Value> v;
          v.reserve(toks.size());
          for (int t : toks) v.push_back(t == kPaddingRow ? freshJunk() : b.v[t - first]);
          b.v = std::move(v);
          b.kind = RowKind::kAttention;
          return;
        }
        if (op.rows_in.kind == RowKind::kFull) {
          // attn_cp_take_back_output: this CP rank's block of the gathered
          // rows (or another position's, when the plan says so).
          if (!expectKind(r, b, RowKind::kFull, op, tensorName(op.tensor).data())) return;
          const int acp = topo_->groupSize(Axis::kAttnCp);
          const int c = op.slice_of < 0 ? topo_->attnCpRank(r) : op.slice_of % acp;
          const int cnt = rows_->count(RowKind::kAttention, r);
          if (static_cast<int>(b.v.size()) < (c + 1) * cnt) {
            layoutViolation(r, Property::kOwedOnce, "a CP take-back of rows that were not gathered over attn_cp");
            return;
          }
          std::vector<Value> v(b.v.begin() + c * cnt, b.v.begin() + (c + 1) * cnt);
          b.v = std::move(v);
          b.kind = RowKind::kAttention;
          return;
        }
        if (!expectKind(r, b, RowKind::kAttention, op, tensorName(op.tensor).data())) return;
        // tensor_split(attn_tp)[index]: the rank's own slice, or another
        // position's when the plan says so (a wrong slice index).
        const int src = op.slice_of < 0 ? r : topo_->groupOf(Axis::kAttnTp, r)[op.slice_of % topo_->groupSize(Axis::kAttnTp)];
        std::vector<Value> v;
        takeLocal(src, b.v, &v);
        b.v = std::move(v);
        b.kind = RowKind::kLocal;
        return;
      }
      case OpKind::kAdd: {
        if (op.tbo_move) {
          tboMove(r, op);
          return;
        }
        if (!st.hidden.present) {
          layoutViolation(r, Property::kOwedOnce, "add with no hidden state");
          return;
        }
        if (op.tensor == Tensor::kBranch) {
          // Fork: an empty branch takes a copy of the (normed) hidden state.
          // Merge: a branch's contribution is added into the hidden state.
          if (!st.branch.present) {
            st.branch = st.hidden;
          } else if (st.branch.kind != st.hidden.kind || st.branch.v.size() != st.hidden.v.size()) {
            layoutViolation(r, Property::kOwedOnce, "a branch on " + std::string(rowKindName(st.branch.kind)) +
                                                        " rows is merged into a hidden state on " +
                                                        std::string(rowKindName(st.hidden.kind)) + " rows");
          } else {
            addInto(st.hidden, st.branch);
            st.branch.present = false;
          }
          return;
        }
        if (op.tensor == Tensor::kHidden && op.rows_in.kind == RowKind::kLocal &&
            op.rows_out.kind == RowKind::kAttention) {
          // Input-scattered FFN input (_tp_sum_with_residual_read): this rank
          // adds its residual slice into its own rows of the partial sum.
          if (!expectKind(r, st.residual, RowKind::kLocal, op, "residual") ||
              !expectKind(r, st.hidden, RowKind::kAttention, op, "hidden")) {
            return;
          }
          const int off = rows_->localOffset(r);
          for (size_t i = 0; i < st.residual.v.size(); ++i) domain_.add(st.hidden.v[off + i], st.residual.v[i]);
          st.residual.present = false;
          return;
        }
        if (!residualFollows(r, st, op)) return;
        if (op.tensor == Tensor::kSnapshot) {
          // Legacy capture: snapshot += residual (a copy of the completed hidden state plus the residual).
          Buffer& snap = bufferOf(st, Tensor::kSnapshot);
          if (st.residual.present && snap.v.size() == st.residual.v.size()) addInto(snap, st.residual);
          return;
        }
        if (op.tensor == Tensor::kResidual) {
          if (!st.residual.present) {
            st.residual = st.hidden;
          } else {
            addInto(st.residual, st.hidden);
          }
        } else {
          if (st.residual.present) addInto(st.hidden, st.residual);
          st.residual.present = false;  // hs += residual; residual := None
        }
        return;
      }
      case OpKind::kNorm:
        if (!st.hidden.present) {
          layoutViolation(r, Property::kOwedOnce, "norm with no hidden state");
          return;
        }
        normInPlace(r, st.hidden, Buffer(st.hidden), op);
        return;
      case OpKind::kAddNorm:
        addNorm(r, op);
        return;
      case OpKind::kCompute:
        compute(r, op);
        return;
      case OpKind::kSnapshot: {
        // tensor snapshot: capture the residual after the entry (declared);
        // tensor hidden: capture a copy of the hidden state, which legacy then
        // all-reduces and adds the residual to.
        Snap s{op.stack, op.stage, op.tensor == Tensor::kHidden ? st.hidden : st.residual};
        st.snaps.push_back(std::move(s));
        return;
      }
      case OpKind::kDpScatter:
        one_rank_.assign(1, r);
        runDpOp(one_rank_, op);
        return;
      default:
        assert(false && "execLocal of a communicating op");
    }
  }

  void addNorm(int r, const Op& op) {
    RankState& st = ranks_[r];
    if (!st.hidden.present) {
      layoutViolation(r, Property::kOwedOnce, "add_norm with no hidden state");
      return;
    }
    if (!residualFollows(r, st, op)) return;
    if (!st.residual.present) {
      st.residual = st.hidden;  // first layer: residual := hidden
    } else {
      addInto(st.residual, st.hidden);
    }
    normInPlace(r, st.hidden, st.residual, op);
  }

  void compute(int r, const Op& op) {
    RankState& st = ranks_[r];
    Buffer& h = op.tensor == Tensor::kBranch ? st.branch : st.hidden;
    if (!h.present) {
      layoutViolation(r, Property::kOwedOnce, "compute with no input");
      return;
    }
    const auto& toks = tokensOf(h, r);
    if (h.kind == RowKind::kAttention && h.v.size() > toks.size()) {
      // Gathered padded shards not narrowed to the shard's tokens: the GEMM
      // (and attention) would read the padding rows past them as tokens.
      report(at(r, Property::kOwedOnce, ViolationClass::kPaddingLeak,
                "compute reads " + std::to_string(h.v.size()) + " attention rows where the shard holds " +
                    std::to_string(toks.size()) + " tokens: the padding rows past them are read as tokens"));
      return;
    }
    if (h.v.size() != toks.size()) {
      layoutViolation(r, Property::kOwedOnce, "compute on a buffer of " + std::to_string(h.v.size()) +
                                                  " rows labelled " + std::string(rowKindName(h.kind)));
      return;
    }
    const int gemm_rows = static_cast<int>(toks.size());  // a GEMM's M: cuBLAS picks its kernel by it
    if (op.stage < 0) {
      // A stack's input projection (the MTP eh_proj): reads the previous
      // stack's final output, emits this stack's complete input.
      const int prev = op.stack - 1;
      if (!checkRows(r, h, Expect::kNormed, prev, static_cast<int>(stacks_[prev].shards.size()),
                     Property::kOwedOnce)) {
        return;
      }
      for (size_t i = 0; i < toks.size(); ++i) {
        h.v[i] = domain_.project(h.v[i], op.stack, toks[i], ++junk_, gemm_rows);
      }
      return;
    }
    const int si = stage_base_[op.stack] + op.stage;
    const StageInfo& info = plan_->stages[si];
    // A branch stage reads the normed input of the stage it branches beside.
    const int reads = info.reads_norm_of >= 0 ? info.reads_norm_of : op.stage;
    if (!checkRows(r, h, Expect::kNormed, op.stack, reads, Property::kOwedOnce)) return;
    // The shard comes from the stage's real weight split, not from the op:
    // a plan cannot change where the weights live.
    const int j = info.weight_axis == kNoAxis ? 0 : topo_->rankIn(static_cast<Axis>(info.weight_axis), r);
    for (size_t i = 0; i < toks.size(); ++i) {
      h.v[i] = domain_.compute(h.v[i], op.stack, op.stage, toks[i], j, info.shards, ++junk_, gemm_rows);
    }
  }

  // ---- point to point -----------------------------------------------------
  void doSend(int r, const Op& op) {
    RankState& st = ranks_[r];
    const Buffer& b = op.tensor == Tensor::kResidual ? st.residual : st.hidden;
    const int peer = r + topo_->config().tp;
    if (peer >= plan_->world()) {
      report(at(r, Property::kCollectivesMatch, ViolationClass::kDeadlock,
                "send from the last pipeline stage: nobody receives it"));
      return;
    }
    mailbox_[{peer, static_cast<int>(op.tensor)}].push_back(b);
  }

  bool tryRecv(int r) {
    const Op& op = plan_->ranks[r][ranks_[r].pc];
    if (tbo_) activate(r, op.half);
    auto it = mailbox_.find({r, static_cast<int>(op.tensor)});
    if (it == mailbox_.end() || it->second.empty()) return false;
    RankState& st = ranks_[r];
    (op.tensor == Tensor::kResidual ? st.residual : st.hidden) = std::move(it->second.front());
    it->second.pop_front();
    ++st.pc;
    ++result_.ops_executed;
    return true;
  }

  // ---- collectives ----------------------------------------------------------
  void execCollective(const std::vector<int>& members, const Op& op) {
    const Tensor t = op.tensor;
    auto buf = [&](int m) -> Buffer& { return bufferOf(ranks_[m], t); };
    const int r0 = members.front();
    switch (op.kind) {
      case OpKind::kAllReduce:
      case OpKind::kArAddNorm: {
        for (int m : members) {
          if (!buf(m).present || buf(m).v.size() != buf(r0).v.size() || buf(m).kind != buf(r0).kind) {
            report(at(m, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                      "all_reduce members hold different rows (" + std::to_string(buf(m).v.size()) + " vs " +
                          std::to_string(buf(r0).v.size()) + ")"));
            return;
          }
        }
        // Summed into the lowest member's rows, copied into the others' (no new buffer).
        Buffer& sum = buf(r0);
        reduceMembers(sum.v, members.size(), [&](size_t p) -> const std::vector<Value>& { return buf(members[p]).v; },
                      [&] { return reduceCallOf(op, r0, static_cast<int>(sum.v.size())); });
        for (size_t k = 1; k < members.size(); ++k) buf(members[k]) = sum;
        if (op.kind == OpKind::kArAddNorm) {
          for (int m : members) {
            addNorm(m, op);
            if (stopped()) return;
          }
        }
        return;
      }
      case OpKind::kDpReduceScatter:
        runDpOp(members, op);
        return;
      case OpKind::kReduceScatter:
      case OpKind::kReduceScatterv: {
        const RowKind in = op.rows_in.kind;
        for (int m : members) {
          if (!expectKind(m, buf(m), in, op, tensorName(t).data())) return;
          if (buf(m).v.size() != buf(r0).v.size()) {
            report(at(m, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                      "reduce-scatter members hold different rows"));
            return;
          }
        }
        if (in == RowKind::kAttention && !equalChunks(members, op)) return;
        Buffer sum = buf(r0);
        reduceMembers(sum.v, members.size(), [&](size_t p) -> const std::vector<Value>& { return buf(members[p]).v; },
                      [&] { return reduceCallOf(op, r0, static_cast<int>(sum.v.size())); });
        const bool cp_return = in == RowKind::kFull && op.axis == static_cast<std::int8_t>(Axis::kAttnCp);
        for (size_t k = 0; k < members.size(); ++k) {
          const int m = members[k];
          Buffer& b = buf(m);
          if (cp_return) {  // attn_cp_reduce_scatter_output: member k's block
            const int cnt = rows_->count(RowKind::kAttention, m);
            if (static_cast<int>(sum.v.size()) < static_cast<int>(k + 1) * cnt) {
              layoutViolation(m, Property::kOwedOnce, "an attn_cp reduce-scatter of rows that were not gathered");
              return;
            }
            b.v.assign(sum.v.begin() + k * cnt, sum.v.begin() + (k + 1) * cnt);
            b.kind = RowKind::kAttention;
          } else if (in == RowKind::kFull) {  // the DP return: this shard's slot
            const Op& mop = plan_->ranks[m][ranks_[m].pc];
            if (!readSlot(m, sum, mop, &b.v)) return;
            b.kind = RowKind::kAttention;
          } else {  // attention rows -> this rank's local slice
            takeLocal(m, sum.v, &b.v);
            b.kind = RowKind::kLocal;
          }
        }
        return;
      }
      case OpKind::kAllGather:
      case OpKind::kAllGatherv: {
        if (op.rows_out.kind == RowKind::kFull || op.rows_out.kind == RowKind::kCpGathered) {
          // attn_cp_interleave_gather, moe_cp_gather, cp_gather_after_forward:
          // the CP shards concatenated in rank order.
          const RowKind into = op.rows_out.kind;
          Buffer g;
          g.kind = into;
          g.present = true;
          for (int m : members) {
            if (!expectKind(m, buf(m), RowKind::kAttention, op, tensorName(t).data())) return;
            g.v.insert(g.v.end(), buf(m).v.begin(), buf(m).v.end());
          }
          if (static_cast<int>(g.v.size()) != rows_->count(into, r0)) {
            layoutViolation(r0, Property::kOwedOnce, "an attn_cp gather of " + std::to_string(g.v.size()) +
                                                         " rows into " + std::string(rowKindName(into)) + " rows of " +
                                                         std::to_string(rows_->count(into, r0)));
            return;
          }
          for (int m : members) buf(m) = g;
          return;
        }
        // local slices -> attention rows, each member's slice at its offset
        // (LayerNorm SP: the padded equal chunks gathered, then narrowed to
        // the op's rows_out, the shard's M rows in a real plan:
        // all_gather_token_rows' output[:total_rows]).
        if (!equalChunks(members, op)) return;
        const int cnt = rows_->count(RowKind::kAttention, r0);
        int gathered = cnt;
        for (int m : members) gathered = std::max(gathered, rows_->localOffset(m) + static_cast<int>(buf(m).v.size()));
        Buffer g;
        g.kind = RowKind::kAttention;
        g.present = true;
        g.v.assign(gathered, domain_.zero());
        for (int m : members) {
          Buffer& b = buf(m);
          const int off = rows_->localOffset(m);
          const bool fits = rows_->localSplit() == LocalSplit::kPaddedEqual
                                ? static_cast<int>(b.v.size()) == rows_->count(RowKind::kLocal, m)
                                : off + static_cast<int>(b.v.size()) <= cnt;
          if (!b.present || rows_->count(RowKind::kAttention, m) != cnt || !fits) {
            report(at(m, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                      "all_gather members hold slices of different shards"));
            return;
          }
          std::copy(b.v.begin(), b.v.end(), g.v.begin() + off);
        }
        g.v.resize(std::min(gathered, std::max(cnt, static_cast<int>(op.rows_out.count))));
        for (int m : members) buf(m) = g;
        if (rows_->localSplit() == LocalSplit::kPaddedEqual && t == Tensor::kHidden &&
            op.stage == static_cast<int>(stacks_[op.stack].shards.size())) {
          // maybe_exit_gather: the final norm ran on the SP shards; the
          // gathered rows are the model's output.
          for (int m : members) {
            if (!checkRows(m, buf(m), Expect::kNormed, op.stack, op.stage, Property::kOutputComplete)) return;
            recordFinal(m, op.stack, buf(m));
          }
        }
        return;
      }
      case OpKind::kAllToAll: {
        if (op.rows_out.kind == RowKind::kDispatched) {
          // dispatch: every member receives the concatenation of the members' rows.
          Buffer d;
          d.kind = RowKind::kDispatched;
          d.present = true;
          for (int m : members) {
            const Buffer& b = buf(m);
            if (!b.present) {
              layoutViolation(m, Property::kOwedOnce, "all_to_all dispatch of no value");
              return;
            }
            d.v.insert(d.v.end(), b.v.begin(), b.v.end());
          }
          for (int m : members) {
            if (static_cast<int>(d.v.size()) != rows_->count(RowKind::kDispatched, m)) {
              report(at(m, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                        "all_to_all dispatch sizes do not add up to the group's rows"));
              return;
            }
          }
          for (int m : members) buf(m) = d;
          return;
        }
        // combine: each member gets back its own segment, summed over the experts' ranks.
        std::vector<Buffer> out(members.size());
        int seg = 0;
        for (size_t i = 0; i < members.size(); ++i) {
          const int m = members[i];
          const int cnt = rows_->count(op.rows_out.kind, m);
          out[i].kind = op.rows_out.kind;
          out[i].present = true;
          out[i].v.assign(cnt, domain_.zero());
          for (int src : members) {
            const Buffer& b = buf(src);
            if (b.kind != RowKind::kDispatched || static_cast<int>(b.v.size()) < seg + cnt) {
              layoutViolation(src, Property::kOwedOnce, "all_to_all combine of rows that were not dispatched");
              return;
            }
            for (int k = 0; k < cnt; ++k) domain_.add(out[i].v[k], b.v[seg + k]);
          }
          seg += cnt;
        }
        for (size_t i = 0; i < members.size(); ++i) buf(members[i]) = std::move(out[i]);
        return;
      }
      case OpKind::kDpGatherPartial:
      case OpKind::kDpGatherReplicate:
        runDpOp(members, op);
        return;
      default:
        assert(false && "execCollective of a local op");
    }
  }

  // ---- DP ops, lowered (dp_gather.h) -------------------------------------------
  /// One member's run of its lowering: the buffer in flight, the local rows
  /// the all-reduce path keeps aside, its steps and how far it got.
  struct DpWork {
    std::vector<Value> buf, local;
    DpLowering steps;
    int pos = 0;
    DpPadding mode = DpPadding::kMaxLen;
  };

  std::string dpWhere(const Op& op, const DpStep& s) const {
    std::string w = std::string(opName(op.kind)) + " (lowered: " + std::string(dpStepName(s.kind));
    if (s.axis != kNoAxis) w += " over " + std::string(axisName(static_cast<Axis>(s.axis)));
    return w + ")";
  }

  /// Runs the DP op at every member's pc through its lowering: local steps
  /// on each member, collective steps on each step's group (a sub-group of
  /// the TP group: attn_tp, attn_cp or tp) once all of its members reach
  /// them; members must agree on each collective's kind and bytes.
  void runDpOp(const std::vector<int>& members, const Op& op) {
    const size_t n = members.size();
    if (dp_work_.size() < n) dp_work_.resize(n);
    const bool gather = op.kind == OpKind::kDpGatherPartial || op.kind == OpKind::kDpGatherReplicate;
    for (size_t k = 0; k < n; ++k) {
      const int m = members[k];
      const Op& mop = plan_->ranks[m][ranks_[m].pc];
      const DpGeometry* geometry = dp_->ofFullRows(dpFullRowsOf(mop));
      if (geometry == nullptr) {
        layoutViolation(m, Property::kOwedOnce, std::string(opName(mop.kind)) + " names " +
                                                    std::to_string(dpFullRowsOf(mop)) +
                                                    " full rows, which is neither padding mode's size");
        return;
      }
      DpWork& w = dp_work_[k];
      w.mode = geometry->mode();
      lowerDpOp(mop, topo_->config(), *geometry,
                DpPlace{topo_->attnTpRank(m), topo_->attnCpRank(m), topo_->attnDpRank(m)}, row_bytes_, &w.steps);
      w.pos = 0;
      RankState& st = ranks_[m];
      // dp_scatter reads the hidden state's full rows into the op's tensor
      // (dp_scatter(residual, hidden)), except a branch, which moves its own.
      const Buffer& in = mop.kind == OpKind::kDpScatter && mop.tensor != Tensor::kBranch ? st.hidden
                                                                                        : bufferOf(st, mop.tensor);
      if (!expectKind(m, in, gather ? RowKind::kAttention : RowKind::kFull, mop, tensorName(mop.tensor).data())) return;
      w.buf = in.v;
    }
    while (true) {
      bool all_done = true;
      for (size_t k = 0; k < n; ++k) {
        DpWork& w = dp_work_[k];
        while (w.pos < w.steps.size() && !isCollectiveStep(w.steps[w.pos].kind)) {
          if (!dpLocalStep(members[k], w, w.steps[w.pos])) return;
          ++w.pos;
        }
        all_done = all_done && w.pos == w.steps.size();
      }
      if (all_done) break;
      bool progress = false;
      for (size_t k = 0; k < n; ++k) {
        const DpWork& w = dp_work_[k];
        // (A member a collective of this round moved on may be at a local step.)
        if (w.pos == w.steps.size() || !isCollectiveStep(w.steps[w.pos].kind)) continue;
        const DpStep& s = w.steps[w.pos];
        const std::vector<int>& group = topo_->groupOf(static_cast<Axis>(s.axis), members[k]);
        if (group.front() != members[k]) continue;  // the group's lowest rank runs it
        int ready = 0;
        if (!dpCollectiveStep(members, group, s, &ready)) return;
        progress = progress || ready > 0;
      }
      if (!progress) {
        report(at(members.front(), Property::kCollectivesMatch, ViolationClass::kDeadlock,
                  std::string(opName(op.kind)) + ": the members' lowered collectives never meet: a real run hangs"));
        return;
      }
    }
    for (size_t k = 0; k < n; ++k) {
      const int m = members[k];
      const Op& mop = plan_->ranks[m][ranks_[m].pc];
      RankState& st = ranks_[m];
      Buffer& out = mop.kind == OpKind::kDpScatter && mop.tensor == Tensor::kResidual ? st.residual
                                                                                      : bufferOf(st, mop.tensor);
      DpWork& w = dp_work_[k];
      const RowKind kind = gather ? RowKind::kFull : RowKind::kAttention;
      const int want = gather ? fullMap(w.mode).count(RowKind::kFull, m) : rows_->count(RowKind::kAttention, m);
      if (static_cast<int>(w.buf.size()) != want) {
        layoutViolation(m, Property::kOwedOnce, std::string(opName(mop.kind)) + " leaves " +
                                                    std::to_string(w.buf.size()) + " rows where " +
                                                    std::string(rowKindName(kind)) + " rows are " +
                                                    std::to_string(want));
        return;
      }
      out.kind = kind;
      out.full_mode = w.mode;
      out.present = true;
      out.v.swap(w.buf);
    }
  }

  /// A local step of one member; false after a violation.
  bool dpLocalStep(int m, DpWork& w, const DpStep& s) {
    const Op& op = plan_->ranks[m][ranks_[m].pc];
    const auto fits = [&](bool ok, const char* what) {
      if (!ok) {
        layoutViolation(m, Property::kOwedOnce, dpWhere(op, s) + " " + what + " (" + std::to_string(w.buf.size()) +
                                                    " rows in flight)");
      }
      return ok;
    };
    switch (s.kind) {
      case DpStepKind::kPadLocal:
        // Pad rows are computed from input id 0: neither zero nor a token
        // (one junk value for a member's pad rows of one op).
        if (!fits(static_cast<int>(w.buf.size()) == s.rows_in, "pads rows it does not hold")) return false;
        w.buf.resize(s.rows_out, freshJunk());
        return true;
      case DpStepKind::kZeroLocal:
        w.buf.assign(s.rows_out, domain_.zero());
        return true;
      case DpStepKind::kZeroGlobal:
        w.local.swap(w.buf);
        w.buf.assign(s.rows_out, domain_.zero());
        return true;
      case DpStepKind::kWriteSlot:
        if (!fits(static_cast<int>(w.local.size()) >= s.rows_in &&
                      s.offset + s.rows_in <= static_cast<int>(w.buf.size()),
                  "writes past the gathered rows")) {
          return false;
        }
        for (int k = 0; k < s.rows_in; ++k) w.buf[s.offset + k] = w.local[k];
        return true;
      case DpStepKind::kReadSlot:
        if (!fits(s.offset + s.rows_out <= static_cast<int>(w.buf.size()), "reads past the full rows")) return false;
        w.buf.erase(w.buf.begin(), w.buf.begin() + s.offset);  // (no self-move at offset 0)
        w.buf.resize(s.rows_out);
        return true;
      case DpStepKind::kTrim:
        if (!fits(static_cast<int>(w.buf.size()) >= s.rows_out, "trims rows it does not hold")) return false;
        w.buf.resize(s.rows_out);
        return true;
      default:
        assert(false && "dpLocalStep of a collective step");
        return false;
    }
  }

  /// The collective step `s` of the lowest member of `group`, once every
  /// member of `group` waits on a collective on that axis (*ready = 1);
  /// false after a violation.
  bool dpCollectiveStep(const std::vector<int>& members, const std::vector<int>& group, const DpStep& s, int* ready) {
    const size_t g = group.size();
    dp_group_.assign(g, nullptr);
    for (size_t p = 0; p < g; ++p) {
      // members is the DP op's TP group: a rank's place in it is its tp rank.
      size_t k = static_cast<size_t>(topo_->rankIn(Axis::kTp, group[p]));
      if (k >= members.size() || members[k] != group[p]) {
        const auto it = std::find(members.begin(), members.end(), group[p]);
        if (it == members.end()) return true;  // not every member runs this DP op now
        k = static_cast<size_t>(it - members.begin());
      }
      DpWork& w = dp_work_[k];
      if (w.pos == w.steps.size() || !isCollectiveStep(w.steps[w.pos].kind) || w.steps[w.pos].axis != s.axis) {
        return true;  // waits elsewhere (a deadlock if nothing else progresses)
      }
      dp_group_[p] = &w;
    }
    const Op& op = plan_->ranks[group.front()][ranks_[group.front()].pc];
    for (size_t p = 0; p < g; ++p) {
      const DpStep& mine = dp_group_[p]->steps[dp_group_[p]->pos];
      // all_gatherv: each member sends its own count (every member knows them all).
      const bool v = s.kind == DpStepKind::kAllGatherv;
      if (mine.kind != s.kind || mine.bytes != s.bytes || (v ? mine.rows_out != s.rows_out : mine.rows_in != s.rows_in) ||
          static_cast<int>(dp_group_[p]->buf.size()) != mine.rows_in) {
        report(at(group[p], Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                  dpWhere(op, s) + " on " + rankList(group) + ": rank " + std::to_string(group.front()) + " issues " +
                      std::string(dpStepName(s.kind)) + " of " + std::to_string(s.bytes) + " bytes while rank " +
                      std::to_string(group[p]) + " issues " + std::string(dpStepName(mine.kind)) + " of " +
                      std::to_string(mine.bytes) + " bytes on " + std::to_string(dp_group_[p]->buf.size()) +
                      " rows"));
        return false;
      }
    }
    dp_sum_ = dp_group_[0]->buf;
    const auto dp_call = [&] {
      return ReduceCall{kDpStepTag + static_cast<int>(s.kind),
                        topo_->communicator(static_cast<Axis>(s.axis), group.front()) / Topology::kCommunicatorStride,
                        s.rows_in};
    };
    switch (s.kind) {
      case DpStepKind::kAllReduce:
        reduceMembers(dp_sum_, g, [&](size_t p) -> const std::vector<Value>& { return dp_group_[p]->buf; }, dp_call);
        for (size_t p = 0; p < g; ++p) dp_group_[p]->buf = dp_sum_;
        break;
      case DpStepKind::kReduceScatter: {
        if (static_cast<std::int64_t>(s.rows_out) * static_cast<std::int64_t>(g) != s.rows_in) {
          layoutViolation(group.front(), Property::kOwedOnce,
                          dpWhere(op, s) + " of " + std::to_string(s.rows_in) + " rows does not split evenly over " +
                              std::to_string(g) + " ranks");
          return false;
        }
        reduceMembers(dp_sum_, g, [&](size_t p) -> const std::vector<Value>& { return dp_group_[p]->buf; }, dp_call);
        for (size_t p = 0; p < g; ++p) {
          const auto first = dp_sum_.begin() + static_cast<std::ptrdiff_t>(p * s.rows_out);
          dp_group_[p]->buf.assign(first, first + s.rows_out);
        }
        break;
      }
      case DpStepKind::kAllGather:
      case DpStepKind::kAllGatherv:
        for (size_t p = 1; p < g; ++p) dp_sum_.insert(dp_sum_.end(), dp_group_[p]->buf.begin(), dp_group_[p]->buf.end());
        if (static_cast<int>(dp_sum_.size()) != s.rows_out) {
          layoutViolation(group.front(), Property::kOwedOnce,
                          dpWhere(op, s) + " gathers " + std::to_string(dp_sum_.size()) + " rows into " +
                              std::to_string(s.rows_out));
          return false;
        }
        for (size_t p = 0; p < g; ++p) dp_group_[p]->buf = dp_sum_;
        break;
      default:
        assert(false && "dpCollectiveStep of a local step");
    }
    for (size_t p = 0; p < g; ++p) ++dp_group_[p]->pos;
    *ready = 1;
    return true;
  }

  // ---- end of the plan --------------------------------------------------------
  void finalChecks() {
    const int world = plan_->world();
    const int last_pp = topo_->config().pp - 1;
    for (int r = 0; r < world && !stopped(); ++r) {
      RankState& st = ranks_[r];
      for (Snap& s : st.snaps) {
        if (s.stage < 0) continue;
        if (!s.buf.present || s.buf.kind != RowKind::kAttention ||
            static_cast<int>(s.buf.v.size()) != rows_->shardTokens(r)) {
          report(at(r, Property::kSnapshots, ViolationClass::kLayoutMismatch,
                    "the snapshot before stage " + std::to_string(s.stage) + " is " +
                        (s.buf.present ? "on " + std::string(rowKindName(s.buf.kind)) + " rows" : "empty") +
                        ", not on attention rows"));
          return;
        }
        if (!checkRows(r, s.buf, Expect::kComplete, s.stack, s.stage, Property::kSnapshots)) return;
      }
      if (st.branch.present) {
        // A fork (an add on an empty branch) whose contribution no merge ever
        // added into the hidden state: its terms never reach the output.
        report(at(r, Property::kOwedOnce, ViolationClass::kNeverCompleted,
                  "rank " + std::to_string(r) + " ends the plan holding a branch that was forked and never merged"));
        return;
      }
      if (topo_->ppRank(r) == last_pp) {
        for (size_t k = 0; k < stacks_.size(); ++k) {
          if (!st.final_done[k]) {
            report(at(-1, Property::kOutputComplete, ViolationClass::kMissingOutput,
                      "rank " + std::to_string(r) + " never produces the final output of stack " + std::to_string(k)));
            result_.violations.back().rank = r;
            return;
          }
        }
      }
    }
  }

  const Plan* plan_ = nullptr;
  LedgerOptions options_;
  LedgerResult result_;
  std::optional<Topology> topo_;
  // The current lane's (the batch's, or under TBO the current op's half's).
  std::optional<RowMap> rows_;        // the plan's resolved padding
  std::optional<RowMap> other_rows_;  // full rows in the other padding mode
  std::optional<DpLayouts> dp_;       // the DP buffers of both padding modes
  /// The other lanes' row maps and DP buffers, parked (index: lane).
  struct Lane {
    std::optional<RowMap> rows, other_rows;
    std::optional<DpLayouts> dp;
  };
  Lane parked_lanes_[kHalfLanes];
  int map_lane_ = 0;
  bool tbo_ = false;                  // the plan runs TBO halves (lanes 1, 2)
  std::vector<Parked> parked_;        // per rank, for a TBO plan
  std::int64_t row_bytes_ = 0;
  std::vector<DpWork> dp_work_;       // per member of the DP op in flight (reused)
  std::vector<DpWork*> dp_group_;     // the members of one lowered collective
  std::vector<Value> dp_sum_;         // its sum or concatenation
  std::vector<int> one_rank_;         // dp_scatter's one member
  std::vector<StackShape> stacks_;
  int stage_base_[2] = {0, 0};  // index into plan.stages of each stack's stage 0
  Domain domain_;
  std::vector<RankState> ranks_;
  std::map<std::pair<int, int>, std::deque<Buffer>> mailbox_;
  std::uint64_t junk_ = 0;
};

}  // namespace ledger_detail

}  // namespace seam
