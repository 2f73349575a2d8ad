// A recording's verdict in words: its groups and their axes, how many calls
// the plan explains, each rank's first divergence with where it was recorded
// and the line that reproduces it, the partial evidence, and the outcome.
#include <map>
#include <nlohmann/json.hpp>

#include "seam/recordings/alignment.h"

namespace seam::recordings {

std::string_view findingName(FindingKind kind) {
  switch (kind) {
    case FindingKind::kExtra:
      return "extra-call";
    case FindingKind::kMissing:
      return "missing-call";
    case FindingKind::kWrongGroup:
      return "wrong-group";
    case FindingKind::kWrongSize:
      return "wrong-size";
    case FindingKind::kCrossRankOp:
      return "cross-rank-op";
    case FindingKind::kCrossRankSize:
      return "cross-rank-size";
    case FindingKind::kCrossRankDtype:
      return "cross-rank-dtype";
    case FindingKind::kCrossRankMissing:
      return "cross-rank-missing";
  }
  return "?";
}

namespace {

std::string groupLine(const GroupAxes& g) {
  std::string s = "  " + g.name + " [";
  for (std::size_t i = 0; i < g.members.size() && i < 16; ++i) {
    if (i > 0) s += ',';
    s += g.members[i] < 0 ? std::string("?") : std::to_string(g.members[i]);
  }
  s += g.members.size() > 16 ? ",...] = " : "] = ";
  if (g.labels.empty()) return s + (g.members.size() == 1 ? "one rank" : "the world") + "\n";
  for (std::size_t i = 0; i < g.labels.size(); ++i) {
    if (i > 0) s += '|';
    s += g.labels[i];
  }
  return s + "\n";
}

/// One finding on one line: kind, rank, group, sequence number, what was
/// recorded and what the plan owes there.
std::string findingLine(const Finding& f) {
  std::string s = std::string(findingName(f.kind)) + " on rank " + std::to_string(f.rank);
  if (!f.group.empty()) s += ", " + f.group;
  if (f.seq >= 0) s += ", seq " + std::to_string(f.seq);
  s += ": ";
  if (!f.call.empty()) s += "recorded " + f.call + "; ";
  return s +
         (f.kind == FindingKind::kExtra     ? "the plan owes no such call here; expected "
          : f.kind == FindingKind::kMissing ? "never recorded: "
                                            : "expected ") +
         f.expected + "\n";
}

/// The first divergence in full: where it was recorded, its frame, the line
/// that reproduces it.
std::string firstDivergence(const Finding& f, const std::string& reproduce) {
  std::string s = "first divergence: " + findingLine(f);
  if (!f.where.empty()) s += "  where: " + f.where + "\n";
  if (!f.frame.empty()) s += "  frame: " + f.frame + "\n";
  return s + "  reproduce: " + reproduce + "\n";
}

/// Each rank's first divergence after the first, at most this many lines.
constexpr int kMaxOtherLines = 8;

}  // namespace

std::string renderRecordingVerdict(const Recording& rec, const RecordingVerdict& v,
                                   const std::string& reproduce) {
  int present = 0;
  for (bool p : rec.present) present += p;
  std::string out = "recording \"" + rec.source + "\": " + rec.format +
                    (rec.version.empty() ? "" : " " + rec.version) + ", " +
                    std::to_string(present) + " of " + std::to_string(rec.ranks.size()) +
                    " ranks, " + std::to_string(v.calls) + " calls; groups:\n";
  for (const GroupAxes& g : v.groups) out += groupLine(g);
  out += "explained: " + std::to_string(v.explained) + " of " + std::to_string(v.calls) +
         " recorded calls tied to the plan's " + std::to_string(v.owed) + " owed calls\n";
  if (v.outside > 0 && rec.format == "seam-recorder")
    out += "outside the layers: " + std::to_string(v.outside) +
           " recorded calls before the first decoder layer or after the last (the embedding's "
           "sum): reported, not judged (seam's plans start at the first layer's input)\n";
  else if (v.outside > 0)
    out += "outside the model: " + std::to_string(v.outside) +
           " recorded calls of the train step beside the model (metric gathers and barriers "
           "on the default process group): reported, not judged\n";
  std::map<std::string, int> counts;
  int last_rank = -2, lines = 0;
  bool seam_only = false;
  for (const Finding& f : v.findings) {
    ++counts[std::string(findingName(f.kind))];
    const bool cross = f.kind >= FindingKind::kCrossRankOp;
    seam_only = seam_only || !cross;
    if (!cross && f.rank == last_rank) continue;  // each rank's first divergence only
    if (!cross) last_rank = f.rank;
    if (lines == 0)
      out += firstDivergence(f, reproduce);
    else if (lines <= kMaxOtherLines)
      out += "  then " + findingLine(f);
    ++lines;
  }
  if (lines > kMaxOtherLines + 1)
    out += "  (and " + std::to_string(lines - kMaxOtherLines - 1) + " more first divergences)\n";
  if (!counts.empty()) {
    out += "findings:";
    for (const auto& [name, n] : counts) out += " " + name + " " + std::to_string(n);
    out += "\n";
  }
  // Every divergence a size, none explained: most often the batch given is
  // not the recording's.
  if (v.explained == 0 && v.calls > 0 && counts.size() == 1 && counts.count("wrong-size") == 1)
    out +=
        "hint: no recorded call has a size the plan owes: is the recording of this case's "
        "batch? Give its --tokens (per DP shard) and --mode as recorded\n";
  bool cross_any = false;
  for (const Finding& f : v.findings) cross_any = cross_any || f.kind >= FindingKind::kCrossRankOp;
  out += cross_any ? "cross-rank (fr_trace's rules): violated\n"
                   : "cross-rank (fr_trace's rules): every collective matches over its group (op, "
                     "sizes, dtype, members)\n";
  for (const PartialEvidence& p : v.partial) out += "partial: " + p.what + "\n";
  if (v.holds()) return out + "RECORDING HOLDS: every call explained by the plan\n";
  if (v.findings.empty())
    return out +
           "RECORDING PARTIAL: no finding in what was recorded, but the evidence is "
           "incomplete: not passed\n";
  return out + "RECORDING VIOLATED" +
         (seam_only && !cross_any ? " (fr_trace's rules alone pass it)" : "") + "\n";
}

std::string recordingVerdictJson(const Recording& rec, const RecordingVerdict& v,
                                 const std::string& reproduce) {
  using nlohmann::json;
  json groups = json::array();
  for (const GroupAxes& g : v.groups) {
    groups.push_back({{"name", g.name}, {"members", g.members}, {"axes", g.labels}});
  }
  json findings = json::array();
  for (const Finding& f : v.findings) {
    findings.push_back({{"kind", std::string(findingName(f.kind))},
                        {"rank", f.rank},
                        {"group", f.group},
                        {"seq", f.seq},
                        {"recorded", f.call},
                        {"where", f.where},
                        {"frame", f.frame},
                        {"expected", f.expected}});
  }
  json partial = json::array();
  for (const PartialEvidence& p : v.partial)
    partial.push_back({{"rank", p.rank}, {"what", p.what}});
  const char* outcome = v.holds() ? "holds" : v.findings.empty() ? "partial" : "violated";
  const json out = {{"recording", rec.source},
                    {"format", rec.format},
                    {"version", rec.version},
                    {"groups", groups},
                    {"calls", v.calls},
                    {"explained", v.explained},
                    {"owed", v.owed},
                    {"outside_model", v.outside},
                    {"findings", findings},
                    {"partial", partial},
                    {"outcome", outcome},
                    {"reproduce", reproduce},
                    {"hidden",
                     {{"custom_all_reduce", v.hidden[static_cast<int>(Route::kCustomAllReduce)]},
                      {"fused_kernel", v.hidden[static_cast<int>(Route::kFusedKernel)]},
                      {"pynccl", v.hidden[static_cast<int>(Route::kPynccl)]},
                      {"deep_ep", v.hidden[static_cast<int>(Route::kDeepEp)]}}}};
  return out.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

std::string_view outcomeOf(const RecordingVerdict& v) {
  return v.holds() ? "holds" : v.findings.empty() ? "partial" : "violated";
}

/// One side of a comparison: its outcome, the calls explained, the first
/// finding or partial evidence, and the line that checks it alone.
std::string sideLines(const SideVerdict& side) {
  const RecordingVerdict& v = side.verdict;
  std::string s = "against " + side.label + ": " + std::string(outcomeOf(v)) + ", " +
                  std::to_string(v.explained) + " of " + std::to_string(v.calls) +
                  " recorded calls explained\n";
  if (!v.findings.empty()) s += "  first divergence: " + findingLine(v.findings.front());
  for (const PartialEvidence& p : v.partial) s += "  partial: " + p.what + "\n";
  return s + "  check: " + side.reproduce + "\n";
}

}  // namespace

std::string renderRecordingComparison(const Recording& rec, const SideVerdict& a,
                                      const SideVerdict& b) {
  int present = 0;
  for (bool p : rec.present) present += p;
  std::string out = "recording \"" + rec.source + "\": " + rec.format +
                    (rec.version.empty() ? "" : " " + rec.version) + ", " +
                    std::to_string(present) + " of " + std::to_string(rec.ranks.size()) +
                    " ranks\n";
  out += sideLines(a) + sideLines(b);
  const bool ha = a.verdict.holds(), hb = b.verdict.holds();
  if (ha && hb) return out + "the recording fits both plans: they issue the same calls\n";
  if (ha || hb) {
    const SideVerdict& yes = ha ? a : b;
    const SideVerdict& no = ha ? b : a;
    return out + "the recording runs the plan of " + yes.label + ", not the plan of " + no.label +
           "\n";
  }
  if (a.verdict.findings.empty() || b.verdict.findings.empty())
    return out + "the recording shows neither plan whole: its evidence is partial\n";
  return out + "the recording runs neither plan\n";
}

}  // namespace seam::recordings

