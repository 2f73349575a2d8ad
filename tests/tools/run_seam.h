// Shared by the CLI tests: runs the built `seam` binary (SEAM_BIN) and
// returns its exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace seam::testing {

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

/// Runs `seam ARGS` (or another built binary) through the shell. ctest runs
/// tests in parallel processes: stderr goes to a file per process and call.
inline CliRun runSeam(const std::string& args, const std::string& bin = SEAM_BIN) {
  static int calls = 0;
  const std::string err_path = ::testing::TempDir() + "seam_cli_stderr." + std::to_string(getpid()) + "." +
                               std::to_string(++calls) + ".txt";
  // "__CD__<dir>__ ARGS" runs inside <dir>, the arguments parsed by bash
  // (for $'..' quoting of bytes).
  std::string cmd;
  if (args.rfind("__CD__", 0) == 0) {
    const auto end = args.find("__ ", 6);
    std::string inner = bin + " " + args.substr(end + 3);
    std::string quoted;
    for (char c : inner) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd = "cd '" + args.substr(6, end - 6) + "' && bash -c '" + quoted + "' 2>" + err_path;
  } else {
    cmd = bin + " " + args + " 2>" + err_path;
  }
  CliRun r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  std::stringstream ss;
  ss << err.rdbuf();
  r.err = ss.str();
  std::remove(err_path.c_str());
  return r;
}

/// Number of newline-terminated lines.
inline int lineCount(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace seam::testing
