// seam sweep --engine: the space's engine runs split over recorder
// processes, cached by what made them, then every case judged against the
// declared and the legacy plan (conformance.h) and handed to the sink.
#include "seam/recordings/engine_sweep.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace seam::recordings {

namespace {

namespace fs = std::filesystem;

void fnv(std::uint64_t& h, std::string_view bytes) {
  for (const char ch : bytes) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
  h = (h ^ 0xffu) * 1099511628211ULL;  // a separator, so "ab"+"c" differs from "a"+"bc"
}

/// Every file under `dir` whose name ends in one of `suffixes`, by relative
/// path, hashed with its content.
void hashTree(std::uint64_t& h, const fs::path& dir,
              std::initializer_list<std::string_view> suffixes) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!it->is_regular_file(ec)) continue;
    if (std::any_of(suffixes.begin(), suffixes.end(),
                    [&](std::string_view s) { return name.ends_with(s); }))
      files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    fnv(h, fs::relative(f, dir, ec).string());
    fnv(h, text.str());
  }
}

std::string describeEngine(const EngineRun& e) {
  std::string out = e.engine + " " + e.version + " (" + e.source;
  if (!e.commit.empty()) out += " @" + e.commit.substr(0, 12);
  if (!e.generation.empty()) out += ", " + e.generation;
  return out + ")";
}

}  // namespace

Status recordRuns(const RecorderRun& run, const std::vector<std::string>& runs,
                  const std::vector<int>& server_of, int jobs, const std::string& dir) {
  // The largest servers are placed first, each on the process with the
  // fewest runs so far.
  std::map<int, std::vector<std::size_t>> by_server;
  for (std::size_t r = 0; r < runs.size(); ++r) by_server[server_of[r]].push_back(r);
  std::vector<const std::vector<std::size_t>*> servers;
  for (const auto& entry : by_server) servers.push_back(&entry.second);
  std::stable_sort(servers.begin(), servers.end(),
                   [](const auto* a, const auto* b) { return a->size() > b->size(); });
  jobs = std::max(1, std::min<int>(jobs, static_cast<int>(servers.size())));
  std::vector<std::vector<std::string>> mine(jobs);
  for (const auto* server : servers) {
    auto least = std::min_element(mine.begin(), mine.end(),
                                  [](const auto& a, const auto& b) { return a.size() < b.size(); });
    for (const std::size_t r : *server) least->push_back(runs[r]);
  }
  std::vector<Status> status(jobs, Status::ok());
  std::vector<std::thread> workers;
  for (int j = 0; j < jobs; ++j)
    workers.emplace_back(
        [&, j] { status[j] = runRecorderBatch(run, mine[j], dir, "-" + std::to_string(j)); });
  for (std::thread& w : workers) w.join();
  for (const Status& s : status)
    if (!s) return s;
  return Status::ok();
}

ShardRuns shardRuns(const EngineSpace& space, const Shard& shard,
                    const std::vector<std::int64_t>& skip, std::int64_t case_base,
                    std::int64_t server_base) {
  ShardRuns out;
  std::vector<bool> wanted(space.runs.size(), false);
  for (std::size_t i = 0; i < space.cases.size(); ++i) {
    const std::int64_t server = server_base + space.server_of[space.run_of[i]];
    const std::int64_t index = case_base + space.index_of[i];
    if (server % shard.count != shard.index) continue;
    if (std::binary_search(skip.begin(), skip.end(), index)) continue;
    wanted[space.run_of[i]] = true;
    out.cases.push_back(i);
  }
  for (std::size_t r = 0; r < space.runs.size(); ++r) {
    if (!wanted[r]) continue;
    out.runs.push_back(space.runs[r]);
    out.server_of.push_back(space.server_of[r]);
  }
  return out;
}

std::int64_t serverCount(const EngineSpace& space) {
  return space.server_of.empty()
             ? 0
             : 1 + *std::max_element(space.server_of.begin(), space.server_of.end());
}

std::string engineFingerprint(const RecorderRun& run) {
  std::uint64_t h = 1469598103934665603ULL;
  if (!run.engine_src.empty()) {
    const fs::path src(run.engine_src);
    std::error_code ec;
    const fs::path root = fs::is_directory(src / "python" / "sglang", ec) ? src / "python" : src;
    hashTree(h, root / "sglang", {".py"});
  }
  hashTree(h, fs::path(run.recorder_dir), {".py", "requirements.txt"});
  char name[20];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(h));
  return name;
}

Expected<EngineSweepResult> runEngineSweep(
    const EngineSweepSpec& spec,
    const std::function<Status(const reports::EngineCaseRecord&)>& sink) {
  EngineSweepResult result;
  RecorderRun run = spec.run;
  if (run.fingerprint.empty()) run.fingerprint = engineFingerprint(run);
  const std::string engine_option =
      run.engine_src.empty() ? " --engine sglang" : " --engine-src " + run.engine_src;
  std::int64_t case_base = 0, server_base = 0;
  for (const EngineSweepCases& m : spec.models) {
    EngineSweepModel& out = result.models.emplace_back();
    out.name = m.name;
    out.not_modelled = m.not_modelled;
    const std::vector<Case>& all = m.cases;
    const EngineSpace space = engineSpace(all, recorderCaseJson);
    out.left_out.insert(space.left_out.begin(), space.left_out.end());
    const ShardRuns mine = shardRuns(space, spec.shard, spec.skip, case_base, server_base);
    const std::int64_t model_base = case_base;
    case_base += static_cast<std::int64_t>(all.size());
    server_base += serverCount(space);
    const std::vector<std::size_t>& cases = mine.cases;
    const std::vector<std::string>& runs = mine.runs;
    for (const std::string& r : runs) {
      std::error_code ec;
      if (!fs::exists(spec.dir + "/" + recordingName(run, r), ec)) ++out.recorded;
    }
    out.cases = static_cast<std::int64_t>(cases.size());
    out.runs = static_cast<std::int64_t>(runs.size());
    const auto start = std::chrono::steady_clock::now();
    if (Status s = recordRuns(run, runs, mine.server_of, spec.jobs, spec.dir); !s) return s;
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (const std::size_t i : cases) {
      const Case& c = space.cases[i];
      auto rec = readRecording(spec.dir + "/" + recordingName(run, space.runs[space.run_of[i]]));
      if (!rec) return rec.status();
      if (result.engine.empty()) result.engine = describeEngine(rec->engine);
      for (const PolicyKind policy_kind : kEnginePolicies) {
        const std::string policy(policyName(policy_kind));
        const CaseAgreement a = agreementOf(c, policy_kind, *rec);
        const std::string reproduce = reproduceCommand(c, policy) + engine_option;
        reports::EngineCaseRecord row{.case_index = model_base + space.index_of[i],
                                      .policy = policy,
                                      .model = m.name,
                                      .config = c.config.describe(),
                                      .flags = c.flags.describe(),
                                      .batch = c.batch.describe(),
                                      .family = configFamily(c.config),
                                      .engine = describeEngine(rec->engine),
                                      .engine_verdict = rec->engine.verdict,
                                      .agreement = std::string(agreementName(a.agreement)),
                                      .divergence = a.divergence,
                                      .reproduce = reproduce};
        if (Status s = sink(row); !s) return s;
      }
    }
    if (spec.on_model) spec.on_model(out);
  }
  return result;
}

}  // namespace seam::recordings
