// `seam db import FILE...`: GPU results (seam-gpu --json) into the store.
// `seam db merge OUT IN...`: stores of sharded runs joined into one.
#include "command.h"
#include "seam/reports/gpu_import.h"
#include "seam/reports/merge.h"

namespace seam::tools {

Command registerDb(CLI::App& app) {
  struct Options {
    std::vector<std::string> files;
    std::string db = "seam.db";
    std::string merge_out;
    std::vector<std::string> merge_inputs;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("db", "Work on the store");
  sub->require_subcommand(1);
  CLI::App* import =
      sub->add_subcommand("import", "Import seam-gpu JSON results (runs, equivalence, timings)");
  import->add_option("files", o->files, "JSON files written by seam-gpu --json")->required();
  import->add_option("--db", o->db, "SQLite store to write")->capture_default_str();
  CLI::App* merge = sub->add_subcommand(
      "merge",
      "Join stores (e.g. the shards of a sweep run with --shard i/n on several machines) into OUT");
  merge->add_option("out", o->merge_out, "the store to write (created when missing)")->required();
  merge->add_option("inputs", o->merge_inputs, "the stores to merge into it")->required();
  return {
      sub, [o, merge]() {
        if (merge->parsed()) {
          auto merged = reports::mergeStores(o->merge_out, o->merge_inputs);
          if (!merged) return fail(merged.status());
          for (const reports::MergedInput& m : *merged) {
            std::cout << m.path << ": " << m.runs_added << " runs, " << m.cases << " cases merged";
            if (m.runs_skipped > 0)
              std::cout << "; " << m.runs_skipped << " runs already there, skipped";
            std::cout << "\n";
          }
          return kExitOk;
        }
        // Every file is read and checked before the store is opened: a bad
        // file writes nothing.
        std::vector<reports::GpuResultFile> files;
        for (const std::string& f : o->files) {
          auto file = reports::readGpuJson(f, kSeamVersion);
          if (!file) return fail(file.status());
          for (const reports::GpuResultFile& earlier : files) {
            if (reports::sameGpuResult(earlier, *file)) {
              return fail(Status::invalid("\"" + f.substr(0, 200) + "\": the same result as \"" +
                                          earlier.path.substr(0, 200) + "\"; imported once"));
            }
          }
          files.push_back(std::move(*file));
        }
        auto store = reports::Store::open(o->db);
        if (!store) return fail(store.status());
        // A result already in the store is refused before any file is written.
        for (const auto& file : files) {
          auto before = reports::importedAs(*store, file);
          if (!before) return fail(before.status());
          if (*before != 0) {
            return fail(
                Status::invalid("\"" + file.path.substr(0, 200) + "\": already imported as run " +
                                std::to_string(*before) +
                                " (the same command, device and rows); not imported again"));
          }
        }
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
