#include "seam/reports/shard_rows.h"

#include <algorithm>
#include <map>

#include "seam/properties/engine_finding.h"
#include "seam/reports/recorders.h"
#include "seam/sim/base/bytes.h"

namespace seam::reports {

std::vector<CaseRows> caseRows(const std::vector<properties::CaseResult>& chunk,
                               const properties::SweepSpec& spec) {
  std::vector<CaseRows> out;
  out.reserve(chunk.size());
  const std::string policy(policyName(spec.policy));
  // A sweep's chunk is one model under one configuration: its texts are
  // described once, not per case (a 124-stage pattern's text is long).
  const properties::CaseResult* previous = nullptr;
  for (const auto& r : chunk) {
    CaseRecord rec;
    const bool same_model =
        previous && previous->model == r.model && previous->c->model.pattern == r.c->model.pattern;
    const bool same_config = previous && previous->c->config == r.c->config;
    const CaseRecord* before = previous ? &out.back().first : nullptr;
    rec.index = r.index;
    rec.model = same_model ? before->model : r.c->model.name;
    rec.pattern = same_model ? before->pattern : r.c->model.pattern.text();
    rec.group = same_model ? before->group : spec.models[r.model].name;
    rec.config = same_config ? before->config : r.c->config.describe();
    rec.flags =
        previous && previous->c->flags == r.c->flags ? before->flags : r.c->flags.describe();
    rec.batch = r.c->batch.describe();
    rec.policy = policy;
    rec.outcome = r.refused ? CaseOutcome::kRefused
                            : (r.violation ? CaseOutcome::kViolated : CaseOutcome::kHolds);
    rec.refusal = r.refusal;
    rec.reproduce = reproduceCommand(*r.c, policy) + properties::decisionFlags(spec.schema);
    rec.plan_hash = r.plan_hash;
    std::vector<VerdictRecord> failing;
    if (r.violation) {
      failing.push_back({static_cast<int>(r.violation->property), false,
                         std::string(violationClassName(r.violation->cls)),
                         properties::failureText(*r.violation, r.engine_site)});
    }
    out.emplace_back(std::move(rec), std::move(failing));
    previous = &r;
  }
  return out;
}

void SweepBatcher::onProgress(std::int64_t done, std::int64_t total) {
  if (next_) next_->onProgress(done, total);
}

void SweepBatcher::onModel(const std::string& model) {
  if (next_) next_->onModel(model);
}

void SweepBatcher::onCases(const std::vector<properties::CaseResult>& chunk) {
  for (CaseRows& row : caseRows(chunk, spec_)) {
    pending_.push_back(std::move(row));
    if (static_cast<int>(pending_.size()) == SweepRecorder::kBatchCases) flush();
  }
}

void SweepBatcher::flush() {
  if (pending_.empty()) return;
  std::vector<CaseRows> batch;
  batch.swap(pending_);
  sink_(std::move(batch));
}

namespace {

/// Runs `body` in one batch of the store (a case batch where it makes
/// addCase calls alone): committed when it succeeds, rolled back (the store
/// freed for other writers) when it or the commit fails.
template <class Body>
Status inOneBatch(Store& store, Body&& body, bool cases_only = false) {
  if (Status st = cases_only ? store.beginCaseBatch() : store.beginBatch(); !st) return st;
  Status st = body();
  if (st) st = store.commitBatch();
  if (!st) (void)store.rollbackBatch();
  return st;
}

}  // namespace

Status writeCaseRows(Store& store, std::int64_t run_id, std::vector<CaseRows> rows) {
  std::sort(rows.begin(), rows.end(),
            [](const CaseRows& a, const CaseRows& b) { return a.first.index < b.first.index; });
  for (std::size_t begin = 0; begin < rows.size(); begin += SweepRecorder::kBatchCases) {
    const std::size_t end = std::min(rows.size(), begin + SweepRecorder::kBatchCases);
    Status st = inOneBatch(
        store,
        [&] {
          for (std::size_t i = begin; i < end; ++i) {
            if (Status added = store.addCase(run_id, rows[i].first, rows[i].second); !added)
              return added;
          }
          return Status::ok();
        },
        /*cases_only=*/true);
    if (!st) return st;
  }
  return Status::ok();
}

MutantRows mutantRows(const mutants::MutantOutcome& o, PolicyKind policy) {
  MutantRows rows;
  MutantRecord& rec = rows.mutant;
  rec.id = std::string(o.mutant->id());
  rec.kind = std::string(mutants::kindName(o.mutant->kind()));
  rec.description = std::string(o.mutant->description());
  rec.status = std::string(mutants::statusName(o.status));
  rec.argument = o.argument;
  rec.cases_run = o.cases_run;
  rec.applied = o.applied;
  rec.differed = o.differed;
  rec.planner_errors = o.planner_errors;
  rec.seconds = o.seconds;
  if (o.status == mutants::MutantStatus::kKilled) {
    KillRecord k;
    k.mutant_id = rec.id;
    k.case_index = o.kill_index;
    k.site = o.kill_site;
    if (o.kill_violation) {
      k.property = static_cast<int>(o.kill_violation->property);
      k.violation_class = std::string(violationClassName(o.kill_violation->cls));
      k.text = describeViolation(*o.kill_violation);
    }
    if (o.kill_case)
      k.reproduce = mutants::killReproduce(*o.kill_case, policy, *o.mutant, o.kill_site);
    rows.kill = std::move(k);
  }
  return rows;
}

mutants::MutantOutcome outcomeFromRows(const mutants::Mutant* mutant, const MutantRows& rows) {
  const MutantRecord& m = rows.mutant;
  mutants::MutantOutcome o;
  o.mutant = mutant;
  o.cases_run = m.cases_run;
  o.applied = m.applied;
  o.differed = m.differed;
  o.planner_errors = m.planner_errors;
  o.seconds = m.seconds;
  o.argument = m.argument;
  o.status = mutants::parseStatus(m.status).value_or(mutants::MutantStatus::kSurvived);
  if (rows.kill) {
    const KillRecord& k = *rows.kill;
    o.kill_index = k.case_index;
    o.kill_site = k.site;
    o.kill_reproduce = k.reproduce;
    Violation v;
    v.property = static_cast<Property>(k.property);
    for (int c = 0; c < kViolationClassCount; ++c) {
      if (violationClassName(static_cast<ViolationClass>(c)) == k.violation_class)
        v.cls = static_cast<ViolationClass>(c);
    }
    v.detail = k.text;
    o.kill_violation = v;
  }
  return o;
}

void CampaignShare::onBaseline(std::int64_t cases, bool holds) {
  if (next_) next_->onBaseline(cases, holds);
}

void CampaignShare::onMutant(const mutants::MutantOutcome& outcome, int, int) {
  if (!mine(*outcome.mutant)) return;  // passed over
  if (next_) next_->onMutant(outcome, ++done_, static_cast<int>(share_.size()));
  sink_(mutantRows(outcome, policy_));
}

std::optional<mutants::MutantOutcome> CampaignShare::recalled(const mutants::Mutant& mutant) {
  if (mine(mutant)) return std::nullopt;
  return mutants::MutantOutcome{};  // not this process's: onMutant passes it over
}

namespace {

/// Puts each mutant's row and its kill, in order, into the open batch.
Status putMutantRows(Store& store, std::int64_t run_id, const std::vector<MutantRows>& rows) {
  for (const MutantRows& m : rows) {
    Status st = store.putMutant(run_id, m.mutant);
    if (st && m.kill) st = store.addKill(run_id, *m.kill);
    if (!st) return st;
  }
  return Status::ok();
}

}  // namespace

Status writeMutantRows(Store& store, std::int64_t run_id, const std::vector<MutantRows>& rows) {
  return inOneBatch(store, [&] { return putMutantRows(store, run_id, rows); });
}

Expected<std::vector<MutantRows>> putMutantRowsInOrder(
    Store& store, std::int64_t run_id, const std::vector<const mutants::Mutant*>& order) {
  auto stored = store.mutants(run_id);
  if (!stored) return stored.status();
  auto kills = store.kills(run_id);
  if (!kills) return kills.status();
  std::map<std::string, MutantRows> by_id;
  std::vector<std::string> stored_order;
  for (MutantRecord& m : *stored) {
    stored_order.push_back(m.id);
    by_id[m.id].mutant = std::move(m);
  }
  for (KillRecord& k : *kills) by_id[k.mutant_id].kill = std::move(k);
  std::vector<MutantRows> rows;
  std::vector<std::string> wanted;
  for (const mutants::Mutant* m : order) {
    const auto it = by_id.find(std::string(m->id()));
    if (it == by_id.end() || it->second.mutant.id.empty()) {
      return Status::internal("mutant " + std::string(m->id()) + " has no row in run " +
                              std::to_string(run_id) + " of --db \"" + store.path() + "\"");
    }
    wanted.push_back(it->first);
    rows.push_back(it->second);
  }
  if (stored_order == wanted) return rows;
  Status st = inOneBatch(store, [&] {
    Status cleared = store.clearMutants(run_id);
    return cleared ? putMutantRows(store, run_id, rows) : cleared;
  });
  if (!st) return st;
  return rows;
}

namespace {

Status malformed(const char* what) {
  return Status::internal(std::string("the rows of a ") + what +
                          " shard sent by another process are malformed");
}

}  // namespace

SweepShardRows sweepTotals(const properties::SweepResult& result) {
  SweepShardRows totals;
  totals.run_here = result.run_here;
  totals.seconds = result.seconds;
  for (const auto& m : result.per_model) {
    totals.model_seconds.push_back(m.seconds);
    totals.model_run_here.push_back(m.run_here);
  }
  return totals;
}

properties::SweepResult mergeSweepTotals(const properties::SweepResult& root,
                                         const std::vector<SweepShardRows>& ranks) {
  properties::SweepResult total = root;
  total.run_here = 0;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const SweepShardRows& shard = ranks[r];
    total.run_here += shard.run_here;
    total.seconds = std::max(total.seconds, shard.seconds);
    // Rank 0's own per-model totals are `root`'s already.
    for (std::size_t m = 0; r > 0 && m < total.per_model.size() && m < shard.model_seconds.size();
         ++m) {
      total.per_model[m].seconds += shard.model_seconds[m];
    }
    for (std::size_t m = 0; r > 0 && m < total.per_model.size() && m < shard.model_run_here.size();
         ++m) {
      total.per_model[m].run_here += shard.model_run_here[m];
    }
  }
  return total;
}

