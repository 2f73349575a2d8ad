#include "seam/sim/numeric.h"

#include <Eigen/Dense>
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include "mix.h"

namespace seam::numeric {

namespace {

constexpr auto mix = detail::splitmix64;

std::uint64_t key(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d) {
  return mix(mix(mix(mix(a) ^ b) ^ c) ^ d);
}

/// A value in [-1, 1) from a key (real-mode weights: sum of two uniforms, a
/// triangular stand-in for a normal, scaled by the fan-in).
float unit(std::uint64_t k) { return static_cast<float>((k >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f; }

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

StageWeights stageWeights(int stack, int stage, Mode mode, const Shape& shape) {
  StageWeights w;
  w.hidden = shape.hidden;
  w.inner = shape.inner;
  w.w_in.assign(static_cast<size_t>(shape.hidden) * shape.inner, 0.0f);
  w.w_out.assign(static_cast<size_t>(shape.inner) * shape.hidden, 0.0f);
  const std::uint64_t base = key(0x5EA4, static_cast<std::uint64_t>(stack), static_cast<std::uint64_t>(stage + 1), 0);
  if (mode == Mode::kExact) {
    // A few +-1 entries per column: |x W_in| <= kGrid * nnz, and the same for W_out.
    for (int c = 0; c < shape.inner; ++c) {
      for (int k = 0; k < kExactNonzerosPerColumn; ++k) {
        const std::uint64_t h = key(base, 1, c, k);
        const int row = static_cast<int>(h % shape.hidden);
        w.w_in[static_cast<size_t>(row) * shape.inner + c] = (h >> 32) & 1 ? 1.0f : -1.0f;
      }
    }
    for (int c = 0; c < shape.hidden; ++c) {
      for (int k = 0; k < kExactNonzerosPerColumn; ++k) {
        const std::uint64_t h = key(base, 2, c, k);
        const int row = static_cast<int>(h % shape.inner);
        w.w_out[static_cast<size_t>(row) * shape.hidden + c] = (h >> 32) & 1 ? 1.0f : -1.0f;
      }
    }
    return w;
  }
  const float s_in = 1.0f / std::sqrt(static_cast<float>(shape.hidden));
  const float s_out = 1.0f / std::sqrt(static_cast<float>(shape.inner));
  for (size_t i = 0; i < w.w_in.size(); ++i) {
    w.w_in[i] = roundBf16(s_in * (unit(key(base, 3, i, 0)) + unit(key(base, 4, i, 0))));
  }
  for (size_t i = 0; i < w.w_out.size(); ++i) {
    w.w_out[i] = roundBf16(s_out * (unit(key(base, 5, i, 0)) + unit(key(base, 6, i, 0))));
  }
  w.norm.resize(shape.hidden);
  for (int i = 0; i < shape.hidden; ++i) w.norm[i] = roundBf16(1.0f + 0.1f * unit(key(base, 7, i, 0)));
  return w;
}

std::vector<float> embedRow(int stack, int token, Mode mode, const Shape& shape) {
  std::vector<float> row(shape.hidden);
  for (int k = 0; k < shape.hidden; ++k) {
    const std::uint64_t h = key(0xE3B, static_cast<std::uint64_t>(stack), static_cast<std::uint64_t>(token), k);
    row[k] = mode == Mode::kExact ? static_cast<float>(static_cast<int>(h % (2 * kGrid + 1)) - kGrid)
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

void normRow(const float* v, float* out, int h, Mode mode, const std::vector<float>& weight) {
  if (mode == Mode::kExact) {
    for (int k = 0; k < h; ++k) {
      const long long x = static_cast<long long>(v[k]);
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

void projectRow(const float* final_output, float* out, int stack, int token, Mode mode, const Shape& shape) {
  const std::vector<float> e = embedRow(stack, token, mode, shape);
  for (int k = 0; k < shape.hidden; ++k) {
    const float v = final_output[k] + e[k];
    out[k] = mode == Mode::kReal ? roundBf16(v) : v;
  }
}

}  // namespace seam::numeric
