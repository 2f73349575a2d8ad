// Private to sim/: the two value domains of the ledger (ledger.h explains
// why there are two). Both expose the same small interface to the replay:
// zero, add, the atoms e / p / n / junk, and the two checks.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/fingerprint.h"
#include "replay/term_list.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/replay/ledger.h"

namespace seam::ledger_detail {

/// Stage count and weight shards of each stack, read from the plan.
struct StackShape {
  std::vector<int> shards;    ///< per stage: number of p(s, t, j) terms
  std::vector<int> joins_at;  ///< per stage: the first stage whose complete input includes it
  /// Terms of the embedding: 1 when it arrives complete; tp when the engine's
  /// VocabParallelEmbedding skips its all-reduce (input-scattered attention)
  /// and each TP rank holds its vocab shard's part e(t, j).
  int embed_shards = 1;
  /// Column shards of the stack's input projection: 1 when it is complete;
  /// k when it is column-parallel over a group of k ranks (Nemotron-H's MTP
  /// eh_proj) and each rank holds its columns until they are gathered.
  int column_shards = 1;
};

/// What a row was expected to hold at a check.
enum class Expect : std::uint8_t { kComplete, kNormed };

/// The verdict of the exact domain on one wrong row.
struct Explanation {
  ViolationClass cls = ViolationClass::kNeverCompleted;
  std::string term;
  std::int64_t coefficient = 0;
  int foreign_token = -1;
  /// kWrongScale: the coefficient is coefficient / denominator.
  std::int64_t denominator = 1;
};

// ---------------------------------------------------------------------------
// Fast domain: fingerprints in GF(2^61 - 1).
class FastDomain {
 public:
  using Value = std::uint64_t;
  static constexpr std::uint64_t kPrime = detail::kFieldPrime;

  void prepare(const std::vector<StackShape>& stacks, int tokens);
  Value zero() const { return 0; }
  static void addMod(Value& a, const Value& b) { a = detail::fieldAdd(a, b); }
  void add(Value& a, const Value& b) const { addMod(a, b); }
  Value embed(int stack, int t) const { return mul(a_embed_[stack], b_[t]); }
  /// Vocab shard j's part of the embedding (of `n`, as prepared); the shards sum to embed().
  Value embedShard(int stack, int t, int j, int) const {
    return mul(a_embed_shard_[stack][j], b_[t]);
  }
  Value partial(int stack, int stage, int t, int j) const {
    return mul(a_partial_[stack][stage][j], b_[t]);
  }
  Value normed(int stack, int stage, int t) const { return mul(a_normed_[stack][stage], b_[t]); }
  /// A padding row's value: one splitmix64 of its id (inline: full rows
  /// carry a padding row per aligned or padded slot row, norm and compute
  /// make one per row).
  Value junk(std::uint64_t id) const {
    const Value h = detail::splitmix64(id ^ 0x5bd1e9955bd1e995ULL) & kPrime;
    return h == 0 || h == kPrime ? 1 : h;
  }
  // The replay's value operations: a padding row (t < 0) becomes junk.
  Value norm(const Value&, int stack, int stage, int t, std::uint64_t junk_id) const {
    return t < 0 ? junk(junk_id) : normed(stack, stage, t);
  }
  Value compute(const Value&, int stack, int stage, int t, int j, int, std::uint64_t junk_id,
                int) const {
    return t < 0 ? junk(junk_id) : partial(stack, stage, t, j);
  }
  Value project(const Value&, int stack, int t, std::uint64_t junk_id, int) const {
    return t < 0 ? junk(junk_id) : embed(stack, t);
  }
  /// Column shard j of the stack's input projection.
  Value projectShard(const Value&, int stack, int t, int j, int, std::uint64_t junk_id, int) const {
    return t < 0 ? junk(junk_id) : mul(a_column_[stack][j], b_[t]);
  }
  /// The all-gather of the columns: the projection when every member held its
  /// own column shard, in group order; otherwise no column layout makes the
  /// row, and the sum of what arrived fails the next check.
  Value joinColumns(const std::vector<Value>& parts, int stack, int t, std::uint64_t junk_id,
                    int) const {
    if (t < 0) return junk(junk_id);
    bool whole = parts.size() == a_column_[stack].size();
    Value sum = 0;
    for (size_t j = 0; j < parts.size(); ++j) {
      whole = whole && parts[j] == mul(a_column_[stack][j], b_[t]);
      addMod(sum, parts[j]);
    }
    return whole ? embed(stack, t) : sum;
  }
  bool holds(const Value& v, Expect e, int stack, int stage, int t) const {
    return v ==
           (e == Expect::kComplete ? mul(prefix_[stack][stage], b_[t]) : normed(stack, stage, t));
  }
  /// Every value divided by d (an averaged or rescaled reduction): times
  /// d's inverse in the field, so a term's coefficient becomes 1/d.
  void divide(std::vector<Value>& v, int d) const {
    const Value inv = detail::fieldInverse(static_cast<std::uint64_t>(d));
    for (Value& x : v) x = mul(x, inv);
  }

