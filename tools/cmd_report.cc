// `seam report --db FILE -o report.html|report.md [--run ID | --latest]`:
// what the store holds, verdict first.
#include "command.h"
#include "seam/reports/output_file.h"
#include "seam/reports/report.h"

namespace seam::tools {

Command registerReport(CLI::App& app) {
  struct Options {
    std::string db = "seam.db";
    std::string out;
    std::vector<std::string> graphs;
    std::int64_t run = 0;
    bool latest = false;
    std::int64_t max_bytes = static_cast<std::int64_t>(reports::kMarkdownCapBytes);
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "report", "Write a Markdown or HTML report of the runs in the store, verdict first");
  sub->add_option("--db", o->db, "the SQLite store to read")->capture_default_str();
  sub->add_option("-o,--output", o->out, "report.html or report.md")->required();
  sub->add_option("--graph", o->graphs,
                  "boundary graphs (seam graph) to include: .svg (drawn in the HTML) or .mmd "
                  "(Mermaid in the Markdown); repeatable");
  auto* run = sub->add_option("--run", o->run, "only this run (its id in the store)");
  sub->add_flag("--latest", o->latest, "only the newest run")->excludes(run);
  sub->add_option("--max-bytes", o->max_bytes,
                  "Markdown: leave out whole sections from the end beyond this size (65536 for "
                  "a pull-request comment)")
      ->capture_default_str();
  return {sub, [o, run]() {
            // Check what can be checked before the store is opened (opening
            // creates a missing one).
            const auto dot = o->out.rfind('.');
            const std::string ext = dot == std::string::npos ? "" : o->out.substr(dot + 1);
            if (ext != "md" && ext != "html") {
              return fail(Status::invalid("-o \"" + o->out.substr(0, 200) +
                                          "\": the extension must be .md or .html"));
            }
            if (o->max_bytes < 4096 * 2) {
              return fail(Status::invalid("--max-bytes " + std::to_string(o->max_bytes) +
                                          ": must be at least 8192"));
            }
            std::vector<reports::NamedFile> inputs = {{"--db", o->db}};
            for (const std::string& g : o->graphs) inputs.emplace_back("--graph", g);
            if (Status st = reports::checkOutputFile("-o", o->out, inputs); !st) return fail(st);
            auto store = reports::Store::openInput(o->db, "--db \"" + o->db.substr(0, 200) + "\"");
            if (!store) return fail(store.status());
            reports::ReportOptions options;
            options.graphs = o->graphs;
            if (run->count() > 0) options.run = o->run;
            options.latest = o->latest;
            options.markdown_cap = static_cast<std::size_t>(o->max_bytes);
            if (Status st = reports::writeReport(*store, o->out, options); !st) return fail(st);
            std::cout << "wrote " << o->out << "\n";
            return kExitOk;
          }};
}

}  // namespace seam::tools
