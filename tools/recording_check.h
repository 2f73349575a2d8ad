// `seam check CASE --recording PATH` and `seam import CASE --recording PATH`:
// an engine's recording (Flight Recorder dumps, NCCL logs) read and judged
// against the case's plan (recordings/, docs/recordings.md).
#pragma once

#include <string>

#include "case_options.h"

namespace seam::tools {

/// The recording options beside the case options.
struct RecordingOptions {
  std::string path;
  int passes = 1;
  std::string custom_all_reduce = "on";  ///< --custom-all-reduce on|off
};

/// Adds --recording, --passes and --custom-all-reduce to a subcommand.
void addRecordingOptions(CLI::App* sub, RecordingOptions& r);

/// Judges the recording against the case's plan and prints the verdict:
/// exit 0 when every call is explained and the evidence is whole, 1 on a
/// finding or partial evidence, 2 on a bad or foreign recording.
/// `json`: the verdict as one JSON object (recordingVerdictJson) with the
/// plan's verdict under "plan_holds".
int checkRecording(const CaseOptions& o, const RecordingOptions& r, bool summary_only,
                   bool json = false);

/// Refuses --passes or --custom-all-reduce given without --recording.
Status recordingOptionsNeedPath(const CLI::App& sub, const RecordingOptions& r);

/// Why the recording options do not apply to the case options, or ok;
/// `training_ok`: whether the command judges training recordings.
Status recordingApplies(const CaseOptions& o, const RecordingOptions& r, bool training_ok);

/// `seam diff CASE --recording PATH`: the recording judged against `mine`
/// (--policy's plan, with any --decision) and `other` (--against's), and
/// which plan it runs. Exit 0 when it holds against one of them, 1 when
/// against neither (a finding or partial evidence on both), 2 on bad input.
int diffRecording(const CaseOptions& o, const RecordingOptions& r, const Case& c, const Plan& mine,
                  const Plan& other);

}  // namespace seam::tools
