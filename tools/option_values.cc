#include "option_values.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "seam/sim/base/decimal.h"

namespace seam::tools {

namespace {

std::string echoed(const std::string& text) { return "\"" + text.substr(0, 32) + "\""; }

/// CLI11 reads an integer with strtoll's base 0 ("010" is octal 8, "0x10"
/// is 16): the value is checked here as decimal and handed on without its
/// leading zeros, so that CLI11 reads the same number.
std::string decimalForCli11(std::string& text, bool is_unsigned) {
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const bool in_range = is_unsigned ? parseDecimalUnsigned(text).has_value()
                                    : parseDecimal(text, kMin, kMax).has_value();
  if (!in_range) {
    const bool digits = !text.empty() && text.find_first_not_of("-0123456789") == std::string::npos;
    return echoed(text) + (digits ? " is out of range" : " is not a decimal integer") +
           (is_unsigned ? " (0.." + std::to_string(std::numeric_limits<std::uint64_t>::max()) + ")"
                        : "");
  }
  const bool negative = text[0] == '-';
  const std::size_t first = text.find_first_not_of('0', negative ? 1 : 0);
  text = first == std::string::npos ? "0" : (negative ? "-" : "") + text.substr(first);
  return {};
}

CLI::Validator valueCheck(bool is_integer, bool is_unsigned) {
  return CLI::Validator(
      [is_integer, is_unsigned](std::string& text) -> std::string {
        if (text.empty()) return "the value is empty";
        return is_integer ? decimalForCli11(text, is_unsigned) : std::string();
      },
      // No description: --help shows the option's type as before.
      "");
}

}  // namespace

void checkOptionValues(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (option->get_type_size_max() == 0) continue;  // a flag
    const std::string type = option->get_type_name();
    const bool is_unsigned = type.starts_with("UINT");
    const bool is_integer = is_unsigned || type.starts_with("INT");
    option->transform(valueCheck(is_integer, is_unsigned));
  }
  for (CLI::App* sub : app.get_subcommands({})) checkOptionValues(*sub);
}

namespace {

const CLI::App* subcommandNamed(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == name) return sub;
  }
  return nullptr;
}

}  // namespace

Status refuseFlagValues(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* scope = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') {
      if (const CLI::App* sub = subcommandNamed(*scope, arg)) scope = sub;
      continue;
    }
    const std::size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const CLI::Option* option = scope->get_option_no_throw(name);
    if (option == nullptr) continue;  // CLI11 names an unknown option
    // As CLI11 tells a flag: it expects no item.
    if (option->get_items_expected_max() == 0) {
      if (eq == std::string::npos) continue;
      return Status::invalid(name + " is a flag and takes no value (given " +
                             echoed(arg.substr(eq + 1)) + ")");
    }
    // `--world 8`: the next values are the option's, whatever they look like.
    if (eq == std::string::npos) i += std::max(0, option->get_items_expected_min());
  }
  return Status::ok();
}

Expected<bool> jsonFormat(const std::string& format) {
  if (format == "text" || format == "json") return format == "json";
  return Status::invalid("--format " + echoed(format) + " is not text or json");
}

}  // namespace seam::tools
