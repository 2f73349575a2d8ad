#include "seam/reports/recorders.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "seam/properties/engine_finding.h"
#include "seam/reports/shard_rows.h"

namespace seam::reports {

Expected<RunRecord> startRun(Store& store, const std::string& command, const std::string& args,
                             const std::string& version, bool resume) {
  if (resume) {
    auto found = store.findUnfinished(command, args);
    if (!found) return found.status();
    if (!*found) {
      return Status::invalid("--resume: no unfinished " + command +
                             " with these arguments in --db \"" + store.path() + "\"");
    }
    return **found;
  }
  RunRecord run;
  run.command = command;
  run.args = args;
  run.version = version;
  if (Status st = store.beginRun(run); !st) return st;
  return run;
}

Expected<StoredRun> openRun(const std::string& db, const std::string& command,
                            const std::string& args, const std::string& version, bool resume) {
  if (resume && !std::filesystem::exists(db)) {
    return Status::invalid("--resume: no unfinished " + command +
                           " with these arguments in --db \"" + db + "\" (there is no such file)");
  }
  auto store = Store::open(db);
  if (!store) return store.status();
  auto run = startRun(*store, command, args, version, resume);
  if (!run) return run.status();
  return StoredRun{std::move(*store), std::move(*run)};
}

Expected<StoredRun> openCaseRun(const std::string& db, const std::string& command,
                                const std::string& args, const std::string& version, bool resume,
                                std::vector<std::int64_t>* skip) {
  auto run = openRun(db, command, args, version, resume);
  if (!run || !resume) return run;
  auto done = run->store.caseIndices(run->run.id);
  if (!done) return done.status();
  *skip = std::move(*done);
  std::sort(skip->begin(), skip->end());
  return run;
}

Expected<StoredRun> openSweepRun(const std::string& db, properties::SweepSpec* spec,
                                 const std::string& version, bool resume) {
  return openCaseRun(db, "sweep", sweepArgs(*spec), version, resume, &spec->skip);
}

std::string sweepArgs(const properties::SweepSpec& spec) {
  std::string models;
  for (const auto& m : spec.models) models += (models.empty() ? "" : ",") + m.name;
  auto leaf = [](const char* name, const std::optional<int>& v) {
    return v ? std::string(" ") + name + "=" + std::to_string(*v) : std::string();
  };
  const ConfigFilter& f = spec.filter;
  return "world=" + std::to_string(spec.world) + " policy=" + std::string(policyName(spec.policy)) +
         " shard=" + std::to_string(spec.shard.index) + "/" + std::to_string(spec.shard.count) +
         leaf("pp", f.pp) + leaf("tp", f.tp) + leaf("dp", f.attn_dp) + leaf("cp", f.attn_cp) +
         leaf("ep", f.moe_ep) + leaf("moe_dp", f.moe_dp) + spec.flags.describe() +
         " decision=" + properties::decisionList(spec.schema) + " models=" + models;
}

namespace {

/// A campaign's arguments, with its seed and mutants or (the baseline's
/// space) without them.
std::string campaignArgsOf(const mutants::CampaignSpec& spec, bool with_mutants) {
  std::string models, worlds, ids;
  for (const auto& m : spec.models) models += (models.empty() ? "" : ",") + m.name;
  for (int w : spec.worlds) worlds += (worlds.empty() ? "" : ",") + std::to_string(w);
  for (const auto* m : spec.mutants) ids += (ids.empty() ? "" : ",") + std::string(m->id());
  return "worlds=" + worlds + " policy=" + std::string(policyName(spec.policy)) +
         " decision=" + properties::decisionList(spec.schema) +
         (with_mutants ? " seed=" + std::to_string(spec.seed) : "") +
         (spec.bound_cases ? " bounds=1" : "") +
         (with_mutants ? " mutants=" + (ids.empty() ? "all" : ids) : "") + " models=" + models;
}

}  // namespace

std::string campaignArgs(const mutants::CampaignSpec& spec) { return campaignArgsOf(spec, true); }

std::string baselineSpace(const mutants::CampaignSpec& spec) { return campaignArgsOf(spec, false); }

CaseRowWriter::CaseRowWriter(Store& store, std::int64_t run_id)
    : store_(store), run_id_(run_id), thread_([this] { writerLoop(); }) {}

CaseRowWriter::~CaseRowWriter() { (void)close(); }

void CaseRowWriter::push(std::vector<CaseRows> batch) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [this] { return queue_.size() < kMaxQueued; });
    queue_.push_back(std::move(batch));
  }
  wake_.notify_one();
}

