// `seam report --db FILE -o report.html|report.md`: what the store holds.
#include "command.h"
#include "seam/reports/output_file.h"
#include "seam/reports/report.h"

namespace seam::tools {

Command registerReport(CLI::App& app) {
  struct Options {
    std::string db = "seam.db";
    std::string out;
    std::vector<std::string> graphs;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub =
      app.add_subcommand("report", "Write a Markdown or HTML report of every run in the store");
  sub->add_option("--db", o->db, "the SQLite store to read")->capture_default_str();
  sub->add_option("-o,--output", o->out, "report.html or report.md")->required();
  sub->add_option("--graph", o->graphs, "SVG boundary graphs (seam graph) to embed; repeatable");
  return {sub, [o]() {
            // Check what can be checked before the store is opened (opening
            // creates a missing one).
            const auto dot = o->out.rfind('.');
            const std::string ext = dot == std::string::npos ? "" : o->out.substr(dot + 1);
            if (ext != "md" && ext != "html") {
              return fail(Status::invalid("-o \"" + o->out.substr(0, 200) +
                                          "\": the extension must be .md or .html"));
            }
            std::vector<reports::NamedFile> inputs = {{"--db", o->db}};
            for (const std::string& g : o->graphs) inputs.emplace_back("--graph", g);
            if (Status st = reports::checkOutputFile("-o", o->out, inputs); !st) return fail(st);
            auto store = reports::Store::openInput(o->db, "--db \"" + o->db.substr(0, 200) + "\"");
            if (!store) return fail(store.status());
            if (Status st = reports::writeReport(*store, o->out, o->graphs); !st) return fail(st);
            std::cout << "wrote " << o->out << "\n";
            return kExitOk;
          }};
}

}  // namespace seam::tools
