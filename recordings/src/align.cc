// judgeRecording: the recording's groups mapped onto the case's axes, and
// each rank's recorded calls aligned with the calls the plan owes it by an
// edit distance (a recorded call not owed, an owed call not recorded, or
// the owed call over another group or with other sizes each cost one), so
// that every recorded call is tied to an owed one or named as a finding.
#include <algorithm>
#include <limits>

#include "seam/recordings/alignment.h"

namespace seam::recordings {

namespace {

/// The most cells one rank's alignment may hold beyond the common prefix
/// and suffix (one byte each).
constexpr std::int64_t kMaxAlignCells = std::int64_t{1} << 26;

std::string rankList(const std::vector<int>& ranks) {
  std::string s = "[";
  for (std::size_t i = 0; i < ranks.size() && i < 16; ++i)
    s += (i ? ", " : "") + (ranks[i] < 0 ? std::string("?") : std::to_string(ranks[i]));
  return s + (ranks.size() > 16 ? ", ...]" : "]");
}

/// The axes whose groups are exactly `g`'s known members (a member whose
/// log is absent is unknown and compared with nothing).
std::vector<Axis> fittingAxes(const Topology& topo, const std::vector<int>& members) {
  std::vector<int> known;
  for (int m : members)
    if (m >= 0) known.push_back(m);
  std::sort(known.begin(), known.end());
  std::vector<Axis> axes;
  if (known.empty() || known.back() >= topo.world()) return axes;
  for (Axis a : kAllAxes) {
    const std::vector<int>& group = topo.groupOf(a, known.front());
    if (group.size() != members.size()) continue;
    if (std::includes(group.begin(), group.end(), known.begin(), known.end())) axes.push_back(a);
  }
  return axes;
}

Expected<std::vector<GroupAxes>> mapGroups(const Recording& rec, const Topology& topo) {
  std::vector<bool> used(rec.groups.size(), false);
  for (const auto& calls : rec.ranks)
    for (const RecordedCall& c : calls) used[c.group] = true;
  std::vector<GroupAxes> out;
  for (std::size_t g = 0; g < rec.groups.size(); ++g) {
    const RecordedGroup& group = rec.groups[g];
    GroupAxes ga{group.name, group.members, fittingAxes(topo, group.members)};
    const bool world = static_cast<int>(group.members.size()) == topo.world();
    if (ga.axes.empty() && used[g] && !world && group.members.size() > 1) {
      std::string axes;
      for (Axis a : kAllAxes) {
        if (group.members.front() < 0 || group.members.front() >= topo.world()) break;
        axes += std::string(axes.empty() ? "" : ", ") + std::string(axisName(a)) + " " +
                rankList(topo.groupOf(a, group.members.front()));
      }
      return Status::invalid("recording \"" + rec.source.substr(0, 200) + "\": group \"" +
                             group.name.substr(0, 80) + "\" of ranks " + rankList(group.members) +
                             " is no group of the case's axes (" + axes + ")");
    }
    out.push_back(std::move(ga));
  }
  return out;
}

enum class Pair : std::uint8_t { kMatch, kWrongGroup, kWrongSize, kNone };

/// How a recorded call of `rank` fits an owed one. The group fits when it
/// is the owed axis's group of `rank` itself (a group of the right axis
/// that `rank` is no member of is another group).
Pair pairOf(const OwedCall& o, const RecordedCall& c, const std::vector<GroupAxes>& groups,
            int rank) {
  // all_gatherv over members of one size is one plain all-gather
  // (parallel_state.py `all_gatherv` @0005973a drops its sizes then).
  const bool plain_gatherv = o.kind == CallKind::kAllGatherv && c.kind == CallKind::kAllGather;
  if (o.kind != c.kind && !plain_gatherv) return Pair::kNone;
  const GroupAxes& g = groups[c.group];
  bool group_ok =
      std::find(g.axes.begin(), g.axes.end(), static_cast<Axis>(o.axis)) != g.axes.end() &&
      std::find(g.members.begin(), g.members.end(), rank) != g.members.end();
  if (o.peer >= 0 && c.peer >= 0 && o.peer != c.peer) group_ok = false;
  // A send is judged by what it sends, a recv by what it receives: the
  // other side of a point-to-point entry is not the payload.
  const bool in_ok = c.in_elems < 0 || c.in_elems == o.in_elems || o.kind == CallKind::kRecv;
  const bool out_ok = c.out_elems < 0 || c.out_elems == o.out_elems || o.kind == CallKind::kSend;
  const bool size_ok = !o.sizes_known || (in_ok && out_ok);
  if (group_ok && size_ok) return Pair::kMatch;
  if (size_ok) return Pair::kWrongGroup;
  if (group_ok) return Pair::kWrongSize;
  return Pair::kNone;
}

/// One step of an alignment: an owed call (or -1), a recorded call (or -1).
struct Step {
  int owed, recorded;
  Pair pair;
};

Expected<std::vector<Step>> align(const std::vector<OwedCall>& owed,
                                  const std::vector<RecordedCall>& rec,
                                  const std::vector<GroupAxes>& groups, int rank) {
  const int n = static_cast<int>(owed.size()), m = static_cast<int>(rec.size());
  int lo = 0;
  while (lo < n && lo < m && pairOf(owed[lo], rec[lo], groups, rank) == Pair::kMatch) ++lo;
  int hi_o = n, hi_r = m;
  while (hi_o > lo && hi_r > lo &&
         pairOf(owed[hi_o - 1], rec[hi_r - 1], groups, rank) == Pair::kMatch)
    --hi_o, --hi_r;
  const int rows = hi_o - lo, cols = hi_r - lo;
  if (static_cast<std::int64_t>(rows + 1) * (cols + 1) > kMaxAlignCells)
    return Status::invalid("rank " + std::to_string(rank) + ": " + std::to_string(rows) +
                           " owed and " + std::to_string(cols) +
                           " recorded calls differ, more than seam aligns");
  // dir: 0 diagonal, 1 owed missing (up), 2 recorded extra (left).
  std::vector<std::uint8_t> dir(static_cast<std::size_t>(rows + 1) * (cols + 1));
  std::vector<int> prev(cols + 1), cur(cols + 1);
  for (int j = 0; j <= cols; ++j) prev[j] = j, dir[j] = 2;
  for (int i = 1; i <= rows; ++i) {
    // An owed call a recording cannot see costs nothing to leave unrecorded.
    const int skip = owed[lo + i - 1].route == Route::kNccl ? 1 : 0;
    cur[0] = prev[0] + skip;
    dir[static_cast<std::size_t>(i) * (cols + 1)] = 1;
    for (int j = 1; j <= cols; ++j) {
      const Pair p = pairOf(owed[lo + i - 1], rec[lo + j - 1], groups, rank);
      int best =
          p == Pair::kNone ? std::numeric_limits<int>::max() : prev[j - 1] + (p != Pair::kMatch);
      std::uint8_t d = 0;
      if (prev[j] + skip < best) best = prev[j] + skip, d = 1;
      if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1, d = 2;
      cur[j] = best;
      dir[static_cast<std::size_t>(i) * (cols + 1) + j] = d;
    }
    std::swap(prev, cur);
  }
  std::vector<Step> middle;
  for (int i = rows, j = cols; i > 0 || j > 0;) {
    const std::uint8_t d = dir[static_cast<std::size_t>(i) * (cols + 1) + j];
    if (d == 0) {
      middle.push_back(
          {lo + i - 1, lo + j - 1, pairOf(owed[lo + i - 1], rec[lo + j - 1], groups, rank)});
      --i, --j;
    } else if (d == 1) {
      middle.push_back({lo + --i, -1, Pair::kNone});
    } else {
      middle.push_back({-1, lo + --j, Pair::kNone});
    }
  }
  std::vector<Step> all;
  for (int k = 0; k < lo; ++k) all.push_back({k, k, Pair::kMatch});
  all.insert(all.end(), middle.rbegin(), middle.rend());
  for (int k = hi_o, l = hi_r; k < n; ++k, ++l) all.push_back({k, l, Pair::kMatch});
  return all;
}

std::string recordedWords(const RecordedCall& c) {
  std::string s = c.op + " (" + std::string(callKindName(c.kind)) + ")";
  if (c.in_elems >= 0) s += ", " + std::to_string(c.in_elems) + " elements in";
  if (c.out_elems >= 0) s += ", " + std::to_string(c.out_elems) + " out";
  if (!c.dtype.empty()) s += ", " + c.dtype;
  return s;
}

/// The findings of one rank's alignment. `lost_front`: the owed calls
/// before the first recorded one fell out of the recording (labelled partial).
void rankFindings(const Plan& plan, int rank, const std::vector<OwedCall>& owed,
                  const std::vector<RecordedCall>& rec, const std::vector<Step>& steps,
                  bool lost_front, RecordingVerdict* v) {
  bool before_first = true;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const Step& st = steps[s];
    if (st.recorded >= 0) before_first = false;
    if (lost_front && before_first) continue;
    if (st.pair == Pair::kMatch) {
      ++v->explained;
      continue;
    }
    if (st.recorded < 0 && owed[st.owed].route != Route::kNccl) {
      ++v->hidden[static_cast<int>(owed[st.owed].route)];
      continue;
    }
    Finding f;
    f.rank = rank;
    if (st.recorded >= 0) {
      const RecordedCall& c = rec[st.recorded];
      f.group = v->groups[c.group].name;
      f.seq = c.seq;
      f.call = recordedWords(c);
      f.where = c.where;
      f.frame = c.frame;
    }
    if (st.owed >= 0) {
      f.expected = describeOwed(plan, rank, owed[st.owed]);
    } else {
      int next = -1;
      for (std::size_t k = s + 1; k < steps.size() && next < 0; ++k) next = steps[k].owed;
      f.expected = next < 0 ? "nothing more: the plan owes no call after the previous one"
                            : "next: " + describeOwed(plan, rank, owed[next]);
    }
    if (st.recorded < 0) {
      f.kind = FindingKind::kMissing;
      int next = -1;
      for (std::size_t k = s + 1; k < steps.size() && next < 0; ++k) next = steps[k].recorded;
      f.where = next < 0 ? "after the rank's last recorded call" : "before " + rec[next].where;
    } else if (st.owed < 0) {
      f.kind = FindingKind::kExtra;
    } else {
      f.kind = st.pair == Pair::kWrongGroup ? FindingKind::kWrongGroup : FindingKind::kWrongSize;
    }
    v->findings.push_back(std::move(f));
  }
}

}  // namespace

