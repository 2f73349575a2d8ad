// Private to sim/: the training planner (training_plan.h), shared by the
// files that define it. training_plan.cc holds its primitives (tensors, the
// ops it emits on every rank) and the build; training_plan_forward.cc and
// training_plan_moe.cc each layer kind's forward as the engine runs it;
// training_plan_backward.cc Megatron's backward (the conjugates of the
// forward ops, TE's re-gathers, finalize_model_grads);
// training_plan_attention_cp.cc Megatron's attention CP (TE's p2p ring and
// all-to-all); training_plan_fsdp.cc
// PrimeRL's FSDP2 units and schedule and its activation recompute.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "seam/sim/training/training_plan.h"
#include "training/training_layout.h"

namespace seam::training {

inline constexpr std::int64_t kBf16 = 2;
/// PrimeRL's log-prob all-gather over cp, the one loss statistic with a
/// gradient (reduce-scattered back in backward).
inline constexpr const char* kLogprobsGather = "cp all-gather logprobs";
/// Megatron's all-to-all dispatcher sends the routing probabilities beside
/// the tokens; they carry a gradient (all-to-all'd back in backward) but no
/// activation cells the ledger tracks.
inline constexpr const char* kProbsAllToAll = "ep probs all-to-all";
/// Megatron's dispatcher under expert TP all-gathers the probs over the
/// expert-TP group after the tokens (reduce-scattered back in backward).
inline constexpr const char* kProbsGather = "etp probs all-gather";
/// Megatron's allgather dispatcher gathers the [tokens, experts] probs over
/// tp_ep before the tokens (reduce-scattered back in backward).
inline constexpr const char* kProbsGatherTpEp = "tp_ep probs all-gather";

/// TE's QKVO all-to-all CP: the attention output's head->seq all-to-all,
/// which its backward re-runs (seq->head) on the saved output.
inline constexpr const char* kA2aOut = "cp a2a head->seq attn";

/// How a kernel's gradient for one read is partial.
enum class Partial { kNone, kTp, kCp, kReps, kRouted };

/// A kernel's read: the buffer, and how its gradient contribution is partial.
struct Read {
  int buffer;
  Partial partial = Partial::kNone;
};

/// One Mamba layer while it is planned: its names, head geometry and parameters.
struct MambaLayer {
  int l = 0;
  std::string L;                          ///< "L<l>.": its tensors' name prefix
  int nb = 0;                             ///< Mamba head blocks (cp * tp)
  int G = 0;                              ///< B/C group units
  int units_local = 0, groups_local = 0;  ///< head blocks and groups per tp rank
  std::int64_t head_bytes = 0, group_bytes = 0, dt_bytes = 0;
  int p_norm = -1, p_in = -1, p_convx = -1, p_convbc = -1, p_alog = -1, p_d = -1, p_dtb = -1,
      p_gn = -1, p_out = -1;
};

/// One MoE layer while it is planned: its names, width and parameters.
struct MoeLayer {
  int l = 0;
  std::string L;  ///< "L<l>.": its tensors' name prefix
  int lat = 0;    ///< the experts' width: the latent size, or hidden
  int p_norm = -1, p_router = -1, p_fc1 = -1, p_fc2 = -1, p_sh = -1, p_ex = -1;  ///< -1: none
  int disp = -1;  ///< the (token, expert) cells before the dispatch: the combine's handle
  /// Megatron's allgather dispatcher: the tokens gathered over tp_ep (the
  /// rows the local unpermute writes before the reduce-scatter).
  int gathered = -1;
  int u_router = -1, u_experts = -1;  ///< PrimeRL: their own FSDP units (-1: in the block's)
};

/// A PrimeRL FSDP2 unit (setup_fsdp): a block, a MoE layer's fp32 router,
/// its experts under EP, the embedding, or [lm_head, final norm].
struct FsdpUnit {
  std::string name;  ///< "block", "router", "experts", "embedding", "lm_head+norm"
  int layer = -1;
  char block = ' ';
  bool nested = false;      ///< a router or experts unit inside its block
  std::vector<int> params;  ///< the ledger's parameters whose gradients it reduces
  /// The engine's parameters it flattens: (dim 0, elements per dim-0 row);
  /// FSDP2 pads dim 0 to a multiple of the shard count.
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes;
  TrainAxis axis = TrainAxis::kFsdp;
  std::int64_t param_bytes = 2;   ///< the all-gather dtype (MixedPrecisionPolicy.param_dtype)
  std::int64_t reduce_bytes = 4;  ///< the reduce-scatter dtype (reduce_dtype)
  bool reshard = true;            ///< reshard_after_forward
  int first = -1, last = -1;      ///< the forward ops (rank-independent indices) it spans
};

/// The EP all-to-all split sizes of one MoE layer, per rank.
struct ExpertSplits {
  std::vector<std::vector<int>> send;  ///< cells rank r sends to each EP member
  std::vector<std::vector<int>> recv;  ///< cells rank r receives from each EP member
  /// DeepEP: rows rank r sends to each EP member, one per (token, member
  /// owning at least one of its experts).
  std::vector<std::vector<int>> rows;
};

/// Builds one training plan: the forward on every rank, then the backward.
class Builder {
 public:
  Builder(const TrainingCase& c, TrainingDecision d) : lay_(c), d_(d) {
    plan_.source = c;
    fwd_.resize(lay_.world());
  }

