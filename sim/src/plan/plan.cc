#include "seam/sim/plan/plan.h"

namespace seam {

namespace {
constexpr std::string_view kPhaseNames[] = {"entry", "compute", "exit"};
constexpr std::string_view kOpNames[kOpKindCount] = {"all_reduce",
                                                     "reduce_scatter",
                                                     "all_gather",
                                                     "all_gatherv",
                                                     "reduce_scatterv",
                                                     "all_to_all",
                                                     "dp_gather_partial",
                                                     "dp_gather_replicate",
                                                     "dp_scatter",
                                                     "dp_reduce_scatter",
                                                     "slice",
                                                     "zero_fill",
                                                     "add",
                                                     "norm",
                                                     "add_norm",
                                                     "ar_add_norm",
                                                     "compute",
                                                     "snapshot",
                                                     "send",
                                                     "recv"};
constexpr std::string_view kTensorNames[] = {"hidden", "residual", "snapshot", "branch"};
constexpr std::string_view kSumGroupNames[] = {"none", "attn_tp", "tp", "moe_output", "dp_return"};
constexpr std::string_view kCompleterNames[] = {"none", "consumer_entry", "carried"};

template <class E, size_t N>
bool parseNamed(std::string_view name, const std::string_view (&names)[N], E* out) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) {
      *out = static_cast<E>(i);
      return true;
    }
  }
  return false;
}
}  // namespace

std::string_view phaseName(Phase phase) { return kPhaseNames[static_cast<int>(phase)]; }

std::string_view halfName(Half half) {
  switch (half) {
    case Half::kWhole:
      return "whole";
    case Half::kA:
      return "A";
    case Half::kB:
      return "B";
  }
  return "?";
}
std::string_view opName(OpKind kind) { return kOpNames[static_cast<int>(kind)]; }
bool parseOpKind(std::string_view name, OpKind* kind) { return parseNamed(name, kOpNames, kind); }

bool communicates(OpKind kind) {
  switch (kind) {
    case OpKind::kAllReduce:
    case OpKind::kReduceScatter:
    case OpKind::kAllGather:
    case OpKind::kAllGatherv:
    case OpKind::kReduceScatterv:
    case OpKind::kAllToAll:
    case OpKind::kDpGatherPartial:
    case OpKind::kDpGatherReplicate:
    case OpKind::kDpReduceScatter:
    case OpKind::kArAddNorm:
    case OpKind::kSend:
    case OpKind::kRecv:
      return true;
    // dp_scatter copies this rank's slice out of the gathered buffer: local.
    case OpKind::kDpScatter:
    case OpKind::kSlice:
    case OpKind::kZeroFill:
    case OpKind::kAdd:
    case OpKind::kNorm:
    case OpKind::kAddNorm:
    case OpKind::kCompute:
    case OpKind::kSnapshot:
      return false;
  }
  return false;
}

bool reduces(OpKind kind) {
  switch (kind) {
    case OpKind::kAllReduce:
    case OpKind::kReduceScatter:
    case OpKind::kReduceScatterv:
    case OpKind::kDpGatherPartial:
    case OpKind::kDpReduceScatter:
    case OpKind::kArAddNorm:
    case OpKind::kAllToAll:  // the combine sums the experts' outputs per token
      return true;
    default:
      return false;
  }
}

std::string_view tensorName(Tensor tensor) { return kTensorNames[static_cast<int>(tensor)]; }
bool parseTensor(std::string_view name, Tensor* tensor) {
  return parseNamed(name, kTensorNames, tensor);
}
std::string_view sumGroupName(SumGroup group) { return kSumGroupNames[static_cast<int>(group)]; }
std::string_view completerName(Completer completer) {
  return kCompleterNames[static_cast<int>(completer)];
}

int Plan::stageIndex(int stack, int stage) const {
  int position = 0;
  for (int i = 0; i < static_cast<int>(stages.size()); ++i) {
    if (stages[i].stack != stack) continue;
    if (position == stage) return i;
    ++position;
  }
  return -1;
}

int Plan::stackSize(int stack) const {
  int n = 0;
  for (const StageInfo& s : stages) n += s.stack == stack ? 1 : 0;
  return n;
}

}  // namespace seam
