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

/// Column k's value from one token "key=value" (or a switch's token); false
/// when the token is not column k's.
bool parseToken(const TypedColumn& c, std::string_view token, Parsed* out) {
  const std::string_view key(c.key);
  if (c.kind == Kind::kSwitch) {
    if (token != key) return false;
    out->is = Parsed::Is::kInteger;
    out->n = 1;
    return true;
  }
  if (token.size() <= key.size() || token[key.size()] != '=' || token.substr(0, key.size()) != key)
    return false;
  const std::string_view value = token.substr(key.size() + 1);
  if (c.kind == Kind::kText) {
    out->is = Parsed::Is::kText;
    out->text = value;
    return true;
  }
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec == std::errc() && end == value.data() + value.size()) {
    out->is = Parsed::Is::kInteger;
    out->n = n;
  }
  return true;
}

/// Every column's value, each text read once: the first token of each key
/// counts, a switch is 0 unless its token is present.
ParsedRow parseRow(std::string_view config, std::string_view flags) {
  ParsedRow row{};
  bool has_tp = false;
  bool seen[kTypedColumnCount] = {};
  for (const bool from_config : {true, false}) {
    const std::string_view text = from_config ? config : flags;
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t end = std::min(text.find(' ', at), text.size());
      const std::string_view token = text.substr(at, end - at);
      at = end + 1;
      if (from_config && token.substr(0, 3) == "tp=") has_tp = true;
      for (int k = 0; k < kTypedColumnCount; ++k) {
        if (seen[k] || kColumns[k].from_config != from_config) continue;
        if (parseToken(kColumns[k], token, &row[k])) {
          seen[k] = true;
          break;
        }
      }
    }
  }
  // Every serving case has a configuration; a row without one has no values.
  if (!has_tp) return ParsedRow{};
  for (int k = 0; k < kTypedColumnCount; ++k) {
    if (kColumns[k].kind == Kind::kSwitch && row[k].is == Parsed::Is::kNull)
      row[k] = {Parsed::Is::kInteger, 0, {}};
  }
  return row;
}

}  // namespace

TypedValue typedValue(int k, std::string_view config, std::string_view flags) {
  const Parsed p = parseRow(config, flags)[k];
  if (p.is == Parsed::Is::kInteger) return p.n;
  if (p.is == Parsed::Is::kText) return std::string(p.text);
  return {};
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

int TypedColumnBinder::bind(sqlite3_stmt* s, int first, std::string_view config,
                            std::string_view flags) {
  if (!parsed_ || config != config_ || flags != flags_) {
    config_.assign(config);
    flags_.assign(flags);
    row_ = parseRow(config_, flags_);  // texts into the kept copies
    parsed_ = true;
  }
  for (int k = 0; k < kTypedColumnCount; ++k) {
    const Parsed& p = row_[k];
    const int i = first + k;
    const int rc =
        p.is == Parsed::Is::kInteger ? sqlite3_bind_int64(s, i, p.n)
        : p.is == Parsed::Is::kText
            ? sqlite3_bind_text64(s, i, p.text.data(), p.text.size(), SQLITE_STATIC, SQLITE_UTF8)
            : sqlite3_bind_null(s, i);
    if (rc != SQLITE_OK) return rc;
  }
  return SQLITE_OK;
}

int registerTypedFunction(sqlite3* db) {
  return sqlite3_create_function(db, "seam_typed", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr,
                                 typedFunction, nullptr, nullptr);
}

}  // namespace seam::reports::detail