  TrainingPlan build();

 private:
  const TrainingConfig& k() const { return lay_.config(); }
  bool megatron() const { return k().layout == TrainingLayout::kMegatron; }
  int W() const { return lay_.world(); }

  // training_plan.cc: tensors.
  int tensor(const std::string& name, Space space, int units, std::int64_t unit_bytes, int layer,
             bool tp_split = false);
  int root(int id) const {
    while (plan_.tensors[id].value_of >= 0) id = plan_.tensors[id].value_of;
    return id;
  }
  int derived(const std::string& name, int from, int units = -1);
  int param(const std::string& name, Space space, int units, std::int64_t elements,
            bool tp_sharded = false, bool ep_sharded = false, int shards = 1);
  int consume(int r, int count);
  std::int64_t bytesOf(int buffer, int rank) const {
    return cells_[buffer][rank] * plan_.tensors[buffer].unit_bytes;
  }
  int localCells(int r, int units) const {
    return static_cast<int>(lay_.localTokens(r).size()) * units;
  }
  int cpCells(int r, int units) const { return static_cast<int>(lay_.cpTokens(r).size()) * units; }
  std::int64_t paramBytes(const std::vector<int>& params) const;

  // training_plan.cc: the ops, emitted on every rank.
  using Fill = std::function<void(int rank, TrainingOp& op)>;
  void emit(const TrainingOp& proto, const Fill& fill = {});
  void kernel(int layer, char block, Kernel kern, const std::string& step,
              const std::vector<Read>& reads, const std::vector<int>& writes,
              const std::vector<int>& params,
              const std::function<int(int rank, int write_index)>& cells_of, bool tp_shard = false,
              bool segments = false);
  std::vector<int> segmentsFor(int r) const;
  void collective(int layer, char block, OpKind kind, A2aMode mode, TrainAxis axis,
                  const std::string& step, int from, int to,
                  const std::function<int(int rank)>& out_cells, const Fill& extra = {});
  void transform(int layer, char block, Transform t, const std::string& step,
                 const std::vector<int>& reads, int to, const Fill& fill);
  int spGather(int layer, char block, int h, const std::string& name);
  int spScatter(int layer, char block, int o, const std::string& name);
  int unit(const std::string& name, int layer, char block, std::vector<int> params,
           std::vector<std::pair<std::int64_t, std::int64_t>> shapes);
  void openUnit(int u) { units_[u].first = static_cast<int>(fwd_[0].size()); }
  void closeUnit(int u) { units_[u].last = static_cast<int>(fwd_[0].size()) - 1; }

  // training_plan_fsdp.cc: PrimeRL's FSDP2 schedule and activation recompute.
  std::int64_t unitElements(const FsdpUnit& u, bool shard) const;
  TrainingOp fsdpOp(int u, OpKind kind, Pass pass, int r, const std::string& step) const;
  void insertForwardGathers();
  void backwardFsdp();
  void preBackward(int u, std::vector<char>& unsharded, std::vector<TrainingOp>& out, int r);
  void postBackward(int u, std::vector<TrainingOp>& out, int r);
  int blockUnit(int layer) const;
  int nestedUnit(int layer, const std::string& name) const;

