// The recorder as a child process: `python -m seam_recorder` with the case on
// a file, its one-line refusal read back from its standard error.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "seam/recordings/recorder.h"

extern char** environ;

namespace seam::recordings {

namespace {

std::string envOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

/// The last line of the recorder's standard error that it wrote itself.
std::string recorderMessage(const std::string& err_path) {
  std::ifstream in(err_path);
  std::string line, last, any;
  while (std::getline(in, line)) {
    if (line.rfind("seam_recorder: ", 0) == 0) last = line.substr(15);
    if (!line.empty()) any = line;
  }
  return last.empty() ? any.substr(0, 300) : last;
}

}  // namespace

RecorderRun defaultRecorderRun(const std::string& checkout) {
  RecorderRun run;
  const std::string cache = envOr("XDG_CACHE_HOME", envOr("HOME", "/root") + "/.cache");
  run.python = envOr("SEAM_PYTHON", cache + "/seam/recorder-venv/bin/python");
  run.recorder_dir = envOr("SEAM_RECORDER_DIR", checkout + "/recorder");
  return run;
}

std::string recorderCaseJson(const Case& c) {
  nlohmann::json config = {
      {"pp", c.config.pp},
      {"tp", c.config.tp},
      {"attn_dp", c.config.attn_dp},
      {"attn_cp", c.config.attn_cp},
      {"moe_ep", c.config.moe_ep},
      {"moe_dp", c.config.moe_dp},
      {"tokens", c.batch.tokens},
      {"mode", c.flags.mode == ForwardMode::kExtend ? "extend" : "decode"},
      {"a2a", std::string(a2aName(c.flags.a2a))},
      {"fusion", c.flags.fusion},
      {"dense_tp", c.flags.dense_tp1 ? nlohmann::json(1) : nlohmann::json("tp")},
      {"input_scattered", c.flags.input_scattered},
      {"tbo", c.flags.tbo},
      {"layernorm_sp", c.flags.layernorm_sp},
      {"dp_gatherv", c.flags.dp_gatherv}};
  // The checkpoint's counts that decide how the engine splits its weights
  // (heads, KV heads, Mamba heads and groups, experts); the recorder keeps
  // the widths small.
  const ModelShape& m = c.model.shape;
  nlohmann::json shape = nlohmann::json::object();
  const std::pair<const char*, int> counts[] = {{"heads", m.heads},
                                                {"kv_heads", m.kv_heads},
                                                {"mamba_heads", m.mamba_heads},
                                                {"mamba_groups", m.mamba_groups},
                                                {"experts", m.moe_experts},
                                                {"top_k", m.moe_top_k}};
  for (const auto& [key, value] : counts)
    if (value > 0) shape[key] = value;
  return nlohmann::json{
      {"model", c.model.name},
      {"architecture", c.model.architecture},
      {"shape", std::move(shape)},
      {"pattern", c.model.pattern.text()},
      {"family", c.model.family == LayerFamily::kSingleStage ? "single-stage" : "two-stage"},
      {"config", std::move(config)}}
      .dump();
}

namespace {

/// Runs `python -m seam_recorder` with `tail` after the common arguments;
/// its standard error goes to `err_path`.
Status spawnRecorder(const RecorderRun& run, const std::vector<std::string>& tail,
                     const std::string& err_path) {
  std::error_code ec;
  if (!std::filesystem::exists(run.python, ec))
    return Status::invalid("the recorder's Python " + run.python +
                           " is missing: tools/setup.sh installs it (or set SEAM_PYTHON)");
  if (!std::filesystem::is_directory(run.recorder_dir + "/seam_recorder", ec))
    return Status::invalid("no recorder at " + run.recorder_dir +
                           " (set SEAM_RECORDER_DIR to the checkout's recorder/)");
  std::vector<std::string> args = {run.python,
                                   "-W",
                                   "ignore",
                                   "-m",
                                   "seam_recorder",
                                   "--timeout",
                                   std::to_string(run.timeout_s)};
  args.insert(args.end(), tail.begin(), tail.end());
  if (!run.engine_src.empty()) {
    args.push_back("--engine-src");
    args.push_back(run.engine_src);
  }
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv(*e);
    if (kv.rfind("PYTHONPATH=", 0) != 0) env.push_back(kv);
  }
  env.push_back("PYTHONPATH=" + run.recorder_dir);
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int spawned =
      posix_spawn(&pid, run.python.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return Status::invalid("cannot start the recorder's Python " + run.python);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::internal("waiting for the recorder failed");
  }
  const std::string message = recorderMessage(err_path);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 0) {
    std::filesystem::remove(err_path, ec);
    return Status::ok();
  }
  if (code == 2) return Status::invalid("recorder: " + message);
  return Status::internal("the recorder failed (exit " + std::to_string(code) + "): " + message);
}

Status writeFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return f ? Status::ok() : Status::invalid("cannot write " + path);
}

}  // namespace

Status runRecorder(const RecorderRun& run, const std::string& case_json,
                   const std::string& out_path) {
  const std::string case_path = out_path + ".case.json";
  if (Status s = writeFile(case_path, case_json); !s) return s;
  Status s = spawnRecorder(run, {"--case", case_path, "--out", out_path}, out_path + ".stderr");
  std::error_code ec;
  std::filesystem::remove(case_path, ec);
  return s;
}

std::string recordingName(const RecorderRun& run, const std::string& case_json) {
  // FNV-1a: the same name for the same case and engine in every build.
  std::uint64_t h = 1469598103934665603ULL;
  for (const std::string* part : {&run.engine, &run.engine_src, &run.fingerprint, &case_json})
    for (const char ch : *part + '\0') h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.jsonl", static_cast<unsigned long long>(h));
  return name;
}

Status runRecorderBatch(const RecorderRun& run, const std::vector<std::string>& case_jsons,
                        const std::string& dir, const std::string& tag) {
  std::string lines;
  for (const std::string& j : case_jsons) {
    auto doc = nlohmann::json::parse(j);
    doc["out"] = recordingName(run, j);
    lines += doc.dump() + "\n";
  }
  const std::string cases = dir + "/cases" + tag + ".jsonl";
  if (Status s = writeFile(cases, lines); !s) return s;
  return spawnRecorder(run, {"--cases", cases, "--out-dir", dir},
                       dir + "/recorder" + tag + ".stderr");
}

}  // namespace seam::recordings
