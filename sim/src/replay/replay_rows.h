// Private to sim/: the buffers and rows of Replay (replay.h includes this at
// its end): which buffer an op names, which tokens a buffer's rows hold, a DP
// shard's slot and a rank's local slice, and the reduction of members' rows.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "replay/replay.h"

namespace seam::ledger_detail {

template <class Domain>
inline typename Replay<Domain>::Buffer& Replay<Domain>::bufferOf(RankState& st, Tensor t) {
  if (t == Tensor::kHidden) return st.hidden;
  if (t == Tensor::kResidual) return st.residual;
  if (t == Tensor::kBranch) return st.branch;
  if (st.snaps.empty()) st.snaps.push_back({0, -1, {}});
  return st.snaps.back().buf;
}

template <class Domain>
inline const std::vector<int>& Replay<Domain>::tokensOf(const Buffer& b, int rank) const {
  if (b.kind == RowKind::kFull) return lane_->fullMap(b.full_mode).tokens(RowKind::kFull, rank);
  return rows().tokens(b.kind, rank);
}

template <class Domain>
inline bool Replay<Domain>::readSlot(int r, const Buffer& b, const Op& op,
                                     std::vector<Value>* out) {
  const std::optional<DpPadding> mode = lane_->modeOfCount(op.rows_in.count, r);
  if (!mode) {
    layoutViolation(r, Property::kOwedOnce,
                    std::string(opName(op.kind)) + " reads " + std::to_string(op.rows_in.count) +
                        " full rows, which is neither padding mode's size");
    return false;
  }
  const int slot = lane_->fullMap(*mode).fullSlot(topo_->rankIn(Axis::kAttnDp, r));
  const int cnt = rows().count(RowKind::kAttention, r);
  if (slot + cnt > static_cast<int>(b.v.size())) {
    layoutViolation(r, Property::kOwedOnce,
                    std::string(opName(op.kind)) + " reads past the full rows");
    return false;
  }
  out->assign(b.v.begin() + slot, b.v.begin() + slot + cnt);
  return true;
}

template <class Domain>
inline void Replay<Domain>::takeLocal(int src, const std::vector<Value>& attention,
                                      std::vector<Value>* out) {
  const int off = rows().localOffset(src);
  const int cnt = rows().count(RowKind::kLocal, src);
  out->clear();
  out->reserve(cnt);
  for (int p = off; p < off + cnt; ++p) {
    out->push_back(p < static_cast<int>(attention.size()) ? attention[p] : freshJunk());
  }
}

template <class Domain>
inline void Replay<Domain>::recordFinal(int r, int stack, const Buffer& b) {
  ranks_[r].final_done[stack] = true;
  ranks_[r].finals[stack] = b;
  materialize(ranks_[r].finals[stack]);  // (its own copy of shared rows)
}

template <class Domain>
inline typename Replay<Domain>::Buffer& Replay<Domain>::startGathered(RowKind kind) {
  gathered_.kind = kind;
  gathered_.present = true;
  gathered_.full_mode = DpPadding::kMaxLen;
  gathered_.v.clear();
  return gathered_;
}

template <class Domain>
inline void Replay<Domain>::handOutGathered(const std::vector<int>& members, Tensor t) {
  if constexpr (std::is_same_v<Domain, FastDomain>) {
    if (t == Tensor::kHidden && members.size() > 1) {
      shareHidden(members, gathered_);
      return;
    }
  }
  for (size_t k = 0; k + 1 < members.size(); ++k) bufferOf(ranks_[members[k]], t) = gathered_;
  Buffer& last = bufferOf(ranks_[members.back()], t);
  last.kind = gathered_.kind;
  last.present = gathered_.present;
  last.full_mode = gathered_.full_mode;
  last.v.swap(gathered_.v);
}

template <class Domain>
inline void Replay<Domain>::addInto(Buffer& dst, const Buffer& src) {
  const std::vector<Value>& from = rowsOf(src);
  for (size_t i = 0; i < dst.v.size(); ++i) domain_.add(dst.v[i], from[i]);
}

template <class Domain>
template <class RowsOf, class CallOf>
inline void Replay<Domain>::reduceMembers(std::vector<Value>& sum, size_t n, const RowsOf& rows_of,
                                          const CallOf& call_of) {
  if constexpr (requires(Domain & d) { d.reduceCall(sum, n, rows_of, call_of()); }) {
    domain_.reduceCall(sum, n, rows_of, call_of());
  } else if constexpr (std::is_same_v<Domain, FastDomain>) {
    // Row by row over the members (the same sums: FastDomain::sumRows).
    sources_.resize(n);
    for (size_t p = 1; p < n; ++p) sources_[p] = rows_of(p).data();
    domain_.sumRows(sum.data(), sum.size(), sources_.data(), n);
  } else {
    for (size_t p = 1; p < n; ++p) {
      const std::vector<Value>& src = rows_of(p);
      for (size_t i = 0; i < sum.size(); ++i) domain_.add(sum[i], src[i]);
    }
  }
}

template <class Domain>
inline ReduceCall Replay<Domain>::reduceCallOf(const Op& op, int rank, int rows) const {
  return {static_cast<int>(op.kind) * 16 + static_cast<int>(op.rows_in.kind),
          topo_->communicator(op.groupAxis(), rank) / JudgeGroups::kCommunicatorStride, rows};
}

}  // namespace seam::ledger_detail
