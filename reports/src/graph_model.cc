#include "graph_model.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "seam/sim/replay/ledger.h"

namespace seam::reports {

namespace {

/// The work an op does, without what only names it (its engine call).
bool sameWork(const Op& a, const Op& b) {
  return a.kind == b.kind && a.tensor == b.tensor && a.axis == b.axis && a.phase == b.phase &&
         a.rows_in == b.rows_in && a.rows_out == b.rows_out && a.bytes == b.bytes &&
         a.half == b.half && a.sizes == b.sizes && a.divide_by == b.divide_by &&
         a.chunk_shift == b.chunk_shift && a.slice_of == b.slice_of && a.dp_fault == b.dp_fault &&
         a.tbo_move == b.tbo_move;
}

using BoundaryKey = std::tuple<int, int, int>;  // stack, from, to

/// Per boundary, per rank: the ops of the producer's exit and the consumer's entry.
std::map<BoundaryKey, std::vector<std::vector<const Op*>>> opsAtBoundaries(const Plan& plan) {
  std::map<std::pair<int, int>, BoundaryKey> exit_of, entry_of;  // (stack, stage) -> boundary
  for (const Boundary& b : plan.boundaries) {
    exit_of[{b.stack, b.from}] = {b.stack, b.from, b.to};
    entry_of[{b.stack, b.to}] = {b.stack, b.from, b.to};
  }
  std::map<BoundaryKey, std::vector<std::vector<const Op*>>> out;
  for (std::size_t r = 0; r < plan.ranks.size(); ++r) {
    for (const Op& op : plan.ranks[r]) {
      const auto& side = op.phase == Phase::kExit ? exit_of : entry_of;
      if (op.phase == Phase::kCompute) continue;
      const auto it = side.find({op.stack, op.stage});
      if (it == side.end()) continue;
      auto& per_rank = out[it->second];
      per_rank.resize(plan.ranks.size());
      per_rank[r].push_back(&op);
    }
  }
  return out;
}

/// "" when every rank runs the same work at the boundary, else what differs
/// first: "rank R: OP at N vs OP".
std::string firstOpDifference(const std::vector<std::vector<const Op*>>* a,
                              const std::vector<std::vector<const Op*>>* b) {
  static const std::vector<const Op*> kNone;
  const std::size_t ranks = std::max(a ? a->size() : 0, b ? b->size() : 0);
  for (std::size_t r = 0; r < ranks; ++r) {
    const auto& x = a && r < a->size() ? (*a)[r] : kNone;
    const auto& y = b && r < b->size() ? (*b)[r] : kNone;
    for (std::size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
      if (i < x.size() && i < y.size() && sameWork(*x[i], *y[i])) continue;
      auto name = [&](const std::vector<const Op*>& ops) {
        return i < ops.size() ? std::string(opName(ops[i]->kind)) + "[" +
                                    std::string(tensorName(ops[i]->tensor)) + "]"
                              : std::string("nothing");
      };
      return "rank " + std::to_string(r) + " step " + std::to_string(i + 1) + ": " + name(x) +
             " vs " + name(y);
    }
  }
  return "";
}

/// What must repeat for stage `s` to fold with stage `s - period`.
struct StageSignature {
  const StageInfo* info = nullptr;
  const Boundary* into = nullptr;
  bool differs = false, snapshot = false, violated = false;
  int reads_norm_offset = 0, joins_offset = 0;
  bool operator==(const StageSignature& o) const {
    const StageInfo& a = *info;
    const StageInfo& b = *o.info;
    const bool stage_same = a.kind == b.kind && a.weight_axis == b.weight_axis &&
                            a.shards == b.shards && a.pp_rank == b.pp_rank &&
                            a.terminal == b.terminal && reads_norm_offset == o.reads_norm_offset &&
                            joins_offset == o.joins_offset;
    const bool into_same = (into == nullptr) == (o.into == nullptr) &&
                           (!into || (into->exit == o.into->exit && into->entry == o.into->entry &&
                                      into->pipeline_cut == o.into->pipeline_cut &&
                                      into->exit_steps == o.into->exit_steps &&
                                      into->entry_steps == o.into->entry_steps));
    return stage_same && into_same && differs == o.differs && snapshot == o.snapshot && !violated &&
           !o.violated;
  }
};

}  // namespace

std::vector<BoundaryDiff> diffBoundaries(const Plan& plan, const Plan* against) {
  std::vector<BoundaryDiff> out(plan.boundaries.size());
  if (!against) return out;
  const auto mine = opsAtBoundaries(plan);
  const auto theirs = opsAtBoundaries(*against);
  for (std::size_t i = 0; i < plan.boundaries.size(); ++i) {
    const Boundary& b = plan.boundaries[i];
    for (const Boundary& o : against->boundaries) {
      if (o.stack == b.stack && o.from == b.from && o.to == b.to) out[i].other = &o;
    }
    const BoundaryKey key{b.stack, b.from, b.to};
    const auto m = mine.find(key);
    const auto t = theirs.find(key);
    out[i].first_op_difference = firstOpDifference(m == mine.end() ? nullptr : &m->second,
                                                   t == theirs.end() ? nullptr : &t->second);
    const bool ops_same = out[i].first_op_difference.empty();
    const Boundary* o = out[i].other;
    const bool steps_same = o && o->exit_steps == b.exit_steps && o->entry_steps == b.entry_steps &&
                            o->entry == b.entry && o->exit == b.exit;
    out[i].differs = !steps_same || !ops_same;
    out[i].ops_only = steps_same && !ops_same;
  }
  return out;
}

std::string differenceMark(int key) { return "\xE2\x89\xA0" + std::to_string(key); }

std::set<std::pair<int, int>> snapshotStages(const Plan& plan) {
  std::set<std::pair<int, int>> out;
  if (plan.ranks.empty()) return out;
  for (const Op& op : plan.ranks[0]) {
    if (op.kind == OpKind::kSnapshot) out.insert({op.stack, op.stage});
  }
  return out;
}

std::vector<GraphItem> stackItems(const Plan& plan, int stack,
                                  const std::vector<BoundaryDiff>& diffs,
                                  const std::set<std::pair<int, int>>& snapshots,
                                  const ViolationMarks& violations, bool fold) {
  const int n = plan.stackSize(stack);
  std::vector<StageSignature> sig(n);
  for (int s = 0; s < n; ++s) {
    const StageInfo& info = plan.stages[plan.stageIndex(stack, s)];
    sig[s].info = &info;
    sig[s].snapshot = snapshots.count({stack, s}) > 0;
    sig[s].violated = violations.count({stack, s}) > 0;
    sig[s].reads_norm_offset = info.reads_norm_of < 0 ? 0 : info.reads_norm_of - s;
    sig[s].joins_offset = info.joins_at < 0 ? 0 : info.joins_at - s;
  }
  for (std::size_t i = 0; i < plan.boundaries.size(); ++i) {
    const Boundary& b = plan.boundaries[i];
    if (b.stack != stack || b.to < 0 || b.to >= n) continue;
    sig[b.to].into = &b;
    sig[b.to].differs = diffs[i].differs;
  }
  std::vector<GraphItem> items{{GraphItem::kInput, -1}};
  int s = 0;
  while (s < n) {
    int best_period = 0, best_blocks = 0;
    for (int p = 1; fold && p <= 4; ++p) {
      int j = s + p;
      while (j < n && sig[j] == sig[j - p]) ++j;
      const int blocks = (j - s) / p;
      if (blocks >= kMinFoldBlocks && blocks * p > best_blocks * best_period) {
        best_period = p;
        best_blocks = blocks;
      }
    }
    if (best_blocks == 0) {
      items.push_back({GraphItem::kStage, s});
      ++s;
      continue;
    }
    const int p = best_period;
    for (int k = 0; k < p; ++k) items.push_back({GraphItem::kStage, s + k});
    items.push_back({GraphItem::kFold, s + p, s + p * (best_blocks - 1) - 1, p, best_blocks - 2});
    for (int k = 0; k < p; ++k) items.push_back({GraphItem::kStage, s + p * (best_blocks - 1) + k});
    s += p * best_blocks;
  }
  items.push_back({GraphItem::kOutput, n});
  return items;
}

int itemsPerColumn(int items) {
  const int columns = std::max(1, (items + kMaxItemsPerColumn - 1) / kMaxItemsPerColumn);
  return (items + columns - 1) / columns;
}

std::string sumColour(SumGroup s) {
  switch (s) {
    case SumGroup::kNone:
      return "#595959";
    case SumGroup::kAttnTp:
      return "#0000CD";
    case SumGroup::kTp:
      return "#CD2626";
    case SumGroup::kMoeOutput:
      return "#7D26CD";
    case SumGroup::kDpReturn:
      return "#CD6600";
  }
  return "#000000";
}

namespace {

std::string steps(const OpKindList& kinds) {
  std::string out;
  for (OpKind k : kinds) out += (out.empty() ? "" : ", ") + std::string(opName(k));
  return out.empty() ? "-" : out;
}

}  // namespace

std::vector<std::string> boundaryLines(const Boundary& b, int key) {
  std::vector<std::string> lines = {"exit: " + steps(b.exit_steps),
                                    "entry: " + steps(b.entry_steps)};
  if (b.entry.owes != SumGroup::kNone) {
    lines.push_back("owes " + std::string(sumGroupName(b.entry.owes)) + " (" +
                    std::string(completerName(b.entry.completer)) + ")");
  }
  lines.push_back(std::string(rowKindName(b.entry.rows)) + " rows" +
                  (b.pipeline_cut ? ", pipeline cut" : ""));
  if (key > 0) lines.push_back(differenceMark(key));
  return lines;
}

DifferenceKeys differenceKeys(const Plan& plan, const std::vector<BoundaryDiff>& diffs,
                              const std::string& other_policy) {
  DifferenceKeys keys;
  keys.key_of.assign(plan.boundaries.size(), 0);
  for (std::size_t i = 0; i < plan.boundaries.size() && i < diffs.size(); ++i) {
    const BoundaryDiff& d = diffs[i];
    if (!d.differs) continue;
    std::string text;
    if (!d.other) {
      text = other_policy + " has no such boundary";
    } else if (d.ops_only) {
      text = other_policy + " has the same steps, other ops: " + d.first_op_difference;
    } else {
      text = other_policy + ": exit " + steps(d.other->exit_steps) + " / entry " +
             steps(d.other->entry_steps);
    }
    const std::size_t k = static_cast<std::size_t>(
        std::find(keys.text.begin(), keys.text.end(), text) - keys.text.begin());
    if (k == keys.text.size()) {
      keys.text.push_back(text);
      keys.boundaries.push_back(0);
    }
    keys.key_of[i] = static_cast<int>(k) + 1;
    ++keys.boundaries[k];
  }
  return keys;
}

std::string kindText(LayerKind k) {
  switch (k) {
    case LayerKind::kMamba:
      return "M  Mamba-2";
    case LayerKind::kAttention:
      return "*  attention";
    case LayerKind::kDenseMlp:
      return "-  dense MLP";
    case LayerKind::kMoe:
      return "E  MoE";
    case LayerKind::kGatedDeltaNet:
      return "G  Gated DeltaNet";
    case LayerKind::kParallelMixer:
      return "P  attention || Mamba-2";
  }
  return "?";
}

namespace {

/// "at its entry: add_norm, rank 0": where in the stage, and on which rank.
std::string violationPlace(const Violation& v) {
  std::string s = v.phase == Phase::kCompute ? std::string("in its compute")
                                             : "at its " + std::string(phaseName(v.phase));
  if (v.op_index >= 0) s += ": " + std::string(opName(v.op));
  if (v.rank >= 0) s += (v.op_index >= 0 ? ", rank " : ", on rank ") + std::to_string(v.rank);
  return s;
}

/// Each violated property's first violation, the first violation first.
std::vector<const Violation*> violationsOf(const properties::PlanVerdict* verdict,
                                           std::optional<Violation>& first) {
  std::vector<const Violation*> out;
  if (!verdict) return out;
  first = verdict->firstViolation();
  if (first) out.push_back(&*first);
  for (const properties::PropertyVerdict& p : verdict->properties) {
    if (!p.first || (first && p.property == first->property)) continue;
    out.push_back(&*p.first);
  }
  return out;
}

/// `text` broken at spaces into lines of about `width` characters.
std::vector<std::string> wrapped(const std::string& text, std::size_t width) {
  std::vector<std::string> lines(1);
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find(' ', at);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(at, end - at);
    if (!lines.back().empty() && lines.back().size() + 1 + word.size() > width)
      lines.emplace_back();
    lines.back() += (lines.back().empty() ? "" : " ") + word;
    at = end + 1;
  }
  return lines;
}

}  // namespace

