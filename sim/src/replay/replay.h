// Private to sim/: the replay of a plan on every rank over a value domain, the
// one definition of what each op kind does to rows (STYLE 6), run by the
// ledger, the numeric CPU executor and the bit-identity prediction. This
// header is its map; the bodies, by op family, are the replay_*.h at its end.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "replay/ledger_domains.h"
#include "seam/sim/plan/dp_gather.h"
#include "seam/sim/plan/rows.h"
#include "seam/sim/plan/tbo.h"
#include "seam/sim/replay/judge_geometry.h"
#include "seam/sim/replay/judge_rows.h"
#include "seam/sim/replay/ledger.h"

namespace seam::ledger_detail {

/// What decides the order in which an executor adds the members' rows of
/// one reduction: the call (op or DP step kind and the layout it reduces),
/// the kind of communicator and its row count. NCCL picks its algorithm and
/// each element's order of additions from these; two plans issuing the same
/// call on the same rows get the same bits (the arithmetic domain of
/// bit_identity.h keys on it; the other domains add in member order). The
/// groups of one axis are taken to be alike (same size and stride on one
/// NVSwitch host), so replicas reducing over their own groups agree.
struct ReduceCall {
  int kind = 0;  ///< OpKind, or kDpStepTag + DpStepKind, with the input layout
  int communicator =
      0;         ///< the communicator's axis (JudgeGroups::communicator / kCommunicatorStride)
  int rows = 0;  ///< rows per member in the call
};
inline constexpr int kDpStepTag = 1 << 12;

/// "[0,2,4]": a group's ranks, as violation details name them.
inline std::string rankList(const std::vector<int>& g);

/// The replay over `Domain` (FastDomain, ExactDomain, NumericDomain,
/// ArithmeticDomain): a Domain::Value per row, and zero, add, embed, norm,
/// compute, project, junk and holds on values. One object replays many plans
/// (its buffers keep their capacity).
template <class Domain>
class Replay {
 public:
  using Value = typename Domain::Value;

  /// Rows an all-reduce hands to every member of its group at once (fast
  /// domain): one sum held once, not a copy per member. `stamp` names these
  /// contents (a pooled holder refilled gets a new one).
  struct SharedRows {
    std::vector<Value> v;
    std::uint64_t stamp = 0;
  };
  /// One tensor of one rank: its rows' values and the layout they are in.
  struct Buffer {
    RowKind kind = RowKind::kNone;
    bool present = false;
    /// For full rows: the padding layout the rows were written in. A plan
    /// that gathers in one mode and scatters in the other reads wrong slots.
    DpPadding full_mode = DpPadding::kMaxLen;
    std::vector<Value> v;
    /// Fast domain only: a norm's or a compute's output not yet written
    /// (normInPlace, compute). While
    /// not null, v has the rows' count but not their values: row i is
    /// junk(unwritten_junk + i + 1) where (*unwritten)[i] is a padding row,
    /// else point(unwritten_coefficient, t), as fillRows writes them.
    const std::vector<int>* unwritten = nullptr;
    std::uint64_t unwritten_coefficient = 0, unwritten_junk = 0;
    /// Fast domain only: a hidden state an all-reduce left shared with its
    /// group (shareSum). While not null, v has the rows' count but not their
    /// values, which rowsOf() reads here. Never set with `unwritten`.
    std::shared_ptr<const SharedRows> shared;
  };
  /// An aux snapshot: the buffer captured before `stage` of `stack`.
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

  Replay() = default;
  Replay(const Replay&) = delete;  // lane_ points into lanes_
  Replay& operator=(const Replay&) = delete;

  /// The value domain (the numeric executor configures it before a run).
  Domain& domain() { return domain_; }

  /// Replays `plan` on every rank from the embedding to the final checks;
  /// stops at options.max_violations violations.
  LedgerResult run(const Plan& plan, const LedgerOptions& options);

  /// The rows a finished run reports, in rank order: first every snapshot row
  /// of the main stack, on_snapshot(stage, token, value), then every final
  /// norm's row, on_final(stack, token, value). Padding rows are skipped.
  template <class OnFinal, class OnSnapshot>
  void visitOutputs(OnFinal&& on_final, OnSnapshot&& on_snapshot) const;

