// `seam diff --policy A --against B`: parent vs change, case by case. With
// --tp (or any other case option) it compares one case; otherwise the space
// of the presets (or --model / --pattern) and synthetic patterns at --world.
#include <thread>

#include "case_options.h"
#include "command.h"
#include "seam/properties/diff.h"
#include "seam/reports/store.h"
#include "seam/reports/table.h"

namespace seam::tools {

Command registerDiff(CLI::App& app) {
  struct Options {
    CaseOptions c;
    std::string against = "declared";
    std::string worlds = "1,2,4,8";
    int jobs = 0;
    std::string db = "seam.db";
  };
  auto o = std::make_shared<Options>();
  o->c.policy = "legacy";
  CLI::App* sub = app.add_subcommand("diff", "Compare two policies case by case: what did the change do?");
  addCaseOptions(sub, o->c);
  sub->add_option("--against", o->against, "the policy compared with --policy")->capture_default_str();
  sub->add_option("--world", o->worlds, "world sizes of the space, e.g. 1,2,4,8")->capture_default_str();
  sub->add_option("--jobs", o->jobs, "worker threads (default: all cores)");
  sub->add_option("--db", o->db, "SQLite store the comparison of a space is written to")->capture_default_str();
  return {sub, [o, sub]() {
            auto a = parsePolicy(o->c.policy);
            if (!a) return fail(a.status());
            auto b = parsePolicy(o->against);
            if (!b) return fail(Status::invalid("--against " + b.status().message().substr(std::string("--policy ").size())));
            const bool one_case = sub->count("--tp") + sub->count("--pp") + sub->count("--dp") + sub->count("--tokens") +
                                      sub->count("--cp") + sub->count("--ep") + sub->count("--moe-dp") >
                                  0;
            if (!o->c.decision.empty() && !o->c.trace.empty()) {
              return fail(Status::invalid("--decision " + o->c.decision +
                                          ": a trace is an engine's recording; plant a decision in a policy's plan"));
            }
            if (!o->c.decision.empty() && !one_case) {
              return fail(Status::invalid("--decision " + o->c.decision +
                                          ": seam diff plants a decision in one case (give its --tp, --tokens, ...)"));
            }
            if (one_case || !o->c.trace.empty()) {
              auto c = buildCase(o->c);
              if (!c) return fail(c.status());
              Ledger ledger;
              properties::CaseDiff d;
              if (!o->c.decision.empty()) {
                // A planted planner decision (--policy's plan) against --against.
                auto planted = buildPolicyPlan(o->c, *c);
                if (!planted) return fail(planted.status());
                auto other = buildPlan(*c, *b);
                if (!other) return fail(other.status());
                d = properties::diffPlans(*planted, *other, ledger);
              } else if (o->c.trace.empty()) {
                d = properties::diffCase(*c, *a, *b, ledger);
              } else {
                // The recording against the policy named by --against.
                auto traced = buildCasePlan(o->c, *c);
                if (!traced) return fail(traced.status());
                auto other = buildPlan(*c, *b);
                if (!other) return fail(other.status());
                d = properties::diffPlans(*traced, *other, ledger);
              }
              std::cout << properties::diffClassName(d.cls) << (d.detail.empty() ? "" : ": " + d.detail) << "\n";
              if (properties::equalValues(d.cls)) {
                std::cout << "bits on GPUs (real mode): "
                          << (d.bit_identical ? "identical, the same roundings in the same order"
                                              : "may differ: " + d.rounding)
                          << "\n";
              }
              return d.cls == properties::DiffClass::kValuesDiffer ? kExitPropertyFailed : kExitOk;
            }
            properties::DiffSpec spec;
            spec.a = *a;
            spec.b = *b;
            spec.jobs = o->jobs > 0 ? o->jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
            if (o->jobs < 0) return fail(Status::invalid("--jobs " + std::to_string(o->jobs) + " must be >= 1"));
            auto worlds = parseWorlds(o->worlds);
            if (!worlds) return fail(worlds.status());
            spec.worlds = *worlds;
            if (!o->c.model.empty() || !o->c.pattern.empty()) {
              if (!o->c.model.empty() && !o->c.pattern.empty()) return fail(Status::invalid("give --model or --pattern, not both"));
              auto m = properties::sweepModel(o->c.model, o->c.pattern);
              if (!m) return fail(m.status());
              spec.models.push_back(std::move(*m));
            } else {
              spec.models = properties::defaultSweepModels();
              for (auto& m : properties::syntheticDiffModels()) spec.models.push_back(std::move(m));
            }
            auto store = reports::Store::open(o->db);
            if (!store) return fail(store.status());
            reports::RunRecord run;
            run.command = "diff";
            run.args = "policy=" + std::string(policyName(spec.a)) + " against=" + std::string(policyName(spec.b)) +
                       " worlds=" + o->worlds + " models=" + std::to_string(spec.models.size());
            run.version = kSeamVersion;
            if (Status st = store->beginRun(run); !st) return fail(st);
            Status store_status;
            int in_batch = 0;
            constexpr int kBatch = 1024;
            spec.on_case = [&](std::int64_t index, const Case& c, const properties::CaseDiff& d) {
              if (!store_status) return;
              if (in_batch == 0 && !(store_status = store->beginBatch())) return;
              reports::CaseRecord rec;
              rec.index = index;
              rec.model = c.model.name;
              rec.pattern = c.model.pattern.text();
              rec.config = c.config.describe();
              rec.flags = c.flags.describe();
              rec.batch = c.batch.describe();
              rec.policy = std::string(policyName(spec.a)) + " vs " + std::string(policyName(spec.b));
              // Planned pairs whose bits may differ on GPUs are a group of their own.
              const bool planned = properties::equalValues(d.cls);
              rec.group = std::string(properties::diffClassName(d.cls)) +
                          (planned && !d.bit_identical ? "; bits may differ" : "");
              rec.outcome = d.cls == properties::DiffClass::kValuesDiffer ? reports::CaseOutcome::kViolated
                            : d.cls == properties::DiffClass::kBothRefuse || d.cls == properties::DiffClass::kOneRefuses
                                ? reports::CaseOutcome::kRefused
                                : reports::CaseOutcome::kHolds;
              rec.refusal = planned && !d.bit_identical ? d.detail + "; bits may differ: " + d.rounding : d.detail;
              rec.reproduce = properties::diffCommand(c, spec.a, spec.b);
              if (!(store_status = store->addCase(run.id, rec, {}))) return;
              if (++in_batch == kBatch) {
                in_batch = 0;
                store_status = store->commitBatch();
              }
            };
            auto r = properties::runDiff(spec);
            if (!r) return fail(r.status());
            if (store_status && in_batch > 0) store_status = store->commitBatch();
            if (!store_status) return fail(store_status);
            if (Status st = store->finishRun(run.id); !st) return fail(st);
            std::cout << "diff: " << policyName(spec.a) << " against " << policyName(spec.b) << ", " << r->cases
                      << " cases (" << spec.models.size() << " models, worlds " << o->worlds << ")\n";
            reports::Table t({"class", "cases", "bit-identical", "smallest example"}, {false, true, true, false});
            for (int k = 0; k < properties::kDiffClassCount; ++k) {
              if (r->counts[k] == 0) continue;
              const auto cls = static_cast<properties::DiffClass>(k);
              const bool planned = properties::equalValues(cls);
              t.addRow({std::string(properties::diffClassName(cls)), std::to_string(r->counts[k]),
                        planned ? std::to_string(r->bit_identical[k]) : "-", r->examples[k].reproduce});
            }
            std::cout << t.render();
            std::cout << "  bit-identical: predicted to give the same bits on GPUs in real mode (the same roundings "
                         "in the same order; bit_identity.h)\n";
            if (r->other_roundings.index >= 0) {
              std::cout << "  equal values, bits may differ: e.g. " << r->other_roundings.reproduce << ": "
                        << r->other_roundings.detail << "\n";
            }
            for (int k = 0; k < properties::kDiffClassCount; ++k) {
              if (r->counts[k] == 0 || r->examples[k].detail.empty()) continue;
              std::cout << "  " << properties::diffClassName(static_cast<properties::DiffClass>(k)) << ": "
                        << r->examples[k].detail << "\n";
            }
            const auto differ = r->counts[static_cast<int>(properties::DiffClass::kValuesDiffer)];
            std::cout << r->cases << " cases, " << differ << " with values that differ\n";
            return differ == 0 ? kExitOk : kExitPropertyFailed;
          }};
}

}  // namespace seam::tools
