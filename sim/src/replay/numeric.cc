#include "seam/sim/replay/numeric.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cassert>
#include <climits>
#include <cmath>
#include <cstring>

#include "base/fingerprint.h"

namespace seam::numeric {

namespace {

constexpr auto mix = detail::splitmix64;

std::uint64_t key(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d) {
  return mix(mix(mix(mix(a) ^ b) ^ c) ^ d);
}

/// A value in [-1, 1) from a key (real-mode weights: sum of two uniforms, a
/// triangular stand-in for a normal, scaled by the fan-in).
float unit(std::uint64_t k) {
  return static_cast<float>((k >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

}  // namespace

float roundBf16(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u) return v;  // inf / nan unchanged
  const std::uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb;
  bits &= 0xffff0000u;
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

std::int64_t ulpDistance(float x, float y) {
  auto ordered = [](float v) {
    std::int32_t i;
    std::memcpy(&i, &v, sizeof i);
    return i < 0 ? static_cast<std::int64_t>(INT32_MIN) - i : static_cast<std::int64_t>(i);
  };
  return std::llabs(ordered(x) - ordered(y));
}

bool isBf16(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return (bits & 0xffffu) == 0;
}

namespace {

/// The weights of one MLP of `inner` columns drawn from `base` (a stage, or
/// one routed expert of a MoE stage).
StageWeights mlpWeights(std::uint64_t base, int hidden, int inner, Mode mode) {
  StageWeights w;
  w.hidden = hidden;
  w.inner = inner;
  w.w_in.assign(static_cast<size_t>(hidden) * inner, 0.0f);
  w.w_out.assign(static_cast<size_t>(inner) * hidden, 0.0f);
  if (mode == Mode::kExact) {
    // The norm surrogate's per-stage weights, in 1..4 (units mod 5): a norm
    // run with another stage's weights gives other values, as RMSNorm would.
    w.norm.resize(hidden);
    for (int i = 0; i < hidden; ++i) w.norm[i] = static_cast<float>(1 + key(base, 8, i, 0) % 4);
    // A few +-1 entries per column: |x W_in| <= kGrid * nnz, and the same for W_out.
    for (int c = 0; c < inner; ++c) {
      for (int k = 0; k < kExactNonzerosPerColumn; ++k) {
        const std::uint64_t h = key(base, 1, c, k);
        const int row = static_cast<int>(h % hidden);
        w.w_in[static_cast<size_t>(row) * inner + c] = (h >> 32) & 1 ? 1.0f : -1.0f;
      }
    }
    for (int c = 0; inner > 0 && c < hidden; ++c) {
      for (int k = 0; k < kExactNonzerosPerColumn; ++k) {
        const std::uint64_t h = key(base, 2, c, k);
        const int row = static_cast<int>(h % inner);
        w.w_out[static_cast<size_t>(row) * hidden + c] = (h >> 32) & 1 ? 1.0f : -1.0f;
      }
    }
    return w;
  }
  const float s_in = 1.0f / std::sqrt(static_cast<float>(hidden));
  const float s_out = 1.0f / std::sqrt(static_cast<float>(std::max(inner, 1)));
  for (size_t i = 0; i < w.w_in.size(); ++i) {
    w.w_in[i] = roundBf16(s_in * (unit(key(base, 3, i, 0)) + unit(key(base, 4, i, 0))));
  }
  for (size_t i = 0; i < w.w_out.size(); ++i) {
    w.w_out[i] = roundBf16(s_out * (unit(key(base, 5, i, 0)) + unit(key(base, 6, i, 0))));
  }
  w.norm.resize(hidden);
  for (int i = 0; i < hidden; ++i) w.norm[i] = roundBf16(1.0f + 0.1f * unit(key(base, 7, i, 0)));
  return w;
}

std::uint64_t stageKey(int stack, int stage) {
  return key(0x5EA4, static_cast<std::uint64_t>(stack), static_cast<std::uint64_t>(stage + 1), 0);
}

}  // namespace

StageWeights stageWeights(int stack, int stage, Mode mode, const Shape& shape) {
  return mlpWeights(stageKey(stack, stage), shape.hidden, shape.inner, mode);
}

std::vector<float> embedRow(int stack, int token, Mode mode, const Shape& shape) {
  std::vector<float> row(shape.hidden);
  for (int k = 0; k < shape.hidden; ++k) {
    const std::uint64_t h =
        key(0xE3B, static_cast<std::uint64_t>(stack), static_cast<std::uint64_t>(token), k);
    row[k] = mode == Mode::kExact
                 ? static_cast<float>(static_cast<int>(h % (2 * kGrid + 1)) - kGrid)
                 : roundBf16(unit(h));
  }
  return row;
}

ColumnRange shardColumns(int inner, int shards, int j) {
  const int q = inner / shards;
  const int rem = inner % shards;
  const int begin = j * q + std::min(j, rem);
  return {begin, begin + q + (j < rem ? 1 : 0)};
}

void stageShard(const StageWeights& w, ColumnRange cols, const float* x, float* out, Mode mode) {
  // Column-parallel in-projection over the shard's columns, relu, row-parallel
  // out-projection (Eigen maps over the row-major weights; exact mode is
  // exact in any summation order).
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int n = cols.end - cols.begin;
  const Eigen::Map<const RowMajor> w_in(w.w_in.data(), w.hidden, w.inner);
  const Eigen::Map<const RowMajor> w_out(w.w_out.data(), w.inner, w.hidden);
  const Eigen::Map<const Eigen::RowVectorXf> xv(x, w.hidden);
  Eigen::RowVectorXf mid = (xv * w_in.middleCols(cols.begin, n)).cwiseMax(0.0f);
  if (mode == Mode::kReal) mid = mid.unaryExpr([](float v) { return roundBf16(v); });
  Eigen::Map<Eigen::RowVectorXf> y(out, w.hidden);
  y.noalias() = mid * w_out.middleRows(cols.begin, n);
  if (mode == Mode::kReal) y = y.unaryExpr([](float v) { return roundBf16(v); });
}

MoeShape moeShape(const ModelShape& model, int moe_ep, const Shape& shape) {
  MoeShape m;
  m.experts = std::max(kNumericExperts, moe_ep);
  m.top_k =
      std::min({kNumericTopK, m.experts, model.moe_top_k > 0 ? model.moe_top_k : kNumericTopK});
  const bool shared = model.moe_shared_intermediate > 0;
  m.shared_inner = shared ? shape.inner : 0;
  m.expert_inner =
      shared && model.ffn_intermediate > 0
          ? std::max(1, static_cast<int>(static_cast<std::int64_t>(shape.inner) *
                                         model.ffn_intermediate / model.moe_shared_intermediate))
          : shape.inner;
  return m;
}

MoeWeights moeWeights(int stack, int stage, Mode mode, const Shape& shape, const MoeShape& moe) {
  MoeWeights w;
  w.moe = moe;
  // The shared expert draws from the stage's own key: with Shape::inner
  // columns it is the dense stage's MLP, and its norm weight the stage's.
  w.shared = mlpWeights(stageKey(stack, stage), shape.hidden, moe.shared_inner, mode);
  const std::uint64_t base =
      key(0xE7E, static_cast<std::uint64_t>(stack), static_cast<std::uint64_t>(stage + 1), 0);
  for (int e = 0; e < moe.experts; ++e) {
    w.experts.push_back(mlpWeights(key(base, 8, e, 0), shape.hidden, moe.expert_inner, mode));
  }
  w.router.assign(static_cast<size_t>(shape.hidden) * moe.experts, 0.0f);
  if (mode == Mode::kExact) {
    for (int e = 0; e < moe.experts; ++e) {
      for (int k = 0; k < kRouterNonzerosPerColumn; ++k) {
        const std::uint64_t h = key(base, 9, e, k);
        w.router[static_cast<size_t>(h % shape.hidden) * moe.experts + e] =
            (h >> 32) & 1 ? 1.0f : -1.0f;
      }
    }
  } else {
    const float s = 1.0f / std::sqrt(static_cast<float>(shape.hidden));
    for (size_t i = 0; i < w.router.size(); ++i) {
      w.router[i] = roundBf16(s * (unit(key(base, 10, i, 0)) + unit(key(base, 11, i, 0))));
    }
  }
  return w;
}

MoeSlice moeSlice(const MoeShape& moe, int j, int shards, int moe_ep) {
  // One shard: everything. Otherwise the group is the EP group (shards =
  // moe_ep), the MoE-TP group (moe_ep = 1) or the merged TP group (shards =
  // moe_ep * moe_tp, EP-major).
  const int ep = shards > 1 && moe_ep > 1 ? moe_ep : 1;
  assert(shards % ep == 0 && "a MoE weight group is EP-major over moe_ep");
  const int tp = shards / ep;
  MoeSlice s;
  s.experts = shardColumns(moe.experts, ep, j / tp);
  s.expert_cols = shardColumns(moe.expert_inner, tp, j % tp);
  s.shared_cols = shardColumns(moe.shared_inner, shards, j);
  return s;
}

Routing routeRow(const MoeWeights& w, const float* x, Mode mode) {
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int hidden = w.shared.hidden;
  const Eigen::Map<const RowMajor> router(w.router.data(), hidden, w.moe.experts);
  Eigen::RowVectorXf scores = Eigen::Map<const Eigen::RowVectorXf>(x, hidden) * router;
  if (mode == Mode::kReal) scores = scores.unaryExpr([](float v) { return roundBf16(v); });
  Routing r;
  r.experts.resize(w.moe.top_k);
  r.gates.resize(w.moe.top_k);
  topKGates(scores.data(), w.moe.experts, w.moe.top_k, mode == Mode::kReal, r.experts.data(),
            r.gates.data());
  return r;
}

void moeShard(const MoeWeights& w, const MoeSlice& slice, const float* x, float* out, Mode mode) {
  const int hidden = w.shared.hidden;
  if (slice.shared_cols.end > slice.shared_cols.begin) {
    stageShard(w.shared, slice.shared_cols, x, out, mode);
  } else {
    std::fill(out, out + hidden, 0.0f);
  }
  const Routing route = routeRow(w, x, mode);
  std::vector<float> y(hidden);
  for (int e = slice.experts.begin; e < slice.experts.end; ++e) {
    const auto it = std::find(route.experts.begin(), route.experts.end(), e);
    if (it == route.experts.end() || slice.expert_cols.end == slice.expert_cols.begin) continue;
    const float gate = route.gates[it - route.experts.begin()];
    stageShard(w.experts[e], slice.expert_cols, x, y.data(), mode);
    // One rounded multiply, one rounded add per element: the GPU's
    // gatedAccumulate performs the same (no FMA on either side).
    for (int k = 0; k < hidden; ++k) {
      const float g = gate * y[k];
      out[k] = out[k] + g;
    }
  }
  if (mode == Mode::kReal) {
    for (int k = 0; k < hidden; ++k) out[k] = roundBf16(out[k]);
  }
}

void normRow(const float* v, float* out, int h, Mode mode, const std::vector<float>& weight) {
  if (mode == Mode::kExact) {
    for (int k = 0; k < h; ++k) {
      const float w = weight.empty() ? 1.0f : weight[k];
      const long long x = static_cast<long long>(v[k] * w);
      out[k] = static_cast<float>(((x % 5) + 5) % 5 - 2);
    }
    return;
  }
  constexpr float kEps = 1e-5f;
  double ss = 0;
  for (int k = 0; k < h; ++k) ss += static_cast<double>(v[k]) * v[k];
  const float inv = 1.0f / std::sqrt(static_cast<float>(ss / h) + kEps);
  for (int k = 0; k < h; ++k) out[k] = roundBf16(v[k] * inv * (weight.empty() ? 1.0f : weight[k]));
}

void projectRow(const float* final_output, float* out, int stack, int token, Mode mode,
                const Shape& shape) {
  const std::vector<float> e = embedRow(stack, token, mode, shape);
  for (int k = 0; k < shape.hidden; ++k) {
    const float v = final_output[k] + e[k];
    out[k] = mode == Mode::kReal ? roundBf16(v) : v;
  }
}

}  // namespace seam::numeric
