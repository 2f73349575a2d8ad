#include "engine_diff.h"

#include <filesystem>
#include <fstream>
#include <map>

#include "command.h"
#include "option_values.h"
#include "seam/properties/sweep.h"
#include "seam/recordings/engine_diff.h"

namespace seam::tools {

namespace {

namespace rec = recordings;
constexpr std::size_t kListed = 20;  // fixed and broken cases named in full

/// A side's options checked; `prefix` is how its options start ("--" for
/// the parent, "--against-" for the change).
Status sideValid(const EngineOptions& e, const std::string& prefix) {
  if (!e.asked())
    return Status::invalid("seam diff on engine trees needs " + prefix + "engine-src PATH (or " +
                           prefix + "engine sglang)");
  Status s = engineOptionsValid(e);
  if (s || prefix == "--") return s;
  std::string m = s.message();  // its words name the parent's options
  const std::string theirs = "--engine", ours = prefix + "engine";
  for (std::size_t at = m.find(theirs); at != std::string::npos;
       at = m.find(theirs, at + ours.size()))
    m.replace(at, theirs.size(), ours);
  return Status::invalid(m);
}

/// Where --summary goes must exist before the trees are recorded.
Status summaryValid(const std::string& path) {
  if (path.empty()) return Status::ok();
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!folder.empty() && !std::filesystem::is_directory(folder, ec))
    return Status::invalid("--summary " + path.substr(0, 200) + ": no such folder " +
                           folder.string().substr(0, 200));
  return Status::ok();
}

/// Writes `text` to `path` whole (a part file renamed), or says why not.
Status writeWhole(const std::string& path, const std::string& text) {
  const std::string part = path + ".part";
  {
    std::ofstream out(part);
    if (!(out << text)) return Status::invalid("--summary " + path + ": cannot write");
  }
  std::error_code ec;
  std::filesystem::rename(part, path, ec);
  if (ec) return Status::invalid("--summary " + path + ": " + ec.message());
  return Status::ok();
}

std::string treeName(const EngineOptions& e) {
  return e.engine_src.empty() ? "the pinned sglang release" : e.engine_src;
}

std::string treeOptions(const EngineDiffOptions& o) {
  return (o.parent.engine_src.empty() ? " --engine sglang"
                                      : " --engine-src " + o.parent.engine_src) +
         (o.change.engine_src.empty() ? " --against-engine sglang"
                                      : " --against-engine-src " + o.change.engine_src);
}

bool disagrees(const std::string& agreement) {
  return agreement == "differs" || agreement == "engine-failed";
}

/// What the run found, folded for the console and the Markdown summary.
struct Folded {
  rec::EngineDiffResult result;
  std::map<rec::TreeDiffClass, rec::EngineDiffRow> example;  // the first case of each class
  std::vector<rec::EngineDiffRow> fixed, broke;              // against --policy's plan
  std::int64_t changed_values = 0;
};

std::string verdictLine(const Folded& f) {
  if (f.changed_values == 0 && f.broke.empty())
    return "the change keeps every value the parent computed (" + std::to_string(f.result.cases) +
           " cases)";
  return "the change alters what the engine computes in " + std::to_string(f.changed_values) +
         " of " + std::to_string(f.result.cases) + " cases, and brings " +
         std::to_string(f.broke.size()) + " new disagreements with the plan";
}

std::string markdown(const Folded& f, const EngineDiffOptions& o) {
  std::string out = "## seam diff: " + treeName(o.parent) + " → " + treeName(o.change) + "\n\n**" +
                    verdictLine(f) + "**\n\n| class | cases | one case |\n|---|---|---|\n";
  for (const auto& [cls, row] : f.example)
    out += "| " + std::string(rec::treeDiffClassName(cls)) + " | " +
           std::to_string(f.result.counts[static_cast<int>(cls)]) + " | `" + row.reproduce +
           "`<br>" + row.diff.divergence + " |\n";
  for (const auto& [title, rows] :
       {std::pair{"Fixed (the parent's run disagrees with the plan, the change's agrees)",
                  &f.fixed},
        std::pair{"Broken (new disagreements with the plan)", &f.broke}}) {
    out += "\n### " + std::string(title) + ": " + std::to_string(rows->size()) + "\n\n";
    for (std::size_t i = 0; i < rows->size() && i < kListed; ++i)
      out += "- `" + (*rows)[i].reproduce + "`\n";
    if (rows->size() > kListed)
      out += "- ... and " + std::to_string(rows->size() - kListed) + " more\n";
  }
  return out;
}

}  // namespace

