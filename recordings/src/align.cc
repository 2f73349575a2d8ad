// judgeRecording: the recording's groups mapped onto the serving case's
// axes (the judges' groups, judge_rows.h, not the planner's Topology), and each rank's recorded
// calls aligned with the calls the plan owes it (align_core.h), so that every recorded call is tied
// to an owed one or named as a finding.
#include <algorithm>

#include "align_core.h"

namespace seam::recordings {

namespace {

std::string rankList(const std::vector<int>& ranks) {
  std::string s = "[";
  for (std::size_t i = 0; i < ranks.size() && i < 16; ++i)
    s += (i ? ", " : "") + (ranks[i] < 0 ? std::string("?") : std::to_string(ranks[i]));
  return s + (ranks.size() > 16 ? ", ...]" : "]");
}

/// The axes whose groups are exactly `g`'s known members (a member whose
/// log is absent is unknown and compared with nothing).
std::vector<Axis> fittingAxes(const JudgeGroups& groups, const std::vector<int>& members) {
  std::vector<int> known;
  for (int m : members)
    if (m >= 0) known.push_back(m);
  std::sort(known.begin(), known.end());
  std::vector<Axis> axes;
  if (known.empty() || known.back() >= groups.world()) return axes;
  for (Axis a : kAllAxes) {
    std::vector<int> group = groups.groupOf(a, known.front());  // ordered by coordinate
    if (group.size() != members.size()) continue;
    std::sort(group.begin(), group.end());
    if (std::includes(group.begin(), group.end(), known.begin(), known.end())) axes.push_back(a);
  }
  return axes;
}

Expected<std::vector<GroupAxes>> mapGroups(const Recording& rec, const JudgeGroups& groups) {
  std::vector<bool> used(rec.groups.size(), false);
  for (const auto& calls : rec.ranks)
    for (const RecordedCall& c : calls) used[c.group] = true;
  std::vector<GroupAxes> out;
  for (std::size_t g = 0; g < rec.groups.size(); ++g) {
    const RecordedGroup& group = rec.groups[g];
    GroupAxes ga{group.name, group.members, fittingAxes(groups, group.members), {}};
    for (Axis a : ga.axes) ga.labels.emplace_back(axisName(a));
    const bool world = static_cast<int>(group.members.size()) == groups.world();
    if (ga.axes.empty() && used[g] && !world && group.members.size() > 1) {
      std::string axes;
      for (Axis a : kAllAxes) {
        if (group.members.front() < 0 || group.members.front() >= groups.world()) break;
        axes += std::string(axes.empty() ? "" : ", ") + std::string(axisName(a)) + " " +
                rankList(groups.groupOf(a, group.members.front()));
      }
      return Status::invalid("recording \"" + rec.source.substr(0, 200) + "\": group \"" +
                             group.name.substr(0, 80) + "\" of ranks " + rankList(group.members) +
                             " is no group of the case's axes (" + axes + ")");
    }
    out.push_back(std::move(ga));
  }
  return out;
}

/// fits[g][axis]: whether recorded group g is `rank`'s group of that axis
/// (a group of the right axis that `rank` is no member of is another group).
GroupFits fitsOf(const std::vector<GroupAxes>& groups, int rank) {
  GroupFits fits(groups.size(), std::vector<char>(kAllAxes.size(), 0));
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const bool member = std::find(groups[g].members.begin(), groups[g].members.end(), rank) !=
                        groups[g].members.end();
    for (Axis a : groups[g].axes) fits[g][static_cast<int>(a)] = member;
  }
  return fits;
}

}  // namespace

Expected<RecordingVerdict> judgeRecording(const Recording& given, const Plan& plan, int passes,
                                          const RecordingRoutes& routes) {
  if (Status s = checkWorld(given, plan.world()); !s) return s;
  // The recorder's rows are as wide as its tiny model: as wide as the case's.
  Recording scaled;
  if (given.row_width > 0) {
    scaled = given;
    scaleRows(&scaled, plan.source.model.shape.hidden);
  }
  const Recording& rec = given.row_width > 0 ? scaled : given;
  RecordingRoutes seen = routes;
  seen.sees_pynccl = rec.format != "flight-recorder";
  // The recorder sees every call GroupCoordinator makes, whatever would
  // carry it on a GPU.
  if (rec.format == "seam-recorder") {
    seen.custom_all_reduce = false;
    seen.sees_kernels = true;
  }
  const ServingJudge judge(plan);
  auto groups = mapGroups(rec, judge.groups);
  if (!groups) return groups.status();
  RecordingVerdict v;
  v.groups = std::move(*groups);
  v.partial = rec.partial;
  int unsplit = 0;
  for (int r = 0; r < plan.world(); ++r) {
    if (!rec.present[r]) continue;
    const std::vector<OwedCall> owed = owedCalls(plan, judge, r, passes, seen);
    v.owed += static_cast<int>(owed.size());
    v.calls += static_cast<int>(rec.ranks[r].size());
    // The recorder's calls outside the decoder layers (the embedding's sum,
    // the final norm's): seam's plans start at the first layer's input.
    std::vector<RecordedCall> layers;
    for (const RecordedCall& c : rec.ranks[r]) {
      if (rec.format == "seam-recorder" && c.layer < 0)
        ++v.outside;
      else
        layers.push_back(c);
    }
    auto steps = align(owed, layers, fitsOf(v.groups, r), r);
    if (!steps) return steps.status();
    rankFindings(
        r, owed, layers, *steps, rec.lost_front[r],
        [&](const OwedCall& o) { return describeOwed(plan, r, o); }, &v);
    for (const OwedCall& o : owed) unsplit += !o.in_known;
  }
  for (Finding& f : crossRankFindings(rec)) v.findings.push_back(std::move(f));
  addHidden(&v);
  if (unsplit > 0)
    v.partial.push_back({-1, std::to_string(unsplit) +
                                 " all_to_all calls: the recording holds no splits, so their "
                                 "sizes (which rows go where) are unchecked"});
  return v;
}

}  // namespace seam::recordings