  // Whole runs of rows at once, for the replay's hot loops: every value here
  // is a coefficient times the token's point, so one coefficient serves a run.
  /// The coefficient of holds(v, e, stack, stage, t): v == point(it, t).
  Value expectedCoefficient(Expect e, int stack, int stage) const {
    return e == Expect::kComplete ? prefix_[stack][stage] : a_normed_[stack][stage];
  }
  Value normedCoefficient(int stack, int stage) const { return a_normed_[stack][stage]; }
  Value partialCoefficient(int stack, int stage, int j) const {
    return a_partial_[stack][stage][j];
  }
  /// The index of the first of `n` rows that is not point(coefficient, t), or n
  /// (padding rows are skipped).
  size_t firstWrong(const Value* v, const int* toks, size_t n, Value coefficient) const {
    for (size_t i = 0; i < n; ++i) {
      if (toks[i] != kPaddingRow && v[i] != mul(coefficient, b_[toks[i]])) return i;
    }
    return n;
  }
  /// A reduction of n members' rows: sum[i] (member 0's row) plus src[p][i]
  /// for p in [1, n), as n - 1 calls of add() in member order make it (the
  /// field's sum does not depend on the order, and the value kept is its
  /// reduced representative either way): a row's terms are summed as 128-bit
  /// integers and reduced once, where add() reduced after every term.
  static void sumRows(Value* sum, size_t rows, const Value* const* src, size_t n) {
    for (size_t i = 0; i < rows; ++i) {
      unsigned __int128 acc = sum[i];
      for (size_t p = 1; p < n; ++p) acc += src[p][i];
      sum[i] = reduceWide(acc);
    }
  }
  /// The sum over `members` buffers each left as fillRows(toks, coefficients[p],
  /// junk_ids[p]) would write them, on the same tokens: row i :=
  /// point(sum of the coefficients, t_i), a padding row the sum of the
  /// members' junk(junk_ids[p] + i + 1). The same values as filling each
  /// buffer and adding them (sums in the field are exact; sumRows).
  void fillSum(Value* out, const int* toks, size_t n, const Value* coefficients,
               const std::uint64_t* junk_ids, size_t members) const {
    unsigned __int128 total = 0;
    for (size_t p = 0; p < members; ++p) total += coefficients[p];
    const Value c = reduceWide(total);
    for (size_t i = 0; i < n; ++i) {
      if (toks[i] >= 0) {
        out[i] = mul(c, b_[toks[i]]);
        continue;
      }
      unsigned __int128 acc = 0;
      for (size_t p = 0; p < members; ++p) acc += junk(junk_ids[p] + i + 1);
      out[i] = reduceWide(acc);
    }
  }
  /// norm / compute of n rows: row i := point(coefficient, t_i), a padding
  /// row junk(junk_id + i + 1), as n calls of norm or compute with ids
  /// junk_id + 1 .. junk_id + n make them.
  void fillRows(Value* out, const int* toks, size_t n, Value coefficient,
                std::uint64_t junk_id) const {
    for (size_t i = 0; i < n; ++i)
      out[i] = toks[i] < 0 ? junk(junk_id + i + 1) : mul(coefficient, b_[toks[i]]);
  }

