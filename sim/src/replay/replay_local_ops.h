// Private to sim/: the local ops of Replay (replay.h includes this at its
// end): what zero_fill, slice, add, norm, add_norm, compute and snapshot do
// to one rank's rows, with the checks each makes of its input.
#pragma once

#include <cassert>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "replay/replay.h"

namespace seam::ledger_detail {

template <class Domain>
inline void Replay<Domain>::execLocal(int r, const Op& op) {
  RankState& st = ranks_[r];
  switch (op.kind) {
    case OpKind::kZeroFill:
      zeroFill(r, op);
      return;
    case OpKind::kSlice:
      slice(r, op);
      return;
    case OpKind::kAdd:
      add(r, op);
      return;
    case OpKind::kNorm:
      if (!st.hidden.present) {
        layoutViolation(r, Property::kOwedOnce, "norm with no hidden state");
        return;
      }
      // In place: each row's norm reads only that row (no copy of the buffer).
      normInPlace(r, st.hidden, st.hidden, op);
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

template <class Domain>
inline void Replay<Domain>::zeroFill(int r, const Op& op) {
  Buffer& b = bufferOf(ranks_[r], op.tensor);
  b.kind = op.rows_out.kind;
  b.present = true;
  b.v.assign(rows().count(b.kind, r), domain_.zero());
}

template <class Domain>
inline void Replay<Domain>::slice(int r, const Op& op) {
  if (op.tbo_move) {
    tboMove(r, op);
    return;
  }
  Buffer& b = bufferOf(ranks_[r], op.tensor);
  if (op.rows_out.kind == RowKind::kSequence) {
    reorderOntoSequence(r, op, b);
  } else if (op.rows_in.kind == RowKind::kSequence) {
    shardSequence(r, op, b);
  } else if (op.rows_in.kind == RowKind::kFull) {
    takeBackCpBlock(r, op, b);
  } else {
    sliceLocal(r, op, b);
  }
}

template <class Domain>
inline void Replay<Domain>::reorderOntoSequence(int r, const Op& op, Buffer& b) {
  // The final output once the final norm is behind it. (Without attention
  // DP the gathered CP shards are the full rows.)
  const bool gathered =
      b.kind == RowKind::kCpGathered || (b.kind == RowKind::kFull && topo_->config().attn_dp == 1);
  if (!b.present || !gathered || !rows().cpSharded(r) ||
      static_cast<int>(b.v.size()) != rows().count(RowKind::kCpGathered, r)) {
    layoutViolation(r, Property::kOutputComplete,
                    "a reorder onto sequence rows of " + std::string(rowKindName(b.kind)) +
                        " rows, not the CP shards gathered over attn_cp");
    return;
  }
  std::vector<Value>& v = scratch_;
  v.clear();
  for (int i = 0; i < rows().count(RowKind::kSequence, r); ++i) {
    v.push_back(b.v[rows().gatheredRowOfSequence(r, i)]);
  }
  b.v.swap(v);
  b.kind = RowKind::kSequence;
  const int n_stages = static_cast<int>(stacks_[op.stack].shards.size());
  if (op.tensor == Tensor::kHidden && op.stage == n_stages) {
    if (!checkRows(r, b, Expect::kNormed, op.stack, op.stage, Property::kOutputComplete)) return;
    recordFinal(r, op.stack, b);
  }
}

template <class Domain>
inline void Replay<Domain>::shardSequence(int r, const Op& op, Buffer& b) {
  // The MTP step's input under prefill CP.
  if (!expectKind(r, b, RowKind::kSequence, op, tensorName(op.tensor).data())) return;
  const auto& toks = rows().tokens(RowKind::kAttention, r);
  // Token ids count over the DP shards; the sequence rows start at the shard's first.
  const auto& seq = rows().tokens(RowKind::kSequence, r);
  const int first = seq.empty() ? 0 : seq.front();
  std::vector<Value>& v = scratch_;
  v.clear();
  for (int t : toks) v.push_back(t == kPaddingRow ? freshJunk() : b.v[t - first]);
  b.v.swap(v);
  b.kind = RowKind::kAttention;
}

template <class Domain>
inline void Replay<Domain>::takeBackCpBlock(int r, const Op& op, Buffer& b) {
  // Another position's block when the plan says so.
  if (!expectKind(r, b, RowKind::kFull, op, tensorName(op.tensor).data())) return;
  const int acp = topo_->groupSize(Axis::kAttnCp);
  const int c = op.slice_of < 0 ? topo_->rankIn(Axis::kAttnCp, r) : op.slice_of % acp;
  const int cnt = rows().count(RowKind::kAttention, r);
  if (static_cast<int>(b.v.size()) < (c + 1) * cnt) {
    layoutViolation(r, Property::kOwedOnce,
                    "a CP take-back of rows that were not gathered over attn_cp");
    return;
  }
  scratch_.assign(b.v.begin() + c * cnt, b.v.begin() + (c + 1) * cnt);
  b.v.swap(scratch_);
  b.kind = RowKind::kAttention;
}

template <class Domain>
inline void Replay<Domain>::sliceLocal(int r, const Op& op, Buffer& b) {
  if (!expectKind(r, b, RowKind::kAttention, op, tensorName(op.tensor).data())) return;
  // Another position's slice when the plan says so (a wrong slice index).
  const int src =
      op.slice_of < 0
          ? r
          : topo_->groupOf(Axis::kAttnTp, r)[op.slice_of % topo_->groupSize(Axis::kAttnTp)];
  takeLocal(src, b.v, &scratch_);
  b.v.swap(scratch_);
  b.kind = RowKind::kLocal;
}

template <class Domain>
inline void Replay<Domain>::add(int r, const Op& op) {
  if (op.tbo_move) {
    tboMove(r, op);
    return;
  }
  RankState& st = ranks_[r];
  if (!st.hidden.present) {
    layoutViolation(r, Property::kOwedOnce, "add with no hidden state");
    return;
  }
  if (op.tensor == Tensor::kBranch) {
    forkOrMerge(r, st);
    return;
  }
  if (op.tensor == Tensor::kHidden && op.rows_in.kind == RowKind::kLocal &&
      op.rows_out.kind == RowKind::kAttention) {
    addResidualSlice(r, st, op);
    return;
  }
  if (!residualFollows(r, st, op)) return;
  if (op.tensor == Tensor::kSnapshot) {
    // Legacy capture: snapshot += residual (a copy of the completed hidden
    // state plus the residual).
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
}

template <class Domain>
inline void Replay<Domain>::forkOrMerge(int r, RankState& st) {
  if (!st.branch.present) {
    st.branch = st.hidden;
  } else if (st.branch.kind != st.hidden.kind || st.branch.v.size() != st.hidden.v.size()) {
    layoutViolation(r, Property::kOwedOnce,
                    "a branch on " + std::string(rowKindName(st.branch.kind)) +
                        " rows is merged into a hidden state on " +
                        std::string(rowKindName(st.hidden.kind)) + " rows");
  } else {
    addInto(st.hidden, st.branch);
    st.branch.present = false;
  }
}

template <class Domain>
inline void Replay<Domain>::addResidualSlice(int r, RankState& st, const Op& op) {
  if (!expectKind(r, st.residual, RowKind::kLocal, op, "residual") ||
      !expectKind(r, st.hidden, RowKind::kAttention, op, "hidden")) {
    return;
  }
  const int off = rows().localOffset(r);
  for (size_t i = 0; i < st.residual.v.size(); ++i)
    domain_.add(st.hidden.v[off + i], st.residual.v[i]);
  st.residual.present = false;
}

template <class Domain>
inline void Replay<Domain>::normInPlace(int r, Buffer& b, Buffer& source, const Op& op) {
  const int n_stages = static_cast<int>(stacks_[op.stack].shards.size());
  const bool final_norm = op.stage == n_stages;
  if (!checkRows(r, source, Expect::kComplete, op.stack, op.stage,
                 final_norm ? Property::kOutputComplete : Property::kOwedOnce)) {
    return;
  }
  const auto& toks = tokensOf(source, r);
  if (source.v.size() != toks.size()) {
    layoutViolation(r, Property::kOwedOnce,
                    "norm of a buffer of " + std::to_string(source.v.size()) + " rows labelled " +
                        std::string(rowKindName(source.kind)));
    return;
  }
  b.full_mode = source.full_mode;
  b.kind = source.kind;
  b.present = true;
  b.v.resize(source.v.size());
  if constexpr (std::is_same_v<Domain, FastDomain>) {
    b.shared.reset();  // (the norm reads no value of its input)
    // The rank's hidden state (not a final output) is written when an op
    // other than a compute, which checks and overwrites it, reads it.
    const Value c = domain_.normedCoefficient(op.stack, op.stage);
    if (!final_norm && &b == &ranks_[r].hidden) {
      b.unwritten = &toks;
      b.unwritten_coefficient = c;
      b.unwritten_junk = junk_;
    } else {
      b.unwritten = nullptr;
      domain_.fillRows(b.v.data(), toks.data(), b.v.size(), c, junk_);
    }
    junk_ += b.v.size();
  } else if constexpr (std::is_same_v<Domain, ExactDomain>) {
    // In place (a norm reads no term of its input): each row keeps its list's storage.
    for (size_t i = 0; i < b.v.size(); ++i)
      domain_.normInto(b.v[i], op.stack, op.stage, toks[i], ++junk_);
  } else {
    for (size_t i = 0; i < b.v.size(); ++i) {
      b.v[i] = domain_.norm(source.v[i], op.stack, op.stage, toks[i], ++junk_);
    }
  }
  if (!final_norm) return;
  // LayerNorm SP's final norm runs on the padded shards; the exit gather
  // after it (maybe_exit_gather) records the output.
  if (source.kind == RowKind::kLocal && rows().localSplit() == LocalSplit::kPaddedEqual) return;
  if (source.kind != RowKind::kAttention ||
      static_cast<int>(source.v.size()) != rows().shardTokens(r)) {
    report(at(r, Property::kOutputComplete, ViolationClass::kMissingOutput,
              "the final norm runs on " + std::string(rowKindName(source.kind)) +
                  " rows, not the attention rows the next consumer reads"));
    return;
  }
  // A CP-sharded output is the model's only after the boundary gathers it
  // (cp_gather_after_forward: the reorder onto sequence rows records it).
  if (!rows().cpSharded(r)) recordFinal(r, op.stack, b);
}

template <class Domain>
inline void Replay<Domain>::addNorm(int r, const Op& op) {
  RankState& st = ranks_[r];
  if (!st.hidden.present) {
    layoutViolation(r, Property::kOwedOnce, "add_norm with no hidden state");
    return;
  }
  if (!residualFollows(r, st, op)) return;
  if (!st.residual.present) {
    st.residual = st.hidden;   // first layer: residual := hidden
    materialize(st.residual);  // (its own copy of shared rows)
  } else {
    addInto(st.residual, st.hidden);
  }
  normInPlace(r, st.hidden, st.residual, op);
}

template <class Domain>
inline void Replay<Domain>::compute(int r, const Op& op) {
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
              "compute reads " + std::to_string(h.v.size()) +
                  " attention rows where the shard holds " + std::to_string(toks.size()) +
                  " tokens: the padding rows past them are read as tokens"));
    return;
  }
  if (h.v.size() != toks.size()) {
    layoutViolation(r, Property::kOwedOnce,
                    "compute on a buffer of " + std::to_string(h.v.size()) + " rows labelled " +
                        std::string(rowKindName(h.kind)));
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
    // A column-parallel projection leaves each rank its columns (shapeStacks).
    const int k = stacks_[op.stack].column_shards;
    const int j = k > 1 ? topo_->rankIn(columnAxis(), r) : 0;
    materialize(h);  // (written row by row below)
    for (size_t i = 0; i < toks.size(); ++i) {
      h.v[i] = k > 1 ? domain_.projectShard(h.v[i], op.stack, toks[i], j, k, ++junk_, gemm_rows)
                     : domain_.project(h.v[i], op.stack, toks[i], ++junk_, gemm_rows);
    }
    return;
  }
  const int si = stage_base_[op.stack] + op.stage;
  if (op.stage < 0 || si >= static_cast<int>(stages_.size())) {
    layoutViolation(r, Property::kOwedOnce,
                    "compute of stage " + std::to_string(op.stage) + ", which the case has not");
    return;
  }
  const JudgeStage& info = stages_[si];
  // A branch stage reads the normed input of the stage it branches beside.
  const int reads = info.reads_norm_of >= 0 ? info.reads_norm_of : op.stage;
  if (!checkRows(r, h, Expect::kNormed, op.stack, reads, Property::kOwedOnce)) return;
  // The shard comes from the stage's real weight split, not from the op:
  // a plan cannot change where the weights live.
  const int j =
      info.weight_axis == kNoAxis ? 0 : topo_->rankIn(static_cast<Axis>(info.weight_axis), r);
  if constexpr (std::is_same_v<Domain, FastDomain>) {
    const Value c = domain_.partialCoefficient(op.stack, op.stage, j);
    if (&h == &st.hidden) {
      // Left unwritten as a norm's output is: the all-reduce that sums it
      // next sums the members' coefficients (sumUnwritten), every other
      // reader writes it first.
      h.unwritten = &toks;
      h.unwritten_coefficient = c;
      h.unwritten_junk = junk_;
      h.shared.reset();
    } else {
      domain_.fillRows(h.v.data(), toks.data(), toks.size(), c, junk_);
      h.unwritten = nullptr;
    }
    junk_ += toks.size();
  } else if constexpr (std::is_same_v<Domain, ExactDomain>) {
    for (size_t i = 0; i < toks.size(); ++i)
      domain_.computeInto(h.v[i], op.stack, op.stage, toks[i], j, ++junk_);
  } else {
    for (size_t i = 0; i < toks.size(); ++i) {
      h.v[i] =
          domain_.compute(h.v[i], op.stack, op.stage, toks[i], j, info.shards, ++junk_, gemm_rows);
    }
  }
}

}  // namespace seam::ledger_detail
