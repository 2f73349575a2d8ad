// Shared by the thin mains of tools/: how a subcommand registers itself with
// the CLI11 app and how a Status becomes an exit code (DESIGN §9).
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "did_you_mean.h"
#include "option_values.h"
#include "seam/sim/base/status.h"

namespace seam::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitPropertyFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;

/// Recorded with every run in the store.
inline constexpr const char* kSeamVersion = "seam 0.1.0";

/// `text` with every control character (newline, carriage return, ...)
/// written as \xNN: whatever bytes a bad value holds (`--fusion $'on\n'`, a
/// JSON string with "\n" in a trace), the error stays one line (DESIGN §9).
inline std::string oneLine(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

/// Prints the one-line error and returns its exit code.
inline int fail(const Status& status) {
  std::cerr << "seam: " << oneLine(status.message()) << "\n";
  return status.code() == StatusCode::kInternal ? kExitInternal : kExitBadInput;
}

/// The most worker threads --jobs may ask for, per hardware thread and in all:
/// more only costs memory and thread creation (which fails past the
/// machine's limits).
inline constexpr int kJobsPerHardwareThread = 4;
inline constexpr int kMaxJobs = 1024;

/// --jobs: worker threads, every core for 0; a negative count, or one above
/// kJobsPerHardwareThread x the hardware threads (at most kMaxJobs), is
/// refused. Checked before any store is opened.
inline Expected<int> workerThreads(int jobs) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int most = std::min(kMaxJobs, kJobsPerHardwareThread * cores);
  if (jobs < 0) return Status::invalid("--jobs " + std::to_string(jobs) + " must be >= 1");
  if (jobs > most) {
    return Status::invalid("--jobs " + std::to_string(jobs) + " is more than " +
                           std::to_string(most) + " (" + std::to_string(kJobsPerHardwareThread) +
                           " x " + std::to_string(cores) + " hardware threads, at most " +
                           std::to_string(kMaxJobs) + ")");
  }
  return jobs > 0 ? jobs : cores;
}

/// --family of the space-wide commands: true for training, false for serving.
inline Expected<bool> trainingFamily(const std::string& family) {
  if (family == "training") return true;
  if (family == "serving") return false;
  return Status::invalid("--family \"" + family.substr(0, 64) + "\" is not serving or training");
}

/// Refuses, naming the first, any of `options` given on `sub`'s command line
/// (where they do not apply, e.g. --shard on a training sweep, which runs
/// its whole space and writes no store): "--shard applies to ...".
inline Status refuseGiven(const CLI::App& sub, std::initializer_list<const char*> options,
                          const std::string& applies_to) {
  for (const char* option : options) {
    if (sub.count(option) > 0) {
      return Status::invalid(std::string(option) + " applies to " + applies_to);
    }
  }
  return Status::ok();
}

/// The training sweep and campaign print their tables and write no store,
/// JUnit file or JSON: the options that name them are refused there.
inline Status refuseStoreOptions(const CLI::App& sub) {
  return refuseGiven(sub, {"--db", "--resume", "--junit", "--format"}, "--family serving");
}

/// A registered subcommand: its CLI11 app and what runs when it was parsed.
/// The options struct lives behind `run` (captured by the registration).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

/// Parses the command line the way every seam binary does: help and version
/// print and give kExitOk; an unknown command or option, an empty value, an
/// integer that is not decimal, a value given to a flag (option_values.h), or
/// any CLI11 error, prints
/// one line "<program>: ..." and gives kExitBadInput; -1 means parsed,
/// go on.
inline int parseCommandLine(CLI::App& app, int argc, char** argv, const std::string& program) {
  checkOptionValues(app);
  std::string commands;
  bool known = false;
  for (const CLI::App* sub : app.get_subcommands({})) {
    commands += (commands.empty() ? "" : ", ") + sub->get_name();
    known = known || (argc > 1 && sub->get_name() == argv[1]);
  }
  if (argc > 1) {
    const std::string first = argv[1];
    const bool help = first == "-h" || first == "--help" || first == "--version";
    if (first[0] == '-' && !help) {
      std::cerr << program << ": unknown option \"" << oneLine(first.substr(0, 64))
                << "\" before the command\n";
      return kExitBadInput;
    }
    // CLI11 answers an unknown command with "A subcommand is required"; name it.
    if (first[0] != '-' && !known) {
      std::cerr << program << ": unknown command \"" << oneLine(first.substr(0, 64))
                << "\" (commands: " << commands << ")\n";
      return kExitBadInput;
    }
  }
  if (Status s = refuseFlagValues(app, argc, argv); !s) {
    std::cerr << program << ": " << oneLine(s.message()) << "\n";
    return kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::CallForVersion&) {
    std::cout << kSeamVersion << "\n";
#ifdef SEAM_ENGINE_PIN
    std::cout << "engine: " << SEAM_ENGINE_PIN
              << " (what --engine sglang runs: the PyPI release recorder/requirements.txt pins)\n"
                 "policies: declared models SGLang's layer communicator after its declarations "
                 "refactor, read at several commits (docs/modelling/sglang.md); legacy the "
                 "single-file communicator before it, read; naive: every stage completes its own "
                 "sum (a baseline)\n";
#endif
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    // One line on stderr naming the bad value (DESIGN §9): CLI11's own line
    // breaks become spaces, any other control character in the value is escaped.
    std::string what = e.what();
    for (char& c : what) {
      if (c == '\n') c = ' ';
    }
    std::cerr << program << ": " << oneLine(what + didYouMean(app, argc, argv)) << "\n";
    return kExitBadInput;
  }
  return -1;
}

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
