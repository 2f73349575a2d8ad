// seam: the command line. A thin main (STYLE 3): each subcommand (cmd_*.cc)
// parses its options into a struct, calls one library entry point, prints
// what it returns and maps its Status to an exit code (DESIGN §9):
//   0 all properties hold, 1 a property failed, 2 bad input or usage,
//   3 internal error.
#include <exception>
#include <string>
#include <vector>

#include "command.h"

namespace {

constexpr const char* kVersion = seam::tools::kSeamVersion;

bool isCommand(CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == name) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace seam::tools;
  try {
    CLI::App app{"seam: simulate and verify the collectives at the boundaries of distributed LLM decoder layers"};
    app.require_subcommand(1);
    app.set_version_flag("--version", kVersion);
    std::vector<Command> commands = {registerModels(app), registerConfigs(app), registerPlan(app),
                                     registerCheck(app), registerSweep(app), registerProp(app), registerMutate(app),
                                     registerDiff(app), registerImport(app), registerGraph(app), registerReport(app),
                                     registerDb(app)};

    // CLI11 answers an unknown option before any command with "A subcommand
    // is required"; name it.
    if (argc > 1 && argv[1][0] == '-' && std::string(argv[1]) != "-h" && std::string(argv[1]) != "--help" &&
        std::string(argv[1]) != "--help-all" && std::string(argv[1]) != "--version") {
      std::cerr << "seam: unknown option \"" << std::string(argv[1]).substr(0, 64) << "\" before the command\n";
      return kExitBadInput;
    }
    // CLI11 answers an unknown command with "A subcommand is required"; name it.
    if (argc > 1 && argv[1][0] != '-' && !isCommand(app, argv[1])) {
      std::string known;
      for (const CLI::App* sub : app.get_subcommands({})) known += (known.empty() ? "" : ", ") + sub->get_name();
      std::cerr << "seam: unknown command \"" << std::string(argv[1]).substr(0, 64) << "\" (commands: " << known
                << ")\n";
      return kExitBadInput;
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      std::cout << app.help();
      return kExitOk;
    } catch (const CLI::CallForAllHelp&) {
      std::cout << app.help("", CLI::AppFormatMode::All);
      return kExitOk;
    } catch (const CLI::CallForVersion&) {
      std::cout << kVersion << "\n";
      return kExitOk;
    } catch (const CLI::ParseError& e) {
      // One line on stderr naming the bad value (DESIGN §9).
      std::string what = e.what();
      for (char& c : what) {
        if (c == '\n') c = ' ';
      }
      std::cerr << "seam: " << what << "\n";
      return kExitBadInput;
    }
    for (const Command& c : commands) {
      if (c.app->parsed()) return c.run();
    }
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "seam: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
