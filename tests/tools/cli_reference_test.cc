// Keeps docs/cli.md complete: every option a subcommand's `--help` names must
// appear in that subcommand's section of the reference, or in one of the
// sections every command shares. A new option, or a new subcommand, fails
// here until the reference describes it.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "help_text.h"
#include "run_seam.h"

namespace {

using seam::testing::Help;
using seam::testing::parseHelp;
using seam::testing::runSeam;

const std::string kReference = std::string(SEAM_SOURCE_DIR) + "/docs/cli.md";
/// Sections whose options every command may take.
const std::vector<std::string> kSharedSections = {"Every command", "Case options"};

/// The reference's `## ` sections by heading (backquotes dropped).
std::map<std::string, std::string> referenceSections() {
  std::ifstream in(kReference);
  std::map<std::string, std::string> sections;
  std::string line, heading;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      heading.clear();
      for (char c : line.substr(3))
        if (c != '`') heading += c;
      sections[heading];
      continue;
    }
    if (!heading.empty()) sections[heading] += line + "\n";
  }
  return sections;
}

/// True when `text` names `option` whole (`--fused` is not `--fused-iters`).
bool namesOption(const std::string& text, const std::string& option) {
  for (auto at = text.find(option); at != std::string::npos; at = text.find(option, at + 1)) {
    const std::size_t end = at + option.size();
    const char next = end < text.size() ? text[end] : ' ';
    if (!std::isalnum(static_cast<unsigned char>(next)) && next != '-' && next != '_') return true;
  }
  return false;
}

/// Every option of `program words --help` and of its subcommands, recursively,
/// that docs/cli.md leaves out, one line each.
void collectMissing(const std::string& bin, const std::string& program, const std::string& words,
                    const std::map<std::string, std::string>& sections,
                    std::vector<std::string>* missing) {
  const auto run = runSeam(words + (words.empty() ? "" : " ") + "--help", bin);
  ASSERT_EQ(run.code, 0) << program << " " << words << " --help: " << run.err;
  const Help help = parseHelp(run.out);
  ASSERT_FALSE(help.options.empty()) << program << " " << words << " --help lists no option";
  const std::string command = program + (words.empty() ? "" : " " + words);
  const auto own = sections.find(command);
  if (own == sections.end() && help.subcommands.empty())
    missing->push_back("docs/cli.md has no section \"## `" + command + "`\"");
  for (const std::string& option : help.options) {
    bool named = own != sections.end() && namesOption(own->second, option);
    for (const std::string& shared : kSharedSections) {
      const auto s = sections.find(shared);
      named = named || (s != sections.end() && namesOption(s->second, option));
    }
    if (!named)
      missing->push_back(command + " --help names " + option + ", which docs/cli.md lacks");
  }
  for (const std::string& sub : help.subcommands)
    collectMissing(bin, program, words.empty() ? sub : words + " " + sub, sections, missing);
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

TEST(CliReference, DocsCliMdNamesEveryOptionOfEverySeamSubcommand) {
  const auto sections = referenceSections();
  ASSERT_FALSE(sections.empty()) << "cannot read " << kReference;
  std::vector<std::string> missing;
  collectMissing(SEAM_BIN, "seam", "", sections, &missing);
  EXPECT_TRUE(missing.empty()) << joined(missing);
}

TEST(CliReference, DocsCliMdNamesEveryOptionOfEverySeamGpuSubcommand) {
#ifdef SEAM_GPU_BIN
  const auto sections = referenceSections();
  ASSERT_FALSE(sections.empty()) << "cannot read " << kReference;
  std::vector<std::string> missing;
  collectMissing(SEAM_GPU_BIN, "seam-gpu", "", sections, &missing);
  EXPECT_TRUE(missing.empty()) << joined(missing);
#else
  GTEST_SKIP() << "seam-gpu is not built (CUDA off)";
#endif
}

/// The parser above must see what it checks, or the tests above pass vacuously.
TEST(CliReference, TheHelpParserFindsTheOptionsAndSubcommandsOfAHelpText) {
  const Help help = parseHelp(
      "Usage: seam graph [OPTIONS]\n\nOptions:\n  -h,--help                   Print this help\n"
      "  -o,--output TEXT REQUIRED   output file\n  --fused-hidden TEXT=2688,4096\n"
      "                              hidden sizes --not-an-option\n\nSubcommands:\n"
      "  import                      Import\n");
  EXPECT_EQ(help.options, (std::vector<std::string>{"--help", "--output", "--fused-hidden"}));
  EXPECT_EQ(help.subcommands, (std::vector<std::string>{"import"}));
  EXPECT_EQ(help.flags, (std::vector<std::string>{"--help"}));
  EXPECT_TRUE(namesOption("`--fused on|off`", "--fused"));
  EXPECT_FALSE(namesOption("`--fused-iters N`", "--fused"));
}

}  // namespace
