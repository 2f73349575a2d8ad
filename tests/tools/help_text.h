// Shared by the CLI tests that walk every subcommand: what a CLI11 `--help`
// text lists (its options, which of them are flags, its subcommands).
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace seam::testing {

/// What one `--help` lists: the long options of its option column, those of
/// them that are flags (no value type after the name), and the names of its
/// subcommands.
struct Help {
  std::vector<std::string> options;
  std::vector<std::string> flags;
  std::vector<std::string> subcommands;
};

inline Help parseHelp(const std::string& text) {
  Help help;
  std::istringstream in(text);
  std::string line;
  bool in_subcommands = false;
  while (std::getline(in, line)) {
    const std::size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    if (first == 0) {  // "Usage: ...", "Options:", "Subcommands:", a description
      in_subcommands = line == "Subcommands:";
      continue;
    }
    if (first > 2) continue;  // a description wrapped onto its own line
    const std::size_t end = line.find(' ', first);
    const std::string column = line.substr(first, end - first);
    if (in_subcommands) {
      help.subcommands.push_back(column);
      continue;
    }
    // "--world TEXT=8": one space, then the value's type; a flag's name is
    // followed by the column's padding or the end of the line.
    const bool flag = end == std::string::npos || end + 1 >= line.size() || line[end + 1] == ' ';
    // "-o,--output": every long name of the option.
    std::istringstream names(column);
    std::string name;
    while (std::getline(names, name, ',')) {
      if (name.rfind("--", 0) != 0) continue;
      help.options.push_back(name);
      if (flag) help.flags.push_back(name);
    }
  }
  return help;
}

}  // namespace seam::testing
