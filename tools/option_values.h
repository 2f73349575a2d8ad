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

/// Refuses a value given to a flag (`--no-fold=3`, `--resume=true`,
/// `--list=`): one line naming the flag and the value. CLI11 would take the
/// value as the flag's (any count, "true") and go on; the apps also set
/// disable_flag_override once where they are built, so CLI11 refuses what
/// reaches it some other way. `argv` is walked as CLI11 reads it: into the
/// subcommand named, past the values of options that take one, up to `--`.
Status refuseFlagValues(const CLI::App& app, int argc, const char* const* argv);

/// `--format text|json` of the commands that run a space or a property
/// (sweep, prop, mutate, diff): true for json; another value is an error
/// naming it.
Expected<bool> jsonFormat(const std::string& format);

}  // namespace seam::tools
