// Private to sim/: the DP ops of Replay (replay.h includes this at its end):
// dp_gather_*, dp_scatter and dp_reduce_scatter run through their lowering
// (dp_gather.h), local steps on each member and each collective step on its
// own group once all of that group's members reach it.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "replay/replay.h"

namespace seam::ledger_detail {

template <class Domain>
inline std::string Replay<Domain>::dpWhere(const Op& op, const DpStep& s) const {
  std::string w = std::string(opName(op.kind)) + " (lowered: " + std::string(dpStepName(s.kind));
  if (s.axis != kNoAxis) w += " over " + std::string(axisName(static_cast<Axis>(s.axis)));
  return w + ")";
}

template <class Domain>
inline void Replay<Domain>::runDpOp(const std::vector<int>& members, const Op& op) {
  if (dp_work_.size() < members.size()) dp_work_.resize(members.size());
  const bool gather = op.kind == OpKind::kDpGatherPartial || op.kind == OpKind::kDpGatherReplicate;
  if (!startDpOp(members, gather)) return;
  if (!runDpSteps(members, op)) return;
  finishDpOp(members, gather);
}

template <class Domain>
inline bool Replay<Domain>::startDpOp(const std::vector<int>& members, bool gather) {
  for (size_t k = 0; k < members.size(); ++k) {
    const int m = members[k];
    const Op& mop = plan_->ranks[m][ranks_[m].pc];
    const JudgeDpBuffer* geometry = lane_->dpOfFullRows(dpFullRowsOf(mop));
    if (geometry == nullptr) {
      layoutViolation(m, Property::kOwedOnce,
                      std::string(opName(mop.kind)) + " names " +
                          std::to_string(dpFullRowsOf(mop)) +
                          " full rows, which is neither padding mode's size");
      return false;
    }
    DpWork& w = dp_work_[k];
    w.mode = geometry->mode;
    w.lowering = &lowered(m, mop, geometry);
    w.pos = 0;
    RankState& st = ranks_[m];
    // dp_scatter reads the hidden state's full rows into the op's tensor
    // (dp_scatter(residual, hidden)), except a branch, which moves its own.
    Buffer& in = mop.kind == OpKind::kDpScatter && mop.tensor != Tensor::kBranch
                     ? st.hidden
                     : bufferOf(st, mop.tensor);
    if (!expectKind(m, in, gather ? RowKind::kAttention : RowKind::kFull, mop,
                    tensorName(mop.tensor).data()))
      return false;
    takeInput(w, st, in, &in == &outputOf(st, mop));
  }
  return true;
}

template <class Domain>
inline typename Replay<Domain>::Buffer& Replay<Domain>::outputOf(RankState& st, const Op& mop) {
  return mop.kind == OpKind::kDpScatter && mop.tensor == Tensor::kResidual
             ? st.residual
             : bufferOf(st, mop.tensor);
}

template <class Domain>
inline void Replay<Domain>::takeInput(DpWork& w, RankState& st, Buffer& in, bool in_is_out) {
  const DpStep* first = w.steps().empty() ? nullptr : &w.steps()[0];
  w.zeroed = -1;
  w.shared.reset();
  if constexpr (std::is_same_v<Domain, FastDomain>) {
    w.unwritten = nullptr;
    if (&in == &st.hidden && in.unwritten != nullptr && in_is_out && first != nullptr &&
        first->kind == DpStepKind::kReduceScatter) {
      // A compute's unwritten output reduce-scattered first: its rows are
      // summed from the members' coefficients (dpCollectiveStep), or
      // written by the step that reads them otherwise (writeUnwritten).
      w.buf.swap(in.v);
      w.unwritten = in.unwritten;
      w.unwritten_coefficient = in.unwritten_coefficient;
      w.unwritten_junk = in.unwritten_junk;
      in.unwritten = nullptr;
      return;
    }
    fillUnwritten(st.hidden);  // (shared rows are read where they are)
  }
  const std::vector<Value>& rows = rowsOf(in);
  if (first != nullptr && first->kind == DpStepKind::kReadSlot &&
      first->offset + first->rows_out <= static_cast<int>(rows.size())) {
    // A slot read first (dp_scatter): only the slot's rows, the rows the
    // step would leave of a copy of them all.
    w.buf.assign(rows.begin() + first->offset, rows.begin() + first->offset + first->rows_out);
    w.pos = 1;
  } else if (std::is_same_v<Domain, FastDomain> && in_is_out && in.shared == nullptr) {
    // The op's output replaces its input (finishDpOp): the input's rows are
    // taken, not copied. After a violation they are gone, and so is the
    // fast replay's use (Ledger::replay replays a violated case again).
    w.buf.swap(in.v);
  } else {
    w.buf = rows;
  }
}

template <class Domain>
inline void Replay<Domain>::writeUnwritten(DpWork& w) {
  if constexpr (std::is_same_v<Domain, FastDomain>) {
    if (w.shared != nullptr) {
      w.buf.assign(w.shared->v.begin(), w.shared->v.end());
      w.shared.reset();
    }
    if (w.zeroed >= 0) {
      w.buf.assign(static_cast<size_t>(w.zeroed), domain_.zero());
      std::copy(w.local.begin(), w.local.begin() + w.slot_rows, w.buf.begin() + w.slot_at);
      w.zeroed = -1;
    }
    if (w.unwritten == nullptr) return;
    domain_.fillRows(w.buf.data(), w.unwritten->data(), w.buf.size(), w.unwritten_coefficient,
                     w.unwritten_junk);
    w.unwritten = nullptr;
  }
}

template <class Domain>
inline bool Replay<Domain>::sumSlotsDp(size_t g) {
  if constexpr (std::is_same_v<Domain, FastDomain>) {
    const int rows = dp_group_[0]->zeroed;
    for (size_t p = 0; p < g; ++p) {
      if (dp_group_[p]->zeroed != rows || rows < 0) return false;
    }
    // Zero rows add nothing: each row is the sum of the slots that hold it
    // (the field's sum, as reduceMembers makes it over every member's rows).
    dp_sum_.assign(static_cast<size_t>(rows), domain_.zero());
    for (size_t p = 0; p < g; ++p) {
      DpWork& w = *dp_group_[p];
      for (int k = 0; k < w.slot_rows; ++k) domain_.add(dp_sum_[w.slot_at + k], w.local[k]);
      w.zeroed = -1;
    }
    return true;
  } else {
    return false;
  }
}

template <class Domain>
inline const DpLowering& Replay<Domain>::lowered(int m, const Op& mop,
                                                 const JudgeDpBuffer* geometry) {
  // judgeLowerDp reads of the op only its kind and dp_fault; the case's
  // config, the rank's places and the row bytes are the run's.
  Lowered& l = lowered_[static_cast<size_t>(m) * kDpKinds + dpKindIndex(mop.kind)];
  if (l.run != runs_ || l.geometry != geometry || l.kind != mop.kind || l.fault != mop.dp_fault) {
    // The judges' lowering (judge_dp.h), not the executors' lowerDpOp.
    judgeLowerDp(mop, topo_->config(), *geometry, topo_->rankIn(Axis::kAttnTp, m),
                 topo_->rankIn(Axis::kAttnCp, m), topo_->rankIn(Axis::kAttnDp, m), row_bytes_,
                 &l.steps);
    l.run = runs_;
    l.geometry = geometry;
    l.kind = mop.kind;
    l.fault = mop.dp_fault;
  }
  return l.steps;
}

template <class Domain>
inline bool Replay<Domain>::runDpSteps(const std::vector<int>& members, const Op& op) {
  const size_t n = members.size();
  while (true) {
    bool all_done = true;
    for (size_t k = 0; k < n; ++k) {
      DpWork& w = dp_work_[k];
      while (w.pos < w.steps().size() && !isCollectiveStep(w.steps()[w.pos].kind)) {
        if (!dpLocalStep(members[k], w, w.steps()[w.pos])) return false;
        ++w.pos;
      }
      all_done = all_done && w.pos == w.steps().size();
    }
    if (all_done) return true;
    bool progress = false;
    for (size_t k = 0; k < n; ++k) {
      const DpWork& w = dp_work_[k];
      // (A member a collective of this round moved on may be at a local step.)
      if (w.pos == w.steps().size() || !isCollectiveStep(w.steps()[w.pos].kind)) continue;
      const DpStep& s = w.steps()[w.pos];
      const std::vector<int>& group = topo_->groupOf(static_cast<Axis>(s.axis), members[k]);
      if (group.front() != members[k]) continue;  // the group's lowest rank runs it
      int ready = 0;
      if (!dpCollectiveStep(members, group, s, &ready)) return false;
      progress = progress || ready > 0;
    }
    if (!progress) {
      report(at(members.front(), Property::kCollectivesMatch, ViolationClass::kDeadlock,
                std::string(opName(op.kind)) +
                    ": the members' lowered collectives never meet: a real run hangs"));
      return false;
    }
  }
}

template <class Domain>
inline void Replay<Domain>::finishDpOp(const std::vector<int>& members, bool gather) {
  for (size_t k = 0; k < members.size(); ++k) {
    const int m = members[k];
    const Op& mop = plan_->ranks[m][ranks_[m].pc];
    RankState& st = ranks_[m];
    Buffer& out = outputOf(st, mop);
    DpWork& w = dp_work_[k];
    // Shared rows stay shared when they become the hidden state
    // (Buffer::shared) and a vector of their count is at hand for its v (a
    // longer one would be zeroed row by row: a copy costs as much).
    const size_t n = w.rows();
    const bool share =
        w.shared != nullptr && &out == &st.hidden && (out.v.size() == n || w.buf.size() == n);
    if (!share) writeUnwritten(w);
    const RowKind kind = gather ? RowKind::kFull : RowKind::kAttention;
    const int want = gather ? lane_->fullMap(w.mode).count(RowKind::kFull, m)
                            : rows().count(RowKind::kAttention, m);
    if (static_cast<int>(w.rows()) != want) {
      layoutViolation(m, Property::kOwedOnce,
                      std::string(opName(mop.kind)) + " leaves " + std::to_string(w.rows()) +
                          " rows where " + std::string(rowKindName(kind)) + " rows are " +
                          std::to_string(want));
      return;
    }
    out.kind = kind;
    out.full_mode = w.mode;
    out.present = true;
    out.shared.reset();
    if (!share) {
      out.v.swap(w.buf);
    } else {
      if (out.v.size() != n) out.v.swap(w.buf);
      out.shared = std::move(w.shared);
    }
  }
}

template <class Domain>
inline bool Replay<Domain>::dpLocalStep(int m, DpWork& w, const DpStep& s) {
  const Op& op = plan_->ranks[m][ranks_[m].pc];
  const auto fits = [&](bool ok, const char* what) {
    if (!ok) {
      layoutViolation(
          m, Property::kOwedOnce,
          dpWhere(op, s) + " " + what + " (" + std::to_string(w.rows()) + " rows in flight)");
    }
    return ok;
  };
  // Fast domain: zeroed rows stay unwritten through their slot's write.
  const bool slot_of_zeroed =
      s.kind == DpStepKind::kWriteSlot && w.zeroed >= 0 && w.slot_rows == 0 && s.rows_in > 0;
  if (!slot_of_zeroed) writeUnwritten(w);
  switch (s.kind) {
    case DpStepKind::kPadLocal:
      // Pad rows are computed from input id 0: neither zero nor a token
      // (one junk value for a member's pad rows of one op).
      if (!fits(static_cast<int>(w.buf.size()) == s.rows_in, "pads rows it does not hold"))
        return false;
      w.buf.resize(s.rows_out, freshJunk());
      return true;
    case DpStepKind::kZeroLocal:
      w.buf.assign(s.rows_out, domain_.zero());
      return true;
    case DpStepKind::kZeroGlobal:
      w.local.swap(w.buf);
      if constexpr (std::is_same_v<Domain, FastDomain>) {
        w.zeroed = s.rows_out;
        w.slot_rows = 0;
      } else {
        w.buf.assign(s.rows_out, domain_.zero());
      }
      return true;
    case DpStepKind::kWriteSlot:
      if (!fits(static_cast<int>(w.local.size()) >= s.rows_in &&
                    s.offset + s.rows_in <= static_cast<int>(w.rows()),
                "writes past the gathered rows")) {
        return false;
      }
      if (slot_of_zeroed) {
        w.slot_at = s.offset;
        w.slot_rows = s.rows_in;
        return true;
      }
      for (int k = 0; k < s.rows_in; ++k) w.buf[s.offset + k] = w.local[k];
      return true;
    case DpStepKind::kReadSlot:
      if (!fits(s.offset + s.rows_out <= static_cast<int>(w.buf.size()),
                "reads past the full rows"))
        return false;
      w.buf.erase(w.buf.begin(), w.buf.begin() + s.offset);  // (no self-move at offset 0)
      w.buf.resize(s.rows_out);
      return true;
    case DpStepKind::kTrim:
      if (!fits(static_cast<int>(w.buf.size()) >= s.rows_out, "trims rows it does not hold"))
        return false;
      w.buf.resize(s.rows_out);
      return true;
    default:
      assert(false && "dpLocalStep of a collective step");
      return false;
  }
}

template <class Domain>
inline bool Replay<Domain>::sumUnwrittenDp(size_t g) {
  if constexpr (std::is_same_v<Domain, FastDomain>) {
    const DpWork& first = *dp_group_[0];
    if (first.unwritten == nullptr) return false;
    lazy_coefficients_.clear();
    lazy_junk_.clear();
    for (size_t p = 0; p < g; ++p) {
      const DpWork& w = *dp_group_[p];
      if (w.unwritten == nullptr || w.buf.size() != first.buf.size() ||
          (w.unwritten != first.unwritten && *w.unwritten != *first.unwritten))
        return false;
      lazy_coefficients_.push_back(w.unwritten_coefficient);
      lazy_junk_.push_back(w.unwritten_junk);
    }
    dp_sum_.resize(first.buf.size());
    domain_.fillSum(dp_sum_.data(), first.unwritten->data(), dp_sum_.size(),
                    lazy_coefficients_.data(), lazy_junk_.data(), g);
    return true;
  } else {
    return false;
  }
}

template <class Domain>
inline bool Replay<Domain>::dpCollectiveStep(const std::vector<int>& members,
                                             const std::vector<int>& group, const DpStep& s,
                                             int* ready) {
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
    if (w.pos == w.steps().size() || !isCollectiveStep(w.steps()[w.pos].kind) ||
        w.steps()[w.pos].axis != s.axis) {
      return true;  // waits elsewhere (a deadlock if nothing else progresses)
    }
    dp_group_[p] = &w;
  }
  const Op& op = plan_->ranks[group.front()][ranks_[group.front()].pc];
  for (size_t p = 0; p < g; ++p) {
    const DpStep& mine = dp_group_[p]->steps()[dp_group_[p]->pos];
    // all_gatherv: each member sends its own count (every member knows them all).
    const bool v = s.kind == DpStepKind::kAllGatherv;
    if (mine.kind != s.kind || mine.bytes != s.bytes ||
        (v ? mine.rows_out != s.rows_out : mine.rows_in != s.rows_in) ||
        static_cast<int>(dp_group_[p]->rows()) != mine.rows_in) {
      report(at(group[p], Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                dpWhere(op, s) + " on " + rankList(group) + ": rank " +
                    std::to_string(group.front()) + " issues " + std::string(dpStepName(s.kind)) +
                    " of " + std::to_string(s.bytes) + " bytes while rank " +
                    std::to_string(group[p]) + " issues " + std::string(dpStepName(mine.kind)) +
                    " of " + std::to_string(mine.bytes) + " bytes on " +
                    std::to_string(dp_group_[p]->rows()) + " rows"));
      return false;
    }
  }
  // A reduce-scatter of unwritten rows is summed from the members'
  // coefficients (sumUnwrittenDp); any other step reads rows written first.
  const bool summed = (s.kind == DpStepKind::kReduceScatter && sumUnwrittenDp(g)) ||
                      (s.kind == DpStepKind::kAllReduce && sumSlotsDp(g));
  if (!summed) {
    for (size_t p = 0; p < g; ++p) writeUnwritten(*dp_group_[p]);
    if (s.kind == DpStepKind::kReduceScatter) dp_sum_ = dp_group_[0]->buf;
  }
  const auto dp_call = [&] {
    return ReduceCall{kDpStepTag + static_cast<int>(s.kind),
                      topo_->communicator(static_cast<Axis>(s.axis), group.front()) /
                          JudgeGroups::kCommunicatorStride,
                      s.rows_in};
  };
  switch (s.kind) {
    case DpStepKind::kAllReduce: {
      if constexpr (std::is_same_v<Domain, FastDomain>) {
        if (summed) {  // (sumSlotsDp) one holder of the sum for the group
          const std::shared_ptr<SharedRows>& rows = holdRows(dp_sum_);
          for (size_t p = 0; p < g; ++p) dp_group_[p]->shared = rows;
          break;
        }
      }
      // Summed into the first member's rows (reduceMembers' sum may be
      // member 0's rows), copied into the others'.
      std::vector<Value>& sum = dp_group_[0]->buf;
      reduceMembers(
          sum, g, [&](size_t p) -> const std::vector<Value>& { return dp_group_[p]->buf; },
          dp_call);
      for (size_t p = 1; p < g; ++p) dp_group_[p]->buf = sum;
      break;
    }
    case DpStepKind::kReduceScatter: {
      if (static_cast<std::int64_t>(s.rows_out) * static_cast<std::int64_t>(g) != s.rows_in) {
        layoutViolation(group.front(), Property::kOwedOnce,
                        dpWhere(op, s) + " of " + std::to_string(s.rows_in) +
                            " rows does not split evenly over " + std::to_string(g) + " ranks");
        return false;
      }
      if (!summed) {
        reduceMembers(
            dp_sum_, g, [&](size_t p) -> const std::vector<Value>& { return dp_group_[p]->buf; },
            dp_call);
      }
      for (size_t p = 0; p < g; ++p) {
        dp_group_[p]->unwritten = nullptr;
        const auto first = dp_sum_.begin() + static_cast<std::ptrdiff_t>(p * s.rows_out);
        dp_group_[p]->buf.assign(first, first + s.rows_out);
      }
      break;
    }
    case DpStepKind::kAllGather:
    case DpStepKind::kAllGatherv:
      dp_sum_ = dp_group_[0]->buf;
      for (size_t p = 1; p < g; ++p)
        dp_sum_.insert(dp_sum_.end(), dp_group_[p]->buf.begin(), dp_group_[p]->buf.end());
      if (static_cast<int>(dp_sum_.size()) != s.rows_out) {
        layoutViolation(group.front(), Property::kOwedOnce,
                        dpWhere(op, s) + " gathers " + std::to_string(dp_sum_.size()) +
                            " rows into " + std::to_string(s.rows_out));
        return false;
      }
      // The last member takes the gathered rows' storage, the others a copy.
      for (size_t p = 0; p + 1 < g; ++p) dp_group_[p]->buf = dp_sum_;
      dp_group_[g - 1]->buf.swap(dp_sum_);
      break;
    default:
      assert(false && "dpCollectiveStep of a local step");
  }
  for (size_t p = 0; p < g; ++p) ++dp_group_[p]->pos;
  *ready = 1;
  return true;
}

}  // namespace seam::ledger_detail
