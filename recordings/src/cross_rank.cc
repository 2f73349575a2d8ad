// fr_trace's rules (flight_recorder/components/builder.py, utils.py): the
// members of a group must issue the same collective at each sequence number,
// with the same op, sizes and dtype, and none may be missing. Flight
// Recorder entries are keyed by collective_seq_id (shared by a group's
// members); an NCCL log's calls by their order on the communicator.
#include <map>

#include "seam/recordings/alignment.h"

namespace seam::recordings {

namespace {

using Key = std::pair<std::int64_t, int>;  // sequence number, index among entries sharing it

std::map<Key, const RecordedCall*> callsOn(const Recording& rec, int rank, int group) {
  std::map<Key, const RecordedCall*> out;
  std::int64_t ordinal = 0;
  for (const RecordedCall& c : rec.ranks[rank]) {
    if (c.group != group || c.kind == CallKind::kSend || c.kind == CallKind::kRecv) continue;
    const std::int64_t seq = rec.format == "flight-recorder" ? c.seq : ordinal;
    ++ordinal;
    int k = 0;
    while (out.count({seq, k}) > 0) ++k;
    out[{seq, k}] = &c;
  }
  return out;
}

/// Sizes every member shares: not the v-collectives', nor an all-to-all's.
bool uniformSizes(CallKind kind) {
  return kind != CallKind::kAllGatherv && kind != CallKind::kReduceScatterv &&
         kind != CallKind::kAllToAll;
}

std::string words(const RecordedCall& c) {
  std::string s = c.op;
  if (c.in_elems >= 0) s += ", " + std::to_string(c.in_elems) + " elements in";
  if (c.out_elems >= 0) s += ", " + std::to_string(c.out_elems) + " out";
  if (!c.dtype.empty()) s += ", " + c.dtype;
  return s;
}

Finding finding(FindingKind kind, int rank, const RecordedGroup& g, std::int64_t seq,
                const RecordedCall* c, const RecordedCall& ref, int ref_rank) {
  Finding f;
  f.kind = kind;
  f.rank = rank;
  f.group = g.name;
  f.seq = seq;
  if (c != nullptr) {
    f.call = words(*c);
    f.where = c->where;
    f.frame = c->frame;
  } else {
    f.where = "after " + ref.where + " on rank " + std::to_string(ref_rank);
  }
  f.expected = "rank " + std::to_string(ref_rank) + " issued " + words(ref);
  return f;
}

/// The first finding on group `g`, if any.
bool firstOnGroup(const Recording& rec, int g, Finding* out) {
  const RecordedGroup& group = rec.groups[g];
  std::vector<int> members;
  std::vector<std::map<Key, const RecordedCall*>> calls;
  std::map<Key, int> keys;  // key -> the first member holding it
  for (int m : group.members) {
    if (m < 0 || m >= static_cast<int>(rec.ranks.size()) || !rec.present[m]) continue;
    members.push_back(m);
    calls.push_back(callsOn(rec, m, g));
    for (const auto& [k, c] : calls.back()) keys.emplace(k, static_cast<int>(members.size()) - 1);
  }
  for (const auto& [key, first] : keys) {
    const RecordedCall& ref = *calls[first].at(key);
    for (std::size_t i = 0; i < members.size(); ++i) {
      const auto it = calls[i].find(key);
      if (it == calls[i].end()) {
        // Before the member's first entry: its ring buffer dropped it (labelled partial).
        if (calls[i].empty() || key < calls[i].begin()->first) continue;
        *out = finding(FindingKind::kCrossRankMissing, members[i], group, key.first, nullptr, ref,
                       members[first]);
        return true;
      }
      const RecordedCall& c = *it->second;
      FindingKind kind;
      if (c.kind != ref.kind || (c.kind == CallKind::kOther && c.op != ref.op)) {
        kind = FindingKind::kCrossRankOp;
      } else if (uniformSizes(c.kind) &&
                 (c.in_elems != ref.in_elems || c.out_elems != ref.out_elems)) {
        kind = FindingKind::kCrossRankSize;
      } else if (!c.dtype.empty() && !ref.dtype.empty() && c.dtype != ref.dtype) {
        kind = FindingKind::kCrossRankDtype;
      } else {
        continue;
      }
      *out = finding(kind, members[i], group, key.first, &c, ref, members[first]);
      return true;
    }
  }
  return false;
}

}  // namespace

std::vector<Finding> crossRankFindings(const Recording& rec) {
  std::vector<Finding> out;
  for (int g = 0; g < static_cast<int>(rec.groups.size()); ++g) {
    Finding f;
    if (firstOnGroup(rec, g, &f)) out.push_back(std::move(f));
  }
  return out;
}

}  // namespace seam::recordings