std::string encodeSweepShard(const SweepShardRows& shard) {
  ByteWriter w;
  w.put(shard.run_here);
  w.put(shard.seconds);
  w.put(static_cast<std::int64_t>(shard.model_seconds.size()));
  for (double s : shard.model_seconds) w.put(s);
  w.put(static_cast<std::int64_t>(shard.model_run_here.size()));
  for (std::int64_t n : shard.model_run_here) w.put(n);
  w.put(static_cast<std::int64_t>(shard.cases.size()));
  for (const auto& [c, verdicts] : shard.cases) {
    w.put(c.index);
    for (const std::string* s : {&c.model, &c.pattern, &c.config, &c.flags, &c.batch, &c.policy,
                                 &c.group, &c.refusal, &c.reproduce}) {
      w.put(*s);
    }
    w.put(static_cast<std::int64_t>(c.outcome));
    w.put(static_cast<std::int64_t>(c.plan_hash));
    w.put(static_cast<std::int64_t>(verdicts.size()));
    for (const VerdictRecord& v : verdicts) {
      w.put(static_cast<std::int64_t>(v.property));
      w.put(static_cast<std::int64_t>(v.holds));
      w.put(v.violation_class);
      w.put(v.text);
    }
  }
  return w.take();
}

Expected<SweepShardRows> decodeSweepShard(const std::string& bytes) {
  ByteReader r(bytes);
  SweepShardRows shard;
  shard.run_here = r.int64();
  shard.seconds = r.real();
  const std::int64_t models = r.count(8);
  for (std::int64_t i = 0; i < models && r.ok(); ++i) shard.model_seconds.push_back(r.real());
  const std::int64_t run_counts = r.count(8);
  for (std::int64_t i = 0; i < run_counts && r.ok(); ++i) shard.model_run_here.push_back(r.int64());
  const std::int64_t cases = r.count(8 * 14);
  for (std::int64_t i = 0; i < cases && r.ok(); ++i) {
    CaseRecord c;
    c.index = r.int64();
    for (std::string* s : {&c.model, &c.pattern, &c.config, &c.flags, &c.batch, &c.policy, &c.group,
                           &c.refusal, &c.reproduce}) {
      *s = r.text();
    }
    const std::int64_t outcome = r.int64();
    if (outcome < 0 || outcome > static_cast<std::int64_t>(CaseOutcome::kRefused))
      return malformed("sweep");
    c.outcome = static_cast<CaseOutcome>(outcome);
    c.plan_hash = static_cast<std::uint64_t>(r.int64());
    std::vector<VerdictRecord> verdicts;
    const std::int64_t n = r.count(8 * 4);
    for (std::int64_t j = 0; j < n && r.ok(); ++j) {
      VerdictRecord v;
      v.property = static_cast<int>(r.int64());
      v.holds = r.int64() != 0;
      v.violation_class = r.text();
      v.text = r.text();
      verdicts.push_back(std::move(v));
    }
    shard.cases.emplace_back(std::move(c), std::move(verdicts));
  }
  if (!r.ok() || !r.atEnd()) return malformed("sweep");
  return shard;
}

