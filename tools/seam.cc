// seam: the command line. A thin main (STYLE 3): each subcommand (cmd_*.cc)
// parses its options into a struct, calls one library entry point, prints
// what it returns and maps its Status to an exit code (DESIGN §9):
//   0 all properties hold, 1 a property failed, 2 bad input or usage,
//   3 internal error.
#include <exception>
#include <string>
#include <vector>

#include "command.h"

int main(int argc, char** argv) {
  using namespace seam::tools;
  try {
    CLI::App app{"seam: simulate and verify the collectives at the boundaries of distributed LLM decoder layers"};
    app.require_subcommand(1);
    app.set_version_flag("--version", kSeamVersion);
    std::vector<Command> commands = {registerModels(app), registerConfigs(app), registerPlan(app),
                                     registerCheck(app), registerSweep(app), registerProp(app), registerMutate(app),
                                     registerDiff(app), registerImport(app), registerGraph(app), registerReport(app),
                                     registerDb(app)};

    if (const int code = parseCommandLine(app, argc, argv, "seam"); code >= 0) return code;
    for (const Command& c : commands) {
      if (c.app->parsed()) return c.run();
    }
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "seam: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
