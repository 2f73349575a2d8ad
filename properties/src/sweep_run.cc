// runSweep: the case space walked one model x configuration (a block) at a
// time, in sweep order. Workers take blocks, run their cases and fold them
// into the totals and the listener as each block ends: memory holds the
// blocks in flight, the totals and the first failures, never the whole space,
// so a world 256 sweep needs what a world 8 one does.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "seam/properties/engine_finding.h"
#include "seam/properties/verdict_memo.h"
#include "sweep_cases.h"
#include "sweep_tally.h"

namespace seam::properties {

namespace {

/// The cases of one model under one configuration: indices first .. first + size - 1.
struct Block {
  int model = 0;
  ParallelConfig config;
  std::int64_t first = 0;
  std::int64_t size = 0;
};

/// A case buildPlan did not plan: refused (the engine's reason, or seam's gap)
/// or, for any other error, a violation: the policy owed a plan.
void takePlanStatus(CaseResult& o, const Status& st) {
  o.refused = st.code() == StatusCode::kRefused;
  if (o.refused) {
    o.refusal = st.message();
    return;
  }
  Violation v;
  v.property = Property::kOwedOnce;
  v.cls = ViolationClass::kMissingOutput;
  v.detail = "the policy could not plan this case: " + st.message();
  o.violation = v;
}

/// What a worker reuses from case to case: the ledger's buffers, the judges',
/// and the verdicts of the configuration it is on.
struct Scratch {
  Ledger ledger;
  JudgeScratch judges;
  VerdictMemo verdicts;
};

/// One block's finished cases; `results` point into `cases`.
struct BlockRun {
  std::vector<Case> cases;
  std::vector<CaseResult> results;
  double seconds = 0;
};

class SweepRun {
 public:
  SweepRun(const SweepSpec& spec, SweepListener* listener) : spec_(spec), listener_(listener) {}

  SweepResult run() {
    const auto start = std::chrono::steady_clock::now();
    planBlocks();
    std::vector<std::thread> threads;
    for (int j = 1; j < spec_.jobs; ++j) threads.emplace_back([this] { work(); });
    work();
    for (std::thread& t : threads) t.join();
    for (auto& [index, failure] : failures_) result_.failures.push_back(std::move(failure));
    result_.cases = result_.checked + result_.refused;
    result_.run_here = result_.cases;
    result_.refusals = sortedRefusals(refusals_);
    result_.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::move(result_);
  }

 private:
  bool mine(std::int64_t index) const {
    return !std::binary_search(spec_.skip.begin(), spec_.skip.end(), index);
  }

  // The blocks of this process's shard, with their first indices, and the
  // number of cases it runs (less what a resumed run did). Shard i/n takes
  // every n-th model x configuration from the i-th: whole blocks, so that a
  // case meets its twins in the same process (VerdictMemo).
  void planBlocks() {
    std::int64_t index = 0;
    std::int64_t ordinal = 0;
    for (int mi = 0; mi < static_cast<int>(spec_.models.size()); ++mi) {
      const SweepModel& m = spec_.models[mi];
      ModelTally& tally = result_.per_model.emplace_back();
      tally.model = m.name;
      tally.why_not = m.why_not;
      if (!m.model) continue;
      for (const ParallelConfig& config : sweepConfigs(*m.model, spec_.world, spec_.filter)) {
        std::int64_t size = 0;
        for (const FlagCases& fc : flagCases(*m.model, config, spec_.flags))
          size += static_cast<std::int64_t>(fc.batches.size());
        if (ordinal++ % spec_.shard.count == spec_.shard.index) {
          blocks_.push_back({mi, config, index, size});
          total_ += size - skipped(index, index + size);
        }
        index += size;
      }
    }
  }

  /// Of the indices [from, to), how many a resumed run did.
  std::int64_t skipped(std::int64_t from, std::int64_t to) const {
    return std::lower_bound(spec_.skip.begin(), spec_.skip.end(), to) -
           std::lower_bound(spec_.skip.begin(), spec_.skip.end(), from);
  }

  void work() {
    Scratch scratch;
    BlockRun run;
    for (;;) {
      const std::size_t b = next_.fetch_add(1);
      if (b >= blocks_.size()) return;
      runBlock(blocks_[b], scratch, run);
      if (run.results.empty()) continue;
      std::lock_guard<std::mutex> lock(mutex_);
      fold(blocks_[b], run);
    }
  }

