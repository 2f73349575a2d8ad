// Private to sim/: the communicating ops of Replay (replay.h includes this at
// its end): a pipeline send and recv through a mailbox, and what each
// collective does to its group's rows, all members at once.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "replay/replay.h"

namespace seam::ledger_detail {

template <class Domain>
inline void Replay<Domain>::doSend(int r, const Op& op) {
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

template <class Domain>
inline bool Replay<Domain>::tryRecv(int r) {
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

template <class Domain>
inline void Replay<Domain>::execCollective(const std::vector<int>& members, const Op& op) {
  switch (op.kind) {
    case OpKind::kAllReduce:
    case OpKind::kArAddNorm:
      allReduce(members, op);
      return;
    case OpKind::kReduceScatter:
    case OpKind::kReduceScatterv:
      reduceScatter(members, op);
      return;
    case OpKind::kAllGather:
    case OpKind::kAllGatherv:
      if (op.rows_out.kind == RowKind::kFull || op.rows_out.kind == RowKind::kCpGathered) {
        gatherCpShards(members, op);
      } else if (op.rows_in.kind == RowKind::kAttention &&
                 op.rows_out.kind == RowKind::kAttention) {
        gatherColumns(members, op);
      } else {
        gatherLocal(members, op);
      }
      return;
    case OpKind::kAllToAll:
      if (op.rows_out.kind == RowKind::kDispatched) {
        dispatch(members, op);
      } else {
        combine(members, op);
      }
      return;
    case OpKind::kDpGatherPartial:
    case OpKind::kDpGatherReplicate:
    case OpKind::kDpReduceScatter:
      runDpOp(members, op);
      return;
    default:
      assert(false && "execCollective of a local op");
  }
}

template <class Domain>
inline void Replay<Domain>::gatherColumns(const std::vector<int>& members, const Op& op) {
  auto buf = [&](int m) -> Buffer& { return bufferOf(ranks_[m], op.tensor); };
  const int r0 = members.front();
  for (int m : members) {
    if (!buf(m).present || buf(m).kind != RowKind::kAttention ||
        buf(m).v.size() != buf(r0).v.size()) {
      report(at(m, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                "all_gather of columns: members hold different rows"));
      return;
    }
  }
  // Members are in group order; the owner of columns j is member j (column
  // block p comes from member chunkOf(p): another when the rank order is wrong).
  const auto& toks = tokensOf(buf(r0), r0);
  const size_t n = members.size();
  std::vector<Value> parts(n);
  std::vector<Value> joined(buf(r0).v.size());
  for (size_t i = 0; i < joined.size(); ++i) {
    for (size_t p = 0; p < n; ++p) parts[p] = buf(members[chunkOf(p, n, op)]).v[i];
    const int t = i < toks.size() ? toks[i] : kPaddingRow;
    joined[i] = domain_.joinColumns(parts, op.stack, t, ++junk_, op.chunk_shift);
  }
  for (int m : members) buf(m).v = joined;
}

template <class Domain>
inline void Replay<Domain>::allReduce(const std::vector<int>& members, const Op& op) {
  auto buf = [&](int m) -> Buffer& { return bufferOf(ranks_[m], op.tensor); };
  const int r0 = members.front();
  for (int m : members) {
    if (!buf(m).present || buf(m).v.size() != buf(r0).v.size() || buf(m).kind != buf(r0).kind) {
      report(at(m, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                "all_reduce members hold different rows (" + std::to_string(buf(m).v.size()) +
                    " vs " + std::to_string(buf(r0).v.size()) + ")"));
      return;
    }
  }
  // Summed into the lowest member's rows, copied into the others' (no new buffer).
  Buffer& sum = buf(r0);
  if (!sumUnwritten(members, op)) {
    for (int m : members) materialize(buf(m));
    reduceMembers(
        sum.v, members.size(),
        [&](size_t p) -> const std::vector<Value>& { return buf(members[p]).v; },
        [&] { return reduceCallOf(op, r0, static_cast<int>(sum.v.size())); });
  }
  divideRows(sum.v, op);
  if (std::is_same_v<Domain, FastDomain> && op.tensor == Tensor::kHidden && members.size() > 1) {
    shareHidden(members, sum);
  } else {
    for (size_t k = 1; k < members.size(); ++k) buf(members[k]) = sum;
  }
  if (op.kind == OpKind::kArAddNorm) {
    for (int m : members) {
      addNorm(m, op);
      if (stopped()) return;
    }
  }
}

template <class Domain>
inline void Replay<Domain>::shareHidden(const std::vector<int>& members, Buffer& from) {
  if constexpr (std::is_same_v<Domain, FastDomain>) {
    const size_t n = from.v.size();
    const std::shared_ptr<SharedRows>& rows = holdRows(from.v);
    for (int m : members) {
      Buffer& b = ranks_[m].hidden;
      b.kind = from.kind;
      b.present = from.present;
      b.full_mode = from.full_mode;
      b.unwritten = nullptr;
      // A v of another count would be zeroed row by row: a copy costs as much.
      if (b.v.size() == n) {
        b.shared = rows;
      } else {
        b.v.assign(rows->v.begin(), rows->v.end());
        b.shared.reset();
      }
    }
  }
}

template <class Domain>
inline std::shared_ptr<typename Replay<Domain>::SharedRows>& Replay<Domain>::holdRows(
    std::vector<Value>& rows) {
  std::shared_ptr<SharedRows>* held = nullptr;
  for (auto& p : shared_pool_) {
    if (p.use_count() == 1) {
      held = &p;
      break;
    }
  }
  if (held == nullptr) held = &shared_pool_.emplace_back(std::make_shared<SharedRows>());
  (*held)->v.swap(rows);
  (*held)->stamp = ++stamps_;
  return *held;
}

template <class Domain>
inline bool Replay<Domain>::sumUnwritten(const std::vector<int>& members, const Op& op) {
  if constexpr (std::is_same_v<Domain, FastDomain>) {
    if (op.tensor != Tensor::kHidden) return false;
    const Buffer& first = ranks_[members.front()].hidden;
    if (first.unwritten == nullptr) return false;
    lazy_coefficients_.clear();
    lazy_junk_.clear();
    for (int m : members) {
      const Buffer& b = ranks_[m].hidden;
      if (b.unwritten == nullptr ||
          (b.unwritten != first.unwritten && *b.unwritten != *first.unwritten))
        return false;
      lazy_coefficients_.push_back(b.unwritten_coefficient);
      lazy_junk_.push_back(b.unwritten_junk);
    }
    Buffer& sum = ranks_[members.front()].hidden;
    domain_.fillSum(sum.v.data(), sum.unwritten->data(), sum.v.size(), lazy_coefficients_.data(),
                    lazy_junk_.data(), lazy_coefficients_.size());
    sum.unwritten = nullptr;
    return true;
  } else {
    return false;
  }
}

template <class Domain>
inline void Replay<Domain>::reduceScatter(const std::vector<int>& members, const Op& op) {
  auto buf = [&](int m) -> Buffer& { return bufferOf(ranks_[m], op.tensor); };
  const int r0 = members.front();
  const RowKind in = op.rows_in.kind;
  for (int m : members) {
    if (!expectKind(m, buf(m), in, op, tensorName(op.tensor).data())) return;
    if (buf(m).v.size() != buf(r0).v.size()) {
      report(at(m, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                "reduce-scatter members hold different rows"));
      return;
    }
  }
  if (in == RowKind::kAttention && !equalChunks(members, op)) return;
  Buffer& sum = gathered_;  // a copy of r0's rows (the members' own rows are replaced below)
  sum = buf(r0);
  reduceMembers(
      sum.v, members.size(),
      [&](size_t p) -> const std::vector<Value>& { return buf(members[p]).v; },
      [&] { return reduceCallOf(op, r0, static_cast<int>(sum.v.size())); });
  divideRows(sum.v, op);
  const bool cp_return = in == RowKind::kFull && op.axis == static_cast<std::int8_t>(Axis::kAttnCp);
  for (size_t k = 0; k < members.size(); ++k) {
    const int m = members[k];
    // The chunk member k keeps: its own (k) in real plans.
    const size_t c = chunkOf(k, members.size(), op);
    const int owner = members[c];
    Buffer& b = buf(m);
    if (cp_return) {  // attn_cp_reduce_scatter_output: block c (k's own)
      const int cnt = rows().count(RowKind::kAttention, m);
      if (static_cast<int>(sum.v.size()) < static_cast<int>(c + 1) * cnt) {
        layoutViolation(m, Property::kOwedOnce,
                        "an attn_cp reduce-scatter of rows that were not gathered");
        return;
      }
      b.v.assign(sum.v.begin() + c * cnt, sum.v.begin() + (c + 1) * cnt);
      b.kind = RowKind::kAttention;
    } else if (in == RowKind::kFull) {  // the DP return: the owner's shard's slot
      const Op& mop = plan_->ranks[owner][ranks_[owner].pc];
      if (!readSlot(owner, sum, mop, &b.v)) return;
      b.kind = RowKind::kAttention;
    } else {  // attention rows -> the owner's local slice
      takeLocal(owner, sum.v, &b.v);
      b.kind = RowKind::kLocal;
    }
  }
}

template <class Domain>
inline void Replay<Domain>::gatherCpShards(const std::vector<int>& members, const Op& op) {
  // attn_cp_interleave_gather, moe_cp_gather, cp_gather_after_forward.
  auto buf = [&](int m) -> Buffer& { return bufferOf(ranks_[m], op.tensor); };
  const int r0 = members.front();
  const RowKind into = op.rows_out.kind;
  Buffer& g = startGathered(into);
  for (size_t p = 0; p < members.size(); ++p) {
    const int m = members[chunkOf(p, members.size(), op)];
    if (!expectKind(m, buf(m), RowKind::kAttention, op, tensorName(op.tensor).data())) return;
    g.v.insert(g.v.end(), buf(m).v.begin(), buf(m).v.end());
  }
  if (static_cast<int>(g.v.size()) != rows().count(into, r0)) {
    layoutViolation(r0, Property::kOwedOnce,
                    "an attn_cp gather of " + std::to_string(g.v.size()) + " rows into " +
                        std::string(rowKindName(into)) + " rows of " +
                        std::to_string(rows().count(into, r0)));
    return;
  }
  handOutGathered(members, op.tensor);
}

template <class Domain>
inline void Replay<Domain>::gatherLocal(const std::vector<int>& members, const Op& op) {
  // LayerNorm SP: the padded equal chunks gathered, then narrowed to the
  // op's rows_out, the shard's M rows in a real plan (all_gather_token_rows'
  // output[:total_rows]).
  auto buf = [&](int m) -> Buffer& { return bufferOf(ranks_[m], op.tensor); };
  const int r0 = members.front();
  if (!equalChunks(members, op)) return;
  const int cnt = rows().count(RowKind::kAttention, r0);
  int gathered = cnt;
  for (int m : members)
    gathered = std::max(gathered, rows().localOffset(m) + static_cast<int>(buf(m).v.size()));
  Buffer& g = startGathered(RowKind::kAttention);
  g.v.assign(gathered, domain_.zero());
  for (size_t p = 0; p < members.size(); ++p) {
    // Member p's slot gets member chunkOf(p)'s slice: its own in real plans.
    const int m = members[p];
    const int src = members[chunkOf(p, members.size(), op)];
    Buffer& b = buf(src);
    const int off = rows().localOffset(m);
    const bool fits = rows().localSplit() == LocalSplit::kPaddedEqual || src != m
                          ? static_cast<int>(b.v.size()) == rows().count(RowKind::kLocal, m)
                          : off + static_cast<int>(b.v.size()) <= cnt;
    if (!b.present || rows().count(RowKind::kAttention, src) != cnt || !fits) {
      report(at(m, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                src == m ? "all_gather members hold slices of different shards"
                         : "all_gather in another rank order: rank " + std::to_string(src) +
                               "'s slice does not fit rank " + std::to_string(m) + "'s slot"));
      return;
    }
    std::copy(b.v.begin(), b.v.end(), g.v.begin() + off);
  }
  g.v.resize(std::min(gathered, std::max(cnt, static_cast<int>(op.rows_out.count))));
  handOutGathered(members, op.tensor);
  if (rows().localSplit() == LocalSplit::kPaddedEqual && op.tensor == Tensor::kHidden &&
      op.stage == static_cast<int>(stacks_[op.stack].shards.size())) {
    // maybe_exit_gather: the final norm ran on the SP shards; the gathered
    // rows are the model's output.
    for (int m : members) {
      if (!checkRows(m, buf(m), Expect::kNormed, op.stack, op.stage, Property::kOutputComplete))
        return;
      recordFinal(m, op.stack, buf(m));
    }
  }
}

template <class Domain>
inline void Replay<Domain>::dispatch(const std::vector<int>& members, const Op& op) {
  auto buf = [&](int m) -> Buffer& { return bufferOf(ranks_[m], op.tensor); };
  Buffer& d = startGathered(RowKind::kDispatched);
  for (int m : members) {
    if (!buf(m).present) {
      layoutViolation(m, Property::kOwedOnce, "all_to_all dispatch of no value");
      return;
    }
  }
  // Slot j holds member j's rows (chunkOf's member when the plan moves them).
  for (size_t j = 0; j < members.size(); ++j) {
    const Buffer& b = buf(members[chunkOf(j, members.size(), op)]);
    d.v.insert(d.v.end(), b.v.begin(), b.v.end());
  }
  for (int m : members) {
    if (static_cast<int>(d.v.size()) != rows().count(RowKind::kDispatched, m)) {
      report(at(m, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                "all_to_all dispatch sizes do not add up to the group's rows"));
      return;
    }
  }
  handOutGathered(members, op.tensor);
}

template <class Domain>
inline void Replay<Domain>::combine(const std::vector<int>& members, const Op& op) {
  auto buf = [&](int m) -> Buffer& { return bufferOf(ranks_[m], op.tensor); };
  const size_t n = members.size();
  std::vector<Buffer> out(n);
  std::vector<int> offset(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    offset[i + 1] = offset[i] + rows().count(op.rows_out.kind, members[i]);
  for (size_t i = 0; i < n; ++i) {
    const int m = members[i];
    const int cnt = rows().count(op.rows_out.kind, m);
    // Member i takes its own slot's rows (chunkOf's slot when the plan moves them).
    const size_t slot = chunkOf(i, n, op);
    const int seg = offset[slot];
    if (offset[slot + 1] - seg != cnt) {
      report(at(m, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                "all_to_all combine gives rank " + std::to_string(m) + " " +
                    std::to_string(offset[slot + 1] - seg) + " rows where it owns " +
                    std::to_string(cnt)));
      return;
    }
    out[i].kind = op.rows_out.kind;
    out[i].present = true;
    out[i].v.assign(cnt, domain_.zero());
    for (int src : members) {
      const Buffer& b = buf(src);
      if (b.kind != RowKind::kDispatched || static_cast<int>(b.v.size()) < seg + cnt) {
        layoutViolation(src, Property::kOwedOnce,
                        "all_to_all combine of rows that were not dispatched");
        return;
      }
      for (int k = 0; k < cnt; ++k) domain_.add(out[i].v[k], b.v[seg + k]);
    }
  }
  for (size_t i = 0; i < members.size(); ++i) buf(members[i]) = std::move(out[i]);
}

}  // namespace seam::ledger_detail
