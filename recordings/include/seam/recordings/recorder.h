// Runs the recorder (recorder/, Python): the engine's own code on the CPU for
// one case, under recording collectives, written as a seam-recorder
// recording (docs/recordings.md) that readRecording reads.
#pragma once

#include <string>
#include <vector>

#include "seam/sim/base/status.h"
#include "seam/sim/model/case.h"

namespace seam::recordings {

/// Which engine to run, and where the recorder and its Python are.
struct RecorderRun {
  std::string engine = "sglang";  ///< the pinned release the setup installs
  std::string engine_src;         ///< a checkout to run instead (empty: the release)
  int timeout_s = 120;            ///< per case; a run past it is recorded as a timeout
  /// The recorder's interpreter: $SEAM_PYTHON, else the one tools/setup.sh
  /// links at $XDG_CACHE_HOME/seam/recorder-venv (~/.cache when unset).
  std::string python;
  std::string recorder_dir;  ///< holds seam_recorder/ ($SEAM_RECORDER_DIR, else the checkout's)
  /// What the recordings were made by (engineFingerprint, engine_sweep.h);
  /// part of a recording's name. Empty: the name depends on the case alone.
  std::string fingerprint;
};

/// The interpreter and recorder folder as the environment and the build
/// say; `checkout` is the source tree seam was built from.
RecorderRun defaultRecorderRun(const std::string& checkout);

/// The case as the recorder reads it: one line of JSON (model, pattern,
/// family, and the config's leaves, flags and batch).
std::string recorderCaseJson(const Case& c);

/// The file a batch records `case_json` into: named by a hash of the case
/// and the engine, so that a kept folder never answers another case.
std::string recordingName(const RecorderRun& run, const std::string& case_json);

/// Records every case of `case_jsons` (recorderCaseJson lines) with one
/// interpreter, each into `dir`/recordingName; recordings already there are
/// kept (a rerun goes on where it stopped). `tag` names the batch's own
/// files in `dir` (several batches may share it). Errors as runRecorder's.
Status runRecorderBatch(const RecorderRun& run, const std::vector<std::string>& case_jsons,
                        const std::string& dir, const std::string& tag = "");

/// Records the case `case_json` (recorderCaseJson) into
/// `out_path`. A recorder that cannot run the case (no interpreter, not an
/// SGLang tree, an import that fails, a case it does not know) is bad input:
/// one line naming it. A recording is written whatever the engine did.
Status runRecorder(const RecorderRun& run, const std::string& case_json,
                   const std::string& out_path);

}  // namespace seam::recordings
