// `seam check CASE --engine sglang` / `--engine-src PATH`: the engine's own
// code run on the CPU for the case (recorder/), its run judged (did every
// rank finish, did every collective pair) and its calls compared with the
// plan of --policy (recordings/, docs/recordings.md).
#pragma once

#include <string>

#include "case_options.h"

namespace seam::tools {

struct EngineOptions {
  std::string engine;      ///< --engine: sglang (the pinned release)
  std::string engine_src;  ///< --engine-src: a checkout
  int timeout_s = 120;     ///< --engine-timeout
  bool asked() const { return !engine.empty() || !engine_src.empty(); }
};

/// Why the engine options are wrong (an engine the recorder does not run,
/// --engine with --engine-src, a timeout out of range), or ok.
Status engineOptionsValid(const EngineOptions& e);

/// A scratch folder (the caller removes it), or --keep-recordings's DIR, made.
Expected<std::string> recordingsFolder(const std::string& keep);

/// Adds --engine, --engine-src and --engine-timeout.
void addEngineOptions(CLI::App* sub, EngineOptions& e);

/// Records the case and prints the engine's verdict, then its calls judged
/// against the plan. Exit 0 when the engine ran, its calls are the plan's
/// and the plan holds; 1 otherwise; 2 on bad input or a case the engine's
/// argument checks refuse.
int checkEngine(const CaseOptions& o, const EngineOptions& e, bool json);

}  // namespace seam::tools
