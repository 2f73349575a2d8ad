// Fuzzes the recording readers (recordings/recording.h readRecording: Flight
// Recorder dumps, JSON or pickle, and NCCL logs, what `seam check --recording` and `seam
// import --recording` read) and the judging and rendering that follow.
// Input: one byte choosing the file's name (a dump's <prefix><rank>, or a log)
// and the case, then the file. Contracts: a refused recording is one line;
// an accepted one is judged (or refused in one line) without crashing, and
// its verdict counts no more explained calls than recorded ones.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "seam/recordings/alignment.h"
#include "seam/recordings/recording.h"
#include "seam/sim/model/case_spec.h"
#include "seam/sim/policy/policy.h"

namespace {

using seam::fuzz::require;

/// The cases of tests/recordings/recordings_test.cc: DP attention with MoE
/// over tp, and a DeepEP all-to-all; a one-rank case for the H200 logs.
std::vector<seam::Plan> plans() {
  std::vector<seam::Plan> out;
  const struct {
    const char *pattern, *tokens, *a2a;
    int tp, dp, ep;
  } cases[] = {
      {"*E", "2,2", "none", 4, 2, 4}, {"*E", "2", "deepep", 2, 1, 2}, {"M", "5", "none", 1, 1, 1}};
  for (const auto& t : cases) {
    seam::CaseSpec o;
    o.pattern = t.pattern;
    o.tokens = t.tokens;
    o.a2a = t.a2a;
    o.tp = t.tp;
    o.dp = t.dp;
    o.ep = t.ep;
    auto c = seam::buildCase(o);
    require(c.hasValue(), "a fuzz case is refused");
    auto plan = seam::buildPlan(*c, seam::PolicyKind::kDeclared);
    require(plan.hasValue(), "a fuzz plan is refused");
    out.push_back(std::move(*plan));
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<seam::Plan> kPlans = plans();
  static const std::array<std::string, 2> kPaths = {seam::fuzz::scratchPath("nccl_trace_rank_0"),
                                                    seam::fuzz::scratchPath("rank0.log")};
  if (size == 0) return 0;
  const std::string& path = kPaths[data[0] % kPaths.size()];
  const seam::Plan& plan = kPlans[(data[0] / kPaths.size()) % kPlans.size()];
  seam::fuzz::writeFile(path, data + 1, size - 1);
  auto rec = seam::recordings::readRecording(path);
  std::remove(path.c_str());
  if (!rec) {
    seam::fuzz::requireOneLineError(rec.status());
    return 0;
  }
  require(rec->present.size() == rec->ranks.size(), "present does not cover every rank");
  auto v = seam::recordings::judgeRecording(*rec, plan, 1 + data[0] % 2);
  if (!v) {
    seam::fuzz::requireOneLineError(v.status());
    return 0;
  }
  require(v->explained <= v->calls, "more calls explained than recorded");
  const std::string text = seam::recordings::renderRecordingVerdict(*rec, *v, "seam check");
  require(!text.empty(), "an empty verdict");
  return 0;
}