ViolationMarks violationMarks(const Plan& plan, const properties::PlanVerdict* verdict) {
  ViolationMarks marks;
  std::optional<Violation> first;
  for (const Violation* v : violationsOf(verdict, first)) {
    if (v->stack < 0 || v->stack > 1 || v->stage < 0 || v->stage > plan.stackSize(v->stack))
      continue;
    auto& lines = marks[{v->stack, v->stage}];
    lines.push_back("VIOLATED: " + std::string(propertyName(v->property)) + " (" +
                    std::string(violationClassName(v->cls)) + ")");
    lines.push_back(violationPlace(*v));
  }
  return marks;
}

std::vector<std::string> verdictLines(const properties::PlanVerdict* verdict,
                                      const std::string& engine_site) {
  if (!verdict) return {};
  std::optional<Violation> first;
  const auto violations = violationsOf(verdict, first);
  if (violations.empty()) return {"checked: every property holds"};
  // The violation's words without its sentence of detail, which the stage's
  // mark and `seam check` carry.
  std::string where = describeViolation(*first);
  if (where.size() > first->detail.size() + 2)
    where.resize(where.size() - first->detail.size() - 2);
  std::string text = "first violation: " + where;
  if (violations.size() > 1) {
    text += "; also violated:";
    for (std::size_t i = 1; i < violations.size(); ++i)
      text += (i > 1 ? ", " : " ") + std::string(propertyName(violations[i]->property));
  }
  std::vector<std::string> lines = wrapped(text, kTitleWidth);
  if (!engine_site.empty()) {
    for (const std::string& l :
         wrapped("an engine finding: SGLang calls " + engine_site, kTitleWidth))
      lines.push_back(l);
  }
  return lines;
}

GraphContent graphContent(const Plan& plan, const Plan* against, const GraphOptions& options) {
  GraphContent g;
  g.diffs = diffBoundaries(plan, against);
  g.diff = against != nullptr;
  g.other = against ? against->policy : "";
  g.keys = differenceKeys(plan, g.diffs, g.other);
  g.snapshots = snapshotStages(plan);
  g.violations = violationMarks(plan, options.verdict);
  g.violated = options.verdict && !options.verdict->holds();
  g.verdict = verdictLines(options.verdict, options.engine_site);
  for (int stack = 0; stack < 2; ++stack) {
    if (plan.stackSize(stack) == 0) continue;
    g.items[stack] = stackItems(plan, stack, g.diffs, g.snapshots, g.violations, options.fold);
    for (const GraphItem& it : g.items[stack]) {
      g.folds = g.folds || it.kind == GraphItem::kFold;
      if (it.kind != GraphItem::kStage) continue;
      if (isMixer(plan.stages[plan.stageIndex(stack, it.stage)].kind)) {
        g.mixer = true;
      } else {
        g.ffn = true;
      }
    }
  }
  return g;
}

}  // namespace seam::reports
