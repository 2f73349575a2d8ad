// The DP ops on GPUs as SGLang's layers/dp_attention.py runs them: each op is
// lowered by sim/plan/dp_gather.h (the one lowering the ledger, the numeric CPU
// executor and property 4 run) and its steps are enqueued here, one NCCL call
// per collective step: MAX_LEN gathers all-gather over tp (after an attn_tp
// reduce-scatter when attn_tp > 1), SUM_LEN gathers all-reduce, the DP
// reduce-scatter reduce-scatters over tp. The bytes moved, and so the
// timings, are the engine's.
#include <algorithm>
#include <string>
#include <utility>

#include "kernels.h"
#include "rank_executor.h"
#include "seam/backend/check.h"
#include "seam/sim/replay/numeric.h"

namespace seam::backend::detail {

/// The DP op's buffer in flight: it starts as a copy of the input (the input
/// may be the hidden state a scatter into the residual must leave as it is);
/// collectives write the other of scratch and staging and swap; `aside`
/// holds the local rows of the all-reduce path from the zeroed gathered
/// buffer to the slot write.
struct RankExecutor::DpFlight {
  DeviceArray<float>* buf = nullptr;
  DeviceArray<float>* spare = nullptr;
  DeviceArray<float>* aside = nullptr;
  int rows = 0;
};

std::string RankExecutor::dpWhere(const Op& op, int index, const DpStep& s) const {
  return "rank " + std::to_string(rank_) + " op " + std::to_string(index) + " (" +
         std::string(opName(op.kind)) + ", lowered " + std::string(dpStepName(s.kind)) + ")";
}

Status RankExecutor::dpOp(const Op& op, int index) {
  const bool gather = op.kind == OpKind::kDpGatherPartial || op.kind == OpKind::kDpGatherReplicate;
  const DpGeometry* geometry = lane().dp.ofFullRows(dpFullRowsOf(op));
  if (geometry == nullptr) {
    // The ledger refuses such a plan; the GPU runs it in the plan's mode.
    note("rank " + std::to_string(rank_) + ": " + std::string(opName(op.kind)) + " names " +
         std::to_string(dpFullRowsOf(op)) +
         " full rows, neither padding mode's size; the plan's mode is used");
    geometry = &lane().dp.of(s_.plan.padding);
  }
  const DpPadding mode = geometry->mode();
  DpLowering steps;
  lowerDpOp(op, s_.topo.config(), *geometry, dpPlaceOf(s_.topo.config(), rank_),
            activationRowBytes(s_.plan.source.model.shape), &steps);

  // dp_scatter reads the hidden state's full rows whatever tensor it writes
  // (dp_scatter(residual, hidden)), except a branch, which moves its own.
  DeviceRows& in =
      op.kind == OpKind::kDpScatter && op.tensor != Tensor::kBranch ? hidden_ : bufferOf(op.tensor);
  DeviceRows& out = op.kind == OpKind::kDpScatter && op.tensor == Tensor::kResidual
                        ? residual_
                        : bufferOf(op.tensor);
  const int full_rows = fullMap(mode).count(RowKind::kFull, rank_);
  const int attention_rows = rowMap().count(RowKind::kAttention, rank_);
  expectLayout(in, gather ? RowKind::kAttention : RowKind::kFull,
               gather ? attention_rows : full_rows, op, index);
  record(index, bytesOf(full_rows));

  DpFlight f{&scratch_.data, &staging_.data, nullptr, in.rows};
  if (Status st = copyRows(f.buf->get(), in.data.get(), f.rows); !st) return st;
  for (const DpStep& s : steps) {
    int reach = std::max(s.rows_in, s.rows_out);
    if (s.kind == DpStepKind::kWriteSlot) reach = std::max(reach, s.offset + s.rows_in);
    if (s.kind == DpStepKind::kReadSlot) reach = std::max(reach, s.offset + s.rows_out);
    if (reach > s_.capacity_rows) {
      return Status::invalid(dpWhere(op, index, s) + " reaches row " + std::to_string(reach) +
                             " of buffers of " + std::to_string(s_.capacity_rows));
    }
    Status st = isCollectiveStep(s.kind) ? dpCollectiveStep(op, index, *geometry, s, &f)
                                         : dpLocalStep(op, index, s, &f);
    if (!st) return st;
  }
  // The op's output in its layout; the result buffer becomes the tensor's.
  std::swap(out.data, *f.buf);
  out.kind = gather ? RowKind::kFull : RowKind::kAttention;
  out.rows = f.rows;
  out.full_mode = mode;
  out.present = true;
  const int want = gather ? full_rows : attention_rows;
  if (f.rows != want && !steps.empty()) {
    note(dpWhere(op, index, steps[steps.size() - 1]) + " leaves " + std::to_string(f.rows) +
         " rows where " + std::string(rowKindName(out.kind)) + " rows are " + std::to_string(want));
  }
  return Status::ok();
}

Status RankExecutor::dpLocalStep(const Op& op, int index, const DpStep& s, DpFlight* f) {
  switch (s.kind) {
    case DpStepKind::kPadLocal:
      // Pad rows are computed from input id 0 in the engine: the numeric
      // model's padding value (NumericDomain::junk).
      if (f->rows != s.rows_in)
        note(dpWhere(op, index, s) + " pads " + std::to_string(f->rows) + " rows, not " +
             std::to_string(s.rows_in));
      SEAM_CUDA_CHECK(
          kernels::fill(f->buf->get() + static_cast<std::size_t>(s.rows_in) * h_,
                        static_cast<std::size_t>(std::max(0, s.rows_out - s.rows_in)) * h_,
                        numeric::kPaddingValue, stream_->get()));
      f->rows = s.rows_out;
      return Status::ok();
    case DpStepKind::kZeroLocal:
      if (Status st = zeroRows(f->buf->get(), s.rows_out); !st) return st;
      f->rows = s.rows_out;
      return Status::ok();
    case DpStepKind::kZeroGlobal:
      f->aside = f->buf;
      std::swap(f->buf, f->spare);
      f->spare = nullptr;
      if (Status st = zeroRows(f->buf->get(), s.rows_out); !st) return st;
      f->rows = s.rows_out;
      return Status::ok();
    case DpStepKind::kWriteSlot:
      if (f->aside == nullptr)
        return Status::invalid(dpWhere(op, index, s) +
                               " writes a slot before zeroing the gathered rows");
      if (Status st = copyRows(f->buf->get() + static_cast<std::size_t>(s.offset) * h_,
                               f->aside->get(), s.rows_in);
          !st) {
        return st;
      }
      f->spare = std::exchange(f->aside, nullptr);
      return Status::ok();
    case DpStepKind::kReadSlot:
      if (f->spare == nullptr)
        return Status::invalid(dpWhere(op, index, s) +
                               " reads a slot while the local rows are set aside");
      if (Status st = copyRows(f->spare->get(),
                               f->buf->get() + static_cast<std::size_t>(s.offset) * h_, s.rows_out);
          !st) {
        return st;
      }
      std::swap(f->buf, f->spare);
      f->rows = s.rows_out;
      return Status::ok();
    case DpStepKind::kTrim:
      f->rows = std::min(f->rows, s.rows_out);
      return Status::ok();
    default:
      return Status::internal("dpLocalStep of a collective step");
  }
}

Status RankExecutor::dpCollectiveStep(const Op& op, int index, const DpGeometry& geometry,
                                      const DpStep& s, DpFlight* f) {
  const Group g = groupOnAxis(static_cast<Axis>(s.axis));
  if (s.kind == DpStepKind::kAllReduce) return allReduceInPlace(g, f->buf->get(), f->rows);
  if (g.size() <= 1) {
    f->rows = s.rows_out;
    return Status::ok();
  }
  if (f->spare == nullptr)
    return Status::invalid(dpWhere(op, index, s) + " runs while the local rows are set aside");
  if (s.kind == DpStepKind::kReduceScatter) {
    if (static_cast<long long>(s.rows_out) * g.size() != s.rows_in) {
      return Status::invalid(dpWhere(op, index, s) + " of " + std::to_string(s.rows_in) +
                             " rows does not split over " + std::to_string(g.size()) + " ranks");
    }
    recordNccl("reduce_scatter", static_cast<std::size_t>(s.rows_out) * h_);
    SEAM_NCCL_ISSUE(g.comm, ncclReduceScatter(f->buf->get(), f->spare->get(),
                                              static_cast<std::size_t>(s.rows_out) * h_, ncclFloat,
                                              ncclSum, g.comm, stream_->get()));
    if (Status st = roundIfReal(f->spare->get(), s.rows_out); !st) return st;
  } else if (s.kind == DpStepKind::kAllGather) {
    recordNccl("all_gather", static_cast<std::size_t>(s.rows_in) * h_);
    SEAM_NCCL_ISSUE(g.comm, ncclAllGather(f->buf->get(), f->spare->get(),
                                          static_cast<std::size_t>(s.rows_in) * h_, ncclFloat,
                                          g.comm, stream_->get()));
  } else {
    // pynccl all_gatherv: one ncclBroadcast per member, rooted at it, into
    // its slot (tp rank k is DP shard k: attn_tp 1, tp == attn_dp).
    const auto slot = [&](int k) { return std::pair{geometry.slot(k), geometry.localRows(k)}; };
    if (Status st = broadcastEach(g, f->buf->get(), f->spare->get(), slot); !st) return st;
  }
  std::swap(f->buf, f->spare);
  f->rows = s.rows_out;
  return Status::ok();
}

}  // namespace seam::backend::detail
