// Opening a store: a new file gets the schema, an existing one is inspected
// without being written to (its header, the journal beside it, then its
// schema) and refused, left as it was, unless it is a seam store.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

#include "store_impl.h"

namespace seam::reports {

namespace {

/// Whether a read of an existing file failed because of what the file holds
/// (not a database, damaged, a format or schema SQLite cannot read), rather
/// than because of this machine (busy, out of memory, I/O): such a file is
/// refused as not a seam store.
bool unreadableFile(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_NOMEM:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_INTERRUPT:
    case SQLITE_PERM:
      return false;
    default:
      return true;
  }
}

}  // namespace

namespace detail {

Status refuse(const std::string& path, const std::string& why) {
  return Status::invalid(dbName(path) + ": not a seam store (" + why +
                         "); refusing to write to it");
}

/// Whether the first reads of an existing file (its header and schema) failed
/// because of what it holds: unreadableFile, or SQLITE_NOMEM, which a damaged
/// header or schema record gives (it claims sizes SQLite then cannot
/// allocate; reading a sound store's schema needs little memory).
bool unreadableHeader(int rc) { return unreadableFile(rc) || (rc & 0xff) == SQLITE_NOMEM; }

/// The refusal of a file SQLite failed to read with `rc` (unreadableFile).
Status refuseUnreadable(sqlite3* db, const std::string& path, int rc) {
  const int primary = rc & 0xff;
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT) {
    return refuse(path, "a damaged or truncated SQLite database");
  }
  std::string what = sqlite3_errmsg(db);
  for (char& c : what) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return refuse(path, "an SQLite database SQLite cannot read: " + what.substr(0, 120));
}

}  // namespace detail

namespace {

using detail::Connection;
using detail::dbName;
using detail::kSeamApplicationId;
using detail::refuse;
using detail::refuseUnreadable;
using detail::unreadableHeader;

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};
constexpr std::size_t kSqliteHeaderBytes = 100;
constexpr std::uint32_t kUtf8Encoding = 1;
constexpr std::uint32_t kLastTextEncoding = 3;  // UTF-16be

Status cannotRead(const std::string& path, int error) {
  return Status::invalid(dbName(path) + ": cannot read it (" + std::strerror(error) + ")");
}

bool fileExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

/// Reads the first `n` bytes of `path` (fewer when it is shorter) into `out`;
/// nullopt when it cannot be opened. `*read_errno` is the errno of the last
/// failed call.
std::optional<std::size_t> readPrefix(const std::string& path, unsigned char* out, std::size_t n,
                                      int* read_errno) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *read_errno = errno;
    return std::nullopt;
  }
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, out + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) *read_errno = errno;
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  ::close(fd);
  return got;
}

/// Refuses anything that is not a whole SQLite file without asking SQLite,
/// so that nothing (not even a -wal or -shm beside it) is created for it.
Status readHeader(const std::string& path, std::int64_t size) {
  std::array<unsigned char, kSqliteHeaderBytes> header{};
  int read_errno = 0;
  const std::optional<std::size_t> read =
      readPrefix(path, header.data(), header.size(), &read_errno);
  if (!read) return cannotRead(path, read_errno);
  const std::size_t got = *read;
  if (got < header.size() && got < static_cast<std::size_t>(size)) {
    return cannotRead(path, read_errno);
  }
  const std::string_view head(reinterpret_cast<const char*>(header.data()), got);
  if (got < header.size()) {
    return refuse(path, head.starts_with(kSqliteMagic) ? "a truncated SQLite database"
                                                       : "not an SQLite database");
  }
  if (!head.starts_with(kSqliteMagic)) return refuse(path, "not an SQLite database");
  // Page size: big-endian at offset 16, 1 meaning 65536; a power of two.
  std::uint32_t page_size = (std::uint32_t{header[16]} << 8) | header[17];
  if (page_size == 1) page_size = 65536;
  if (page_size < 512 || page_size > 65536 || (page_size & (page_size - 1)) != 0) {
    return refuse(path, "a damaged SQLite database");
  }
  // File format write and read versions: 1 (rollback journal) or 2 (WAL).
  // SQLite opens a file with a larger write version read-only (and creates
  // its -wal and -shm if the read version is 2), and cannot read one with a
  // larger read version.
  if (header[18] < 1 || header[18] > 2 || header[19] < 1 || header[19] > 2) {
    return refuse(path, "a damaged SQLite database (file format versions " +
                            std::to_string(header[18]) + "/" + std::to_string(header[19]) + ")");
  }
  // Text encoding, big-endian at offset 56: 1 UTF-8 (seam's), 2 and 3
  // UTF-16, 0 before the first table is committed (a WAL file's main header
  // may still say 0). SQLite takes only the low two bits of the field the
  // first time it reads the schema and compares all of it when it reads it
  // again, which then fails as an internal error.
  const std::uint32_t encoding = (std::uint32_t{header[56]} << 24) |
                                 (std::uint32_t{header[57]} << 16) |
                                 (std::uint32_t{header[58]} << 8) | header[59];
  if (encoding > kLastTextEncoding) {
    return refuse(path,
                  "a damaged SQLite database (text encoding " + std::to_string(encoding) + ")");
  }
  if (encoding > kUtf8Encoding) {
    return refuse(path, "text encoding " + std::to_string(encoding) +
                            " (UTF-16) where a seam store's is UTF-8");
  }
  // SQLite writes whole pages; a file cut mid-page was truncated. (A file cut
  // at a page boundary is caught by SQLite itself: the in-header page count,
  // bytes 28..31, then exceeds the file.)
  if (size % page_size != 0) return refuse(path, "a truncated SQLite database");
  return Status::ok();
}

