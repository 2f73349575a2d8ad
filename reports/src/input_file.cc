#include "seam/reports/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace seam::reports {

namespace {

constexpr std::size_t kChunk = 1 << 16;

std::string mib(std::int64_t bytes) {
  return bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                : std::to_string(bytes) + " bytes";
}

Status cannotRead(const std::string& label, int error) {
  return Status::invalid(label + ": cannot read it (" + std::strerror(error) + ")");
}

Status tooLarge(const std::string& label, std::int64_t max_bytes) {
  return Status::invalid(label + ": larger than " + mib(max_bytes) +
                         ", the most seam reads from such a file");
}

/// Opens `path` for reading; a directory is refused (reading one fails deep
/// inside a stream library otherwise). Regular files, pipes and devices are
/// read alike, under the caps; a regular file over `max_bytes` is refused
/// from its size. `*size` is the size of a regular file, else -1.
Expected<int> openInput(const std::string& label, const std::string& path, std::int64_t max_bytes,
                        std::int64_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return cannotRead(label, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    return cannotRead(label, error);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::invalid(label + ": a directory, not a file");
  }
  *size = S_ISREG(st.st_mode) ? static_cast<std::int64_t>(st.st_size) : -1;
  if (*size > max_bytes) {
    ::close(fd);
    return tooLarge(label, max_bytes);
  }
  return fd;
}

/// read(2) that retries an interrupted call; -1 with errno set on failure.
ssize_t readSome(int fd, char* out, std::size_t n) {
  for (;;) {
    const ssize_t r = ::read(fd, out, n);
    if (r >= 0 || errno != EINTR) return r;
  }
}

}  // namespace

Expected<LineReader> LineReader::open(std::string label, const std::string& path,
                                      std::int64_t max_bytes, std::size_t max_line) {
  std::int64_t size = -1;
  auto fd = openInput(label, path, max_bytes, &size);
  if (!fd) return fd.status();
  return LineReader(std::move(label), *fd, max_bytes, max_line);
}

LineReader::LineReader(std::string label, int fd, std::int64_t max_bytes, std::size_t max_line)
    : label_(std::move(label)), fd_(fd), max_bytes_(max_bytes), max_line_(max_line) {}

LineReader::LineReader(LineReader&& other) noexcept
    : label_(std::move(other.label_)),
      fd_(std::exchange(other.fd_, -1)),
      max_bytes_(other.max_bytes_),
      max_line_(other.max_line_),
      read_(other.read_),
      buffer_(std::move(other.buffer_)),
      start_(other.start_),
      eof_(other.eof_),
      line_number_(other.line_number_) {}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status LineReader::fill() {
  // Drop what was consumed, then append one chunk.
  buffer_.erase(0, start_);
  start_ = 0;
  const std::size_t old = buffer_.size();
  buffer_.resize(old + kChunk);
  const ssize_t r = readSome(fd_, buffer_.data() + old, kChunk);
  if (r < 0) {
    const int error = errno;
    buffer_.resize(old);
    return cannotRead(label_, error);
  }
  buffer_.resize(old + static_cast<std::size_t>(r));
  if (r == 0) eof_ = true;
  read_ += r;
  if (read_ > max_bytes_) return tooLarge(label_, max_bytes_);
  return Status::ok();
}

Expected<bool> LineReader::next(std::string* line) {
  std::size_t scanned = 0;  // bytes after start_ already searched for '\n'
  for (;;) {
    const std::size_t end = buffer_.find('\n', start_ + scanned);
    const std::size_t length = (end == std::string::npos ? buffer_.size() : end) - start_;
    if (length > max_line_) {
      return Status::invalid(label_ + ", line " + std::to_string(line_number_ + 1) +
                             ": longer than " + mib(static_cast<std::int64_t>(max_line_)) +
                             ", the most seam reads as one line");
    }
    if (end != std::string::npos || (eof_ && length > 0)) {
      line->assign(buffer_, start_, length);  // the last line may lack its '\n'
      start_ += length + (end != std::string::npos ? 1 : 0);
      ++line_number_;
      return true;
    }
    if (eof_) return false;
    scanned = length;
    if (Status s = fill(); !s) return s;  // moves the unread bytes to the front
  }
}

Expected<std::string> readInputFile(const std::string& label, const std::string& path,
                                    std::int64_t max_bytes) {
  std::int64_t size = -1;
  auto fd = openInput(label, path, max_bytes, &size);
  if (!fd) return fd.status();
  std::string out;
  if (size > 0) out.reserve(static_cast<std::size_t>(size));
  char chunk[kChunk];
  for (;;) {
    const ssize_t r = readSome(*fd, chunk, sizeof chunk);
    if (r < 0) {
      const int error = errno;
      ::close(*fd);
      return cannotRead(label, error);
    }
    if (r == 0) break;
    if (static_cast<std::int64_t>(out.size()) + r > max_bytes) {
      ::close(*fd);
      return tooLarge(label, max_bytes);
    }
    out.append(chunk, static_cast<std::size_t>(r));
  }
  ::close(*fd);
  return out;
}

}  // namespace seam::reports
