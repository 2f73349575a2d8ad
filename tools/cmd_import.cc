// `seam import --trace FILE CASE`: reads an engine trace onto a case and says
// what it holds (calls per rank); `seam check --trace` and `seam diff
// --trace` then judge it.
#include "case_options.h"
#include "command.h"

namespace seam::tools {

Command registerImport(CLI::App& app) {
  auto o = std::make_shared<CaseOptions>();
  CLI::App* sub = app.add_subcommand(
      "import", "Read an engine trace (JSON lines) onto a case and summarise it");
  addCaseOptions(sub, *o);
  sub->get_option("--trace")->required();
  return {sub, [o]() {
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
