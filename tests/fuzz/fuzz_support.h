// What the fuzz targets of tests/fuzz/ share: a check that aborts (so that
// libFuzzer records the input as a crash), the one-line rule of every error
// message (DESIGN §9), and a scratch file per process for parsers that read
// a path.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "seam/sim/status.h"

namespace seam::fuzz {

/// Aborts with `what` when `cond` is false: a broken contract, not bad input.
inline void require(bool cond, std::string_view what) {
  if (cond) return;
  std::fprintf(stderr, "fuzz contract broken: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

/// An error the CLI prints must be one non-empty line (it gets "seam: " in
/// front and one newline after it) and must not be an internal error unless
/// the caller allows it.
inline void requireOneLineError(const Status& status, bool internal_allowed = false) {
  require(!status, "an error path returned ok");
  const std::string& m = status.message();
  require(!m.empty(), "an empty error message");
  require(m.find('\n') == std::string::npos && m.find('\r') == std::string::npos,
          "an error message of more than one line: " + m);
  require(internal_allowed || status.code() != StatusCode::kInternal, "an internal error on bad input: " + m);
}

/// A path in TMPDIR (or /tmp) that belongs to this process, and the bytes of
/// a file.
inline std::string scratchPath(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/seam-fuzz-" + std::to_string(::getpid()) + "-" + name;
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