  void runBlock(const Block& b, Scratch& scratch, BlockRun& out) const {
    const auto t0 = std::chrono::steady_clock::now();
    const ModelRef& model = *spec_.models[b.model].model;
    out.cases.clear();
    out.cases.reserve(static_cast<std::size_t>(b.size));  // results point into it
    out.results.clear();
    scratch.verdicts.clear();
    std::int64_t index = b.first;
    for (FlagCases& fc : flagCases(model, b.config, spec_.flags)) {
      // buildPlan's word on every batch of the flag set that it validates,
      // where the engine's rule reads no batch: the start-up refusals
      // (serverArgsRefusal) asked at once, the other gates (flagSetRefusal)
      // after the set's first refusal, so that a set that plans pays nothing.
      std::optional<Status> refusal;
      bool asked = false;
      for (Batch& batch : fc.batches) {
        const std::int64_t i = index++;
        if (!mine(i)) continue;
        Case& c = out.cases.emplace_back();
        c.model = model;
        c.config = b.config;
        c.flags = fc.flags;
        c.batch = std::move(batch);
        if (!refusal) refusal = serverArgsRefusal(c);
        CaseResult& o = out.results.emplace_back();
        o.index = i;
        o.model = b.model;
        o.c = &c;
        if (!*refusal && validateCase(c)) {
          takePlanStatus(o, *refusal);
          continue;
        }
        runCase(c, scratch, o);
        if (o.refused && !asked) {
          asked = true;
          refusal = flagSetRefusal(c, spec_.policy, spec_.schema);
        }
      }
    }
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  void runCase(const Case& c, Scratch& scratch, CaseResult& o) const {
    auto plan = buildPlan(c, spec_.policy, spec_.schema);
    if (!plan) return takePlanStatus(o, plan.status());
    if (const CaseVerdict* kept = scratch.verdicts.find(*plan)) {
      o.violation = kept->violation;
      o.engine_site = kept->engine_site;
      o.plan_hash = kept->plan_hash;
      return;
    }
    o.plan_hash = planHash(*plan);
    o.violation = checkPlan(*plan, scratch.ledger, scratch.judges, Depth::kFirst).firstViolation();
    if (o.violation && modelsEngineAsRun(spec_.policy, spec_.schema))
      o.engine_site = engineFindingSite(*plan, *o.violation);
    scratch.verdicts.keep(*plan, {o.violation, o.engine_site, o.plan_hash});
  }

  // Under mutex_: the block's cases into the totals, the first failures and
  // the listener.
  void fold(const Block& b, const BlockRun& run) {
    ModelTally& tally = result_.per_model[b.model];
    tally.seconds += run.seconds;
    tally.run_here += static_cast<std::int64_t>(run.results.size());
    const std::vector<CaseResult>& rs = run.results;
    for (std::size_t i = 0; i < rs.size();) {
      const CaseResult& o = rs[i];
      if (o.refused) {
        // A flag set refused whole is a run of one reason: counted at once.
        std::size_t end = i + 1;
        while (end < rs.size() && rs[end].refused && rs[end].refusal == o.refusal) ++end;
        countRefused(result_, tally, refusals_, o.refusal, static_cast<std::int64_t>(end - i));
        i = end;
        continue;
      }
      if (!o.engine_site.empty()) ++result_.engine_findings[o.engine_site];
      countCase(result_, tally, refusals_, false, o.refusal, o.violation.has_value(), 0);
      if (o.violation) keepFailure(o);
      ++i;
    }
    if (!listener_) return;
    if (b.model != announced_) {
      announced_ = b.model;
      listener_->onModel(spec_.models[b.model].name);
    }
    listener_->onCases(run.results);
    done_ += static_cast<std::int64_t>(run.results.size());
    listener_->onProgress(done_, total_);
  }

  // The failures kept are the first max_failures in case order, whatever
  // order the blocks end in.
  void keepFailure(const CaseResult& o) {
    const std::size_t most = static_cast<std::size_t>(std::max(0, spec_.max_failures));
    if (failures_.size() >= most && (most == 0 || failures_.rbegin()->first < o.index)) return;
    failures_[o.index] = {o.index, failureText(*o.violation, o.engine_site),
                          reproduceCommand(*o.c, policyName(spec_.policy)), o.engine_site};
    if (failures_.size() > most) failures_.erase(std::prev(failures_.end()));
  }

  const SweepSpec& spec_;
  SweepListener* listener_;
  std::vector<Block> blocks_;
  std::int64_t total_ = 0;
  std::atomic<std::size_t> next_{0};
  std::mutex mutex_;  // guards what follows
  SweepResult result_;
  std::map<std::string, std::int64_t> refusals_;
  std::map<std::int64_t, SweepFailure> failures_;
  std::int64_t done_ = 0;
  int announced_ = -1;
};

}  // namespace

Expected<SweepResult> runSweep(const SweepSpec& spec, SweepListener* listener) {
  if (spec.world < 1 || spec.world > kMaxWorld) {
    return Status::invalid("--world " + std::to_string(spec.world) + " is not in 1.." +
                           std::to_string(kMaxWorld));
  }
  if (spec.jobs < 1)
    return Status::invalid("--jobs " + std::to_string(spec.jobs) + " must be >= 1");
  return SweepRun(spec, listener).run();
}

}  // namespace seam::properties
