// The runner both conformance suites share (serving: conformance_test.cc,
// training: training_conformance_test.cc): an entry's citation and test
// name, its first difference over the ranks it states, and the verdict on
// it: an `agrees` entry must not differ; a `disagrees` entry must still
// differ, first at the step it documents. Each suite keeps its own entry
// format, plan and property check.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace seam::conformance_runner {

/// "topic.json #i: name", the case's options and every citation.
template <class Entry>
std::string citation(const Entry& e) {
  std::ostringstream o;
  o << e.topic << ".json #" << e.index << ": " << e.name << "\n  case: " << e.options;
  for (const auto& c : e.cite) o << "\n  cites: " << c;
  return o.str();
}

/// A test name for the entry: topic_index, with every other character '_'.
template <class Entry>
std::string testName(const Entry& e) {
  std::string name = e.topic + "_" + std::to_string(e.index);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

/// 0 .. n - 1: the parameters of a suite of n entries.
inline std::vector<int> indices(size_t n) {
  std::vector<int> out;
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<int>(i));
  return out;
}

/// The earliest difference over `ranks` (`differ(rank)` gives a rank's
/// first, an optional with `index` and `what`) and the rank it is on.
template <class Ranks, class Differ>
auto earliestDifference(const Ranks& ranks, Differ differ, int* at_rank) {
  decltype(differ(0)) first;
  *at_rank = -1;
  for (int rank : ranks) {
    auto d = differ(rank);
    if (d && (!first || d->index < first->index)) {
      first = d;
      *at_rank = rank;
    }
  }
  return first;
}

/// The verdict on the entry's difference. `flip`: what to do when a
/// `disagrees` entry no longer differs (flip it, close its section).
template <class Entry, class Difference>
void expectVerdict(const Entry& e, const std::optional<Difference>& first, int at_rank,
                   const std::string& flip) {
  if (e.agrees) {
    EXPECT_FALSE(first.has_value()) << "rank " << at_rank << ", step " << (first ? first->index : 0)
                                    << ": " << (first ? first->what : "") << "\n"
                                    << citation(e);
    return;
  }
  if (!first) {
    ADD_FAILURE() << "seam now plans what the engine does: " << flip << "\n" << citation(e);
    return;
  }
  EXPECT_EQ(first->index, e.first_difference)
      << "seam still differs, but not where the entry documents it (rank " << at_rank
      << "): " << first->what << "\n"
      << citation(e);
}

/// Every `disagrees` entry names a heading (`marker` then its section) of
/// one of `pages` (files of docs/modelling/).
template <class Entry>
void expectSectionsExist(const std::vector<Entry>& entries, const std::vector<std::string>& pages,
                         const std::string& marker) {
  std::string text;
  for (const std::string& page : pages) {
    std::ifstream in(std::string(SEAM_SOURCE_DIR) + "/docs/modelling/" + page);
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (const Entry& e : entries) {
    if (!e.agrees) {
      EXPECT_NE(text.find(marker + " " + e.section), std::string::npos) << e.name;
    }
  }
}

}  // namespace seam::conformance_runner
