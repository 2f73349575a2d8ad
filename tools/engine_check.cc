#include "engine_check.h"

#include <unistd.h>

#include <cctype>
#include <filesystem>

#include "command.h"
#include "seam/properties/check.h"
#include "seam/recordings/alignment.h"
#include "seam/recordings/conformance.h"
#include "seam/recordings/recorder.h"

namespace seam::tools {

namespace {

constexpr int kMaxTimeoutS = 3600;

Status caseOptionsValid(const CaseOptions& o, const EngineOptions& e) {
  if (Status s = engineOptionsValid(e); !s) return s;
  if (isTraining(o))
    return Status::invalid("--engine runs SGLang; --family training is not served");
  if (!o.trace.empty()) return Status::invalid("--engine and --trace: give one");
  if (o.pp != 1)
    return Status::invalid(
        "--engine --pp " + std::to_string(o.pp) +
        ": the engine's stage transfers are recorded but not yet aligned to the plan (--pp 1)");
  return Status::ok();
}

}  // namespace

Status engineOptionsValid(const EngineOptions& e) {
  if (!e.engine.empty() && e.engine != "sglang")
    return Status::invalid("--engine \"" + e.engine.substr(0, 40) +
                           "\" is not an engine the recorder runs (sglang)");
  if (!e.engine.empty() && !e.engine_src.empty())
    return Status::invalid("--engine and --engine-src: give one (--engine-src runs a checkout)");
  if (e.timeout_s < 1 || e.timeout_s > kMaxTimeoutS)
    return Status::invalid("--engine-timeout " + std::to_string(e.timeout_s) +
                           " is out of range (1.." + std::to_string(kMaxTimeoutS) + ")");
  if (!e.engine_src.empty() && !std::filesystem::is_directory(e.engine_src))
    return Status::invalid("--engine-src " + e.engine_src.substr(0, 200) + ": no such folder");
  return Status::ok();
}

/// A scratch folder (removed at the end), or --keep-recordings's.
Expected<std::string> recordingsFolder(const std::string& keep) {
  if (!keep.empty()) {
    std::error_code ec;
    if (!std::filesystem::create_directories(keep, ec) && ec)
      return Status::invalid("--keep-recordings " + keep + ": " + ec.message());
    return keep;
  }
  std::string tmpl = (std::filesystem::temp_directory_path() / "seam-engine-sweep-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) return Status::invalid("cannot make a scratch folder");
  return tmpl;
}

namespace {

/// A scratch folder for one recording, removed when it goes.
struct Scratch {
  std::string dir;
  Scratch() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "seam-engine-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) dir = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace

void addEngineOptions(CLI::App* sub, EngineOptions& e) {
  sub->add_option("--engine", e.engine,
                  "run the engine's own code on the CPU for the case and judge what it calls: "
                  "sglang (the release tools/setup.sh pins)");
  sub->add_option("--engine-src", e.engine_src,
                  "like --engine, on an SGLang checkout (its python/sglang is imported)");
  sub->add_option("--engine-timeout", e.timeout_s,
                  "--engine: seconds the engine may run the case (default 120)");
}

int checkEngine(const CaseOptions& given, const EngineOptions& e, bool json) {
  if (Status s = caseOptionsValid(given, e); !s) return fail(s);
  const CaseOptions& o = given;
  auto c = buildCase(o);
  if (!c) return fail(c.status());
  if (const std::string gap = recordings::recorderGap(*c); !gap.empty())
    return fail(Status::invalid("--engine: the recorder does not run " + gap +
                                " yet (docs/limitations.md)"));
  auto plan = buildPolicyPlan(o, *c);
  if (!plan) return fail(plan.status());
  Scratch scratch;
  if (scratch.dir.empty()) return fail(Status::invalid("cannot make a scratch folder"));
  recordings::RecorderRun run = recordings::defaultRecorderRun(SEAM_CHECKOUT);
  run.engine_src = e.engine_src;
  run.timeout_s = e.timeout_s;
  const std::string path = scratch.dir + "/recording.jsonl";
  if (Status s = recordings::runRecorder(run, recordings::recorderCaseJson(*c), path); !s)
    return fail(s);
  auto rec = recordings::readRecording(path);
  if (!rec) return fail(rec.status());
  std::cout << recordings::renderEngineRun(*rec);
  if (rec->engine.verdict == "recorder-error") return kExitInternal;
  if (rec->engine.verdict == "refused" || rec->engine.verdict == "cpu-gap") return kExitBadInput;
  // The engine picks DP padding from the batch (prepare_mlp_sync_batch); a
  // plan built with the other mode cannot match it.
  const std::string asked =
      c->config.attn_dp > 1 ? std::string(paddingName(c->flags.dp_padding)) : "";
  for (const recordings::RankEnd& r : rec->engine.ranks) {
    std::string chose = r.dp_padding;
    for (char& ch : chose) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (!asked.empty() && !chose.empty() && chose != asked) {
      std::cout << "dp padding: the engine chose " << chose
                << " for this batch; the plan was built "
                << "with --dp-padding " << asked << " (rerun with --dp-padding " << chose << ")\n";
      break;
    }
  }
  auto verdict = recordings::judgeRecording(*rec, *plan, 1, {.custom_all_reduce = false});
  if (!verdict) return fail(verdict.status());
  std::string reproduce =
      reproduceCommand(*c, o.policy) +
      (e.engine_src.empty() ? " --engine sglang" : " --engine-src " + e.engine_src);
  Ledger ledger;
  const bool plan_holds = properties::checkPlan(*plan, ledger, properties::Depth::kAll).holds();
  if (json) {
    std::string text = recordings::recordingVerdictJson(*rec, *verdict, reproduce);
    text.insert(text.rfind('}'), std::string(",\"plan_holds\":") + (plan_holds ? "true" : "false") +
                                     ",\"engine_verdict\":\"" + rec->engine.verdict + "\"");
    std::cout << text;
  } else {
    std::cout << "the engine's calls against the " << o.policy << " plan:\n";
    std::string body = recordings::renderRecordingVerdict(*rec, *verdict, reproduce);
    std::cout << body;
    std::cout << "plan (" << o.policy << "): "
              << (plan_holds ? "all properties hold" : "a property fails on the plan itself")
              << "\n";
  }
  return recordings::engineRan(*rec) && verdict->holds() && plan_holds ? kExitOk
                                                                       : kExitPropertyFailed;
}

}  // namespace seam::tools
