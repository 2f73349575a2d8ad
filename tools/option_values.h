// How every option value of seam and seam-gpu is read, whatever command
// registers it: an empty value is an error naming the option (never "not
// given"), and an integer is decimal (seam/sim/base/decimal.h) in the range
// of its type, never octal or hex as CLI11 would read it, never clamped.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "seam/sim/base/status.h"

namespace seam::tools {

/// Adds those checks to every option that takes a value, of `app` and of
/// every subcommand below it. Call once, after every option is registered.
void checkOptionValues(CLI::App& app);

/// `--format text|json` of the commands that run a space or a property
/// (sweep, prop, mutate, diff): true for json; another value is an error
/// naming it.
Expected<bool> jsonFormat(const std::string& format);

}  // namespace seam::tools
