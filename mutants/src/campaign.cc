#include "seam/mutants/campaign.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <tuple>

#include "campaign_run.h"
#include "seam/properties/engine_finding.h"

namespace seam::mutants {

namespace {

constexpr std::array<std::string_view, 5> kStatusNames = {"killed", "survived", "equivalent",
                                                          "not-covered", "planner-error"};

/// splitmix64: a fixed mixing function, the same on every platform.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// FNV-1a of a mutant's id.
std::uint64_t idHash(std::string_view id) {
  std::uint64_t h = 1469598103934665603ULL;
  for (char ch : id) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
  return h;
}

}  // namespace

std::string_view statusName(MutantStatus s) { return kStatusNames[static_cast<int>(s)]; }

MutantStatus statusFrom(bool killed, std::int64_t differed, std::int64_t planner_errors,
                        std::int64_t applied) {
  if (killed) return MutantStatus::kKilled;
  if (differed > 0) return MutantStatus::kSurvived;
  if (planner_errors > 0) return MutantStatus::kPlannerError;
  return applied > 0 ? MutantStatus::kEquivalent : MutantStatus::kNotCovered;
}

std::optional<MutantStatus> parseStatus(std::string_view name) {
  for (size_t i = 0; i < kStatusNames.size(); ++i) {
    if (kStatusNames[i] == name) return static_cast<MutantStatus>(i);
  }
  return std::nullopt;
}

int sampledSite(std::uint64_t seed, std::string_view mutant_id, std::int64_t case_index,
                int sites) {
  if (sites <= 1) return 0;
  const std::uint64_t x =
      mix(mix(seed ^ idHash(mutant_id)) ^ static_cast<std::uint64_t>(case_index));
  return static_cast<int>(x % static_cast<std::uint64_t>(sites));
}

int CampaignResult::count(MutantStatus s) const {
  return static_cast<int>(std::count_if(outcomes.begin(), outcomes.end(),
                                        [s](const auto& o) { return o.status == s; }));
}

std::string killReproduce(const Case& c, PolicyKind policy, const Mutant& m, int site) {
  std::string line = reproduceCommand(c, policyName(policy)) + " --mutant " + std::string(m.id());
  if (m.kind() == MutantKind::kPlan) line += " --site " + std::to_string(site);
  return line;
}

namespace {

/// The fusion gate's token bound, reached: for each model and world, the
/// first fused, unscattered case with tp > 1 and no DP attention again with
/// kFuseMaxTokens and kFuseMaxTokens + 1 tokens (a few cases: a replay's
/// cost grows with the rows).
void addBoundCases(const std::vector<Case>& enumerated, std::vector<Case>& out) {
  for (const Case& c : enumerated) {
    if (c.config.tp < 2 || c.config.attn_dp != 1 || !c.flags.fusion || c.flags.input_scattered)
      continue;
    for (int tokens : {kFuseMaxTokens, kFuseMaxTokens + 1}) {
      Case bound = c;
      bound.batch = Batch{{tokens}};
      out.push_back(std::move(bound));
    }
    return;
  }
}

}  // namespace

std::vector<Case> campaignCases(const CampaignSpec& spec) {
  std::vector<Case> out;
  for (const auto& m : spec.models) {
    if (!m.model) continue;
    for (int world : spec.worlds) {
      std::vector<Case> enumerated = properties::enumerateCases(*m.model, world);
      if (spec.bound_cases) addBoundCases(enumerated, out);
      for (Case& c : enumerated) out.push_back(std::move(c));
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
      if (topo.groupOf(x[i].groupAxis(), static_cast<int>(r)) !=
          topo.groupOf(y[i].groupAxis(), static_cast<int>(r))) {
        return false;
      }
    }
  }
  return true;
}

/// A case's size, for "the smallest case": layers, then world, then tokens.
std::tuple<int, int, int> sizeOf(const Case& c) {
  return {c.model.pattern.size() + static_cast<int>(c.model.pattern.mtp.size()), c.config.world(),
          c.batch.total()};
}

constexpr std::int64_t kChunk = 32;

/// Plans and checks every case of the space (`all`, moved from) with no
/// mutant. Returns the cases the engine does not refuse (the campaign's
/// space); `result` gets the refusals and the first failing case, `kept`
/// the indices of the cases returned.
std::vector<Case> runBaseline(const CampaignSpec& spec, std::vector<Case>& all,
                              CampaignResult& result, CampaignListener* listener,
                              std::vector<std::int64_t>& kept) {
  const auto n = static_cast<std::int64_t>(all.size());
  std::atomic<std::int64_t> checked{0};
  std::vector<char> refused(all.size(), 0);
  std::vector<char> failed(all.size(), 0);
  std::vector<std::optional<Violation>> baseline_violation(all.size());
  std::vector<char> engine_finding(all.size(), 0);
  const bool engine_as_run = properties::modelsEngineAsRun(spec.policy, spec.schema);
  parallelFor(
      static_cast<std::int64_t>(all.size()), spec.jobs, kChunk,
      [&](std::int64_t i, Ledger& ledger) {
        // A chunk's worth at a time: the listener draws, it need not hear of every case.
        if (const std::int64_t done = ++checked; listener && (done % kChunk == 0 || done == n))
          listener->onBaselineProgress(done, n);
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
          const Violation v = *verdict.firstViolation();
          if (engine_as_run && !properties::engineFindingSite(*plan, v).empty()) {
            engine_finding[i] = 1;
            return;
          }
          failed[i] = 1;
          baseline_violation[i] = v;
        }
      },
      [](std::int64_t) { return false; });
  std::vector<Case> cases;
  cases.reserve(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    if (failed[i] && result.baseline_holds) {
      result.baseline_holds = false;
      result.baseline_case = all[i];
      result.baseline_reproduce = reproduceCommand(all[i], policyName(spec.policy));
      result.baseline_violation = baseline_violation[i];
    }
    if (refused[i]) {
      ++result.baseline_refused;
    } else if (engine_finding[i]) {
      ++result.baseline_engine_findings;
    } else {
      kept.push_back(static_cast<std::int64_t>(i));
      cases.push_back(std::move(all[i]));
    }
  }
  return cases;
}