/// The partial evidence of the owed calls a recording could not see.
void addHidden(RecordingVerdict* v) {
  const int custom = v->hidden[static_cast<int>(Route::kCustomAllReduce)];
  const int fused = v->hidden[static_cast<int>(Route::kFusedKernel)];
  if (custom > 0)
    v->partial.push_back(
        {-1, std::to_string(custom) +
                 " all_reduce calls the plan owes are not recorded and fit SGLang's custom "
                 "all-reduce (groups of 2, 4, 6 or 8 ranks, under 8 MiB), which neither NCCL's "
                 "log nor the Flight Recorder sees: unchecked (record with "
                 "--disable-custom-all-reduce and judge with --custom-all-reduce off)"});
  if (const int pynccl = v->hidden[static_cast<int>(Route::kPynccl)]; pynccl > 0)
    v->partial.push_back(
        {-1, std::to_string(pynccl) +
                 " all_gatherv / reduce_scatterv calls the plan owes are not recorded: SGLang "
                 "runs them on its pynccl communicator, past torch.distributed, so the Flight "
                 "Recorder never sees them: unchecked (NCCL's log sees them)"});
  if (fused > 0)
    v->partial.push_back(
        {-1, std::to_string(fused) +
                 " fused all-reduce + add + RMSNorm calls are not recorded: the fused kernel "
                 "runs on its own workspace, which no recording sees: unchecked"});
}