  // training_plan_forward.cc and training_plan_moe.cc: each layer kind's forward.
  void embed();
  int mamba(int l, int h);
  MambaLayer mambaParams(int l);
  std::vector<int> mambaInProj(const MambaLayer& m, int h);
  std::vector<int> mambaToHeads(const MambaLayer& m, const std::vector<int>& outs);
  int mambaScan(const MambaLayer& m, const std::vector<int>& in);
  int mambaOut(const MambaLayer& m, int h, int y);
  std::vector<int> cpOrder(int r) const;
  std::vector<int> undoPerm(int r, int units) const;
  std::vector<int> redoPerm(int r, int units) const;
  int projectAndAdd(int l, char block, const std::string& step, int in, int p_out, int h);
  int attention(int l, int h);
  int moe(int l, int h);
  MoeLayer moeParams(int l);
  void moeUnits(MoeLayer& m);
  ExpertSplits expertSplits(int l) const;
  int routedCells(int r) const;
  std::pair<std::int64_t, std::int64_t> expertRows(const ExpertSplits& s, int r) const;
  int moeDispatch(MoeLayer& m, int xl, const ExpertSplits& splits);
  int expertTpRows(const ExpertSplits& s, int r) const;
  std::vector<int> expertTpSplits(const ExpertSplits& s, int r) const;
  int expertTpGather(const MoeLayer& m, int at, const ExpertSplits& splits);
  int expertTpScatter(const MoeLayer& m, int yw, const ExpertSplits& splits);
  void megatronProbsAllToAll(int l, const ExpertSplits& splits);
  int allGatherDispatch(MoeLayer& m, int xl);
  int allGatherScatter(const MoeLayer& m, int ms);
  int moeCombine(const MoeLayer& m, int at_experts, int xl, const ExpertSplits& splits);
  void loss(int h);
  void statCollective(int layer, OpKind kind, TrainAxis axis, const std::string& step,
                      const std::function<std::int64_t(int rank)>& bytes);

  // training_plan_backward.cc: the backward and the gradients.
  void backward();
  TrainingOp conjugate(const TrainingOp& f, int index, int r, bool* keep);
  void finalizeGrads(std::vector<TrainingOp>& out, int r);
  void expertBiasCounts(std::vector<TrainingOp>& out, int r);
  void attentionCpBackward(const std::vector<TrainingOp>& f, int i, int r,
                           std::vector<TrainingOp>& bwd, std::vector<char>& done);

  // training_plan_attention_cp.cc: Megatron attention CP as TE's p2p ring
  // or QKVO all-to-all.
  std::vector<int> kvRingForward(int l, int kk, int vv);
  void addRingChunks(const std::vector<int>& chunks);
  void ringExchange(int r, int layer, Pass pass, const std::string& what,
                    const std::vector<int>& sends, const std::vector<int>& recvs,
                    std::vector<TrainingOp>& out) const;
  void attentionRingBackward(const std::vector<TrainingOp>& f, int i, int r,
                             std::vector<TrainingOp>& bwd, std::vector<char>& done);
  std::vector<int> a2aToHeads(int l, const std::vector<int>& qkv);
  int a2aToSeq(int l, int out);
  void attentionA2aBackward(const std::vector<TrainingOp>& f, int i, int r,
                            std::vector<TrainingOp>& bwd, std::vector<char>& done);
  int gradRoot(int rt);
  int gradOf(int b);
  void completeGradients();

  /// A layer's parameters, by the reduction their gradients get.
  struct LayerParams {
    std::vector<int> dense;  ///< replicated (FSDP / DDP) parameters
    std::vector<int>
        tp_sum;  ///< Megatron: replicated over tp on SP data: all-reduced over tp first
    std::vector<int> experts;  ///< expert parameters
  };

  Layout lay_;
  TrainingDecision d_;
  TrainingPlan plan_;
  std::vector<std::vector<TrainingOp>> fwd_;
  std::vector<std::vector<int>> cells_;  // [buffer][rank]
  std::vector<std::int64_t> param_elems_;
  std::vector<int> consumers_;
  std::vector<LayerParams> layer_params_;  // index layer + 1 (0: embedding, layers + 1: the loss)
  int h0_ = -1;
  int cur_layer_ = -1;
  int nl_ = 0;                                 ///< decoder layers; the loss ops carry layer nl_
  std::vector<std::pair<int, int>> moe_sums_;  ///< (experts' output, its routed sum)
  std::vector<FsdpUnit> units_;                ///< PrimeRL: in order of forward completion
};

}  // namespace seam::training