 private:
  static Value mul(Value a, Value b) { return detail::fieldMul(a, b); }
  /// x mod (2^61 - 1), reduced, for x below 2^125: 2^64 is 8 in the field.
  static Value reduceWide(unsigned __int128 x) {
    const std::uint64_t lo = static_cast<std::uint64_t>(x),
                        hi = static_cast<std::uint64_t>(x >> 64);
    std::uint64_t r = (lo & kPrime) + (lo >> 61) + (hi << 3);
    r = (r & kPrime) + (r >> 61);
    return r >= kPrime ? r - kPrime : r;
  }
  std::vector<Value> b_;                                    // per token
  std::vector<Value> a_embed_;                              // per stack
  std::vector<std::vector<Value>> a_embed_shard_;           // [stack][shard], summing to a_embed_
  std::vector<std::vector<Value>> a_column_;                // [stack][column shard]
  std::vector<std::vector<std::vector<Value>>> a_partial_;  // [stack][stage][shard]
  std::vector<std::vector<Value>> a_normed_;                // [stack][stage], stage n = final
  std::vector<std::vector<Value>> prefix_;  // [stack][k] = a_e + sum_{s<k} sum_j a_p
};

// ---------------------------------------------------------------------------
// Exact domain: explicit (term, coefficient) lists, sorted by term key.
class ExactDomain {
 public:
  using Value = TermList;
  /// The replay explains a wrong row by its terms (replay_checks.h).
  static constexpr bool kNamesTerms = true;

  void prepare(const std::vector<StackShape>& stacks, int) { stacks_ = &stacks; }
  Value zero() const { return {}; }
  /// a += b. A long sum is shared with every row that holds the same terms:
  /// the same a + b made before (by the ids of a and b) is taken as it is,
  /// and a new sum equal to one another row holds becomes that row's list.
  /// The ranks of a group build the same residual and all-reduce sums; a
  /// list per rank held a world 128 case's sums hundreds of times over.
  void add(Value& a, const Value& b) const;
  /// A reduction of `n` members' rows into `sum` (member 0's): each row's
  /// terms added in member order, as add() would, and only the finished sum
  /// shared (the partial sums of a reduction are not held by any row).
  template <class RowsOf, class Call>
  void reduceCall(std::vector<Value>& sum, size_t n, const RowsOf& rows_of, const Call&) const {
    for (size_t i = 0; i < sum.size(); ++i) {
      for (size_t p = 1; p < n; ++p) addTerms(sum[i], rows_of(p)[i]);
      if (sum[i].size() >= kShareFrom) share(sum[i]);
    }
  }
  static void addTerms(Value& a, const Value& b);
  Value embed(int stack, int t) const { return {{key(kE, stack, 0, t, 0), 1}}; }
  Value embedShard(int stack, int t, int j, int) const { return {{key(kE, stack, 0, t, j), 1}}; }
  Value partial(int stack, int stage, int t, int j) const {
    return {{key(kP, stack, stage, t, j), 1}};
  }
  Value normed(int stack, int stage, int t) const { return {{key(kN, stack, stage, t, 0), 1}}; }
  Value junk(std::uint64_t id) const { return {{junkKey(id), 1}}; }
  Value norm(const Value&, int stack, int stage, int t, std::uint64_t junk_id) const {
    return t < 0 ? junk(junk_id) : normed(stack, stage, t);
  }
  Value compute(const Value&, int stack, int stage, int t, int j, int, std::uint64_t junk_id,
                int) const {
    return t < 0 ? junk(junk_id) : partial(stack, stage, t, j);
  }
  Value project(const Value&, int stack, int t, std::uint64_t junk_id, int) const {
    return t < 0 ? junk(junk_id) : embed(stack, t);
  }
  /// out := norm(...) / compute(...) (neither reads its input), reusing out's
  /// storage when it is small: a long sum's is freed, as a new value would.
  void normInto(Value& out, int stack, int stage, int t, std::uint64_t junk_id) const {
    out.setOne(t < 0 ? junkKey(junk_id) : key(kN, stack, stage, t, 0));
  }
  void computeInto(Value& out, int stack, int stage, int t, int j, std::uint64_t junk_id) const {
    out.setOne(t < 0 ? junkKey(junk_id) : key(kP, stack, stage, t, j));
  }
  /// Column shard j of the stack's input projection: the term p(s-1, t, j).
  Value projectShard(const Value&, int stack, int t, int j, int, std::uint64_t junk_id, int) const {
    return t < 0 ? junk(junk_id) : Value{{key(kP, stack, -1, t, j), 1}};
  }
  /// As FastDomain::joinColumns.
  Value joinColumns(const std::vector<Value>& parts, int stack, int t, std::uint64_t junk_id,
                    int) const {
    if (t < 0) return junk(junk_id);
    const int k = (*stacks_)[stack].column_shards;
    bool whole = static_cast<int>(parts.size()) == k;
    Value sum;
    for (size_t j = 0; j < parts.size(); ++j) {
      whole = whole && parts[j] == Value{{key(kP, stack, -1, t, static_cast<int>(j)), 1}};
      addTerms(sum, parts[j]);
    }
    return whole ? embed(stack, t) : sum;
  }
  /// v == expected(e, stack, stage, t): the expected keys (made in key
  /// order into a reused buffer) compared with v's terms one by one.
  bool holds(const Value& v, Expect e, int stack, int stage, int t) const;
  /// Every value divided by d: the coefficients become fractions, kept as
  /// integer numerators over one denominator per value (a last entry keyed
  /// kDenominator, absent when it is 1).
  void divide(std::vector<Value>& v, int d) const {
    for (Value& x : v) divideTerms(x, d);
  }
  static void divideTerms(Value& v, std::int64_t d);
  /// Why `v` is not what was expected.
  Explanation explain(const Value& v, Expect e, int stack, int stage, int t) const;
  /// "p(s3, t2, j1)", "e(t0)", "n(s4, t1)", "junk#7" (stack 1 terms carry "mtp:").
  static std::string termName(std::uint64_t key);
  /// The key of a value's denominator entry: above every term's key (a
  /// term's key is below 2^63), so it stays last in the sorted list.
  static constexpr std::uint64_t kDenominator = ~std::uint64_t{0};

