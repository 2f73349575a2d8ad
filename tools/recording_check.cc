#include "recording_check.h"

#include "command.h"
#include "seam/properties/check.h"
#include "seam/recordings/alignment.h"

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

Status recordingApplies(const CaseOptions& o, const RecordingOptions& r) {
  if (!o.trace.empty()) return Status::invalid("--recording and --trace: give one");
  if (o.family == "training")
    return Status::invalid("--recording: the training family is not modelled for recordings yet");
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
  if (Status s = recordingApplies(o, r); !s) return fail(s);
  auto c = buildCase(o);
  if (!c) return fail(c.status());
  auto plan = buildPolicyPlan(o, *c);
  if (!plan) return fail(plan.status());
  auto rec = recordings::readRecording(r.path);
  if (!rec) return fail(rec.status());
  if (summary_only) {
    std::cout << summary(*rec);
    return kExitOk;
  }
  auto verdict = recordings::judgeRecording(*rec, *plan, r.passes, routesOf(r));
  if (!verdict) return fail(verdict.status());
  const std::string reproduce = recordingReproduce(*c, o.policy, o.decision, r);
  Ledger ledger;
  const auto plan_verdict = properties::checkPlan(*plan, ledger, properties::Depth::kAll);
  const int code = verdict->holds() && plan_verdict.holds() ? kExitOk : kExitPropertyFailed;
  if (json) {
    std::string text = recordings::recordingVerdictJson(*rec, *verdict, reproduce);
    text.insert(text.rfind('}'),
                std::string(",\"plan_holds\":") + (plan_verdict.holds() ? "true" : "false"));
    std::cout << text;
    return code;
  }
  std::cout << recordings::renderRecordingVerdict(*rec, *verdict, reproduce);
  std::cout << "plan (" << o.policy << "): "
            << (plan_verdict.holds() ? "all properties hold"
                                     : "a property fails on the plan itself; seam check without "
                                       "--recording says where")
            << "\n";
  return code;
}

int diffRecording(const CaseOptions& o, const RecordingOptions& r, const Case& c, const Plan& mine,
                  const Plan& other) {
  if (Status s = recordingApplies(o, r); !s) return fail(s);
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
