#include "seam/mutants/campaign.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <mutex>
#include <thread>
#include <tuple>

namespace seam::mutants {

std::string_view statusName(MutantStatus s) {
  switch (s) {
    case MutantStatus::kKilled: return "killed";
    case MutantStatus::kSurvived: return "survived";
    case MutantStatus::kEquivalent: return "equivalent";
  }
  return "?";
}

int CampaignResult::killed() const {
  return static_cast<int>(std::count_if(outcomes.begin(), outcomes.end(),
                                        [](const auto& o) { return o.status == MutantStatus::kKilled; }));
}
int CampaignResult::survived() const {
  return static_cast<int>(std::count_if(outcomes.begin(), outcomes.end(),
                                        [](const auto& o) { return o.status == MutantStatus::kSurvived; }));
}
int CampaignResult::equivalent() const {
  return static_cast<int>(std::count_if(outcomes.begin(), outcomes.end(),
                                        [](const auto& o) { return o.status == MutantStatus::kEquivalent; }));
}

std::vector<Case> campaignCases(const CampaignSpec& spec) {
  std::vector<Case> out;
  for (const auto& m : spec.models) {
    if (!m.model) continue;
    for (int world : spec.worlds) {
      for (Case& c : properties::enumerateCases(*m.model, world)) out.push_back(std::move(c));
    }
  }
  return out;
}

namespace {

/// Plans are the same when every rank runs the same ops on the same
/// communicators: an axis renamed to another whose group has the same ranks
/// (attn_tp == tp without DP attention) changes nothing that runs.
bool samePlan(const Plan& a, const Plan& b) {
  if (a.ranks == b.ranks) return true;
  if (a.ranks.size() != b.ranks.size()) return false;
  const Topology topo(a.source.config);
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    const auto& x = a.ranks[r];
    const auto& y = b.ranks[r];
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] == y[i]) continue;
      Op renamed = y[i];
      renamed.axis = x[i].axis;
      if (!(renamed == x[i]) || !x[i].hasGroup() || !y[i].hasGroup()) return false;
      if (topo.groupOf(x[i].groupAxis(), static_cast<int>(r)) != topo.groupOf(y[i].groupAxis(), static_cast<int>(r))) {
        return false;
      }
    }
  }
  return true;
}

/// A case's size, for "the smallest case": layers, then world, then tokens.
std::tuple<int, int, int> sizeOf(const Case& c) {
  return {c.model.pattern.size() + static_cast<int>(c.model.pattern.mtp.size()), c.config.world(), c.batch.total()};
}

constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kChunk = 32;

/// Runs `body(i, ledger)` over [0, n) on `jobs` threads in chunks, in index
/// order per thread; `stop(i)` says whether index i need not run any more.
template <class Body, class Stop>
void parallelFor(std::int64_t n, int jobs, Body body, Stop stop) {
  std::atomic<std::int64_t> next{0};
  auto worker = [&]() {
    Ledger ledger;
    for (;;) {
      const std::int64_t begin = next.fetch_add(kChunk);
      if (begin >= n || stop(begin)) return;
      const std::int64_t end = std::min(n, begin + kChunk);
      for (std::int64_t i = begin; i < end && !stop(i); ++i) body(i, ledger);
    }
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
}

}  // namespace

