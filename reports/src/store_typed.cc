#include "store_typed.h"

#include <array>
#include <charconv>

namespace seam::reports::detail {

namespace {

enum class Kind { kInteger, kText, kSwitch };

struct TypedColumn {
  const char* name;
  Kind kind;
  bool from_config;  ///< read from `config`, else from `flags`
  const char* key;   ///< kInteger, kText: the key of "key=value"; kSwitch: the token when on
};

constexpr std::array<TypedColumn, kTypedColumnCount> kColumns = {{
    {"pp", Kind::kInteger, true, "pp"},
    {"tp", Kind::kInteger, true, "tp"},
    {"attn_dp", Kind::kInteger, true, "attn_dp"},
    {"attn_cp", Kind::kInteger, true, "attn_cp"},
    {"moe_ep", Kind::kInteger, true, "moe_ep"},
    {"moe_dp", Kind::kInteger, true, "moe_dp"},
    {"a2a", Kind::kText, false, "a2a"},
    {"fusion", Kind::kText, false, "fusion"},
    {"padding", Kind::kText, false, "padding"},
    {"reduction", Kind::kText, false, "reduction"},
    {"mode", Kind::kText, false, "mode"},
    {"capture", Kind::kText, false, "capture"},
    {"ln_sp", Kind::kSwitch, false, "ln_sp=on"},
    {"dense_tp1", Kind::kSwitch, false, "dense_tp=1"},
    {"input_scattered", Kind::kSwitch, false, "input_scattered=on"},
    {"dp_gatherv", Kind::kSwitch, false, "dp_gatherv=on"},
    {"tbo", Kind::kSwitch, false, "tbo=on"},
}};

/// The space-separated token of `text` that starts with `prefix`, or npos.
std::size_t tokenStarting(std::string_view text, std::string_view prefix) {
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find(' ', at), text.size());
    if (text.substr(at, end - at).substr(0, prefix.size()) == prefix) return at;
    at = end + 1;
  }
  return std::string_view::npos;
}

}  // namespace

TypedValue typedValue(int k, std::string_view config, std::string_view flags) {
  // Every serving case has a configuration; a row without one has no values.
  if (config.empty() || tokenStarting(config, "tp=") == std::string_view::npos) return {};
  const TypedColumn& c = kColumns[k];
  const std::string_view text = c.from_config ? config : flags;
  if (c.kind == Kind::kSwitch) {
    const std::size_t at = tokenStarting(text, c.key);
    const std::size_t len = std::string_view(c.key).size();
    const bool on =
        at != std::string_view::npos && (at + len == text.size() || text[at + len] == ' ');
    return std::int64_t{on ? 1 : 0};
  }
  const std::string prefix = std::string(c.key) + "=";
  const std::size_t at = tokenStarting(text, prefix);
  if (at == std::string_view::npos) return {};
  const std::size_t start = at + prefix.size();
  const std::string_view value =
      text.substr(start, std::min(text.find(' ', start), text.size()) - start);
  if (c.kind == Kind::kText) return std::string(value);
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size()) return {};
  return n;
}

std::string typedColumnDeclarations() {
  std::string out;
  for (const TypedColumn& c : kColumns)
    out += std::string(",\n  ") + c.name + (c.kind == Kind::kText ? " TEXT" : " INTEGER");
  return out;
}

std::string typedColumnNames() {
  std::string out;
  for (const TypedColumn& c : kColumns) out += std::string(", ") + c.name;
  return out;
}

std::string typedColumnCalls() {
  std::string out;
  for (int k = 0; k < kTypedColumnCount; ++k)
    out += ", seam_typed(config, flags, " + std::to_string(k) + ")";
  return out;
}

namespace {

int bindTyped(sqlite3_stmt* s, int i, const TypedValue& v) {
  if (const auto* n = std::get_if<std::int64_t>(&v)) return sqlite3_bind_int64(s, i, *n);
  if (const auto* t = std::get_if<std::string>(&v))
    return sqlite3_bind_text(s, i, t->data(), static_cast<int>(t->size()), SQLITE_TRANSIENT);
  return sqlite3_bind_null(s, i);
}

void typedFunction(sqlite3_context* context, int, sqlite3_value** args) {
  auto text = [&](int i) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(args[i]));
    return std::string_view(p ? p : "", static_cast<std::size_t>(sqlite3_value_bytes(args[i])));
  };
  const int k = sqlite3_value_int(args[2]);
  if (k < 0 || k >= kTypedColumnCount) {
    sqlite3_result_null(context);
    return;
  }
  const TypedValue v = typedValue(k, text(0), text(1));
  if (const auto* n = std::get_if<std::int64_t>(&v)) {
    sqlite3_result_int64(context, *n);
  } else if (const auto* t = std::get_if<std::string>(&v)) {
    sqlite3_result_text(context, t->data(), static_cast<int>(t->size()), SQLITE_TRANSIENT);
  } else {
    sqlite3_result_null(context);
  }
}

}  // namespace

int bindTypedColumns(sqlite3_stmt* s, int first, std::string_view config, std::string_view flags) {
  for (int k = 0; k < kTypedColumnCount; ++k) {
    if (const int rc = bindTyped(s, first + k, typedValue(k, config, flags)); rc != SQLITE_OK)
      return rc;
  }
  return SQLITE_OK;
}

int registerTypedFunction(sqlite3* db) {
  return sqlite3_create_function(db, "seam_typed", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr,
                                 typedFunction, nullptr, nullptr);
}

}  // namespace seam::reports::detail