 private:
  // ---- the run (replay_run.h) ------------------------------------------------
  /// The stages of each stack, from the judges' stages of the case (StackShape).
  void shapeStacks();
  /// The group a column-parallel input projection splits its output over:
  /// attention TP under attention DP, else tp.
  Axis columnAxis() const { return plan_->source.config.attn_dp > 1 ? Axis::kAttnTp : Axis::kTp; }
  /// Every rank starts on the batch's lane with no residual, branch or snapshot.
  void resetRanks();
  /// The embedding on attention rows: complete (VocabParallelEmbedding reduces
  /// itself), or each TP rank's vocab-shard part where the engine skips that
  /// all-reduce (input-scattered attention).
  void embed();
  /// Rounds over the ranks: each runs its local ops up to a collective, then
  /// every collective whose group's members all wait in it runs; a round
  /// without progress is a deadlock.
  void schedule();
  /// Runs rank r's local ops up to its next collective; true if any ran.
  bool runLocal(int r);
  /// Runs the collective at rank r's pc when r is its group's lowest rank and
  /// every member waits in a matching call; true if it ran.
  bool tryCollective(int r);
  /// Names the first rank that waits and what its group's members do instead.
  void reportDeadlock();
  /// End of the plan: snapshots complete, no branch left open, every last
  /// pipeline rank holds each stack's final output.
  void finalChecks();

  // ---- violations and checks (replay_checks.h) -------------------------------
  bool stopped() const {
    return static_cast<int>(result_.violations.size()) >= options_.max_violations;
  }
  /// A violation located at rank's current op (rank -1: at no rank).
  Violation at(int rank, Property p, ViolationClass c, std::string detail);
  void report(Violation v) { result_.violations.push_back(std::move(v)); }
  void layoutViolation(int rank, Property p, const std::string& what) {
    report(at(rank, p, ViolationClass::kLayoutMismatch, what));
  }
  /// Checks every token row of `b` against the expected value; reports the first wrong row.
  bool checkRows(int rank, Buffer& b, Expect e, int stack, int stage, Property p);
  /// Writes an unwritten norm's or compute's rows and takes a copy of shared
  /// rows (a no-op on a buffer that holds its own written rows). Only a
  /// rank's hidden state is ever unwritten or shared: a norm or a compute
  /// makes it unwritten, an all-reduce of it makes it shared; a norm, an
  /// add_norm (shared only) or a compute checks and overwrites it, an
  /// all-reduce of it sums it (sumUnwritten) or writes it first, a DP op
  /// reads shared rows where they are (takeInput), and every other op finds
  /// it written (runLocal, tryCollective and activate write it first).
  void materialize(Buffer& b) {
    fillUnwritten(b);
    if constexpr (std::is_same_v<Domain, FastDomain>) {
      if (b.shared == nullptr) return;
      b.v.assign(b.shared->v.begin(), b.shared->v.end());
      b.shared.reset();
    }
  }
  /// Writes an unwritten norm's or compute's rows (shared rows stay shared).
  void fillUnwritten(Buffer& b) {
    if constexpr (std::is_same_v<Domain, FastDomain>) {
      if (b.unwritten == nullptr) return;
      domain_.fillRows(b.v.data(), b.unwritten->data(), b.v.size(), b.unwritten_coefficient,
                       b.unwritten_junk);
      b.unwritten = nullptr;
    }
  }
  /// The values of b's rows: its own, or the rows it shares.
  static const std::vector<Value>& rowsOf(const Buffer& b) {
    return b.shared != nullptr ? b.shared->v : b.v;
  }
  /// Rows the fast domain's checkRows found to hold. The members of a group
  /// hold the same gathered rows (a DP gather's full rows on every TP rank)
  /// and check them one after the other: rows equal to rows that held, on
  /// the same tokens against the same coefficient, hold (compared, not
  /// multiplied out again).
  struct Held {
    const std::vector<int>* toks = nullptr;
    std::uint64_t coefficient = 0;
    std::vector<std::uint64_t> v;
    std::uint64_t stamp = 0;  ///< the SharedRows they were read from; 0: none
  };
  /// checkRows remembers rows that held from kHeldRows rows on, kHeld of them.
  static constexpr size_t kHeldRows = 16, kHeld = 4;
  /// The first n rows of `v` are rows that held on `toks` against
  /// `coefficient` (the same SharedRows, by `stamp` when not 0, or the same values).
  bool knownToHold(const std::vector<Value>& v, size_t n, const std::vector<int>& toks,
                   std::uint64_t coefficient, std::uint64_t stamp) const;
  /// Remembers that they held (in place of the oldest remembered).
  void rememberHeld(const std::vector<Value>& v, size_t n, const std::vector<int>& toks,
                    std::uint64_t coefficient, std::uint64_t stamp);
  /// The exact domain's explanation of a wrong row, as a sentence.
  static std::string describe(const Explanation& x, Expect e, int stack, int stage, int t);
  /// `b` holds rows of `kind`, as many as the rank has; else a layout violation.
  bool expectKind(int r, const Buffer& b, RowKind kind, const Op& op, const char* what);
  /// hidden and residual on the same rows: the residual follows (property 3).
  bool residualFollows(int r, const RankState& st, const Op& op);
  /// A plain all_gather / reduce_scatter between local and attention rows
  /// moves one chunk size from every member (ncclAllGather /
  /// ncclReduceScatter); unequal slices need the v-variants.
  bool equalChunks(const std::vector<int>& members, const Op& op);

