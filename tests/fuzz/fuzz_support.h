// What the fuzz targets of tests/fuzz/ share: a check that aborts (so that
// libFuzzer records the input as a crash), the one-line rule of every error
// the CLI prints (DESIGN §9: through tools/command.h, as `seam` prints it),
// and a scratch file per process for parsers that read a path.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>

#include "command.h"
#include "seam/sim/base/status.h"

namespace seam::fuzz {

/// Aborts with `what` when `cond` is false: a broken contract, not bad input.
inline void require(bool cond, std::string_view what) {
  if (cond) return;
  std::fprintf(stderr, "fuzz contract broken: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

/// What the CLI printed for a refusal must be exactly one line: one newline,
/// at the end, and no carriage return.
inline void requireOneLine(const std::string& printed) {
  require(!printed.empty() && printed.back() == '\n' && printed.find('\n') == printed.size() - 1 &&
              printed.find('\r') == std::string::npos,
          "a refusal that is not exactly one line: " + printed);
}

/// An error the CLI would print (tools/command.h fail(), as every command
/// does) is one non-empty line and exit code 2, or 3 where the caller allows
/// an internal error.
inline void requireOneLineError(const Status& status, bool internal_allowed = false) {
  require(!status, "an error path returned ok");
  require(!status.message().empty(), "an empty error message");
  std::ostringstream printed;
  std::streambuf* const saved = std::cerr.rdbuf(printed.rdbuf());
  const int code = tools::fail(status);
  std::cerr.rdbuf(saved);
  requireOneLine(printed.str());
  require(code == tools::kExitBadInput || (internal_allowed && code == tools::kExitInternal),
          "exit code " + std::to_string(code) + " for: " + status.message());
}

/// A path in TMPDIR (or /tmp) that belongs to this process, and the bytes of
/// a file.
inline std::string scratchPath(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/seam-fuzz-" + std::to_string(::getpid()) +
         "-" + name;
}

inline void writeFile(const std::string& path, const std::uint8_t* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  require(static_cast<bool>(out), "cannot write the scratch file " + path);
}

inline bool fileExists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace seam::fuzz