namespace seam::recordings {

std::string renderEngineRun(const Recording& rec) {
  const EngineRun& e = rec.engine;
  std::string out = "engine: " + e.engine + " " + e.version + " (" +
                    (e.source == "pypi" ? std::string("the pinned PyPI release") : e.source) +
                    (e.commit.empty() ? "" : " @" + e.commit.substr(0, 12)) + "), " + e.generation +
                    " communicator, run on the CPU by seam's recorder\n";
  out += "launch flags:";
  for (const std::string& f : e.launch_flags) out += " " + f;
  out += "\nstood in for (GPU kernels):";
  for (std::size_t i = 0; i < e.standins.size(); ++i) out += (i == 0 ? " " : "; ") + e.standins[i];
  out += "\n";
  if (e.verdict == "refused")
    return out + "engine verdict: REFUSED by its own argument checks: " + e.failure +
           (e.where.empty() ? "" : " (" + e.where + ")") + "\n";
  if (e.verdict == "ran") {
    std::string padding;
    for (const RankEnd& r : e.ranks)
      if (!r.dp_padding.empty()) padding = r.dp_padding;
    return out + "engine verdict: RAN on every rank of " + std::to_string(e.ranks.size()) +
           ", every collective paired over its group" +
           (padding.empty() ? "" : "; DP padding " + padding) + "\n";
  }
  if (e.verdict == "recorder-error") {
    out +=
        "engine verdict: NOT JUDGED: seam's recorder itself failed (a bug of seam, not of the "
        "engine)\n";
    for (std::size_t r = 0; r < e.ranks.size(); ++r)
      if (e.ranks[r].outcome == "recorder-error")
        return out + "  rank " + std::to_string(r) + " at " + e.ranks[r].where + ": " +
               e.ranks[r].error + "\n";
    return out;
  }
  if (e.verdict == "cpu-gap") {
    out +=
        "engine verdict: NOT RUN: the CPU lacks what this case needs on a GPU (a gap of seam's "
        "recorder, not a finding about the engine)\n";
    for (std::size_t r = 0; r < e.ranks.size(); ++r)
      if (e.ranks[r].outcome == "cpu-gap")
        return out + "  rank " + std::to_string(r) + " at " + e.ranks[r].where + ": " +
               e.ranks[r].error + "\n";
    return out;
  }
  out += "engine verdict: " + std::string(e.verdict == "raised" ? "RAISED" : "FAILED") + " (" +
         e.verdict + ")";
  if (!e.failure.empty()) out += ": " + e.failure;
  out += "\n";
  for (std::size_t r = 0; r < e.ranks.size(); ++r) {
    const RankEnd& end = e.ranks[r];
    if (end.outcome == "raised" || end.outcome == "died")
      out += "  rank " + std::to_string(r) + " " + end.outcome + " at " + end.where + ": " +
             end.error + "\n";
  }
  return out;
}

}  // namespace seam::recordings