  // ---- buffers and rows (replay_rows.h) --------------------------------------
  /// The current lane's rows (the batch's, or under TBO the current op's half's).
  const JudgeTokens& rows() const { return lane_->rows; }
  /// The buffer an op's tensor names (a snapshot: the last one taken).
  Buffer& bufferOf(RankState& st, Tensor t);
  Value freshJunk() { return domain_.junk(++junk_); }
  /// The tokens a buffer's rows hold by its layout.
  const std::vector<int>& tokensOf(const Buffer& b, int rank) const;
  /// Rows [slot, slot + B_d) of a full buffer, where the op's padding mode puts shard d.
  bool readSlot(int r, const Buffer& b, const Op& op, std::vector<Value>* out);
  /// Rank `src`'s local rows of `attention` (the shard's rows): its slice,
  /// and under LayerNorm SP's padded chunks the rows past the shard are the
  /// zero rows of the pad, which hold no token.
  void takeLocal(int src, const std::vector<Value>& attention, std::vector<Value>* out);
  void recordFinal(int r, int stack, const Buffer& b);
  /// The reused buffer a collective builds its result in: empty rows of `kind`.
  Buffer& startGathered(RowKind kind);
  /// The built result becomes every member's `t` (the last member takes its
  /// storage, the others a copy; fast domain: one holder shared by the
  /// group's hidden states): no buffer allocated per collective.
  void handOutGathered(const std::vector<int>& members, Tensor t);
  void addInto(Buffer& dst, const Buffer& src);
  /// One reduction of `n` members' rows: `sum` holds member 0's rows (it may
  /// be them) and ends as the sum; rows_of(p) are member p's. In member order,
  /// unless the domain orders reductions by their call (reduceCall), which
  /// call_of() names only then (the ledger's domains never ask).
  template <class RowsOf, class CallOf>
  void reduceMembers(std::vector<Value>& sum, size_t n, const RowsOf& rows_of,
                     const CallOf& call_of);
  ReduceCall reduceCallOf(const Op& op, int rank, int rows) const;
  /// A reduction's result divided by the op's divide_by (1 in real plans).
  void divideRows(std::vector<Value>& sum, const Op& op) {
    if (op.divide_by != 1) domain_.divide(sum, op.divide_by);
  }
  /// The member (index into the group) whose chunk member `k` of `n` gets
  /// (its own in real plans; op.chunk_shift moves it).
  static size_t chunkOf(size_t k, size_t n, const Op& op) {
    const int s = op.chunk_shift % static_cast<int>(n);
    return (k + static_cast<size_t>(s < 0 ? s + static_cast<int>(n) : s)) % n;
  }

