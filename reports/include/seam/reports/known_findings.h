// The findings a run of `seam sweep` (or `seam sweep --engine`) exits 1 on,
// each with an identity that stays the same from run to run, and a baseline:
// the findings a team has accepted, read from a seam store or from the JSON
// file `seam sweep --write-baseline` writes. Against it a run's findings are
// known (baselined) or new (docs/ci.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "seam/reports/store.h"
#include "seam/sim/base/status.h"

namespace seam::reports {

/// The runs a baseline is made of and applies to, as the store's runs name them.
inline constexpr std::string_view kSweepRun = "sweep";
inline constexpr std::string_view kEngineSweepRun = "sweep --engine";

/// A JSON baseline is at most this large (a world 8 sweep's findings take a
/// few MiB).
inline constexpr std::int64_t kMaxBaselineBytes = std::int64_t{64} << 20;

/// One finding: a case that makes its run exit 1. Its identity is every
/// field but `reproduce`, which replays it.
struct Finding {
  std::string model;    ///< preset name, "pattern" (a sweep) or "pattern ..." (an engine sweep)
  std::string pattern;  ///< the model's pattern (a sweep; "" for an engine sweep's rows)
  std::string config;   ///< ParallelConfig::describe()
  std::string flags;    ///< Flags::describe()
  std::string batch;    ///< Batch::describe()
  std::string policy;   ///< "declared", ...
  /// What was found. A sweep: the first failing property, its class and
  /// where ("collectives-match violated (collective-mismatch) at layer 2
  /// stage 2 entry reduce_scatterv, rank 0, token 0"), without the op's
  /// number, the sentence after it or the SGLang call. An engine sweep: the
  /// class and the first divergence ("differs: extra-call at
  /// sglang/srt/layers/communicator.py:_gather_hidden_states_and_residual"),
  /// without the line numbers of the engine's Python frames.
  std::string what;
  std::string reproduce;  ///< the `seam check` line that replays it
  /// The identity as one string.
  std::string key() const;
};

/// The identity of a sweep's finding from its stored violation text (what
/// Finding::what says of it).
std::string sweepFindingWhat(std::string_view violation_text);
/// The identity of an engine sweep's finding from its class and first divergence.
std::string engineFindingWhat(std::string_view agreement, std::string_view divergence);

/// Every finding of a stored run of `command` (kSweepRun: each violated case,
/// by its first failing verdict; kEngineSweepRun: each case whose declared
/// plan the engine's run does not bear out, `differs` or `engine-failed`),
/// in case order.
Expected<std::vector<Finding>> runFindings(Store& store, std::int64_t run_id,
                                           std::string_view command);

/// Accepted findings, by identity.
struct Baseline {
  std::string path;
  std::set<std::string> keys;
};

/// Whether `path` begins as an SQLite file does: readBaseline reads it as a store.
bool looksLikeStore(const std::string& path);

/// Reads `path` as the baseline of a run of `command`: a seam store (its
/// latest finished run of `command`) or the JSON baselineJson writes for
/// `command`. Every error is one line naming the file as `--baseline "path"`:
/// a missing or unreadable file, a store that is not a seam store or holds
/// no such run, JSON that does not parse or is not such a file.
Expected<Baseline> readBaseline(const std::string& path, std::string_view command);

/// The JSON file `--write-baseline` writes: {"format": "seam baseline 1",
/// "command", "written_by", "findings": [{model, pattern, config, flags,
/// batch, policy, what, reproduce}, ...]}, the findings sorted by identity.
std::string baselineJson(std::string_view command, const std::vector<Finding>& findings,
                         const std::string& version);

/// A run's findings against a baseline.
struct BaselineVerdict {
  std::string path;            ///< the baseline's file
  std::int64_t findings = 0;   ///< the run's findings
  std::int64_t known = 0;      ///< of them, in the baseline
  std::vector<Finding> fresh;  ///< the others, new: the run exits 1 on them (in case order)
  std::int64_t unmet = 0;      ///< the baseline's findings this run did not find
};

BaselineVerdict judgeFindings(const Baseline& baseline, const std::vector<Finding>& findings);

/// The new findings (the first `listed`, each with its `seam check` line),
/// then the last line: "baseline "FILE": K findings known (baselined), N new; U of
/// its B not found by this run".
std::string renderBaselineVerdict(const BaselineVerdict& v, std::size_t listed);

/// The run's JSON object (sweepJson, conformanceJson) with the verdict
/// added: `counts` gains `baselined` and `new`, and a `baseline` object
/// holds `file`, `unmet` and `new_findings` (the first `listed`: `what`,
/// `reproduce`).
std::string withBaselineJson(const std::string& run_json, const BaselineVerdict& v,
                             std::size_t listed);

}  // namespace seam::reports
