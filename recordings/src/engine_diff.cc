// Parent tree vs changed tree: both recorded over the same cases, each case
// classified by what the change did to the engine's calls and outputs.
#include "seam/recordings/engine_diff.h"

#include <algorithm>
#include <array>
#include <map>

namespace seam::recordings {

namespace {

constexpr std::array<std::string_view, kTreeDiffClassCount> kNames = {
    "identical",     "reordered",    "moved",       "equal-values",
    "values-differ", "change-fails", "change-runs", "both-fail"};

/// What makes two calls the same call: the op, its group's members, its
/// sizes, its dtype and its peer. Where it was issued (the frame) is not:
/// a change moves lines.
std::string callKey(const Recording& rec, const RecordedCall& c) {
  std::string out = c.op + " [";
  if (c.group >= 0 && c.group < static_cast<int>(rec.groups.size()))
    for (const int m : rec.groups[c.group].members) out += std::to_string(m) + ",";
  out += "] in " + std::to_string(c.in_rows >= 0 ? c.in_rows : c.in_elems) +
         (c.in_rows >= 0 ? " rows" : " elems") + " out " +
         std::to_string(c.out_rows >= 0 ? c.out_rows : c.out_elems) + " " + c.dtype;
  if (c.peer >= 0) out += " peer " + std::to_string(c.peer);
  return out;
}

std::string layerText(int layer) {
  return layer < 0 ? "outside the layers" : "layer " + std::to_string(layer);
}

std::string callText(const Recording& rec, const std::vector<RecordedCall>& calls, std::size_t i) {
  if (i >= calls.size()) return "no call (its calls end at " + std::to_string(calls.size()) + ")";
  const RecordedCall& c = calls[i];
  return callKey(rec, c) + " (" + layerText(c.layer) + ") at " +
         c.stack.substr(0, c.stack.find(" < "));
}

/// How a run that did not complete ended, in one line.
std::string endText(const Recording& rec) {
  const EngineRun& e = rec.engine;
  for (const RankEnd& r : e.ranks)
    if (r.outcome == "raised") return e.verdict + " at " + r.where + ": " + r.error;
  return e.verdict + (e.failure.empty() ? "" : ": " + e.failure);
}

/// Per rank, the calls as keys with (with_layer) or without their layer.
std::vector<std::vector<std::string>> keys(const Recording& rec, bool with_layer) {
  std::vector<std::vector<std::string>> out(rec.ranks.size());
  for (std::size_t r = 0; r < rec.ranks.size(); ++r)
    for (const RecordedCall& c : rec.ranks[r])
      out[r].push_back(callKey(rec, c) + (with_layer ? " @" + std::to_string(c.layer) : ""));
  return out;
}

bool sameMultisets(std::vector<std::vector<std::string>> a,
                   std::vector<std::vector<std::string>> b) {
  if (a.size() != b.size()) return false;
  for (std::size_t r = 0; r < a.size(); ++r) {
    std::sort(a[r].begin(), a[r].end());
    std::sort(b[r].begin(), b[r].end());
  }
  return a == b;
}

/// The first rank whose output differs, in words; "" when every rank's is the same.
std::string outputDifference(const Recording& parent, const Recording& change) {
  const auto& p = parent.engine.ranks;
  const auto& c = change.engine.ranks;
  if (p.size() != c.size()) return "the trees ran different worlds";
  for (std::size_t r = 0; r < p.size(); ++r)
    if (p[r].output_digest != c[r].output_digest || p[r].output_rows != c[r].output_rows)
      return "rank " + std::to_string(r) + "'s output differs (parent " + p[r].output_digest +
             ", change " + c[r].output_digest + ")";
  return "";
}

}  // namespace

std::string_view treeDiffClassName(TreeDiffClass c) { return kNames[static_cast<int>(c)]; }

TreeDiff compareRecordings(const Recording& parent, const Recording& change) {
  const bool p_ran = parent.engine.verdict == "ran";
  const bool c_ran = change.engine.verdict == "ran";
  if (!p_ran && !c_ran) {
    const std::string p = endText(parent), c = endText(change);
    return {TreeDiffClass::kBothFail, p == c ? "both " + p : "parent " + p + "; change " + c};
  }
  if (!c_ran) return {TreeDiffClass::kChangeFails, "change " + endText(change)};
  if (!p_ran) return {TreeDiffClass::kChangeRuns, "parent " + endText(parent)};

  const auto p_keys = keys(parent, true), c_keys = keys(change, true);
  std::string first;  // the first call that differs, rank by rank
  for (std::size_t r = 0; r < std::max(p_keys.size(), c_keys.size()) && first.empty(); ++r) {
    const std::size_t np = r < p_keys.size() ? p_keys[r].size() : 0;
    const std::size_t nc = r < c_keys.size() ? c_keys[r].size() : 0;
    for (std::size_t i = 0; i < std::max(np, nc); ++i) {
      if (i < np && i < nc && p_keys[r][i] == c_keys[r][i]) continue;
      static const std::vector<RecordedCall> kNone;
      first = "rank " + std::to_string(r) + ", call " + std::to_string(i) + ": parent " +
              callText(parent, r < parent.ranks.size() ? parent.ranks[r] : kNone, i) + "; change " +
              callText(change, r < change.ranks.size() ? change.ranks[r] : kNone, i);
      break;
    }
  }
  const std::string values = outputDifference(parent, change);
  if (!values.empty()) return {TreeDiffClass::kValuesDiffer, first.empty() ? values : first};
  if (first.empty()) return {TreeDiffClass::kIdentical, ""};
  if (sameMultisets(p_keys, c_keys)) return {TreeDiffClass::kReordered, first};
  if (sameMultisets(keys(parent, false), keys(change, false)))
    return {TreeDiffClass::kMoved, first};
  return {TreeDiffClass::kEqualValues, first};
}

Expected<EngineDiffResult> runEngineDiff(const EngineDiffSpec& spec,
                                         const std::function<Status(const EngineDiffRow&)>& sink) {
  EngineDiffResult result;
  RecorderRun parent = spec.parent, change = spec.change;
  if (parent.fingerprint.empty()) parent.fingerprint = engineFingerprint(parent);
  if (change.fingerprint.empty()) change.fingerprint = engineFingerprint(change);
  std::int64_t case_base = 0, server_base = 0;
  for (const EngineSweepCases& m : spec.models) {
    const EngineSpace space = engineSpace(m.cases, recorderCaseJson);
    for (const auto& [why, n] : space.left_out) result.left_out[why] += n;
    const ShardRuns mine = shardRuns(space, spec.shard, {}, case_base, server_base);
    const std::int64_t model_base = case_base;
    case_base += static_cast<std::int64_t>(m.cases.size());
    server_base += serverCount(space);
    for (const RecorderRun* tree : {&parent, &change})
      if (Status s = recordRuns(*tree, mine.runs, mine.server_of, spec.jobs, spec.dir); !s)
        return s;
    for (const std::size_t i : mine.cases) {
      const Case& c = space.cases[i];
      const std::string& run = space.runs[space.run_of[i]];
      auto p = readRecording(spec.dir + "/" + recordingName(parent, run));
      if (!p) return p.status();
      auto q = readRecording(spec.dir + "/" + recordingName(change, run));
      if (!q) return q.status();
      const std::string check = reproduceCommand(c, policyName(spec.policy));
      EngineDiffRow row{
          .case_index = model_base + space.index_of[i],
          .model = m.name,
          .config = c.config.describe(),
          .flags = c.flags.describe(),
          .batch = c.batch.describe(),
          .family = configFamily(c.config),
          .diff = compareRecordings(*p, *q),
          .parent_agreement = std::string(agreementName(agreementOf(c, spec.policy, *p).agreement)),
          .change_agreement = std::string(agreementName(agreementOf(c, spec.policy, *q).agreement)),
          .reproduce =
              "seam diff" + check.substr(std::string("seam check").size()) + spec.tree_options};
      ++result.counts[static_cast<int>(row.diff.cls)];
      ++result.cases;
      if (Status s = sink(row); !s) return s;
    }
  }
  return result;
}

}  // namespace seam::recordings
