// `seam sweep --engine`: every case of a space the recorder runs, recorded
// once per engine-distinct run (several recorder processes at once), each
// case's plan under the declared and the legacy policy compared with what the
// engine called. Rows go to a sink (the store; reports/engine_view.h folds them
// into the conformance table); recordings are cached by the content of the
// engine and recorder that made them.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "seam/recordings/conformance.h"
#include "seam/recordings/recorder.h"
#include "seam/reports/store.h"
#include "seam/sim/model/config_space.h"

namespace seam::recordings {

/// The policies an engine sweep compares, in this order.
inline constexpr std::array<PolicyKind, 2> kEnginePolicies = {PolicyKind::kDeclared,
                                                              PolicyKind::kLegacy};

/// One model's cases, in the space's order (`seam sweep`'s enumeration).
struct EngineSweepCases {
  std::string name;
  std::string not_modelled;  ///< why seam does not model it ("": it does)
  std::vector<Case> cases;
};

struct EngineSweepModel {
  std::string name;
  std::string not_modelled;   ///< why seam does not model it ("" when it does)
  std::int64_t cases = 0;     ///< cases of this shard the engine was asked about
  std::int64_t runs = 0;      ///< engine runs they need
  std::int64_t recorded = 0;  ///< runs recorded now (the others were found recorded)
  double seconds = 0;         ///< spent recording
  std::map<std::string, std::int64_t> left_out;  ///< reason -> cases the recorder cannot run
};

struct EngineSweepSpec {
  std::vector<EngineSweepCases> models;
  Shard shard;   ///< servers with index % count == index (their runs stay together)
  int jobs = 1;  ///< recorder processes at once
  RecorderRun run;
  std::string dir;  ///< where recordings are written (and found again)
  /// Case indices already stored by an interrupted run (--resume), ascending.
  std::vector<std::int64_t> skip;
  /// Told of each model once its rows went to the sink (a long sweep's progress).
  std::function<void(const EngineSweepModel&)> on_model;
};

struct EngineSweepResult {
  std::string engine;  ///< "sglang 0.5.20 (pypi, single-file)", from the recordings
  std::vector<EngineSweepModel> models;  ///< how each model's runs went; its rows went to the sink
};

/// A fingerprint of what makes a recording: the engine's Python files (a
/// checkout's sglang package, or the pinned requirements) and the
/// recorder's own. Part of every recording's name, so a cached recording is
/// reused only while neither changed.
std::string engineFingerprint(const RecorderRun& run);

/// One model's share of a sweep: the cases of `space` whose server falls in
/// `shard` (servers numbered on from `server_base` across models) and whose
/// index (from `case_base`) is not in `skip`, and the runs they need.
struct ShardRuns {
  std::vector<std::size_t> cases;  ///< indices into space.cases
  std::vector<std::string> runs;   ///< case JSONs, one per engine run
  std::vector<int> server_of;      ///< per run: its server in the space
};
ShardRuns shardRuns(const EngineSpace& space, const Shard& shard,
                    const std::vector<std::int64_t>& skip, std::int64_t case_base,
                    std::int64_t server_base);

/// How many servers `space` numbers.
std::int64_t serverCount(const EngineSpace& space);

/// Records `runs` (case JSONs) into `dir` with `jobs` recorder processes at
/// once; a server's runs go to one process, which runs them as that
/// server's forwards. Recordings already in `dir` are kept.
Status recordRuns(const RecorderRun& run, const std::vector<std::string>& runs,
                  const std::vector<int>& server_of, int jobs, const std::string& dir);

/// Runs the sweep; `sink` gets one row per case and policy as each model
/// finishes (the store's writer). Errors: the recorder's (bad input) or the sink's.
Expected<EngineSweepResult> runEngineSweep(
    const EngineSweepSpec& spec,
    const std::function<Status(const reports::EngineCaseRecord&)>& sink);

}  // namespace seam::recordings
