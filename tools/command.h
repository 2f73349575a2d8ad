// Shared by the thin mains of tools/: how a subcommand registers itself with
// the CLI11 app and how a Status becomes an exit code (DESIGN §9).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>
#include <memory>
#include <string>

#include "seam/sim/status.h"

namespace seam::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitPropertyFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;

/// Recorded with every run in the store.
inline constexpr const char* kSeamVersion = "seam 0.1.0";

/// Prints the one-line error and returns its exit code.
inline int fail(const Status& status) {
  std::cerr << "seam: " << status.message() << "\n";
  return status.code() == StatusCode::kInternal ? kExitInternal : kExitBadInput;
}

/// A registered subcommand: its CLI11 app and what runs when it was parsed.
/// The options struct lives behind `run` (captured by the registration).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command registerModels(CLI::App& app);
Command registerConfigs(CLI::App& app);
Command registerPlan(CLI::App& app);
Command registerCheck(CLI::App& app);
Command registerSweep(CLI::App& app);
Command registerProp(CLI::App& app);
Command registerMutate(CLI::App& app);
Command registerDb(CLI::App& app);
Command registerDiff(CLI::App& app);
Command registerImport(CLI::App& app);
Command registerGraph(CLI::App& app);
Command registerReport(CLI::App& app);

}  // namespace seam::tools