  // ---- local ops (replay_local_ops.h) ----------------------------------------
  /// Runs a non-communicating op (or dp_scatter, local to its rank) on rank r.
  void execLocal(int r, const Op& op);
  void zeroFill(int r, const Op& op);
  /// A slice op: a TBO split, CP's reorders, the CP take-back or the attn_tp slice.
  void slice(int r, const Op& op);
  /// cp_gather_after_forward's reorder: the gathered CP shards in sequence order.
  void reorderOntoSequence(int r, const Op& op, Buffer& b);
  /// cp_shard_hidden_states: this rank's CP shard of rows in sequence order, zero-padded.
  void shardSequence(int r, const Op& op, Buffer& b);
  /// attn_cp_take_back_output: this CP rank's block of the gathered rows.
  void takeBackCpBlock(int r, const Op& op, Buffer& b);
  /// tensor_split(attn_tp)[index]: the rank's own slice, or the plan's index.
  void sliceLocal(int r, const Op& op, Buffer& b);
  /// An add op: a TBO merge, a branch's fork or merge, the residual adds.
  void add(int r, const Op& op);
  /// Fork: an empty branch takes a copy of the (normed) hidden state.
  /// Merge: a branch's contribution is added into the hidden state.
  void forkOrMerge(int r, RankState& st);
  /// Input-scattered FFN input (_tp_sum_with_residual_read): the residual
  /// slice added into this rank's own rows of the partial sum.
  void addResidualSlice(int r, RankState& st, const Op& op);
  /// norm at (stack, stage): checks the complete value, replaces it by n(s, t).
  void normInPlace(int r, Buffer& b, Buffer& source, const Op& op);
  /// residual += hidden (residual := hidden first), hidden = norm(residual).
  void addNorm(int r, const Op& op);
  /// A stage's GEMMs on its normed input (or the MTP input projection).
  void compute(int r, const Op& op);

  // ---- point to point and collectives (replay_collectives.h) -----------------
  void doSend(int r, const Op& op);
  /// Receives rank r's pending recv from its mailbox; false while it is empty.
  bool tryRecv(int r);
  /// Runs a communicating op on all of its group's members at once.
  void execCollective(const std::vector<int>& members, const Op& op);
  /// all_reduce (and ar_add_norm, the add_norm after it).
  void allReduce(const std::vector<int>& members, const Op& op);
  /// Fast domain: the rows of `from` (a collective's result: members[0]'s
  /// hidden state or gathered_) become every member's hidden state, held
  /// once (Buffer::shared); from.v keeps no rows.
  void shareHidden(const std::vector<int>& members, Buffer& from);
  /// A pooled holder no buffer shares any more (else a new one), its rows
  /// swapped with `rows` and stamped afresh.
  std::shared_ptr<SharedRows>& holdRows(std::vector<Value>& rows);
  /// Fast domain: an all-reduce of hidden states that are all unwritten on
  /// the same tokens (computes' outputs) summed into the first member's rows
  /// from their coefficients (FastDomain::fillSum); false (nothing done) otherwise.
  bool sumUnwritten(const std::vector<int>& members, const Op& op);
  /// Attention rows to local slices, the DP return's slot or attn_cp's blocks.
  void reduceScatter(const std::vector<int>& members, const Op& op);
  /// attn_cp's gathers: the CP shards concatenated in rank order.
  void gatherCpShards(const std::vector<int>& members, const Op& op);
  /// Local slices to attention rows, each member's slice at its offset.
  void gatherLocal(const std::vector<int>& members, const Op& op);
  /// Column shards (attention rows to attention rows, the hidden dimension
  /// split): each row joined from the members' columns in group order.
  void gatherColumns(const std::vector<int>& members, const Op& op);
  /// all_to_all dispatch: every member receives the concatenation of the members' rows.
  void dispatch(const std::vector<int>& members, const Op& op);
  /// all_to_all combine: each member's segment, summed over the experts' ranks.
  void combine(const std::vector<int>& members, const Op& op);

