// How every option value of seam and seam-gpu is read, whatever command
// registers it: an empty value is an error naming the option (never "not
// given"), and an integer is decimal (seam/sim/base/decimal.h) in the range
// of its type, never octal or hex as CLI11 would read it, never clamped.
#pragma once

#include <CLI/CLI.hpp>

namespace seam::tools {

/// Adds those checks to every option that takes a value, of `app` and of
/// every subcommand below it. Call once, after every option is registered.
void checkOptionValues(CLI::App& app);

}  // namespace seam::tools
