// The one way seam reads an integer, from the command line (CLI11's options
// and seam's own lists such as --tokens 4,0,3 or --shard 1/4) and from its
// files: decimal digits with an optional leading '-', nothing else. Leading
// zeros read as decimal ("010" is 10), never as octal; no sign '+', no
// spaces, no hex; a value outside the type's range is refused, not clamped.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

namespace seam {

/// `text` as a decimal integer in lo..hi; nullopt when it is empty, holds
/// anything but decimal digits (after one optional '-') or is out of range.
inline std::optional<std::int64_t> parseDecimal(std::string_view text, std::int64_t lo,
                                                std::int64_t hi) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value < lo || value > hi) return std::nullopt;
  return value;
}

/// `text` as a decimal integer in 0..2^64-1 (digits only, no sign).
inline std::optional<std::uint64_t> parseDecimalUnsigned(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace seam
