// Private to sim/: the arithmetic domain of the replay (replay.h), behind
// bit_identity.h. A row's value is a 64-bit fingerprint of the expression
// that computed it (which ops, in which nesting, on which operands), with
// exactly the identities floating-point addition has: x + 0 = x and
// a + b = b + a. Two plans whose output rows have equal fingerprints compute
// every output element by the same sequence of roundings, hence the same bits.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "base/fingerprint.h"
#include "replay/ledger_domains.h"
#include "replay/replay.h"
#include "seam/sim/replay/numeric.h"

namespace seam::ledger_detail {

class ArithmeticDomain {
 public:
  /// 0 is an exact zero (a zero-filled row): adding it changes no bit.
  using Value = std::uint64_t;

  void prepare(const std::vector<StackShape>&, int) {}
  Value zero() const { return 0; }
  /// One floating-point addition: commutative, not associative.
  void add(Value& a, const Value& b) const {
    if (b == 0) return;
    if (a == 0) {
      a = b;
      return;
    }
    a = node(kAdd, std::min(a, b), std::max(a, b));
  }
  Value embed(int stack, int t) const { return node(kEmbed, stack, t); }
  /// The owner's vocab shard holds the row, the others exact zeros (numeric_domain.h).
  Value embedShard(int stack, int t, int j, int n) const {
    return numeric::embedShardOwner(t, n) == j ? embed(stack, t) : zero();
  }
  Value junk(std::uint64_t id) const { return node(kJunk, id); }
  bool holds(const Value&, Expect, int, int, int) const { return true; }
  Explanation explain(const Value&, Expect, int, int, int) const { return {}; }
  /// A per-row kernel (RMSNorm): the row's result depends on the row alone.
  Value norm(const Value& in, int stack, int stage, int, std::uint64_t) const {
    return node(kNorm, pack(stack, stage), in);
  }
  /// GEMMs over `rows` rows: cuBLAS chooses the kernel, and with it the order
  /// of the K-dimension sums, by the problem size, so the row count is part
  /// of the expression.
  Value compute(const Value& in, int stack, int stage, int, int j, int shards, std::uint64_t,
                int rows) const {
    return node(kCompute, pack(stack, stage), pack(j, shards), static_cast<std::uint64_t>(rows),
                in);
  }
  Value project(const Value& in, int stack, int, std::uint64_t, int rows) const {
    return node(kProject, static_cast<std::uint64_t>(stack), static_cast<std::uint64_t>(rows), in);
  }
  /// A column shard is its columns' part of the same GEMM.
  Value projectShard(const Value& in, int stack, int, int j, int k, std::uint64_t, int rows) const {
    return node(kProject, static_cast<std::uint64_t>(stack), static_cast<std::uint64_t>(rows), in,
                pack(j, k));
  }
  /// A gather copies bits: the row is its shards in order.
  Value joinColumns(const std::vector<Value>& parts, int, int, std::uint64_t, int) const {
    Value h = node(kColumns, static_cast<std::uint64_t>(parts.size()));
    for (Value p : parts) h = node(kOperand, h, p);
    return h;
  }

  /// A division by d: one rounding of each nonzero element (0 / d is 0).
  void divide(std::vector<Value>& rows, int d) const {
    for (Value& v : rows) {
      if (v != 0) v = node(kDivide, static_cast<std::uint64_t>(d), v);
    }
  }

  /// An NCCL reduction. Zeros drop out (x + 0 = x in any order); one or two
  /// nonzero operands give one addition, the same in any order. Three or
  /// more: the order is NCCL's (the ring's start moves with the element's
  /// chunk), a function of the call and the element's row, not known here:
  /// the result is that function of the ordered operands.
  template <class RowsOf>
  void reduceCall(std::vector<Value>& sum, size_t n, const RowsOf& rows_of,
                  const ReduceCall& call) const {
    for (size_t i = 0; i < sum.size(); ++i) {
      nonzero_.clear();
      for (size_t p = 0; p < n; ++p) {
        const Value v = rows_of(p)[i];
        if (v != 0) nonzero_.emplace_back(static_cast<std::uint32_t>(p), v);
      }
      if (nonzero_.size() <= 2) {
        Value s = 0;
        for (const auto& pv : nonzero_) add(s, pv.second);
        sum[i] = s;
        continue;
      }
      Value h =
          node(kReduce, static_cast<std::uint64_t>(call.kind),
               static_cast<std::uint64_t>(call.communicator), pack(call.rows, static_cast<int>(i)));
      for (const auto& [p, v] : nonzero_) h = node(kOperand, h, p, v);
      sum[i] = h;
    }
  }

 private:
  enum Tag : std::uint64_t {
    kAdd = 1,
    kEmbed,
    kJunk,
    kNorm,
    kCompute,
    kProject,
    kReduce,
    kOperand,
    kColumns,
    kDivide
  };
  static std::uint64_t pack(int a, int b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
           static_cast<std::uint32_t>(b);
  }
  template <class... T>
  static Value node(Tag tag, T... parts) {
    std::uint64_t h = detail::splitmix64(tag * 0x9e3779b97f4a7c15ULL);
    ((h = detail::splitmix64(h ^ static_cast<std::uint64_t>(parts))), ...);
    return h == 0 ? 1 : h;  // never an exact zero
  }
  mutable std::vector<std::pair<std::uint32_t, Value>> nonzero_;
};

}  // namespace seam::ledger_detail
