#include "seam/reports/merge.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

namespace seam::reports {

namespace {

/// Everything a store holds about one run.
struct RunContents {
  RunRecord run;
  std::vector<CaseRecord> cases;
  std::map<std::int64_t, std::vector<VerdictRecord>> verdicts;  ///< by case index, in stored order
  std::vector<MutantRecord> mutants;
  std::vector<KillRecord> kills;
  std::vector<EquivalenceRecord> equivalences;
  std::vector<TimingRecord> timings;
  std::vector<EngineCaseRecord> engine_cases;
  std::optional<BaselineRecord> baseline;  ///< a campaign's stored baseline, copied as it is
};

struct InputContents {
  std::string path;
  std::vector<RunContents> runs;
};

using RunKey = std::tuple<std::string, std::string, std::string, std::string, std::int64_t>;
RunKey keyOf(const RunRecord& r) { return {r.command, r.args, r.version, r.host, r.started_ms}; }

std::string quotedPath(const std::string& path) {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict, PR105651) on a + chain.
  std::string out = "\"";
  out += path.substr(0, 200);
  out += '"';
  return out;
}

Expected<InputContents> readInput(const std::string& path) {
  auto store = Store::openInput(path, "db merge: input " + quotedPath(path));
  if (!store) return store.status();
  InputContents in;
  in.path = path;
  auto runs = store->runs();
  if (!runs) return runs.status();
  for (const RunRecord& r : *runs) {
    RunContents c;
    c.run = r;
    auto cases = store->cases(r.id);
    if (!cases) return cases.status();
    c.cases = std::move(*cases);
    auto verdicts = store->verdicts(r.id);
    if (!verdicts) return verdicts.status();
    for (auto& [idx, v] : *verdicts) c.verdicts[idx].push_back(std::move(v));
    auto mutants = store->mutants(r.id);
    if (!mutants) return mutants.status();
    c.mutants = std::move(*mutants);
    auto kills = store->kills(r.id);
    if (!kills) return kills.status();
    c.kills = std::move(*kills);
    auto eq = store->equivalences(r.id);
    if (!eq) return eq.status();
    c.equivalences = std::move(*eq);
    auto timings = store->timings(r.id);
    if (!timings) return timings.status();
    c.timings = std::move(*timings);
    auto engine_cases = store->engineCases(r.id);
    if (!engine_cases) return engine_cases.status();
    c.engine_cases = std::move(*engine_cases);
    auto baseline = store->baseline(r.id);
    if (!baseline) return baseline.status();
    c.baseline = std::move(*baseline);
    in.runs.push_back(std::move(c));
  }
  return in;
}

Status writeRun(Store& out, RunContents& c) {
  RunRecord run = c.run;
  run.id = 0;
  if (Status st = out.beginRun(run); !st) return st;
  static const std::vector<VerdictRecord> kNone;
  for (const CaseRecord& rec : c.cases) {
    const auto it = c.verdicts.find(rec.index);
    if (Status st = out.addCase(run.id, rec, it == c.verdicts.end() ? kNone : it->second); !st)
      return st;
  }
  for (const MutantRecord& m : c.mutants) {
    if (Status st = out.putMutant(run.id, m); !st) return st;
  }
  for (const KillRecord& k : c.kills) {
    if (Status st = out.addKill(run.id, k); !st) return st;
  }
  for (const EquivalenceRecord& e : c.equivalences) {
    if (Status st = out.addEquivalence(run.id, e); !st) return st;
  }
  for (const TimingRecord& t : c.timings) {
    if (Status st = out.addTiming(run.id, t); !st) return st;
  }
  for (const EngineCaseRecord& e : c.engine_cases) {
    if (Status st = out.addEngineCase(run.id, e); !st) return st;
  }
  // The row keeps its checksum: a resumed campaign checks it (and its
  // space and build) before it takes the baseline.
  if (c.baseline) return out.putBaseline(run.id, *c.baseline);
  return Status::ok();
}

void removeStoreFiles(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
}

}  // namespace

Expected<std::vector<MergedInput>> mergeStores(const std::string& out,
                                               const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  if (inputs.empty()) return Status::invalid("db merge: give the stores to merge after OUT");
  std::error_code ec;
  const bool out_exists = fs::exists(out, ec);
  std::vector<InputContents> read;
  for (const std::string& path : inputs) {
    if (out_exists && fs::equivalent(out, path, ec)) {
      return Status::invalid("db merge: input " + quotedPath(path) + " is OUT itself");
    }
    auto in = readInput(path);
    if (!in) return in.status();
    read.push_back(std::move(*in));
  }

  std::optional<Store> store;
  {
    auto opened = Store::open(out);
    if (!opened) return opened.status();
    store.emplace(std::move(*opened));
  }
  // From here on a failure writes nothing, and removes an OUT this call created.
  auto fail = [&](const Status& st) -> Status {
    (void)store->rollbackBatch();
    store.reset();
    if (!out_exists) removeStoreFiles(out);
    return st;
  };
  if (Status st = store->beginBatch(); !st) return fail(st);
  auto held = store->runs();
  if (!held) return fail(held.status());
  std::map<RunKey, std::pair<RunRecord, std::int64_t>> present;  // key -> run, its case count
  for (const RunRecord& r : *held) {
    auto n = store->caseIndices(r.id);
    if (!n) return fail(n.status());
    present[keyOf(r)] = {r, static_cast<std::int64_t>(n->size())};
  }
  std::vector<MergedInput> merged;
  for (InputContents& in : read) {
    MergedInput m;
    m.path = in.path;
    for (RunContents& c : in.runs) {
      const auto it = present.find(keyOf(c.run));
      if (it != present.end()) {
        const auto& [had, cases] = it->second;
        if (had.finished_ms == c.run.finished_ms &&
            cases == static_cast<std::int64_t>(c.cases.size())) {
          ++m.runs_skipped;
          continue;
        }
        return fail(Status::invalid(
            "db merge: run " + std::to_string(c.run.id) + " of " + quotedPath(in.path) + " (" +
            c.run.command + ", started at " + std::to_string(c.run.started_ms) +
            " ms) is already in " + quotedPath(out) + " in another state (" +
            std::to_string(cases) + " cases there, " + std::to_string(c.cases.size()) + " here; " +
            (had.finished_ms == 0 ? "unfinished" : "finished") + " there, " +
            (c.run.finished_ms == 0 ? "unfinished" : "finished") + " here)"));
      }
      if (Status st = writeRun(*store, c); !st) return fail(st);
      present[keyOf(c.run)] = {c.run, static_cast<std::int64_t>(c.cases.size())};
      ++m.runs_added;
      m.cases += static_cast<std::int64_t>(c.cases.size());
    }
    merged.push_back(std::move(m));
  }
  if (Status st = store->commitBatch(); !st) return fail(st);
  return merged;
}

}  // namespace seam::reports
