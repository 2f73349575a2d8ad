// Shared by seam-gpu's subcommands (seam_gpu.cc registers them, one gpu_*.cc
// each): the one-line failure, the processes mpirun started, the parsers of
// the GPU options and how a result file is written.
#pragma once

#include <string>

#include "command.h"
#include "seam/backend/executor.h"
#include "seam/sim/replay/numeric.h"

namespace seam::tools {

/// Prints "seam-gpu: [rank N: ]MESSAGE" and returns the exit code.
int failGpu(const Status& status);

/// The processes mpirun started, for the backend; null when this process runs every rank.
backend::ProcessGroup* processGroup();

/// --numeric exact|real.
Expected<numeric::Mode> parseNumeric(const std::string& text);
/// --fused-protocol auto|flag|ll, and its help text.
Expected<backend::PeerProtocol> parseProtocol(const std::string& text);
const std::string& protocolHelp();

/// Writes a result file for --json; the error names it.
Status writeJson(const std::string& path, const std::string& text);

/// The subcommands. `command_line` is filled in after parsing, before a run.
Command registerGpuRun(CLI::App& app, const std::string& command_line);
Command registerGpuCompare(CLI::App& app, const std::string& command_line);
Command registerGpuBench(CLI::App& app, const std::string& command_line);
Command registerGpuBenchAllReduce(CLI::App& app);

}  // namespace seam::tools