/// Whether a recalled baseline fits a space of `space` cases: its kept
/// indices ascending within it, its counts adding up to it.
bool fits(const BaselineSummary& b, std::int64_t space) {
  if (b.space != space || b.refused < 0 || b.engine_findings < 0) return false;
  if (static_cast<std::int64_t>(b.kept.size()) + b.refused + b.engine_findings != space)
    return false;
  for (std::size_t i = 0; i < b.kept.size(); ++i) {
    if (b.kept[i] < 0 || b.kept[i] >= space || (i > 0 && b.kept[i] <= b.kept[i - 1])) return false;
  }
  return true;
}

/// The campaign's cases: a recalled baseline's kept cases of `all`, or those
/// the baseline checks keep (told to the listener when it holds).
std::vector<Case> baselineCases(const CampaignSpec& spec, CampaignResult& result,
                                CampaignListener* listener) {
  std::vector<Case> all = campaignCases(spec);
  const auto space = static_cast<std::int64_t>(all.size());
  BaselineRecall recall = listener ? listener->recalledBaseline(space) : BaselineRecall{};
  if (recall.baseline && fits(*recall.baseline, space)) {
    std::vector<Case> cases;
    cases.reserve(recall.baseline->kept.size());
    for (std::int64_t i : recall.baseline->kept) cases.push_back(std::move(all[i]));
    result.baseline_refused = recall.baseline->refused;
    result.baseline_engine_findings = recall.baseline->engine_findings;
    result.baseline_reused = true;
    return cases;
  }
  result.baseline_not_reused = recall.baseline ? "its cases do not fit the space" : recall.why_not;
  BaselineSummary checked;
  checked.space = space;
  std::vector<Case> cases = runBaseline(spec, all, result, listener, checked.kept);
  if (result.baseline_holds && listener) {
    checked.refused = result.baseline_refused;
    checked.engine_findings = result.baseline_engine_findings;
    listener->onBaselineChecked(checked);
  }
  return cases;
}

/// The order in which a campaign tries the cases: case order for seed 0,
/// else a permutation drawn from the seed (Fisher-Yates over splitmix64).
std::vector<std::int64_t> trialOrder(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> order(n);
  for (std::int64_t i = 0; i < n; ++i) order[i] = i;
  if (seed == 0) return order;
  std::uint64_t state = seed;
  for (std::int64_t i = n - 1; i > 0; --i) {
    state = mix(state);
    std::swap(order[i], order[state % static_cast<std::uint64_t>(i + 1)]);
  }
  return order;
}

/// The argument of a mutant that was not killed.
std::string verdictArgument(const MutantOutcome& o, std::int64_t n) {
  const std::string all = std::to_string(n);
  switch (o.status) {
    case MutantStatus::kNotCovered:
      return "its site occurs in none of the " + all + " cases: not covered, left out of the score";
    case MutantStatus::kEquivalent:
      return "its site occurs in " + std::to_string(o.applied) + " of the " + all +
             " cases and on each the mutated plan runs the same ops on the same communicators "
             "as the unmutated plan";
    default:
      return "";
  }
}

