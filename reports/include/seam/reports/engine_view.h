// `seam sweep --engine`'s rows (EngineCaseRecord) folded into its
// conformance table: per model and configuration family, how many cases
// agree with what the engine ran under each policy, and the first
// divergences shared by cases, each with a command that reproduces it. The
// console, `--format json` and `seam report` all read this one fold.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "seam/reports/store.h"

namespace seam::reports {

/// The classes of docs/recordings.md in their order ("agrees", "differs", ...).
inline constexpr const char* kAgreementClasses[] = {"agrees",        "differs", "engine-refused",
                                                    "engine-failed", "cpu-gap", "plan-refused",
                                                    "other-padding"};

struct ConformanceRow {
  std::int64_t cases = 0;
  /// policy -> agreement class -> cases.
  std::map<std::string, std::map<std::string, std::int64_t>> by_policy;
};

struct ConformanceClass {
  std::int64_t cases = 0;
  std::string reproduce;  ///< the first case's
};

struct EngineConformance {
  std::string engine;  ///< what ran ("sglang 0.5.20 (pypi, single-file)")
  std::int64_t cases = 0;
  std::map<std::pair<std::string, std::string>, ConformanceRow> rows;  ///< (model, family)
  /// policy -> "<class>: <first divergence>" -> cases.
  std::map<std::string, std::map<std::string, ConformanceClass>> classes;
  /// Cases whose declared plan the engine's run does not bear out
  /// (`differs`, `engine-failed`): exit 1.
  std::int64_t declared_disagreements = 0;
  /// Cases not judged against the declared plan: seam refuses what the engine
  /// ran (`plan-refused`), or the CPU lacks what it needs (`cpu-gap`).
  std::int64_t declared_unjudged = 0;
};

EngineConformance foldEngineCases(const std::vector<EngineCaseRecord>& rows);

/// Whether a class counts against the plan (`differs`, `engine-failed`).
bool countsAgainstPlan(const std::string& agreement);
/// Whether a class leaves the case unjudged (`cpu-gap`, `plan-refused`).
bool unjudged(const std::string& agreement);

/// The console table (and the first `examples` divergence classes of each policy).
std::string renderConformance(const EngineConformance& c, std::size_t examples);

/// One JSON object: the engine, the counts per model and family, the classes.
std::string conformanceJson(const EngineConformance& c, const std::string& args);

}  // namespace seam::reports