/// What the rollback journal beside a file (`path-journal`) says. SQLite
/// writes one for every transaction outside WAL mode (in seam: creating the
/// schema, then switching to WAL) and deletes it at the commit, so one left
/// behind with its magic intact is a crashed writer's ("hot"): the next
/// connection that may write rolls the file back with it.
enum class Journal : std::uint8_t {
  kNone,      ///< no journal, or none SQLite would play back
  kCreation,  ///< hot, and the file had no pages before: its creation never committed
  kHot,       ///< hot, over a file that had pages before
};

Journal readJournal(const std::string& path) {
  // Header: 8 magic bytes, the page record count, the checksum seed, then
  // the file's size in pages before the transaction (big-endian).
  static constexpr unsigned char kMagic[8] = {0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7};
  static constexpr std::size_t kHeaderBytes = 20;
  std::array<unsigned char, kHeaderBytes> header{};
  int ignored = 0;
  const std::optional<std::size_t> got =
      readPrefix(path + "-journal", header.data(), header.size(), &ignored);
  if (!got || *got < header.size() ||
      !std::equal(std::begin(kMagic), std::end(kMagic), header.begin())) {
    return Journal::kNone;
  }
  const std::uint32_t pages_before = (std::uint32_t{header[16]} << 24) |
                                     (std::uint32_t{header[17]} << 16) |
                                     (std::uint32_t{header[18]} << 8) | header[19];
  return pages_before == 0 ? Journal::kCreation : Journal::kHot;
}

/// Whether the file's header carries seam's application id (bytes 68..71).
bool hasSeamApplicationId(const std::string& path) {
  constexpr std::size_t kOffset = 68;
  std::array<unsigned char, kOffset + 4> head{};
  int ignored = 0;
  const std::optional<std::size_t> got = readPrefix(path, head.data(), head.size(), &ignored);
  const std::uint32_t value = (std::uint32_t{head[kOffset]} << 24) |
                              (std::uint32_t{head[kOffset + 1]} << 16) |
                              (std::uint32_t{head[kOffset + 2]} << 8) | head[kOffset + 3];
  return got && *got == head.size() && value == static_cast<std::uint32_t>(kSeamApplicationId);
}

/// A URI for sqlite3_open_v2 with SQLITE_OPEN_URI: the path percent-encoded.
std::string fileUri(const std::string& path, const char* query) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string uri = path.starts_with('/') ? "file://" : "file:";
  for (const unsigned char c : path) {
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
    if (plain) {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 0xf];
    }
  }
  return uri + query;
}

Expected<Connection> openConnection(const std::string& name, int flags, const std::string& path,
                                    const char* doing) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(name.c_str(), &raw, flags | SQLITE_OPEN_EXRESCODE, nullptr);
  Connection db(raw);
  if (rc != SQLITE_OK) {
    const std::string why = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    return Status::invalid(dbName(path) + ": cannot " + doing + " it (" + why + ")");
  }
  sqlite3_busy_timeout(db.get(), detail::kBusyTimeoutMs);
  return db;
}

/// Inspects an existing non-empty file without writing to it.
Status inspectExisting(const std::string& path, std::int64_t size, Journal journal) {
  if (Status s = readHeader(path, size); !s) return s;
  // A read-only connection creates the -wal and -shm files of a database
  // whose header asks for WAL (either format byte 2, whatever the other
  // says) when they are missing, and cannot play a hot journal back
  // (SQLITE_READONLY_ROLLBACK). immutable=1 reads the main file alone, as it
  // is, and creates nothing. That is enough to identify a seam store: its
  // schema, meta rows and application id are committed before it is
  // switched to WAL, and a seam store whose own writer crashed is rolled
  // back by the connection that then writes to it. Only when both side files
  // exist (a live or crashed WAL writer) and no journal does, an ordinary
  // read-only connection takes the locks and sees the WAL; it creates
  // nothing either.
  const bool both_side_files = fileExists(path + "-wal") && fileExists(path + "-shm");
  const bool immutable = !both_side_files || journal != Journal::kNone;
  auto db = openConnection(fileUri(path, immutable ? "?immutable=1" : ""),
                           SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, path, "read");
  if (!db) return db.status();
  return detail::checkSchema(db->get(), path);
}