/// Plans case `i` under mutant `m` at its sampled site; says what it found.
void tryCase(const CampaignSpec& spec, const Mutant& m, const Case& c, std::int64_t i,
             std::int64_t t, Ledger& ledger, MutantFindings& found,
             const std::function<bool(std::int64_t, std::int64_t)>& smaller) {
  auto base = buildPlan(c, spec.policy, spec.schema);
  if (!base) return;
  int site = 0;
  Expected<Plan> mutated = *base;
  if (m.kind() == MutantKind::kDecision) {
    std::uint32_t reached = 0;
    mutated = buildPlan(c, spec.policy, Schema{spec.schema.flipped | m.schema().flipped, &reached});
    if ((reached & m.schema().flipped) == 0) return;  // the site was not reached
    if (!mutated) {
      // The mutated planner fails where the real one plans: an error, not a kill.
      found.plannerError(t, mutated.status().message());
      return;
    }
  } else {
    const int sites = m.sites(*base);
    if (sites <= 0) return;
    site = sampledSite(spec.seed, m.id(), i, sites);
    if (!m.applyAt(*mutated, site)) return;
  }
  found.applied(t);
  if (samePlan(*base, *mutated)) return;
  found.differed(t);
  auto verdict = properties::checkPlan(*mutated, ledger);
  if (!verdict.holds()) {
    found.killed(t, verdict.firstViolation(), site);
  } else {
    found.survived(t, smaller, site);
  }
}

/// One mutant against the space, stopped at its first kill in trial order.
MutantOutcome runMutant(const CampaignSpec& spec, const Mutant& m, const std::vector<Case>& cases) {
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t n = static_cast<std::int64_t>(cases.size());
  // Each mutant tries the cases in an order of its own: its cases tried up
  // to a kill are a sample of how rare its killing cases are.
  const std::vector<std::int64_t> order =
      trialOrder(n, spec.seed == 0 ? 0 : spec.seed ^ idHash(m.id()));
  MutantFindings found(n);
  const std::function<bool(std::int64_t, std::int64_t)> smaller = [&](std::int64_t a,
                                                                      std::int64_t b) {
    return sizeOf(cases[order[a]]) < sizeOf(cases[order[b]]);
  };
  parallelFor(
      n, spec.jobs, kChunk,
      [&](std::int64_t t, Ledger& ledger) {
        tryCase(spec, m, cases[order[t]], order[t], t, ledger, found, smaller);
      },
      [&](std::int64_t t) { return found.decidedBefore(t); });
  MutantOutcome o = found.outcome(&m, n);
  if (o.status == MutantStatus::kKilled) {
    o.kill_index = order[o.kill_index];
    o.kill_case = cases[o.kill_index];
    o.kill_reproduce = killReproduce(cases[o.kill_index], spec.policy, m, o.kill_site);
  } else if (o.status == MutantStatus::kSurvived) {
    const Case& smallest = cases[order[found.smallest()]];
    o.smallest = smallest;
    o.argument = "its plans differ on " + std::to_string(o.differed) +
                 " cases and every property holds on all of them; smallest: " +
                 killReproduce(smallest, spec.policy, m, found.smallestSite());
  } else if (o.status == MutantStatus::kPlannerError) {
    o.argument = "the mutated planner fails on " + std::to_string(o.planner_errors) +
                 " cases where the real one plans (not a kill): " + found.errorDetail() +
                 "; first: " + killReproduce(cases[order[found.firstError()]], spec.policy, m, 0);
  } else {
    o.argument = verdictArgument(o, n);
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return o;
}

}  // namespace

Expected<CampaignResult> runCampaign(const CampaignSpec& spec, CampaignListener* listener) {
  if (spec.jobs < 1)
    return Status::invalid("--jobs " + std::to_string(spec.jobs) + " must be >= 1");
  for (int w : spec.worlds) {
    if (w < 1 || w > kMaxWorld)
      return Status::invalid("world " + std::to_string(w) + " is out of range");
  }
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&]() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  CampaignResult result;
  result.seed = spec.seed;
  // The space, without the cases the engine refuses (they plan under no mutant).
  const std::vector<Case> cases = baselineCases(spec, result, listener);
  result.cases = static_cast<std::int64_t>(cases.size());
  if (listener) listener->onBaseline(result.cases, result.baseline_holds);
  if (!result.baseline_holds) {
    result.seconds = elapsed();
    return result;
  }
  std::vector<const Mutant*> mutants = spec.mutants;
  if (mutants.empty()) mutants.assign(registry().begin(), registry().end());
  int done = 0;
  for (const Mutant* m : mutants) {
    std::optional<MutantOutcome> stored = listener ? listener->recalled(*m) : std::nullopt;
    if (stored) {
      stored->mutant = m;
      result.outcomes.push_back(*stored);
    } else {
      result.outcomes.push_back(runMutant(spec, *m, cases));
    }
    if (listener)
      listener->onMutant(result.outcomes.back(), ++done, static_cast<int>(mutants.size()));
  }
  result.seconds = elapsed();
  return result;
}

}  // namespace seam::mutants
