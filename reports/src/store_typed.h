// A case's configuration and flags as typed columns of `cases` (schema
// version 3): pp, tp, attn_dp, ... as integers, a2a, fusion, ... as text,
// the switches (tbo, ln_sp, ...) as 0 or 1; NULL where the case has no
// serving configuration (a GPU bench row, a training case). One parser of
// the packed `config` and `flags` texts (ParallelConfig::describe,
// Flags::describe) serves both the writer, which binds the values, and the
// migration of an older store, which calls it as the SQL function
// seam_typed(config, flags, k).
#pragma once

#include <sqlite3.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace seam::reports::detail {

inline constexpr int kTypedColumnCount = 17;

/// NULL, an integer or a text.
using TypedValue = std::variant<std::monostate, std::int64_t, std::string>;

/// Column k's value for a case with these `config` and `flags` texts.
TypedValue typedValue(int k, std::string_view config, std::string_view flags);

/// ", pp INTEGER, tp INTEGER, ..." (the declarations) and ", pp, tp, ..."
/// (the names), each column led by a comma.
std::string typedColumnDeclarations();
std::string typedColumnNames();
/// ", seam_typed(config, flags, 0), ..., seam_typed(config, flags, 16)".
std::string typedColumnCalls();

/// One column's value in a parsed row: NULL, an integer, or a text that
/// points into the `config` or `flags` it was read from.
struct Parsed {
  enum class Is : std::uint8_t { kNull, kInteger, kText } is = Is::kNull;
  std::int64_t n = 0;
  std::string_view text;
};
using ParsedRow = std::array<Parsed, kTypedColumnCount>;

/// Binds column k's value to parameter `first + k` of a statement, for
/// every k, row after row: the last `config` and `flags` texts are kept
/// with their values (a sweep's rows share them for a whole block), so an
/// equal pair is bound without reading it again. Texts are bound
/// SQLITE_STATIC from the kept copies: valid until the next bind.
class TypedColumnBinder {
 public:
  int bind(sqlite3_stmt* s, int first, std::string_view config, std::string_view flags);

 private:
  std::string config_, flags_;
  ParsedRow row_{};
  bool parsed_ = false;
};

/// Makes seam_typed(config, flags, k) callable on `db`.
int registerTypedFunction(sqlite3* db);

}  // namespace seam::reports::detail
