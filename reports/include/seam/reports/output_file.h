// The files seam writes for the user (report -o, graph -o, --junit): each is
// checked before a run starts (its directory exists and may be written, it
// is not an existing device or directory, and it names no file the same
// command reads or writes), then written whole to a temporary file beside it
// and renamed into place, so that a failed write leaves no partial file.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seam/sim/base/status.h"

namespace seam::reports {

/// A file a command reads or writes besides its output: the option that
/// names it (`--db`, `--trace`, `--graph`) and its path.
using NamedFile = std::pair<std::string, std::string>;

/// Refuses, naming `option`, an output path that is empty, is an existing
/// directory or device, lies in a directory that does not exist or may not
/// be written, or is the same file as one of `others` (by device and inode
/// when both exist, so links and relative paths count; by absolute path when
/// either does not exist yet). Touches no file.
Status checkOutputFile(std::string_view option, const std::string& path,
                       const std::vector<NamedFile>& others = {});

/// The --junit file of a run that writes the store `db`, checked before the
/// run starts (checkOutputFile); nothing to check when none was asked for
/// (an empty `junit`: the command line refuses an empty value itself).
Status checkJunitOutput(const std::string& junit, const std::string& db);

/// Writes `bytes` to a temporary file in `path`'s directory, flushes, syncs
/// and closes it with every error checked, then renames it over `path`; on
/// any failure the temporary file is removed and `path` is as it was.
Status writeOutputFile(std::string_view option, const std::string& path, std::string_view bytes);

}  // namespace seam::reports