void CaseRowWriter::writerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return closing_ || !queue_.empty(); });
    if (queue_.empty() && closing_) return;
    std::vector<CaseRows> batch = std::move(queue_.front());
    queue_.erase(queue_.begin());
    room_.notify_all();
    lock.unlock();
    // Only this thread writes status_ until close() has joined it.
    if (status_) status_ = writeCaseRows(store_, run_id_, std::move(batch));
    lock.lock();
  }
}

Status CaseRowWriter::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_) return status_;
    closing_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  return status_;
}

SweepRecorder::SweepRecorder(Store& store, std::int64_t run_id, const properties::SweepSpec& spec,
                             properties::SweepListener* next)
    : writer_(store, run_id), batcher_(spec, next, [this](std::vector<CaseRows> batch) {
        writer_.push(std::move(batch));
      }) {}

SweepRecorder::~SweepRecorder() { (void)flush(); }

void SweepRecorder::onProgress(std::int64_t done, std::int64_t total) {
  batcher_.onProgress(done, total);
}

void SweepRecorder::onModel(const std::string& model) { batcher_.onModel(model); }

void SweepRecorder::onCases(const std::vector<properties::CaseResult>& chunk) {
  batcher_.onCases(chunk);
}

Status SweepRecorder::flush() {
  batcher_.flush();  // the last batch to the writer; nothing once closed
  return writer_.close();
}

Expected<properties::SweepResult> sweepResultFromStore(Store& store, std::int64_t run_id,
                                                       const properties::SweepSpec& spec,
                                                       const properties::SweepResult& live) {
  auto failures = store.firstFailures(run_id);
  if (!failures) return failures.status();
  std::map<std::int64_t, std::string> failure_text;
  properties::SweepResult r;
  for (const auto& [idx, v] : *failures) {
    failure_text[idx] = v.text;
    const auto [violation, call] = properties::splitFailureText(v.text);
    if (!call.empty()) ++r.engine_findings[std::string(call)];
  }

  r.seconds = live.seconds;
  r.run_here = live.run_here;
  r.per_model = live.per_model;
  for (auto& m : r.per_model) m.checked = m.refused = m.not_modelled = m.violated = 0;
  std::map<std::string, int> model_row;
  for (size_t i = 0; i < r.per_model.size(); ++i)
    model_row[r.per_model[i].model] = static_cast<int>(i);
  std::map<std::string, std::int64_t> refusals;
  // Row by row: a summary of millions of cases holds its counts only.
  const Status read = store.eachCase(run_id, [&](CaseRecord&& c) {
    auto it = model_row.find(c.group);
    properties::ModelTally* tally = it == model_row.end() ? nullptr : &r.per_model[it->second];
    if (c.outcome == CaseOutcome::kRefused) {
      ++r.refused;
      if (tally) ++tally->refused;
      if (isNotModelled(c.refusal)) {
        ++r.not_modelled;
        if (tally) ++tally->not_modelled;
      }
      ++refusals[std::move(c.refusal)];
      return Status::ok();
    }
    ++r.checked;
    if (tally) ++tally->checked;
    if (c.outcome == CaseOutcome::kViolated) {
      ++r.violated;
      if (tally) ++tally->violated;
      if (static_cast<int>(r.failures.size()) < spec.max_failures) {
        r.failures.push_back({c.index, failure_text[c.index], std::move(c.reproduce)});
      }
    }
    return Status::ok();
  });
  if (!read) return read;
  r.cases = r.checked + r.refused;
  for (auto& [why, n] : refusals) r.refusals.emplace_back(why, n);
  std::sort(r.refusals.begin(), r.refusals.end(), [](const auto& x, const auto& y) {
    return x.second != y.second ? x.second > y.second : x.first < y.first;
  });
  return r;
}

Expected<properties::SweepResult> finishSweepRun(StoredRun& run, const properties::SweepSpec& spec,
                                                 const properties::SweepResult& live,
                                                 const std::string& junit) {
  if (Status st = run.store.finishRun(run.run.id); !st) return st;
  auto result = sweepResultFromStore(run.store, run.run.id, spec, live);
  if (!result) return result.status();
  if (!junit.empty()) {
    if (Status st = writeSweepJunit(run.store, run.run, live, junit); !st) return st;
  }
  return result;
}

