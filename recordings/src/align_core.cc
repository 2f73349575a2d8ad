// The alignment both families share (align_core.h): an edit distance over
// one rank's owed and recorded calls (a recorded call not owed, an owed
// call not recorded, or the owed call over another group or with other
// sizes each cost one; an owed call no recording sees costs nothing to
// leave out), then each step turned into an explained call or a finding.
#include "align_core.h"

#include <limits>

#include "readers.h"

namespace seam::recordings {

namespace {

/// The most cells one rank's alignment may hold beyond the common prefix
/// and suffix (one byte each).
constexpr std::int64_t kMaxAlignCells = std::int64_t{1} << 26;

/// A recorded call's size in the owed call's unit: its elements, or its
/// elements times its dtype's width (-1: unknown).
std::int64_t recordedSize(const OwedCall& o, std::int64_t elems, const std::string& dtype) {
  if (elems < 0 || !o.bytes) return elems;
  const int width = dtypeBytes(dtype);
  return width == 0 ? -1 : elems * width;
}

/// How a recorded call of the aligned rank fits an owed one.
Pair pairOf(const OwedCall& o, const RecordedCall& c, const GroupFits& fits) {
  // all_gatherv over members of one size is one plain all-gather
  // (parallel_state.py `all_gatherv` @0005973a drops its sizes then).
  const bool plain_gatherv = o.kind == CallKind::kAllGatherv && c.kind == CallKind::kAllGather;
  if (o.kind != c.kind && !plain_gatherv) return Pair::kNone;
  bool group_ok = o.group >= 0 && o.group < static_cast<int>(fits[c.group].size()) &&
                  fits[c.group][o.group] != 0;
  if (o.peer >= 0 && c.peer >= 0 && o.peer != c.peer) group_ok = false;
  // A send is judged by what it sends, a recv by what it receives: the
  // other side of a point-to-point entry is not the payload.
  const std::int64_t in = recordedSize(o, c.in_elems, c.dtype);
  const std::int64_t out = recordedSize(o, c.out_elems, c.dtype);
  const bool in_ok = !o.in_known || in < 0 || in == o.in_size || o.kind == CallKind::kRecv;
  const bool out_ok = !o.out_known || out < 0 || out == o.out_size || o.kind == CallKind::kSend;
  const bool size_ok = in_ok && out_ok;
  if (group_ok && size_ok) return Pair::kMatch;
  if (size_ok) return Pair::kWrongGroup;
  if (group_ok) return Pair::kWrongSize;
  return Pair::kNone;
}

}  // namespace

Expected<std::vector<Step>> align(const std::vector<OwedCall>& owed,
                                  const std::vector<RecordedCall>& rec, const GroupFits& fits,
                                  int rank) {
  const int n = static_cast<int>(owed.size()), m = static_cast<int>(rec.size());
  int lo = 0;
  while (lo < n && lo < m && pairOf(owed[lo], rec[lo], fits) == Pair::kMatch) ++lo;
  int hi_o = n, hi_r = m;
  while (hi_o > lo && hi_r > lo && pairOf(owed[hi_o - 1], rec[hi_r - 1], fits) == Pair::kMatch)
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
      const Pair p = pairOf(owed[lo + i - 1], rec[lo + j - 1], fits);
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
      middle.push_back({lo + i - 1, lo + j - 1, pairOf(owed[lo + i - 1], rec[lo + j - 1], fits)});
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

std::optional<CallKind> callKindOf(OpKind kind) {
  switch (kind) {
    case OpKind::kAllReduce:
    case OpKind::kArAddNorm:
      return CallKind::kAllReduce;
    case OpKind::kReduceScatter:
      return CallKind::kReduceScatter;
    case OpKind::kAllGather:
      return CallKind::kAllGather;
    case OpKind::kAllGatherv:
      return CallKind::kAllGatherv;
    case OpKind::kReduceScatterv:
      return CallKind::kReduceScatterv;
    case OpKind::kAllToAll:
      return CallKind::kAllToAll;
    case OpKind::kSend:
      return CallKind::kSend;
    case OpKind::kRecv:
      return CallKind::kRecv;
    default:
      return std::nullopt;
  }
}

Status checkWorld(const Recording& rec, int world) {
  if (static_cast<int>(rec.ranks.size()) == world) return Status::ok();
  return Status::invalid("recording \"" + rec.source.substr(0, 200) + "\" spans " +
                         std::to_string(rec.ranks.size()) + " ranks; the case has " +
                         std::to_string(world));
}

std::string recordedWords(const RecordedCall& c) {
  std::string s = c.op + " (" + std::string(callKindName(c.kind)) + ")";
  if (c.in_elems >= 0) s += ", " + std::to_string(c.in_elems) + " elements in";
  if (c.out_elems >= 0) s += ", " + std::to_string(c.out_elems) + " out";
  if (!c.dtype.empty()) s += ", " + c.dtype;
  return s;
}

void rankFindings(int rank, const std::vector<OwedCall>& owed, const std::vector<RecordedCall>& rec,
                  const std::vector<Step>& steps, bool lost_front,
                  const std::function<std::string(const OwedCall&)>& describe,
                  RecordingVerdict* v) {
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
      f.frame = c.stack.empty() ? c.frame : c.stack;
    }
    if (st.owed >= 0) {
      f.expected = describe(owed[st.owed]);
    } else {
      int next = -1;
      for (std::size_t k = s + 1; k < steps.size() && next < 0; ++k) next = steps[k].owed;
      f.expected = next < 0 ? "nothing more: the plan owes no call after the previous one"
                            : "next: " + describe(owed[next]);
    }
    if (st.recorded < 0) {
      f.kind = FindingKind::kMissing;
      int next = -1;
      for (std::size_t k = s + 1; k < steps.size() && next < 0; ++k) next = steps[k].recorded;
      f.where = next < 0 ? "after the rank's last recorded call" : "before " + rec[next].where;
      if (next >= 0 && !rec[next].stack.empty())
        f.frame = "(the engine's next call) " + rec[next].stack;
    } else if (st.owed < 0) {
      f.kind = FindingKind::kExtra;
    } else {
      f.kind = st.pair == Pair::kWrongGroup ? FindingKind::kWrongGroup : FindingKind::kWrongSize;
    }
    v->findings.push_back(std::move(f));
  }
}

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
  if (const int deepep = v->hidden[static_cast<int>(Route::kDeepEp)]; deepep > 0)
    v->partial.push_back(
        {-1, std::to_string(deepep) +
                 " DeepEP dispatch / combine calls the plan owes are not recorded: DeepEP moves "
                 "tokens through its own buffers, with no NCCL call: unchecked"});
  if (fused > 0)
    v->partial.push_back(
        {-1, std::to_string(fused) +
                 " fused all-reduce + add + RMSNorm calls are not recorded: the fused kernel "
                 "runs on its own workspace, which no recording sees: unchecked"});
}

}  // namespace seam::recordings
