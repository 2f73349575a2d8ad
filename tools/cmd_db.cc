// `seam db import FILE...`: GPU results (seam-gpu --json) into the store.
#include "command.h"
#include "seam/reports/gpu_import.h"

namespace seam::tools {

Command registerDb(CLI::App& app) {
  struct Options {
    std::vector<std::string> files;
    std::string db = "seam.db";
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("db", "Work on the store");
  sub->require_subcommand(1);
  CLI::App* import = sub->add_subcommand("import", "Import seam-gpu JSON results (runs, equivalence, timings)");
  import->add_option("files", o->files, "JSON files written by seam-gpu --json")->required();
  import->add_option("--db", o->db, "SQLite store to write")->capture_default_str();
  return {sub, [o]() {
            // Every file is read and checked before the store is opened: a bad
            // file writes nothing.
            std::vector<reports::GpuResultFile> files;
            for (const std::string& f : o->files) {
              auto file = reports::readGpuJson(f, kSeamVersion);
              if (!file) return fail(file.status());
              files.push_back(std::move(*file));
            }
            auto store = reports::Store::open(o->db);
            if (!store) return fail(store.status());
            for (const auto& file : files) {
              const std::string& f = file.path;
              auto r = reports::writeGpuResult(*store, file);
              if (!r) return fail(r.status());
              std::cout << f << ": run " << r->run_id << " (" << r->tool << "), " << r->equivalences
                        << " equivalence rows, " << r->timings << " timings: " << r->summary << "\n";
            }
            return kExitOk;
          }};
}

}  // namespace seam::tools
