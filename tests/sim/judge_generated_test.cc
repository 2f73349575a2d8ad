// The judges' groups, rows and DP lowering against the planner's copies on
// generated cases whose batches reach the bounds the sweep spaces never do:
// uneven and idle shards, shards of thousands of tokens up to and past the
// fusion gate's 2048 (kFuseMaxTokens), counts one off a multiple of attn_tp
// (the DP buffer's alignment) and of 2 attn_cp (zigzag's blocks). rapidcheck
// prints its seed first ("Using configuration: seed=N"); RC_PARAMS="seed=N"
// replays the run and a failure prints its own reproduce line.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "judge_agreement.h"
#include "seam/properties/generators.h"
#include "seam/properties/sweep.h"
#include "seam/sim/policy/policy.h"

namespace seam {
namespace {

int roundUpTo(int n, int m) { return (n + m - 1) / m * m; }

/// Tokens of one DP shard of `config`: idle (under DP attention), a few, at
/// the fusion bound (one below, at, one past; the aligned entry past it and
/// one either side), a multiple of attn_tp or of 2 attn_cp one either side,
/// or anything up to a little over twice the bound.
rc::Gen<int> genShardTokens(const ParallelConfig& config) {
  const int atp = config.tp / (config.attn_dp * config.attn_cp);
  const int past = roundUpTo(kFuseMaxTokens + 1, atp);
  std::vector<int> bounds = {kFuseMaxTokens - 1, kFuseMaxTokens, kFuseMaxTokens + 1,
                             past - 1,           past,           past + 1};
  const auto aligned = [](int unit) {
    return rc::gen::apply([unit](int k, int off) { return std::max(1, k * unit + off); },
                          rc::gen::inRange(1, 2 * kFuseMaxTokens / unit + 2),
                          rc::gen::element(-1, 0, 1));
  };
  return rc::gen::weightedOneOf<int>({
      {config.attn_dp > 1 ? 2u : 0u, rc::gen::just(0)},
      {2, rc::gen::inRange(1, 10)},
      {2, rc::gen::elementOf(bounds)},
      {2, aligned(std::max(atp, 2))},
      {1, aligned(2 * config.attn_cp)},
      {3, rc::gen::inRange(1, 2 * kFuseMaxTokens + 3 * atp)},
  });
}

/// One entry per DP shard, at least one token in all.
rc::Gen<Batch> genBoundBatch(const ParallelConfig& config) {
  const auto shards = static_cast<std::size_t>(std::max(1, config.attn_dp));
  const auto tokens =
      rc::gen::suchThat(rc::gen::container<std::vector<int>>(shards, genShardTokens(config)),
                        [](const std::vector<int>& t) {
                          return std::any_of(t.begin(), t.end(), [](int n) { return n > 0; });
                        });
  return rc::gen::map(tokens, [](std::vector<int> t) { return Batch{std::move(t)}; });
}

/// The first disagreement between the judges and the planner's copies on
/// `c`: groups, rows of every lane, then (a plan the engine runs) the DP
/// lowering of its DP ops; "" when none. Labels what the case reached.
std::string disagreementOn(const Case& c) {
  const JudgeGeometry g = judgeGeometry(c);
  RC_TAG(c.batch.maxShard() > kFuseMaxTokens ? "past 2048" : "within 2048");
  RC_CLASSIFY(c.batch.hasIdleShard(), "idle shard");
  RC_CLASSIFY(g.cp_layout != CpLayout::kReplicated, "CP-sharded");
  RC_CLASSIFY(!g.tbo_split.empty(), "TBO split");
  RC_CLASSIFY(c.config.world() == 16, "world 16");
  std::string d = judge_agreement::groupsDisagreement(c.config);
  if (d.empty()) d = judge_agreement::rowsDisagreement(c, g);
  if (!d.empty()) return d;
  const Expected<Plan> plan = buildPlan(c, PolicyKind::kDeclared);
  if (!plan.hasValue()) return "";  // refused by the engine: no DP ops to lower
  judge_agreement::DpCounts counts;
  d = judge_agreement::dpDisagreement(c, *plan, &counts);
  RC_CLASSIFY(counts.lowerings > 0, "DP ops lowered");
  return d;
}

/// One case of each (preset, config, flags) of the world-8 and world-16
/// sweep spaces whose first batch the engine runs, built once: the presets'
/// CP layouts, gatherv and TBO flags, which generated patterns seldom reach.
const std::vector<Case>& sweepShapes() {
  static const std::vector<Case> shapes = [] {
    std::vector<Case> out;
    std::set<std::string> seen;
    for (int world : {8, 16}) {
      for (const properties::SweepModel& m : properties::defaultSweepModels()) {
        if (!m.model) continue;
        for (Case& c : properties::enumerateCases(*m.model, world)) {
          const std::string key = m.name + c.config.describe() + c.flags.describe();
          if (!seen.insert(key).second || !validateCase(c).isOk()) continue;
          if (buildPlan(c, PolicyKind::kDeclared).hasValue()) out.push_back(std::move(c));
        }
      }
    }
    return out;
  }();
  return shapes;
}

RC_GTEST_PROP(JudgeGenerated, AGeneratedCaseAgreesWithThePlannersOnBatchesPastTheTokenBounds, ()) {
  Case c = *properties::genCase(0, 8);
  c.batch = *genBoundBatch(c.config);
  RC_PRE(validateCase(c).isOk());
  const std::string d = disagreementOn(c);
  if (!d.empty()) RC_FAIL(d);
}

RC_GTEST_PROP(JudgeGenerated, ASweepShapeAgreesWithThePlannersOnBatchesPastTheTokenBounds, ()) {
  const std::vector<Case>& shapes = sweepShapes();  // drawn by index: elementOf copies them all
  Case c = shapes[*rc::gen::inRange<std::size_t>(0, shapes.size())];
  c.batch = *genBoundBatch(c.config);
  RC_PRE(validateCase(c).isOk());
  const std::string d = disagreementOn(c);
  if (!d.empty()) RC_FAIL(d);
}

}  // namespace
}  // namespace seam