Expected<RecordingVerdict> judgeRecording(const Recording& rec, const Plan& plan, int passes,
                                          const RecordingRoutes& routes) {
  if (static_cast<int>(rec.ranks.size()) != plan.world())
    return Status::invalid("recording \"" + rec.source.substr(0, 200) + "\" spans " +
                           std::to_string(rec.ranks.size()) + " ranks; the case has " +
                           std::to_string(plan.world()));
  RecordingRoutes seen = routes;
  seen.sees_pynccl = rec.format != "flight-recorder";
  const Topology topo(plan.source.config);
  auto groups = mapGroups(rec, topo);
  if (!groups) return groups.status();
  RecordingVerdict v;
  v.groups = std::move(*groups);
  v.partial = rec.partial;
  int unsplit = 0;
  for (int r = 0; r < plan.world(); ++r) {
    if (!rec.present[r]) continue;
    const std::vector<OwedCall> owed = owedCalls(plan, r, passes, seen);
    v.owed += static_cast<int>(owed.size());
    v.calls += static_cast<int>(rec.ranks[r].size());
    auto steps = align(owed, rec.ranks[r], v.groups, r);
    if (!steps) return steps.status();
    rankFindings(plan, r, owed, rec.ranks[r], *steps, rec.lost_front[r], &v);
    for (const OwedCall& o : owed) unsplit += !o.sizes_known;
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
