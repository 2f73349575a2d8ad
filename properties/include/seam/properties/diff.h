// Parent vs change: two policies planned on
// the same cases, compared case by case and rank by rank, each case put in
// one class, with one example per class.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "seam/properties/sweep.h"

namespace seam::properties {

/// The class of one case's difference, in the order they are tested.
enum class DiffClass : std::uint8_t {
  kIdentical,  ///< the same ops on every rank
  kMoved,      ///< the same ops; a reduction moved across a layer boundary, or ops reordered
  kZeroUpdateDropped,  ///< equal once reductions of a zero update are dropped
  kSize1Dropped,       ///< equal once reductions over a group of one rank are dropped
  kEqualValues,        ///< different reductions, and the ledger proves both complete every sum once
  kValuesDiffer,       ///< one side violates a property (the ledger shows where)
  kOneRefuses,         ///< one policy plans the case, the other refuses it
  kBothRefuse,         ///< neither plans it (not a difference; counted apart)
};
inline constexpr int kDiffClassCount = 8;
std::string_view diffClassName(DiffClass c);
/// Both sides planned and their values are equal (the classes before
/// kValuesDiffer): the pairs the bit-identity prediction speaks of.
inline bool equalValues(DiffClass c) { return c < DiffClass::kValuesDiffer; }

/// One case compared.
struct CaseDiff {
  DiffClass cls = DiffClass::kIdentical;
  std::string detail;  ///< what moved past what, which side refuses, the violation
  /// Both planned and predictBitIdentity holds: the same bits on GPUs in real
  /// mode (false when a side refuses or the values differ).
  bool bit_identical = false;
  std::string rounding;  ///< why the bits may differ (predictBitIdentity's reason)
};

/// Compares `a` and `b` on one case (`ledger` is scratch).
CaseDiff diffCase(const Case& c, PolicyKind a, PolicyKind b, Ledger& ledger);
/// Compares two plans of the same case (e.g. an engine trace against a policy).
CaseDiff diffPlans(const Plan& a, const Plan& b, Ledger& ledger);

/// The `seam diff` line that compares `a` and `b` on this one case.
std::string diffCommand(const Case& c, PolicyKind a, PolicyKind b);

struct DiffSpec {
  std::vector<SweepModel> models;
  std::vector<int> worlds = {1, 2, 4, 8};
  PolicyKind a = PolicyKind::kLegacy;
  PolicyKind b = PolicyKind::kDeclared;
  int jobs = 1;
  /// Indices of cases already compared (a resumed run's stored cases),
  /// sorted: not compared again.
  std::vector<std::int64_t> skip;
  /// Called for every case compared, as soon as it is (the store); from the
  /// worker threads at once and in any order.
  std::function<void(std::int64_t index, const Case& c, const CaseDiff& d)> on_case;
  /// Cases compared so far of `total`, every few cases; called from the
  /// worker threads (a caller that draws serialises itself).
  std::function<void(std::int64_t done, std::int64_t total)> on_progress;
};

struct DiffExample {
  std::int64_t index = -1;
  std::string reproduce;  ///< `seam diff` line for the one case
  std::string detail;
};

struct DiffResult {
  std::array<std::int64_t, kDiffClassCount> counts{};
  /// Of counts[k], the cases predicted bit-identical on GPUs.
  std::array<std::int64_t, kDiffClassCount> bit_identical{};
  /// The smallest case whose values are equal and whose bits may differ.
  DiffExample other_roundings;
  std::array<DiffExample, kDiffClassCount> examples{};  ///< the smallest case of each class
  std::int64_t cases = 0;
  std::int64_t run_here = 0;  ///< cases this process compared (the others were resumed)
  double seconds = 0;
};

/// The space's cases in their order: case i is the case stored with index i.
Expected<std::vector<Case>> diffCases(const DiffSpec& spec);

/// Adds case `index` of `cases` to `r`'s counts and examples. The result does
/// not depend on the order cases are added in (the smallest case of a class,
/// ties to the lowest index, is its example).
void foldDiff(DiffResult& r, const std::vector<Case>& cases, std::int64_t index, const CaseDiff& d,
              PolicyKind a, PolicyKind b);

/// The synthetic patterns `seam diff` adds to the presets by default:
/// shapes real checkpoints never have (FFN after FFN, an FFN at the stack
/// start) and short ones that show each boundary kind.
std::vector<SweepModel> syntheticDiffModels();

/// Compares every case of the space but those in spec.skip; the result
/// counts the cases compared here.
Expected<DiffResult> runDiff(const DiffSpec& spec);

}  // namespace seam::properties