  // ---- DP ops, lowered (replay_dp.h) -----------------------------------------
  /// One member's run of its lowering: the buffer in flight, the local rows
  /// the all-reduce path keeps aside, its steps and how far it got.
  struct DpWork {
    std::vector<Value> buf, local;
    /// The member's lowering, held by lowered_ (not copied per op).
    const DpLowering* lowering = nullptr;
    const DpLowering& steps() const { return *lowering; }
    int pos = 0;
    DpPadding mode = DpPadding::kMaxLen;
    /// Fast domain: buf as a compute left it unwritten (Buffer::unwritten).
    const std::vector<int>* unwritten = nullptr;
    std::uint64_t unwritten_coefficient = 0, unwritten_junk = 0;
    /// Fast domain: when not -1, buf is not written yet: it is `zeroed`
    /// zero rows (kZeroGlobal) but for local's first slot_rows rows at
    /// slot_at (kWriteSlot), so that an all-reduce of such buffers adds
    /// only their slots (sumSlotsDp).
    int zeroed = -1;
    int slot_at = 0, slot_rows = 0;
    /// Fast domain: the rows of a summed all-reduce step (sumSlotsDp), one
    /// holder for the group (Buffer::shared); buf is not written while set.
    std::shared_ptr<const SharedRows> shared;
    /// The rows buf holds, written or not.
    size_t rows() const {
      return zeroed >= 0 ? static_cast<size_t>(zeroed) : shared ? shared->v.size() : buf.size();
    }
  };
  /// "dp_gather_partial (lowered: all_reduce over tp)".
  std::string dpWhere(const Op& op, const DpStep& s) const;
  /// Runs the DP op at every member's pc through its lowering: local steps
  /// on each member, collective steps on each step's group (a sub-group of
  /// the TP group: attn_tp, attn_cp or tp) once all of its members reach
  /// them; members must agree on each collective's kind and bytes.
  void runDpOp(const std::vector<int>& members, const Op& op);
  /// Lowers each member's DP op and takes its input rows; false after a violation.
  bool startDpOp(const std::vector<int>& members, bool gather);
  /// Rank m's lowering of the DP op `mop` on `geometry`, made once per run
  /// for each DP op kind, geometry and fault (the ops of every layer repeat it).
  const DpLowering& lowered(int m, const Op& mop, const JudgeDpBuffer* geometry);
  struct Lowered {
    std::uint64_t run = 0;  // the run it was made in (runs_); 0: never
    const JudgeDpBuffer* geometry = nullptr;
    OpKind kind = OpKind::kDpScatter;
    DpFault fault = DpFault::kNone;
    DpLowering steps;
  };
  /// dp_gather_partial, dp_gather_replicate, dp_scatter, dp_reduce_scatter.
  static constexpr size_t kDpKinds = 4;
  static size_t dpKindIndex(OpKind k) {
    return k == OpKind::kDpGatherPartial     ? 0
           : k == OpKind::kDpGatherReplicate ? 1
           : k == OpKind::kDpScatter         ? 2
                                             : 3;
  }
  /// The buffer a member's DP op writes (finishDpOp).
  Buffer& outputOf(RankState& st, const Op& mop);
  /// The op's input rows into w.buf (a first slot read done on the way;
  /// fast domain: a compute's unwritten rows taken as they are when a
  /// reduce-scatter sums them first).
  void takeInput(DpWork& w, RankState& st, Buffer& in, bool in_is_out);
  /// Writes w.buf's rows if they were taken unwritten or left zeroed.
  void writeUnwritten(DpWork& w);
  /// Fast domain: the all-reduce of dp_group_'s g members whose rows are all
  /// zeroed but for their slots (DpWork::zeroed), summed into dp_sum_;
  /// false (nothing done) otherwise.
  bool sumSlotsDp(size_t g);
  /// Fast domain: the reduce-scatter of dp_group_'s g members whose rows are
  /// all unwritten on the same tokens, summed into dp_sum_ (FastDomain::fillSum);
  /// false (nothing done) otherwise.
  bool sumUnwrittenDp(size_t g);
  /// Runs the members' steps to the end; false after a violation or a deadlock.
  bool runDpSteps(const std::vector<int>& members, const Op& op);
  /// Each member's rows in flight become its output tensor.
  void finishDpOp(const std::vector<int>& members, bool gather);
  /// A local step of one member; false after a violation.
  bool dpLocalStep(int m, DpWork& w, const DpStep& s);
  /// The collective step `s` of the lowest member of `group`, once every
  /// member of `group` waits on a collective on that axis (*ready = 1);
  /// false after a violation.
  bool dpCollectiveStep(const std::vector<int>& members, const std::vector<int>& group,
                        const DpStep& s, int* ready);

