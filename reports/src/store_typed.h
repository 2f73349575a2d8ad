// A case's configuration and flags as typed columns of `cases` (schema
// version 3): pp, tp, attn_dp, ... as integers, a2a, fusion, ... as text,
// the switches (tbo, ln_sp, ...) as 0 or 1; NULL where the case has no
// serving configuration (a GPU bench row, a training case). One parser of
// the packed `config` and `flags` texts (ParallelConfig::describe,
// Flags::describe) serves both the writer, which binds the values, and the
// migration of an older store, which calls it as the SQL function
// seam_typed(config, flags, k).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "store_impl.h"

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

/// Binds column k's value to parameter `first + k` of `s`, for every k, the
/// texts read once. Texts are bound SQLITE_STATIC: `config` and `flags` must
/// outlive the statement's step.
int bindTypedColumns(sqlite3_stmt* s, int first, std::string_view config, std::string_view flags);

/// Makes seam_typed(config, flags, k) callable on `db`.
int registerTypedFunction(sqlite3* db);

}  // namespace seam::reports::detail
