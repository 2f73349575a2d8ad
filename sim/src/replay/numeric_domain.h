// Private to sim/: the numeric value domain of the replay (replay.h). Each
// row is `hidden` floats; norm, compute and the MTP projection run the
// numeric model of numeric.h. Nothing is checked symbolically here: the
// executor compares outputs with the reference instead.
#pragma once

#include <array>
#include <map>
#include <utility>
#include <vector>

#include "replay/ledger_domains.h"
#include "replay/replay.h"
#include "seam/sim/model/case.h"
#include "seam/sim/replay/numeric.h"
#include "seam/sim/replay/numeric_executor.h"

namespace seam::ledger_detail {

class NumericDomain {
 public:
  using Value = std::vector<float>;

  /// The case gives the stages' kinds (MoE stages route), the model's MoE
  /// shape and moe_ep (how a MoE weight group splits into EP slices).
  void configure(numeric::Mode mode, const numeric::Shape& shape, const Case& c) {
    mode_ = mode;
    shape_ = shape;
    weights_.clear();
    moe_weights_.clear();
    kinds_ = {c.model.pattern.layers, c.model.pattern.mtp};
    moe_ = numeric::moeShape(c.model.shape, c.config.moe_ep, shape);
    moe_ep_ = c.config.moe_ep;
  }
  void setOrder(ExecutionOrder order) { order_ = order; }
  void prepare(const std::vector<StackShape>&, int) {}
  Value zero() const { return Value(shape_.hidden, 0.0f); }
  void add(Value& a, const Value& b) const {
    for (int k = 0; k < shape_.hidden; ++k) {
      a[k] += b[k];
      if (mode_ == numeric::Mode::kReal) a[k] = numeric::roundBf16(a[k]);
    }
  }
  Value embed(int stack, int t) const { return numeric::embedRow(stack, t, mode_, shape_); }
  /// VocabParallelEmbedding's unreduced output: a token's row lies in one
  /// vocab shard (numeric::embedShardOwner), the others contribute zeros.
  Value embedShard(int stack, int t, int j, int n) const {
    return numeric::embedShardOwner(t, n) == j ? embed(stack, t) : zero();
  }
  Value junk(std::uint64_t) const { return Value(shape_.hidden, numeric::kPaddingValue); }
  bool holds(const Value&, Expect, int, int, int) const { return true; }
  Explanation explain(const Value&, Expect, int, int, int) const { return {}; }

  Value norm(const Value& in, int stack, int stage, int, std::uint64_t) {
    Value out(shape_.hidden);
    // A MoE stage's norm weight is its shared expert's (moeWeights).
    const auto& weight =
        isMoe(stack, stage) ? moeWeights(stack, stage).shared.norm : weights(stack, stage).norm;
    numeric::normRow(in.data(), out.data(), shape_.hidden, mode_, weight);
    return out;
  }
  Value compute(const Value& in, int stack, int stage, int, int j, int shards, std::uint64_t,
                int rows) {
    Value out(shape_.hidden);
    if (isMoe(stack, stage)) {
      const numeric::MoeWeights& w = moeWeights(stack, stage);
      numeric::moeShard(w, numeric::moeSlice(w.moe, j, shards, moe_ep_), in.data(), out.data(),
                        mode_);
    } else {
      const numeric::StageWeights& w = weights(stack, stage);
      numeric::stageShard(w, numeric::shardColumns(w.inner, shards, j), in.data(), out.data(),
                          mode_);
    }
    kernelOfSize(out, rows);
    return out;
  }
  Value project(const Value& in, int stack, int t, std::uint64_t, int rows) const {
    Value out(shape_.hidden);
    numeric::projectRow(in.data(), out.data(), stack, t < 0 ? 0 : t, mode_, shape_);
    kernelOfSize(out, rows);
    return out;
  }
  /// Column shard j of k of the projection: its columns, zeros elsewhere
  /// (ColumnParallelLinear's output_size / k columns per rank).
  Value projectShard(const Value& in, int stack, int t, int j, int k, std::uint64_t junk_id,
                     int rows) const {
    Value out = project(in, stack, t, junk_id, rows);
    const numeric::ColumnRange cols = numeric::shardColumns(shape_.hidden, k, j);
    for (int c = 0; c < shape_.hidden; ++c) {
      if (c < cols.begin || c >= cols.end) out[c] = 0.0f;
    }
    return out;
  }
  /// The gathered columns: column block p is the p-th part's columns. A part
  /// holds its own block (zeros elsewhere); in real plans part p is member p's,
  /// with `shift` it is member (p + shift) mod n's, whose columns land in block p.
  Value joinColumns(const std::vector<Value>& parts, int, int, std::uint64_t, int shift) const {
    Value out = zero();
    const int n = static_cast<int>(parts.size());
    for (int p = 0; p < n; ++p) {
      const numeric::ColumnRange to = numeric::shardColumns(shape_.hidden, n, p);
      const numeric::ColumnRange from =
          numeric::shardColumns(shape_.hidden, n, ((p + shift) % n + n) % n);
      for (int c = 0; c < to.end - to.begin; ++c) {
        const int src = from.begin + c;
        out[to.begin + c] = src < from.end ? parts[p][src] : 0.0f;
      }
    }
    return out;
  }
  /// Every row divided by d (an averaged or rescaled reduction).
  void divide(std::vector<Value>& rows, int d) const {
    for (Value& row : rows) {
      for (float& x : row) {
        x /= static_cast<float>(d);
        if (mode_ == numeric::Mode::kReal) x = numeric::roundBf16(x);
      }
    }
  }
  /// ExecutionOrder::kCallDependent's reductions: a model of NCCL's ring
  /// algorithms (all_reduce.h and reduce_scatter.h's runRing), written apart
  /// from the bit-identity predictor's rule. One ring over the members in
  /// group order, kRingChannels channels, one loop (small buffers); the buffer
  /// is its rows times the hidden size in elements. An element's chunk is its
  /// member's output block in a reduce-scatter, and in an all-reduce its
  /// slot among the n chunks of its channel's part of the buffer; chunk c is
  /// sent first by member c + 1, each next member adds its own, and member c
  /// adds last. Nothing here reads the call's communicator or keys on rows.
  template <class RowsOf>
  void reduceCall(std::vector<Value>& sum, size_t n, const RowsOf& rows_of,
                  const ReduceCall& call) const {
    if (order_ == ExecutionOrder::kMemberOrder || n < 2) {
      for (size_t p = 1; p < n; ++p) {
        for (size_t i = 0; i < sum.size(); ++i) add(sum[i], rows_of(p)[i]);
      }
      return;
    }
    const std::int64_t h = shape_.hidden;
    const std::int64_t elements = static_cast<std::int64_t>(sum.size()) * h;
    const std::int64_t members = static_cast<std::int64_t>(n);
    const bool scatter = scattersBlocks(call);
    const std::int64_t block = (elements + members - 1) / members;
    const std::int64_t piece = (elements + kRingChannels * members - 1) / (kRingChannels * members);
    std::vector<Value> out(sum.size(), Value(shape_.hidden));
    for (std::int64_t e = 0; e < elements; ++e) {
      const size_t row = static_cast<size_t>(e / h), col = static_cast<size_t>(e % h);
      const std::int64_t c = scatter ? e / block : (e % (members * piece)) / piece;
      float acc = rows_of(static_cast<size_t>((c + 1) % members))[row][col];
      for (std::int64_t k = 2; k <= members; ++k) {
        acc += rows_of(static_cast<size_t>((c + k) % members))[row][col];
        if (mode_ == numeric::Mode::kReal) acc = numeric::roundBf16(acc);
      }
      out[row][col] = acc;
    }
    sum = std::move(out);
  }

