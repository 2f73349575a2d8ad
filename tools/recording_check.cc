#include "recording_check.h"

#include "command.h"
#include "seam/properties/check.h"
#include "seam/recordings/alignment.h"
#include "seam/sim/training/training_ledger.h"

namespace seam::tools {

namespace {

/// The most repetitions of the plan a recording may be judged against.
constexpr int kMaxPasses = 4096;

}  // namespace

Status recordingOptionsNeedPath(const CLI::App& sub, const RecordingOptions& r) {
  for (const char* name : {"--passes", "--custom-all-reduce"}) {
    if (sub.count(name) > 0 && r.path.empty())
      return Status::invalid(std::string(name) + " needs --recording");
  }
  return Status::ok();
}

Status recordingApplies(const CaseOptions& o, const RecordingOptions& r, bool training_ok) {
  if (!o.trace.empty()) return Status::invalid("--recording and --trace: give one");
  if (isTraining(o) && !training_ok)
    return Status::invalid(
        "--recording: seam diff compares serving policies; judge a training recording with "
        "seam check --family training ... --recording");
  if (isTraining(o) && r.custom_all_reduce != "on")
    return Status::invalid(
        "--custom-all-reduce is SGLang's; it does not apply to --family training");
  if (r.passes < 1 || r.passes > kMaxPasses)
    return Status::invalid("--passes " + std::to_string(r.passes) + " is out of range (1.." +
                           std::to_string(kMaxPasses) + ")");
  if (r.custom_all_reduce != "on" && r.custom_all_reduce != "off")
    return Status::invalid("--custom-all-reduce \"" + r.custom_all_reduce.substr(0, 80) +
                           "\" is not on or off");
  return Status::ok();
}

namespace {

/// The `seam check` line that judges the recording against one policy's plan.
std::string recordingReproduce(const Case& c, const std::string& policy,
                               const std::string& decision, const RecordingOptions& r) {
  std::string line = reproduceCommand(c, policy);
  if (!decision.empty()) line += " --decision " + decision;
  line += " --recording " + r.path;
  if (r.passes != 1) line += " --passes " + std::to_string(r.passes);
  if (r.custom_all_reduce != "on") line += " --custom-all-reduce " + r.custom_all_reduce;
  return line;
}

recordings::RecordingRoutes routesOf(const RecordingOptions& r) {
  return {.custom_all_reduce = r.custom_all_reduce == "on"};
}

std::string summary(const recordings::Recording& rec) {
  std::string out = "recording \"" + rec.source + "\": " + rec.format +
                    (rec.version.empty() ? "" : " " + rec.version) + ", " +
                    std::to_string(rec.groups.size()) + " groups\n";
  for (std::size_t r = 0; r < rec.ranks.size(); ++r) {
    out += "  rank " + std::to_string(r) + ": " +
           (rec.present[r] ? std::to_string(rec.ranks[r].size()) + " calls" : "absent") + "\n";
  }
  for (const auto& p : rec.partial) out += "partial: " + p.what + "\n";
  return out;
}

/// Reads the recording; `summary_only` (seam import): prints what it holds.
Expected<recordings::Recording> readOrSummarise(const std::string& path, bool summary_only) {
  auto rec = recordings::readRecording(path);
  if (rec && summary_only) std::cout << summary(*rec);
  return rec;
}

/// Prints the recording's verdict beside the plan's own (text, or one JSON
/// object with "plan_holds") and returns the exit code: 0 only when both hold.
int printVerdict(const recordings::Recording& rec, const recordings::RecordingVerdict& v,
                 const std::string& reproduce, bool plan_holds, const std::string& plan_label,
                 bool json) {
  const int code = v.holds() && plan_holds ? kExitOk : kExitPropertyFailed;
  if (json) {
    std::string text = recordings::recordingVerdictJson(rec, v, reproduce);
    text.insert(text.rfind('}'), std::string(",\"plan_holds\":") + (plan_holds ? "true" : "false"));
    std::cout << text;
    return code;
  }
  std::cout << recordings::renderRecordingVerdict(rec, v, reproduce);
  std::cout << "plan (" << plan_label << "): "
            << (plan_holds ? "all properties hold"
                           : "a property fails on the plan itself; seam check without "
                             "--recording says where")
            << "\n";
  return code;
}

/// The training branch of checkRecording: the training plan's calls owed,
/// the recording judged against them, the plan's own ledger beside it.
int checkTrainingRecording(const CaseOptions& o, const RecordingOptions& r, bool summary_only,
                           bool json) {
  auto tc = buildTrainingCase(o);
  if (!tc) return fail(tc.status());
  auto plan = buildTrainingPlan(*tc);
  if (!plan) return fail(plan.status());
  auto rec = readOrSummarise(r.path, summary_only);
  if (!rec) return fail(rec.status());
  if (summary_only) return kExitOk;
  auto verdict = recordings::judgeTrainingRecording(*rec, *plan, r.passes);
  if (!verdict) return fail(verdict.status());
  std::string reproduce = reproduceTrainingCommand(*tc) + " --recording " + r.path;
  if (r.passes != 1) reproduce += " --passes " + std::to_string(r.passes);
  return printVerdict(*rec, *verdict, reproduce, checkTrainingPlan(*plan).holds(),
                      "training-" + std::string(layoutName(tc->config.layout)), json);
}

}  // namespace

void addRecordingOptions(CLI::App* sub, RecordingOptions& r) {
  sub->add_option("--recording", r.path,
                  "an engine recording (Flight Recorder JSON dumps or NCCL logs, a file or a "
                  "folder) to judge against the case's plan");
  sub->add_option("--passes", r.passes,
                  "--recording: how many times the recording runs the plan (default 1)");
  sub->add_option("--custom-all-reduce", r.custom_all_reduce,
                  "--recording: on (SGLang's default) if the run could route small all-reduces "
                  "through its custom all-reduce, which no recording sees; off if it ran with "
                  "--disable-custom-all-reduce")
      ->capture_default_str();
}

int checkRecording(const CaseOptions& o, const RecordingOptions& r, bool summary_only, bool json) {
  if (Status s = recordingApplies(o, r, true); !s) return fail(s);
  if (isTraining(o)) return checkTrainingRecording(o, r, summary_only, json);
  auto c = buildCase(o);
  if (!c) return fail(c.status());
  auto plan = buildPolicyPlan(o, *c);
  if (!plan) return fail(plan.status());
  auto rec = readOrSummarise(r.path, summary_only);
  if (!rec) return fail(rec.status());
  if (summary_only) return kExitOk;
  auto verdict = recordings::judgeRecording(*rec, *plan, r.passes, routesOf(r));
  if (!verdict) return fail(verdict.status());
  const std::string reproduce = recordingReproduce(*c, o.policy, o.decision, r);
  Ledger ledger;
  const auto plan_verdict = properties::checkPlan(*plan, ledger, properties::Depth::kAll);
  return printVerdict(*rec, *verdict, reproduce, plan_verdict.holds(), o.policy, json);
}

int diffRecording(const CaseOptions& o, const RecordingOptions& r, const Case& c, const Plan& mine,
                  const Plan& other) {
  if (Status s = recordingApplies(o, r, false); !s) return fail(s);
  auto rec = recordings::readRecording(r.path);
  if (!rec) return fail(rec.status());
  recordings::SideVerdict side[2];
  const Plan* plans[2] = {&mine, &other};
  for (int i = 0; i < 2; ++i) {
    auto v = recordings::judgeRecording(*rec, *plans[i], r.passes, routesOf(r));
    if (!v) return fail(v.status());
    side[i].label = plans[i]->policy;
    side[i].verdict = std::move(*v);
  }
  side[0].reproduce = recordingReproduce(c, o.policy, o.decision, r);
  side[1].reproduce = recordingReproduce(c, other.policy, "", r);
  std::cout << recordings::renderRecordingComparison(*rec, side[0], side[1]);
  return side[0].verdict.holds() || side[1].verdict.holds() ? kExitOk : kExitPropertyFailed;
}

}  // namespace seam::tools
