// Private to sim/: the lanes of Replay (replay.h includes this at its end).
// A two-batch-overlap plan runs each half on its own rows (JudgeLane) and its
// own hidden state and residual, parked while the other half's ops run, and
// splits them from and merges them into the batch's.
#pragma once

#include <algorithm>
#include <cassert>
#include <string>
#include <utility>

#include "replay/replay.h"

namespace seam::ledger_detail {

template <class Domain>
inline void Replay<Domain>::activate(int r, Half half) {
  const int lane = static_cast<int>(half);
  RankState& st = ranks_[r];
  if (st.lane != lane) {
    materialize(st.hidden);  // parked buffers are written
    Parked& p = parked_[r];
    std::swap(st.hidden, p.hidden[st.lane]);
    std::swap(st.residual, p.residual[st.lane]);
    std::swap(st.hidden, p.hidden[lane]);
    std::swap(st.residual, p.residual[lane]);
    st.lane = lane;
  }
  useLane(lane);
}

template <class Domain>
inline typename Replay<Domain>::Buffer& Replay<Domain>::wholeBuffer(int r, Tensor t) {
  return t == Tensor::kResidual ? parked_[r].residual[0] : parked_[r].hidden[0];
}

template <class Domain>
inline void Replay<Domain>::tboMove(int r, const Op& op) {
  RankState& st = ranks_[r];
  if (!tbo_ || op.half == Half::kWhole ||
      (op.tensor != Tensor::kHidden && op.tensor != Tensor::kResidual)) {
    layoutViolation(r, Property::kOwedOnce,
                    tbo_ ? "a TBO split or merge names no half"
                         : "a TBO split or merge in a plan whose batch is not split");
    return;
  }
  Buffer& whole = wholeBuffer(r, op.tensor);
  Buffer& half = bufferOf(st, op.tensor);
  const HalfRows where = judgeHalfRows(lanes_, r, op.half);
  const int offset = where.offset, taken = where.taken, total = where.total;
  if (op.kind == OpKind::kSlice) {
    if (!whole.present || whole.kind != RowKind::kAttention ||
        static_cast<int>(whole.v.size()) != total) {
      layoutViolation(r, Property::kOwedOnce,
                      "the TBO split of half " + std::string(halfName(op.half)) +
                          " expects the batch's " + std::string(tensorName(op.tensor)) +
                          " on attention rows (" + std::to_string(total) + ") but finds " +
                          (whole.present ? std::string(rowKindName(whole.kind)) + " rows (" +
                                               std::to_string(whole.v.size()) + ")"
                                         : std::string("no value")));
      return;
    }
    // The rows the child takes, then its zero padding up to tbo_padded_len.
    half.kind = RowKind::kAttention;
    half.present = true;
    half.v.assign(whole.v.begin() + offset, whole.v.begin() + offset + taken);
    half.v.resize(where.count, domain_.zero());
    if (op.half == Half::kB) whole.present = false;  // both halves took their rows
    return;
  }
  // The merge copies the rows the half took back into the batch-sized
  // tensor, dropping its padding (rows no half wrote stay zero, as a sum
  // never completed would).
  if (!expectKind(r, half, RowKind::kAttention, op, tensorName(op.tensor).data())) return;
  if (whole.present &&
      (whole.kind != RowKind::kAttention || static_cast<int>(whole.v.size()) != total)) {
    // The batch-sized tensor still holds another layout (a split that
    // never took it apart, then rows moved): a plan the engine cannot run.
    layoutViolation(r, Property::kOwedOnce,
                    "the TBO merge of half " + std::string(halfName(op.half)) +
                        " writes into the batch's " + std::string(tensorName(op.tensor)) + " on " +
                        std::string(rowKindName(whole.kind)) + " rows (" +
                        std::to_string(whole.v.size()) + "), not its " + std::to_string(total) +
                        " attention rows");
    return;
  }
  if (!whole.present) {
    whole.kind = RowKind::kAttention;
    whole.present = true;
    whole.v.assign(total, domain_.zero());
  }
  assert(offset + taken <= total && taken <= static_cast<int>(half.v.size()) &&
         "a half's rows lie inside the batch's and its own");
  std::copy(half.v.begin(), half.v.begin() + taken, whole.v.begin() + offset);
}

}  // namespace seam::ledger_detail