Expected<CampaignResult> runCampaign(const CampaignSpec& spec, CampaignListener* listener) {
  if (spec.jobs < 1) return Status::invalid("--jobs " + std::to_string(spec.jobs) + " must be >= 1");
  for (int w : spec.worlds) {
    if (w < 1 || w > kMaxWorld) return Status::invalid("world " + std::to_string(w) + " is out of range");
  }
  const auto start = std::chrono::steady_clock::now();
  CampaignResult result;

  // The space, without the cases the engine refuses (they plan under no mutant).
  std::vector<Case> all = campaignCases(spec);
  std::vector<char> refused(all.size(), 0);
  std::vector<char> failed(all.size(), 0);
  std::vector<std::optional<Violation>> baseline_violation(all.size());
  parallelFor(
      static_cast<std::int64_t>(all.size()), spec.jobs,
      [&](std::int64_t i, Ledger& ledger) {
        auto plan = buildPlan(all[i], spec.policy, spec.schema);
        if (!plan) {
          refused[i] = plan.status().code() == StatusCode::kRefused;
          if (!refused[i]) {
            failed[i] = 1;
            Violation v;
            v.detail = plan.status().message();
            baseline_violation[i] = v;
          }
          return;
        }
        auto verdict = properties::checkPlan(*plan, ledger);
        if (!verdict.holds()) {
          failed[i] = 1;
          baseline_violation[i] = verdict.firstViolation();
        }
      },
      [](std::int64_t) { return false; });
  std::vector<Case> cases;
  cases.reserve(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    if (failed[i] && result.baseline_holds) {
      result.baseline_holds = false;
      result.baseline_case = all[i];
      result.baseline_violation = baseline_violation[i];
    }
    if (refused[i]) {
      ++result.baseline_refused;
    } else {
      cases.push_back(std::move(all[i]));
    }
  }
  result.cases = static_cast<std::int64_t>(cases.size());
  if (listener) listener->onBaseline(result.cases, result.baseline_holds);
  if (!result.baseline_holds) {
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  }

  std::vector<const Mutant*> mutants = spec.mutants;
  if (mutants.empty()) mutants.assign(registry().begin(), registry().end());
  const std::int64_t n = result.cases;
  int done = 0;
  for (const Mutant* m : mutants) {
    if (listener) {
      if (auto stored = listener->recalled(*m)) {
        stored->mutant = m;
        result.outcomes.push_back(*stored);
        if (listener) listener->onMutant(result.outcomes.back(), ++done, static_cast<int>(mutants.size()));
        continue;
      }
    }
    MutantOutcome o;
    o.mutant = m;
    std::atomic<std::int64_t> first_kill{kNone};
    std::atomic<std::int64_t> applied{0}, differed{0}, evaluated{0};
    std::mutex mu;
    std::optional<Violation> kill_violation;
    std::int64_t smallest_index = kNone;
    parallelFor(
        n, spec.jobs,
        [&](std::int64_t i, Ledger& ledger) {
          evaluated.fetch_add(1);
          auto base = buildPlan(cases[i], spec.policy, spec.schema);
          if (!base) return;
          const Schema flipped{spec.schema.flipped | m->schema().flipped};
          Expected<Plan> mutated = m->kind() == MutantKind::kDecision ? buildPlan(cases[i], spec.policy, flipped)
                                                                     : Expected<Plan>(*base);
          if (!mutated) {
            // The mutated planner refuses or fails where the real one plans: killed.
            Violation v;
            v.detail = "the mutated planner fails: " + mutated.status().message();
            std::lock_guard<std::mutex> lock(mu);
            if (i < first_kill.load()) {
              first_kill = i;
              kill_violation = v;
            }
            return;
          }
          if (m->kind() == MutantKind::kPlan && !m->apply(*mutated)) return;
          applied.fetch_add(1);
          if (samePlan(*base, *mutated)) return;
          differed.fetch_add(1);
          auto verdict = properties::checkPlan(*mutated, ledger);
          std::lock_guard<std::mutex> lock(mu);
          if (!verdict.holds()) {
            if (i < first_kill.load()) {
              first_kill = i;
              kill_violation = verdict.firstViolation();
            }
          } else if (smallest_index == kNone || sizeOf(cases[i]) < sizeOf(cases[smallest_index])) {
            smallest_index = i;
          }
        },
        [&](std::int64_t i) { return i > first_kill.load(); });
    // Cases up to and including the verdict, in case order (worker threads
    // may look a little further; that is not part of the result).
    o.cases_run = first_kill.load() != kNone ? first_kill.load() + 1 : n;
    o.applied = applied.load();
    o.differed = differed.load();
    if (first_kill.load() != kNone) {
      o.status = MutantStatus::kKilled;
      o.kill_index = first_kill.load();
      o.kill_case = cases[o.kill_index];
      o.kill_violation = kill_violation;
    } else if (o.differed == 0) {
      o.status = MutantStatus::kEquivalent;
      if (m->kind() == MutantKind::kDecision) {
        o.argument = "planning with this decision flipped gives the unmutated plan on all " + std::to_string(n) +
                     " cases: no case of this space reaches the decision site";
      } else {
        o.argument = o.applied == 0
                         ? "its site occurs in none of the " + std::to_string(n) +
                               " cases: every mutated plan is the unmutated plan"
                         : "its plans run the same ops on the same communicators as the unmutated plans on all " +
                               std::to_string(o.applied) + " cases where its site occurs (none of the other " +
                               std::to_string(n - o.applied) + " has it)";
      }
    } else {
      o.status = MutantStatus::kSurvived;
      o.smallest = cases[smallest_index];
      o.argument = "its plans differ on " + std::to_string(o.differed) +
                   " cases and every property holds on all of them; smallest: " +
                   reproduceCommand(cases[smallest_index], policyName(spec.policy));
    }
    result.outcomes.push_back(o);
    if (listener) listener->onMutant(result.outcomes.back(), ++done, static_cast<int>(mutants.size()));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace seam::mutants