void addEngineDiffOptions(CLI::App* sub, EngineDiffOptions& o) {
  addEngineOptions(sub, o.parent);
  sub->add_option("--against-engine", o.change.engine,
                  "with --engine/--engine-src: the changed tree is the pinned sglang release");
  sub->add_option("--against-engine-src", o.change.engine_src,
                  "with --engine/--engine-src: the changed SGLang checkout, compared case by case");
  sub->add_option("--keep-recordings", o.keep,
                  "engine trees: keep both trees' recordings in this folder (reused by a rerun)");
  sub->add_option("--summary", o.summary,
                  "engine trees: also write the verdict and classes as Markdown to this file");
}

int diffEngineTrees(const CaseOptions& c, bool one_case, const EngineDiffOptions& given) {
  EngineDiffOptions o = given;
  o.change.timeout_s = o.parent.timeout_s;
  if (Status s = sideValid(o.parent, "--"); !s) return fail(s);
  if (Status s = sideValid(o.change, "--against-"); !s) return fail(s);
  if (Status s = summaryValid(o.summary); !s) return fail(s);
  rec::EngineDiffSpec spec;
  auto policy = parsePolicy(c.policy);
  if (!policy) return fail(policy.status());
  spec.policy = *policy;
  if (one_case) {
    auto one = buildCase(c);
    if (!one) return fail(one.status());
    if (const std::string gap = rec::recorderGap(*one); !gap.empty())
      return fail(Status::invalid("seam diff on engine trees: the recorder does not run " + gap +
                                  " yet (docs/limitations.md)"));
    spec.models.push_back({one->model.name, "", {*one}});
  } else {
    auto worlds = parseWorlds(o.worlds);
    if (!worlds) return fail(worlds.status());
    if (worlds->size() != 1)
      return fail(Status::invalid("--world " + o.worlds +
                                  ": an engine diff records one world (give one size, e.g. 8)"));
    auto models = properties::sweepModels(c.model, c.pattern);
    if (!models) return fail(models.status());
    for (const properties::SweepModel& m : *models)
      if (m.model)
        spec.models.push_back(
            {m.name, "", properties::enumerateCases(*m.model, worlds->front(), {})});
  }
  auto jobs = workerThreads(o.jobs);
  if (!jobs) return fail(jobs.status());
  spec.jobs = *jobs;
  for (auto [run, side] :
       {std::pair{&spec.parent, &o.parent}, std::pair{&spec.change, &o.change}}) {
    *run = rec::defaultRecorderRun(SEAM_CHECKOUT);
    run->engine_src = side->engine_src;
    run->timeout_s = side->timeout_s;
  }
  spec.tree_options = treeOptions(o);
  auto dir = recordingsFolder(o.keep);
  if (!dir) return fail(dir.status());
  spec.dir = *dir;
  Folded f;
  auto result = rec::runEngineDiff(spec, [&f](const rec::EngineDiffRow& row) {
    f.example.emplace(row.diff.cls, row);
    if (!rec::keepsValues(row.diff.cls)) ++f.changed_values;
    if (disagrees(row.parent_agreement) && !disagrees(row.change_agreement)) f.fixed.push_back(row);
    if (!disagrees(row.parent_agreement) && disagrees(row.change_agreement)) f.broke.push_back(row);
    return Status::ok();
  });
  if (o.keep.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(*dir, ec);
  }
  if (!result) return fail(result.status());
  f.result = *result;
  std::cout << "seam diff: " << treeName(o.parent) << " -> " << treeName(o.change) << ", "
            << f.result.cases << " cases\n";
  for (const auto& [cls, row] : f.example)
    std::cout << "  " << rec::treeDiffClassName(cls) << ": "
              << f.result.counts[static_cast<int>(cls)] << " cases, e.g. " << row.reproduce
              << "\n    " << (row.diff.divergence.empty() ? "-" : row.diff.divergence) << "\n";
  for (const auto& [why, n] : f.result.left_out)
    std::cout << "  left out: " << n << " cases (" << why << ")\n";
  std::cout << "fixed: " << f.fixed.size() << ", broken: " << f.broke.size()
            << " (each tree's run against the " << c.policy << " plan)\n"
            << verdictLine(f) << "\n";
  if (!o.summary.empty())
    if (Status s = writeWhole(o.summary, markdown(f, o)); !s) return fail(s);
  return f.changed_values == 0 && f.broke.empty() ? kExitOk : kExitPropertyFailed;
}

}  // namespace seam::tools