  // ---- lanes: TBO halves (replay_lanes.h) ------------------------------------
  /// The row maps and DP buffers of `lane` become the current ones.
  void useLane(int lane) { lane_ = &lanes_[lane]; }
  /// Rank r's buffers and the row maps switch to the lane of `half`.
  void activate(int r, Half half);
  /// The whole batch's hidden state or residual while a half's lane is active.
  Buffer& wholeBuffer(int r, Tensor t);
  /// TBO split (slice) or merge (add: a copy) of the active half's rows (tbo.h):
  /// child A holds rows [0, split) of each shard's attention rows, B the rest.
  void tboMove(int r, const Op& op);

  // ---- state -----------------------------------------------------------------
  const Plan* plan_ = nullptr;
  LedgerOptions options_;
  LedgerResult result_;
  std::optional<JudgeGroups> topo_;  // the judges' groups of the case
  std::vector<JudgeLane> lanes_;     // lane 0: the batch; a TBO plan's halves: lanes 1, 2
  const JudgeLane* lane_ = nullptr;  // the current op's (lanes_[lane])
  bool tbo_ = false;                 // the plan runs TBO halves (lanes 1, 2)
  std::vector<Parked> parked_;       // per rank, for a TBO plan
  std::int64_t row_bytes_ = 0;
  std::vector<DpWork> dp_work_;    // per member of the DP op in flight (reused)
  std::vector<DpWork*> dp_group_;  // the members of one lowered collective
  std::vector<Value> dp_sum_;      // its sum or concatenation
  std::vector<int> one_rank_;      // dp_scatter's one member
  Buffer gathered_;                // a collective's result before it is handed out (reused)
  std::vector<Value> scratch_;     // a slice's rows before they replace the buffer's (reused)
  std::vector<Lowered> lowered_;   // lowered()'s, kDpKinds per rank
  std::uint64_t runs_ = 0;         // runs so far (lowered_'s entries name theirs)
  std::vector<Value> lazy_coefficients_;  // sumUnwritten's (reused)
  std::vector<std::uint64_t> lazy_junk_;  // sumUnwritten's (reused)
  std::vector<const Value*> sources_;     // reduceMembers' members' rows (fast domain, reused)
  std::vector<JudgeStage> stages_;        // the judges' stages of the case (stack 0, then 1)
  std::vector<StackShape> stacks_;
  int stage_base_[2] = {0, 0};  // index into stages_ of each stack's stage 0
  Domain domain_;
  std::vector<RankState> ranks_;
  std::map<std::pair<int, int>, std::deque<Buffer>> mailbox_;
  std::uint64_t junk_ = 0;
  std::vector<Held> held_;  // knownToHold's (fast domain), forgotten at each run
  std::vector<std::shared_ptr<SharedRows>> shared_pool_;  // shareSum's holders (reused)
  std::uint64_t stamps_ = 0;                              // SharedRows::stamp's last
  size_t held_next_ = 0;
};

}  // namespace seam::ledger_detail

#include "replay/replay_checks.h"
#include "replay/replay_collectives.h"
#include "replay/replay_dp.h"
#include "replay/replay_lanes.h"
#include "replay/replay_local_ops.h"
#include "replay/replay_rows.h"
#include "replay/replay_run.h"
