// seam: the command line. A thin main (STYLE 3): each subcommand (cmd_*.cc)
// parses its options into a struct, calls one library entry point, prints
// what it returns and maps its Status to an exit code (DESIGN §9):
//   0 all properties hold, 1 a property failed, 2 bad input or usage,
//   3 internal error.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "command.h"
#include "mpi_world.h"

namespace {
int runSeam(int argc, char** argv);
}

int main(int argc, char** argv) {
  using namespace seam::tools;
  // Under mpirun (`mpirun -np N seam sweep|mutate ...`) each rank runs its
  // part; rank 0 writes the store, prints and exits with the run's code; the
  // others print nothing (a bad input fails on every rank alike) and exit 0
  // once their part is handed over, so mpirun's code is rank 0's.
  MpiSession mpi(&argc, &argv);
  if (!mpi.status()) return fail(mpi.status());
  const MpiWorld& world = mpiWorld();
  if (!world.root()) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
  }
  return runSeam(argc, argv);
}

namespace {
int runSeam(int argc, char** argv) {
  using namespace seam::tools;
  try {
    CLI::App app{
        "seam: simulate and verify the collectives at the boundaries of distributed LLM decoder "
        "layers"};
    app.require_subcommand(1);
    // Every flag of every subcommand (they copy the app's defaults) takes no value.
    app.option_defaults()->disable_flag_override();
    app.set_version_flag("--version", kSeamVersion);
    std::vector<Command> commands = {registerModels(app), registerConfigs(app), registerPlan(app),
                                     registerCheck(app),  registerSweep(app),   registerProp(app),
                                     registerMutate(app), registerDiff(app),    registerImport(app),
                                     registerGraph(app),  registerReport(app),  registerDb(app)};

    if (const int code = parseCommandLine(app, argc, argv, "seam"); code >= 0) return code;
    for (const Command& c : commands) {
      if (!c.app->parsed()) continue;
      // sweep and mutate split their work by rank; any other command runs on
      // rank 0 alone (two ranks would write the same files).
      const bool splits = c.app->get_name() == "sweep" || c.app->get_name() == "mutate";
      if (!splits && !mpiWorld().root()) return kExitOk;
      return c.run();
    }
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "seam: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
}  // namespace