 private:
  const numeric::StageWeights& weights(int stack, int stage) {
    auto it = weights_.find({stack, stage});
    if (it == weights_.end()) {
      it = weights_
               .emplace(std::make_pair(stack, stage),
                        numeric::stageWeights(stack, stage, mode_, shape_))
               .first;
    }
    return it->second;
  }
  bool isMoe(int stack, int stage) const {
    return stack < 2 && stage >= 0 && stage < static_cast<int>(kinds_[stack].size()) &&
           kinds_[stack][stage] == LayerKind::kMoe;
  }
  const numeric::MoeWeights& moeWeights(int stack, int stage) {
    auto it = moe_weights_.find({stack, stage});
    if (it == moe_weights_.end()) {
      it = moe_weights_
               .emplace(std::make_pair(stack, stage),
                        numeric::moeWeights(stack, stage, mode_, shape_, moe_))
               .first;
    }
    return it->second;
  }
  /// kCallDependent, real mode: a GEMM's kernel is chosen by its row count
  /// and rounds its own way; here one bf16 ulp up for every third size.
  void kernelOfSize(Value& out, int rows) const {
    if (order_ != ExecutionOrder::kCallDependent || mode_ != numeric::Mode::kReal || rows % 3 != 1)
      return;
    for (float& v : out) v = numeric::roundBf16(v * (1.0f + 1.0f / 128));
  }
  /// The ring model's channel count (NCCL picks its own by topology; two
  /// make an all-reduce's chunks differ from a reduce-scatter's blocks).
  static constexpr std::int64_t kRingChannels = 2;
  /// A reduce-scatter (the op's, or a DP lowering's step): its chunks are the
  /// members' output blocks.
  static bool scattersBlocks(const ReduceCall& call) {
    if (call.kind >= kDpStepTag) return call.kind == kDpStepTag + int(DpStepKind::kReduceScatter);
    const auto kind = static_cast<OpKind>(call.kind / 16);
    return kind == OpKind::kReduceScatter || kind == OpKind::kReduceScatterv ||
           kind == OpKind::kDpReduceScatter;
  }
  ExecutionOrder order_ = ExecutionOrder::kMemberOrder;
  numeric::Mode mode_ = numeric::Mode::kExact;
  numeric::Shape shape_;
  std::map<std::pair<int, int>, numeric::StageWeights> weights_;
  std::map<std::pair<int, int>, numeric::MoeWeights> moe_weights_;
  std::array<std::vector<LayerKind>, 2> kinds_;  ///< stage kinds of the main stack and the MTP step
  numeric::MoeShape moe_;
  int moe_ep_ = 1;
};

}  // namespace seam::ledger_detail
