// Aux hidden-state captures (EAGLE3 layers_to_capture) of single-stage
// (Nemotron-H) layers: the capture runs before the consumer's entry, on the
// residual stream as the previous stage left it, and may change that entry.
// Two-stage layers capture after the entry (emission.cc, emitCapture).
#include "plan_builder.h"

namespace seam::policy_detail {

std::int8_t PlanBuilder::owedAxis(SumGroup owes) const {
  switch (owes) {
    case SumGroup::kAttnTp:
      return static_cast<std::int8_t>(Axis::kAttnTp);
    case SumGroup::kTp:
      return static_cast<std::int8_t>(Axis::kTp);
    case SumGroup::kMoeOutput:
      return static_cast<std::int8_t>(postExpertsAxis());
    default:
      return kNoAxis;
  }
}

namespace {

/// Whether a carried entry step is part of the completion (the work the
/// producer left), not the read after it.
bool completes(const Step& s) {
  switch (s.kind) {
    case OpKind::kAllReduce:
    case OpKind::kArAddNorm:
    case OpKind::kReduceScatterv:
    case OpKind::kDpReduceScatter:
    case OpKind::kDpScatter:
      return s.tensor == Tensor::kHidden;
    default:
      return false;
  }
}

}  // namespace

// Declared (layers/communicator/stage.py StageCommunicator.capture_output
// @49b5e76e; residual/stream.py ResidualStream.snapshot and
// Contribution.complete @701213c8):
// - a carried sum (CarriedSum) is completed in place over the group it is
//   owed over (group.all_reduce, or the DP return's reduce_and_redistribute);
//   the contribution stays pending with nothing owed, so the entry's read is
//   a plain add+norm (for_boundary hands the fused kernel no partial);
// - a declared sum (DeclaredSum: a mixer's partial into an FFN) is completed
//   on a clone, which the capture takes; the original stays owed and the
//   entry completes it as it would without the capture (an extra all-reduce);
// - the snapshot is the completed value plus the residual.
// Legacy (the parent, models/nemotron_h.py NemotronHModel.forward and
// _capture_hidden_states, haosenwang1018/sglang @cdaef07e): an output the
// fused kernel was to reduce (_sglang_needs_allreduce_fusion) is all-reduced
// over tp and the flag cleared, so the next layer only adds and norms; a copy
// of a mixer's output that feeds an FFN (an unreduced partial) is
// all-reduced over attention TP; then the residual is added to the copy.
StepList PlanBuilder::singleStageCapture(int stack, int from, int to, const Hand& h) const {
  const Handoff& in = h.handoff;
  const bool carried = in.completer == Completer::kCarried;
  bool fused = false;
  for (const Step& s : h.entry) fused = fused || s.kind == OpKind::kArAddNorm;
  StepList out;
  const Step* rest = h.entry.begin();
  bool unfused = false;  // a fused completion split: its add+norm follows the snapshot
  if (carried && (!legacy_ || fused)) {
    // The completion first, over the owed group (legacy: tp).
    const std::int8_t axis = legacy_ ? static_cast<std::int8_t>(Axis::kTp) : owedAxis(in.owes);
    for (; rest != h.entry.end() && completes(*rest); ++rest) {
      if (rest->kind != OpKind::kArAddNorm) {
        out.push_back(*rest);
        continue;
      }
      out.push_back({OpKind::kAllReduce, Tensor::kHidden, axis, rest->in, rest->out});
      unfused = true;
    }
  }
  const RowKind rows = RowKind::kAttention;
  out.push_back({OpKind::kSnapshot, Tensor::kHidden, kNoAxis, rows, rows});
  const bool mixer_into_ffn = from >= 0 && isMixer(stacks_[stack][from]) && to >= 0 &&
                              to < static_cast<int>(stacks_[stack].size()) &&
                              isFfn(stacks_[stack][to]);
  std::int8_t copy_axis = kNoAxis;
  if (legacy_) {
    if (mixer_into_ffn && in.residual) copy_axis = static_cast<std::int8_t>(Axis::kAttnTp);
  } else if (in.completer == Completer::kConsumerEntry) {
    copy_axis = owedAxis(in.owes);
  }
  if (copy_axis != kNoAxis)
    out.push_back({OpKind::kAllReduce, Tensor::kSnapshot, copy_axis, rows, rows});
  if (in.residual) out.push_back({OpKind::kAdd, Tensor::kSnapshot, kNoAxis, rows, rows});
  if (unfused) out.push_back({OpKind::kAddNorm, Tensor::kHidden});
  for (; rest != h.entry.end(); ++rest) out.push_back(*rest);
  return out;
}

}  // namespace seam::policy_detail
