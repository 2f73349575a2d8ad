// Private to sim/: the arithmetic of seam's fingerprints, one definition for
// the serving ledger's fast domain and the training ledger. splitmix64 is the
// fixed well-mixed sequence seam draws its deterministic points, weights and
// junk from (every run reproducible); GF(2^61 - 1) is where both ledgers
// evaluate a row's integer combination of terms.
#pragma once

#include <cstdint>

namespace seam::detail {

/// One step of splitmix64: a bijection of 64-bit words that mixes every bit.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The Mersenne prime 2^61 - 1: reducing modulo it is a shift and an add.
inline constexpr std::uint64_t kFieldPrime = (std::uint64_t{1} << 61) - 1;

/// a + b in GF(2^61 - 1), for reduced a and b (the result is reduced).
inline std::uint64_t fieldAdd(std::uint64_t a, std::uint64_t b) {
  a += b;
  a = (a & kFieldPrime) + (a >> 61);
  return a >= kFieldPrime ? a - kFieldPrime : a;
}

/// a - b in GF(2^61 - 1), for reduced a and b.
inline std::uint64_t fieldSub(std::uint64_t a, std::uint64_t b) {
  return a >= b ? a - b : a + kFieldPrime - b;
}

/// a * b in GF(2^61 - 1), for reduced a and b.
inline std::uint64_t fieldMul(std::uint64_t a, std::uint64_t b) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  const std::uint64_t r =
      (static_cast<std::uint64_t>(p) & kFieldPrime) + static_cast<std::uint64_t>(p >> 61);
  return r >= kFieldPrime ? r - kFieldPrime : r;
}

/// The inverse of a (not a multiple of the prime) in GF(2^61 - 1): a^(p-2).
inline std::uint64_t fieldInverse(std::uint64_t a) {
  std::uint64_t r = 1;
  std::uint64_t b = a % kFieldPrime;
  for (std::uint64_t e = kFieldPrime - 2; e != 0; e >>= 1) {
    if (e & 1) r = fieldMul(r, b);
    b = fieldMul(b, b);
  }
  return r;
}

}  // namespace seam::detail
