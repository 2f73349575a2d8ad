#include "seam/reports/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace seam::reports {

namespace {

namespace fs = std::filesystem;

std::string named(std::string_view option, const std::string& path) {
  return std::string(option) + " \"" + path.substr(0, 200) + "\"";
}

Status cannotWrite(std::string_view option, const std::string& path, int error) {
  return Status::invalid(named(option, path) + ": cannot write it (" + std::strerror(error) + ")");
}

/// The directory a new file at `path` goes into.
std::string directoryOf(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

/// Where the bytes of `path` end up: an existing link is written through to
/// the file it names, so that the link stays a link.
std::string destination(const std::string& path) {
  std::error_code ec;
  if (!fs::is_symlink(path, ec)) return path;
  const fs::path target = fs::weakly_canonical(path, ec);
  return ec ? path : target.string();
}

/// Whether `a` and `b` name one file: the same device and inode when both
/// exist, the same absolute path when either does not.
bool sameFile(const std::string& a, const std::string& b) {
  struct stat sa {};
  struct stat sb {};
  const bool a_exists = ::stat(a.c_str(), &sa) == 0;
  const bool b_exists = ::stat(b.c_str(), &sb) == 0;
  if (a_exists && b_exists) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (a_exists != b_exists) return false;
  std::error_code ec;
  const fs::path pa = fs::weakly_canonical(fs::absolute(a, ec), ec);
  const fs::path pb = fs::weakly_canonical(fs::absolute(b, ec), ec);
  return !ec && pa == pb;
}

/// Writes all of `bytes` to `fd`, then flushes it to the disk.
bool writeAll(int fd, std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return ::fsync(fd) == 0;
}

}  // namespace

Status checkOutputFile(std::string_view option, const std::string& path,
                       const std::vector<NamedFile>& others) {
  if (path.empty()) return Status::invalid(std::string(option) + " \"\": the path is empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return Status::invalid(named(option, path) + (S_ISDIR(st.st_mode)
                                                      ? ": is a directory"
                                                      : ": is not a regular file; refusing to "
                                                        "replace it"));
  }
  const std::string dir = directoryOf(destination(path));
  struct stat ds {};
  if (::stat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode)) {
    return Status::invalid(named(option, path) + ": the directory \"" + dir.substr(0, 200) +
                           "\" does not exist");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return cannotWrite(option, path, errno);
  for (const auto& [other_option, other] : others) {
    if (!other.empty() && sameFile(path, other)) {
      return Status::invalid(named(option, path) + " is the same file as " +
                             named(other_option, other) + "; refusing to overwrite it");
    }
  }
  return Status::ok();
}

Status checkJunitOutput(const std::string& junit, const std::string& db) {
  if (junit.empty()) return Status::ok();
  return checkOutputFile("--junit", junit, {{"--db", db}});
}

Status writeOutputFile(std::string_view option, const std::string& path, std::string_view bytes) {
  if (Status st = checkOutputFile(option, path); !st) return st;
  const std::string target = destination(path);
  // A name of this process's own beside the target, created exclusively (and
  // with the umask's mode, as a plain create would be).
  std::string temp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    temp = target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(attempt);
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return cannotWrite(option, path, errno);
  bool ok = writeAll(fd, bytes);
  int error = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    error = errno;
  }
  if (ok && std::rename(temp.c_str(), target.c_str()) != 0) {
    ok = false;
    error = errno;
  }
  if (!ok) {
    std::remove(temp.c_str());
    return cannotWrite(option, path, error);
  }
  return Status::ok();
}

}  // namespace seam::reports
