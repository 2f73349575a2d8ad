// `seam diff --policy A --against B`: parent vs change, case by case. With
// --tp (or any other case option) it compares one case; otherwise the space
// of the presets (or --model / --pattern) and synthetic patterns at --world.
#include <unistd.h>

#include "case_options.h"
#include "command.h"
#include "engine_diff.h"
#include "memory_budget.h"
#include "option_values.h"
#include "recording_check.h"
#include "run_progress.h"
#include "seam/properties/diff.h"
#include "seam/reports/diff_view.h"
#include "seam/reports/recorders.h"
#include "seam/reports/run_json.h"

namespace seam::tools {

namespace {

struct DiffOptions {
  CaseOptions c;
  std::string against = "declared";
  std::string worlds = "1,2,4,8";
  int jobs = 0;
  std::string db = "seam.db";
  bool resume = false;
  std::string format = "text";
  RecordingOptions recording;
  EngineDiffOptions engine;
};

/// One case: a planted --decision or a --trace against --against, or the two policies.
int diffOneCase(const DiffOptions& o, PolicyKind a, PolicyKind b) {
  auto c = buildCase(o.c);
  if (!c) return fail(c.status());
  Ledger ledger;
  properties::CaseDiff d;
  if (o.c.decision.empty() && o.c.trace.empty() && o.recording.path.empty()) {
    d = properties::diffCase(*c, a, b, ledger);
  } else {
    // A planted planner decision (--policy's plan), or the recording,
    // against the policy named by --against.
    auto mine = o.c.decision.empty() ? buildCasePlan(o.c, *c) : buildPolicyPlan(o.c, *c);
    if (!mine) return fail(mine.status());
    // The planted plan is --policy's plan with the decision flipped: say so
    // wherever the comparison names a side (both sides may be one policy).
    if (!o.c.decision.empty()) mine->policy += " with --decision " + o.c.decision;
    auto other = buildPlan(*c, b);
    if (!other) return fail(other.status());
    if (!o.recording.path.empty()) return diffRecording(o.c, o.recording, *c, *mine, *other);
    d = properties::diffPlans(*mine, *other, ledger);
  }
  std::cout << properties::diffClassName(d.cls) << (d.detail.empty() ? "" : ": " + d.detail)
            << "\n";
  if (properties::equalValues(d.cls)) {
    std::cout << "bits on GPUs (real mode): "
              << (d.bit_identical ? "identical, the same roundings in the same order"
                                  : "may differ: " + d.rounding)
              << "\n";
  }
  return d.cls == properties::DiffClass::kValuesDiffer ? kExitPropertyFailed : kExitOk;
}

/// Compares the cases of the space not yet stored, storing each as it is
/// compared; the summary of every case the run stored.
Expected<properties::DiffResult> compareAndStore(reports::StoredRun& opened,
                                                 properties::DiffSpec& spec) {
  reports::DiffRecorder recorder(opened.store, opened.run.id, spec);
  spec.on_case = [&recorder](std::int64_t index, const Case& c, const properties::CaseDiff& d) {
    recorder.onCase(index, c, d);
  };
  RateLine progress(isatty(2));
  spec.on_progress = [&progress](std::int64_t done, std::int64_t total) {
    progress.update("cases", done, total);
  };
  auto live = properties::runDiff(spec);
  progress.clear();
  spec.on_case = nullptr;
  spec.on_progress = nullptr;
  if (!live) return live.status();
  if (Status st = recorder.finish(); !st) return st;
  if (Status st = opened.store.finishRun(opened.run.id); !st) return st;
  return reports::diffResultFromStore(opened.store, opened.run.id, spec, *live);
}

/// The space, every case stored in --db as it is compared.
int diffSpace(const DiffOptions& o, PolicyKind a, PolicyKind b) {
  auto json = jsonFormat(o.format);
  if (!json) return fail(json.status());
  properties::DiffSpec spec;
  spec.a = a;
  spec.b = b;
  auto jobs = workerThreads(o.jobs);
  if (!jobs) return fail(jobs.status());
  spec.jobs = *jobs;
  auto worlds = parseWorlds(o.worlds);
  if (!worlds) return fail(worlds.status());
  spec.worlds = *worlds;
  auto models = properties::sweepModels(o.c.model, o.c.pattern);
  if (!models) return fail(models.status());
  spec.models = std::move(*models);
  if (o.c.model.empty() && o.c.pattern.empty()) {
    for (auto& m : properties::syntheticDiffModels()) spec.models.push_back(std::move(m));
  }
  if (Status s = checkSpaceMemory(spec.worlds, spec.models, {}, spec.jobs); !s) {
    return fail(s);
  }
  auto opened = reports::openDiffRun(o.db, &spec, o.worlds, kSeamVersion, o.resume);
  if (!opened) return fail(opened.status());
  auto r = compareAndStore(*opened, spec);
  if (!r) return fail(r.status());
  std::cout << (*json ? reports::diffJson(spec, *r, o.worlds)
                      : reports::renderDiff(spec, *r, o.worlds));
  const auto differ = r->counts[static_cast<int>(properties::DiffClass::kValuesDiffer)];
  return differ == 0 ? kExitOk : kExitPropertyFailed;
}

}  // namespace

Command registerDiff(CLI::App& app) {
  auto o = std::make_shared<DiffOptions>();
  o->c.policy = "legacy";
  CLI::App* sub =
      app.add_subcommand("diff", "Compare two policies case by case: what did the change do?");
  addCaseOptions(sub, o->c);
  sub->add_option("--against", o->against, "the policy compared with --policy")
      ->capture_default_str();
  sub->add_option("--world", o->worlds, "world sizes of the space, e.g. 1,2,4,8")
      ->capture_default_str();
  sub->add_option("--jobs", o->jobs, "worker threads (default: all cores)");
  sub->add_option("--db", o->db, "SQLite store the comparison of a space is written to")
      ->capture_default_str();
  sub->add_flag("--resume", o->resume,
                "continue the latest unfinished diff of a space with the same arguments in --db");
  sub->add_option("--format", o->format, "text|json (a space's summary as one JSON object)")
      ->capture_default_str();
  addRecordingOptions(sub, o->recording);
  addEngineDiffOptions(sub, o->engine);
  return {sub, [o, sub]() {
            auto a = parsePolicy(o->c.policy);
            if (!a) return fail(a.status());
            auto b = parsePolicy(o->against);
            if (!b)
              return fail(Status::invalid(
                  "--against " + b.status().message().substr(std::string("--policy ").size())));
            const bool one_case = sub->count("--tp") + sub->count("--pp") + sub->count("--dp") +
                                      sub->count("--tokens") + sub->count("--cp") +
                                      sub->count("--ep") + sub->count("--moe-dp") >
                                  0;
            if (o->engine.asked()) {
              if (Status s = refuseGiven(*sub,
                                         {"--against", "--decision", "--trace", "--recording",
                                          "--format", "--resume", "--db"},
                                         "seam diff of policies, not of engine trees");
                  !s)
                return fail(s);
              o->engine.worlds = sub->count("--world") > 0 ? o->worlds : "8";
              o->engine.jobs = o->jobs;
              return diffEngineTrees(o->c, one_case, o->engine);
            }
            if (!o->c.decision.empty() && !o->c.trace.empty()) {
              return fail(Status::invalid(
                  "--decision " + o->c.decision +
                  ": a trace is an engine's recording; plant a decision in a policy's plan"));
            }
            if (!o->c.decision.empty() && !one_case) {
              return fail(Status::invalid(
                  "--decision " + o->c.decision +
                  ": seam diff plants a decision in one case (give its --tp, --tokens, ...)"));
            }
            if (Status s = recordingOptionsNeedPath(*sub, o->recording); !s) return fail(s);
            if (!o->recording.path.empty() && !one_case)
              return fail(Status::invalid("--recording " + o->recording.path.substr(0, 200) +
                                          ": seam diff judges a recording of one case (give its "
                                          "--tp, --tokens, ...)"));
            if (one_case || !o->c.trace.empty()) {
              if (Status s = refuseGiven(*sub, {"--format", "--resume"},
                                         "a space (one case prints its class)");
                  !s)
                return fail(s);
              return diffOneCase(*o, *a, *b);
            }
            return diffSpace(*o, *a, *b);
          }};
}

}  // namespace seam::tools
