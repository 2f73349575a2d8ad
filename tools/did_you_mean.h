// "did you mean --world?": the options of the command that was being parsed
// closest to each unknown option of a command line (at most two edits away,
// by Levenshtein distance), for the one-line error of parseCommandLine.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <vector>

namespace seam::tools {

inline std::size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// "; --wrold: did you mean --world?" for each unknown `--options` of argv that are
/// close to an option of the innermost command parsed, or "".
inline std::string didYouMean(const CLI::App& app, int argc, char** argv) {
  const CLI::App* command = &app;
  while (true) {
    const auto parsed = command->get_subcommands();
    if (parsed.empty()) break;
    command = parsed.front();
  }
  std::vector<std::string> names;
  for (const CLI::Option* o : command->get_options())
    for (const std::string& name : o->get_lnames()) names.push_back("--" + name);
  std::string out;
  for (int i = 1; i < argc; ++i) {
    std::string given = argv[i];
    given = given.substr(0, std::min(given.find('='), std::size_t{64}));
    if (given.rfind("--", 0) != 0 || std::find(names.begin(), names.end(), given) != names.end())
      continue;
    std::string best;
    std::size_t best_distance = 3;
    for (const std::string& name : names) {
      const std::size_t d = editDistance(given, name);
      if (d < best_distance) best_distance = d, best = name;
    }
    if (!best.empty()) out += "; " + given + ": did you mean " + best + "?";
  }
  return out;
}

}  // namespace seam::tools