/// What is at `path`: nothing, or an empty file (nullopt: either becomes a
/// new store), or an existing file of that size.
Expected<std::optional<std::int64_t>> existingSize(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return cannotRead(path, errno);
    return std::optional<std::int64_t>();
  }
  if (S_ISDIR(st.st_mode)) {
    return Status::invalid(dbName(path) + " is a directory, not a seam store");
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::invalid(dbName(path) + " is not a regular file, not a seam store");
  }
  if (st.st_size == 0) return std::optional<std::int64_t>();
  return std::optional<std::int64_t>(st.st_size);
}

/// The connection that may write to an existing file of `size` bytes, opened
/// only once the file has been inspected, read-only, as a seam store.
Expected<Connection> openExisting(const std::string& path, std::int64_t size) {
  if (Status s = inspectExisting(path, size, readJournal(path)); !s) return s;
  auto db = openConnection(path, SQLITE_OPEN_READWRITE, path, "open");
  if (!db) return db.status();
  // SQLite quietly falls back to reading a file it may not write.
  if (sqlite3_db_readonly(db->get(), "main") == 1) {
    return Status::invalid(dbName(path) + ": cannot write it (the file is read-only)");
  }
  // A connection that may write reads the whole schema, where a read-only
  // one passes over some damage (an unknown column in a CHECK constraint):
  // a schema it cannot read is the file's fault, and nothing is written yet.
  const int rc =
      sqlite3_exec(db->get(), "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
  if (!detail::sqliteSucceeded(rc) && unreadableHeader(rc)) {
    return refuseUnreadable(db->get(), path, rc);
  }
  if (Status s = detail::checkStoreIntact(db->get(), path); !s) return s;
  return db;
}

}  // namespace

Status Store::Impl::configure() {
  // WAL: readers never block the writer, and a crashed writer loses only
  // its open batch. NORMAL syncs at checkpoints, not at every commit: a
  // process crash loses nothing committed, a power loss at most the last
  // commits, and neither can leave the file inconsistent.
  SEAM_SQLITE_CHECK(sqlite3_exec(db.get(), "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr));
  SEAM_SQLITE_CHECK(
      sqlite3_exec(db.get(), "PRAGMA synchronous = NORMAL", nullptr, nullptr, nullptr));
  return Status::ok();
}

Expected<Store> Store::open(const std::string& path) {
  if (path.empty()) return Status::invalid("--db \"\": the path is empty");
  auto impl = std::make_unique<Impl>();
  impl->path = path;

  // Only a path that does not exist or an empty file becomes a new store;
  // anything else is inspected read-only before a connection that can write
  // is opened, so a file that is not a seam store is never written to.
  auto existing = existingSize(path);
  if (!existing) return existing.status();
  bool fresh = !existing->has_value();
  std::int64_t size = existing->value_or(0);
  // A run killed while it created the store leaves the schema's pages and a
  // hot journal that says the file had none: playing it back (the first
  // write does) leaves an empty file, which becomes a store like any other.
  // Another application's unfinished creation is not taken over: without
  // seam's application id the file is inspected, and refused, as it is.
  const Journal journal = fresh ? Journal::kNone : readJournal(path);
  if (journal == Journal::kCreation && hasSeamApplicationId(path)) fresh = true;

  if (fresh) {
    auto db = openConnection(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, path, "create");
    if (!db) return db.status();
    impl->db = std::move(*db);
    // The schema is committed in rollback-journal mode, and only then is the
    // file switched to WAL: the main file alone identifies a seam store.
    auto created = impl->createSchema();
    if (!created) return created.status();
    if (!*created) {
      // Another process created the file's contents first: treat it as an
      // existing file.
      impl->db.reset();
      fresh = false;
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) return cannotRead(path, errno);
      size = st.st_size;
    }
  }
  if (!fresh) {
    auto db = openExisting(path, size);
    if (!db) return db.status();
    impl->db = std::move(*db);
    if (Status s = impl->migrate(); !s) return s;
  }
  if (Status s = impl->configure(); !s) return s;
  return Store(std::move(impl));
}

Expected<Store> Store::openInput(const std::string& path, const std::string& label) {
  struct stat st {};
  if (path.empty()) return Status::invalid(label + ": the path is empty");
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return cannotRead(path, errno);
    return Status::invalid(label +
                           ": no such store (seam sweep, prop, mutate and diff write one, "
                           "./seam.db unless their --db names another)");
  }
  if (S_ISREG(st.st_mode) && st.st_size == 0) {
    return Status::invalid(label + ": an empty file, not a seam store");
  }
  auto store = open(path);
  if (store) return store;
  // open() names the file as --db and refuses to write to it; an input is
  // named by its label, and only read.
  std::string message = store.status().message();
  const std::string db = dbName(path);
  if (message.starts_with(db)) message = label + message.substr(db.size());
  constexpr std::string_view kNoWrite = "; refusing to write to it";
  if (message.ends_with(kNoWrite)) message.resize(message.size() - kNoWrite.size());
  return store.status().code() == StatusCode::kInternal ? Status::internal(message)
                                                        : Status::invalid(message);
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

const std::string& Store::path() const {
  assert(impl_ && "path() of a moved-from Store");
  return impl_->path;
}

}  // namespace seam::reports
