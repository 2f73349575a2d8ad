// Shared by the CLI tests: runs the built `seam` binary (SEAM_BIN) and
// returns its exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace seam::testing {

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

/// Runs `seam ARGS` (or another built binary) through the shell. ctest runs
/// tests in parallel processes: stderr goes to a file per process and call.
/// " --db <temp>/seam_cli_<name>.db", removed first: a store of the test's
/// own, so that tests run at once never wait on one another's ./seam.db.
inline std::string ownDb(const std::string& name) {
  const std::string path = ::testing::TempDir() + "seam_cli_" + name + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return " --db " + path;
}

inline CliRun runSeam(const std::string& args, const std::string& bin = SEAM_BIN) {
  static int calls = 0;
  const std::string err_path = ::testing::TempDir() + "seam_cli_stderr." +
                               std::to_string(getpid()) + "." + std::to_string(++calls) + ".txt";
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

/// Starts `seam ARGS` in the background, stdout and stderr to `out` and
/// `err` (discarded when empty); returns its pid.
inline pid_t spawnSeam(const std::string& args, const std::string& out = "",
                       const std::string& err = "") {
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string cmd = "exec " + std::string(SEAM_BIN) + " " + args + " >" +
                            (out.empty() ? "/dev/null" : out) + " 2>" +
                            (err.empty() ? "/dev/null" : err);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

/// The exit code of a spawned seam (-1 when a signal ended it).
inline int waitExit(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// How long killWhen waits for its moment. Generous: under ASan on a loaded
/// 2-core machine a campaign's baseline pass alone took over a minute, and a
/// 60 s limit made the resume test give up before the first mutant row.
inline constexpr std::chrono::seconds kKillWaitLimit{600};

/// Starts the shell command line `command` (output discarded) in a session
/// of its own and returns its pid, the session's id. For mpirun, which puts
/// each rank in a process group of its own: a kill of the session reaches
/// every process of the run.
inline pid_t spawnSession(const std::string& command) {
  const pid_t pid = fork();
  if (pid == 0) {
    setsid();
    const std::string cmd = "exec " + command + " >/dev/null 2>/dev/null";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

/// SIGKILLs every live process of session `sid` until none is left (a
/// launcher may start one between the look and the kill).
inline void killSession(pid_t sid) {
  for (bool any = true; any;) {
    any = false;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      const std::string name = entry.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      const pid_t p = static_cast<pid_t>(std::stol(name));
      if (getsid(p) != sid) continue;
      std::ifstream stat(entry.path() / "stat");
      std::string pid_field, comm, state;
      stat >> pid_field >> comm >> state;  // comm holds no space for seam, sh, mpirun
      if (state == "Z") continue;          // dead already, waiting to be reaped
      kill(p, SIGKILL);
      any = true;
    }
    if (any) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

/// Waits until `ready()` or the child exits; then SIGKILLs it (with
/// `whole_session`, every process of the session it leads: spawnSession).
/// True if it was killed while still running.
template <class Ready>
bool killWhen(pid_t pid, Ready ready, bool whole_session = false) {
  const auto stop = [pid, whole_session] {
    if (whole_session) {
      killSession(pid);
    } else {
      kill(pid, SIGKILL);
    }
    int status;
    waitpid(pid, &status, 0);
  };
  const auto deadline = std::chrono::steady_clock::now() + kKillWaitLimit;
  while (std::chrono::steady_clock::now() < deadline) {
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) return false;  // finished first
    if (ready()) {
      stop();
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop();
  return false;
}

inline std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Number of newline-terminated lines.
inline int lineCount(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace seam::testing