std::string encodeCampaignShard(const CampaignShardRows& shard) {
  ByteWriter w;
  w.put(shard.cases);
  w.put(shard.baseline_refused);
  w.put(static_cast<std::int64_t>(shard.baseline_holds));
  w.put(static_cast<std::int64_t>(shard.mutants.size()));
  for (const MutantRows& m : shard.mutants) {
    for (const std::string* s : {&m.mutant.id, &m.mutant.kind, &m.mutant.description,
                                 &m.mutant.status, &m.mutant.argument}) {
      w.put(*s);
    }
    for (std::int64_t v :
         {m.mutant.cases_run, m.mutant.applied, m.mutant.differed, m.mutant.planner_errors}) {
      w.put(v);
    }
    w.put(m.mutant.seconds);
    w.put(static_cast<std::int64_t>(m.kill.has_value()));
    if (m.kill) {
      w.put(m.kill->case_index);
      w.put(static_cast<std::int64_t>(m.kill->site));
      w.put(static_cast<std::int64_t>(m.kill->property));
      w.put(m.kill->violation_class);
      w.put(m.kill->text);
      w.put(m.kill->reproduce);
    }
  }
  return w.take();
}

Expected<CampaignShardRows> decodeCampaignShard(const std::string& bytes) {
  ByteReader r(bytes);
  CampaignShardRows shard;
  shard.cases = r.int64();
  shard.baseline_refused = r.int64();
  shard.baseline_holds = r.int64() != 0;
  const std::int64_t n = r.count(8 * 11);
  for (std::int64_t i = 0; i < n && r.ok(); ++i) {
    MutantRows m;
    for (std::string* s : {&m.mutant.id, &m.mutant.kind, &m.mutant.description, &m.mutant.status,
                           &m.mutant.argument}) {
      *s = r.text();
    }
    for (std::int64_t* v :
         {&m.mutant.cases_run, &m.mutant.applied, &m.mutant.differed, &m.mutant.planner_errors}) {
      *v = r.int64();
    }
    m.mutant.seconds = r.real();
    if (r.int64() != 0) {
      KillRecord k;
      k.mutant_id = m.mutant.id;
      k.case_index = r.int64();
      k.site = static_cast<int>(r.int64());
      k.property = static_cast<int>(r.int64());
      k.violation_class = r.text();
      k.text = r.text();
      k.reproduce = r.text();
      m.kill = std::move(k);
    }
    shard.mutants.push_back(std::move(m));
  }
  if (!r.ok() || !r.atEnd()) return malformed("campaign");
  return shard;
}

}  // namespace seam::reports
