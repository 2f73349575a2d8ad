// `seam import --trace FILE CASE`: reads an engine trace onto a case and says
// what it holds (calls per rank); `seam check --trace` and `seam diff
// --trace` then judge it. `seam import --recording PATH CASE` reads a Flight
// Recorder or NCCL recording and says what it holds; `seam check --recording`
// judges it.
#include "case_options.h"
#include "command.h"
#include "recording_check.h"

namespace seam::tools {

Command registerImport(CLI::App& app) {
  auto o = std::make_shared<CaseOptions>();
  auto r = std::make_shared<RecordingOptions>();
  CLI::App* sub = app.add_subcommand(
      "import",
      "Read an engine trace (JSON lines) or recording (Flight Recorder, NCCL log) onto a case "
      "and summarise it");
  addCaseOptions(sub, *o);
  sub->add_option("--recording", r->path,
                  "an engine recording (Flight Recorder JSON dumps or NCCL logs, a file or a "
                  "folder) to read and summarise");
  return {sub, [o, r]() {
            if (!r->path.empty()) return checkRecording(*o, *r, true);
            if (o->trace.empty())
              return fail(Status::invalid("import needs --trace FILE or --recording PATH"));
            auto c = buildCase(*o);
            if (!c) return fail(c.status());
            auto plan = buildCasePlan(*o, *c);
            if (!plan) return fail(plan.status());
            std::size_t calls = 0;
            for (const auto& ops : plan->ranks) calls += ops.size();
            std::cout << "trace " << o->trace << ": " << calls << " calls on " << plan->world()
                      << " ranks of " << c->model.name << " " << c->config.describe() << " tokens "
                      << c->batch.describe() << "\n";
            for (int r = 0; r < plan->world(); ++r) {
              std::cout << "  rank " << r << ": " << plan->ranks[r].size() << " calls\n";
            }
            return kExitOk;
          }};
}

}  // namespace seam::tools