 private:
  friend class TracedDomain;  // names its terms by the same keys
  /// Sums shorter than this keep their own list (sharing costs a look-up).
  static constexpr size_t kShareFrom = 16;
  /// a's list replaced by an equal one held elsewhere, or remembered as one to share.
  void share(Value& a) const;
  /// A sum's list and its id when it was made (a list changed since has another).
  struct Made {
    std::weak_ptr<TermList::Node> node;
    std::uint64_t id;
  };
  /// The long sums made so far, by a hash of their terms, and by the ids of
  /// their two operands. Weak: a list dies with its last row.
  mutable std::unordered_multimap<std::uint64_t, Made> by_terms_;
  struct PairHash {
    size_t operator()(const std::pair<std::uint64_t, std::uint64_t>& p) const {
      return detail::splitmix64(p.first * 0x9e3779b97f4a7c15ULL ^ p.second);
    }
  };
  mutable std::unordered_map<std::pair<std::uint64_t, std::uint64_t>, Made, PairHash> by_operands_;
  mutable size_t prune_at_ = 1024;
  enum Kind : std::uint64_t { kE = 0, kP = 1, kN = 2, kJ = 3 };
  static std::uint64_t key(Kind kind, int stack, int stage, int t, int j) {
    return (std::uint64_t{kind} << 61) | (std::uint64_t(stack & 1) << 60) |
           (std::uint64_t((stage + 1) & 0x3fff) << 46) | (std::uint64_t(t & 0xffffff) << 22) |
           std::uint64_t(j & 0x3fffff);
  }
  static std::uint64_t junkKey(std::uint64_t id) {
    return (std::uint64_t{kJ} << 61) | (id & ((std::uint64_t{1} << 60) - 1));
  }
  /// The expected value of `t` (sorted by key).
  TermList::List expected(Expect e, int stack, int stage, int t) const;
  /// a += b on lists (addTerms once a's list is its own).
  static void addLists(TermList::List& a, const TermList::List& b);
  /// Calls term(key) for every term of expected(e, stack, stage, t), in key
  /// order (e before p, then by stage, then by shard), until it returns false.
  template <class Term>
  bool eachExpected(Expect e, int stack, int stage, int t, Term&& term) const;
  const std::vector<StackShape>* stacks_ = nullptr;
  mutable std::vector<std::uint64_t> keys_;  // holds(): the expected keys, reused
};

}  // namespace seam::ledger_detail