CampaignRecorder::CampaignRecorder(Store& store, std::int64_t run_id,
                                   const mutants::CampaignSpec& spec,
                                   mutants::CampaignListener* next, SeamBuild build)
    : store_(store), run_id_(run_id), spec_(spec), next_(next), build_(std::move(build)) {
  auto stored = store_.mutants(run_id_);
  if (stored) {
    stored_ = std::move(*stored);
  } else {
    status_ = stored.status();
  }
  auto kills = store_.kills(run_id_);
  if (kills) {
    kills_ = std::move(*kills);
  } else {
    status_ = kills.status();
  }
}

void CampaignRecorder::onBaseline(std::int64_t cases, bool holds) {
  if (next_) next_->onBaseline(cases, holds);
}

void CampaignRecorder::onMutant(const mutants::MutantOutcome& o, int done, int total) {
  if (next_) next_->onMutant(o, done, total);
  if (!status_) return;
  // Already stored (recalled): nothing to write.
  if (std::any_of(stored_.begin(), stored_.end(),
                  [&](const MutantRecord& m) { return m.id == o.mutant->id(); }))
    return;
  if (Status st = store_.beginBatch(); !st) {
    status_ = st;
    return;
  }
  const MutantRows rows = mutantRows(o, spec_.policy);
  if (Status st = store_.putMutant(run_id_, rows.mutant); !st) {
    status_ = st;
    return;
  }
  if (rows.kill) {
    if (Status st = store_.addKill(run_id_, *rows.kill); !st) {
      status_ = st;
      return;
    }
  }
  if (Status st = store_.commitBatch(); !st) status_ = st;
}

std::optional<mutants::MutantOutcome> CampaignRecorder::recalled(const mutants::Mutant& mutant) {
  for (const MutantRecord& m : stored_) {
    if (m.id != mutant.id()) continue;
    MutantRows rows{m, std::nullopt};
    for (const KillRecord& k : kills_) {
      if (k.mutant_id == m.id) rows.kill = k;
    }
    return outcomeFromRows(&mutant, rows);
  }
  return std::nullopt;
}

void CampaignRecorder::onBaselineChecked(const mutants::BaselineSummary& baseline) {
  // One statement, its own transaction: stored before the first mutant.
  if (status_)
    status_ = store_.putBaseline(run_id_, baselineRow(baselineSpace(spec_), build_, baseline));
}

mutants::BaselineRecall CampaignRecorder::recalledBaseline(std::int64_t space) {
  auto row = store_.baseline(run_id_);
  if (!row) {
    status_ = row.status();
    return {};
  }
  if (!*row) return {};
  auto baseline = baselineFromRow(**row, baselineSpace(spec_), build_);
  if (!baseline) return {std::nullopt, baseline.status().message()};
  // Same arguments, same build, yet another enumeration: not this space.
  if (baseline->space != space) {
    return {std::nullopt, "it holds " + std::to_string(baseline->space) +
                              " cases and the space has " + std::to_string(space)};
  }
  return {std::move(*baseline), ""};
}

Status recordProp(Store& store, const properties::PropSpec& spec,
                  const properties::PropResult& result, const std::string& version) {
  RunRecord run;
  run.command = "prop";
  run.args = "cases=" + std::to_string(spec.cases) + " seed=" + std::to_string(spec.seed) +
             " world=" + std::to_string(spec.world) +
             " max_layers=" + std::to_string(spec.max_layers) +
             " decision=" + properties::decisionList(spec.schema) + " rc_params=\"" +
             result.rc_params + "\"";
  run.version = version;
  if (Status st = store.beginRun(run); !st) return st;
  if (!result.passed && result.shrunk) {
    CaseRecord rec;
    rec.index = result.cases_run - 1;
    rec.model = result.shrunk->model.name;
    rec.pattern = result.shrunk->model.pattern.text();
    rec.config = result.shrunk->config.describe();
    rec.flags = result.shrunk->flags.describe();
    rec.batch = result.shrunk->batch.describe();
    rec.policy = "declared";
    rec.group = "prop";
    rec.outcome = CaseOutcome::kViolated;
    rec.reproduce = result.reproduce;
    std::vector<VerdictRecord> failing;
    if (result.violation) {
      failing.push_back({static_cast<int>(result.violation->property), false,
                         std::string(violationClassName(result.violation->cls)), result.failure});
    }
    if (Status st = store.addCase(run.id, rec, failing); !st) return st;
  }
  return store.finishRun(run.id);
}

}  // namespace seam::reports
