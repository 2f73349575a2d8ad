// judgeTrainingRecording: a recording of a training run (PrimeRL, Megatron)
// judged against the training plan of its case. A TrainingOp names its
// group by its member ranks, so recorded groups are mapped onto the plan's
// member sets, not onto axes; sizes are compared in bytes, as the op
// carries them. The alignment itself is the serving family's (align_core.h).
#include <algorithm>
#include <map>
#include <optional>

#include "align_core.h"

namespace seam::recordings {

namespace {

/// The plan's groups: every distinct set of member ranks its collectives
/// run over, with the axes that use it.
struct GroupTable {
  std::map<std::vector<int>, int> ids;  ///< sorted members -> index
  std::vector<std::vector<int>> members;
  std::vector<std::vector<std::string>> labels;

  explicit GroupTable(const TrainingPlan& plan) {
    for (const auto& ops : plan.ranks) {
      for (const TrainingOp& op : ops) {
        if (!issuesCall(op)) continue;
        const int id = idOf(op.ranks);
        const std::string axis(trainAxisName(op.axis));
        if (std::find(labels[id].begin(), labels[id].end(), axis) == labels[id].end())
          labels[id].push_back(axis);
      }
    }
  }
  int idOf(std::vector<int> ranks) {
    std::sort(ranks.begin(), ranks.end());
    const auto [it, added] = ids.emplace(ranks, static_cast<int>(members.size()));
    if (added) members.push_back(ranks), labels.emplace_back();
    return it->second;
  }
};

/// An all-to-all's sizes the routing decides: what a dispatch receives
/// (the rows routed to this rank's experts) and what a combine sends back;
/// a backward op mirrors its forward op (the plan marks both backwards
/// kToSource, so the forward op's mode decides). A gather or
/// reduce-scatter with split lists moves such rows both ways.
void markRoutedSides(const std::vector<TrainingOp>& ops, const TrainingOp& op, OwedCall* c) {
  if (op.kind != OpKind::kAllToAll) {
    if (!op.in_splits.empty() || !op.out_splits.empty()) c->in_known = c->out_known = false;
    return;
  }
  const bool backward = op.conj_of >= 0 && op.conj_of < static_cast<int>(ops.size());
  const A2aMode mode = backward ? ops[op.conj_of].a2a : op.a2a;
  bool expert_in = mode == A2aMode::kToSource, expert_out = mode == A2aMode::kToExpert;
  if (backward) std::swap(expert_in, expert_out);
  if (expert_in) c->in_known = false;
  if (expert_out) c->out_known = false;
}

std::vector<OwedCall> owedWith(const TrainingPlan& plan, int rank, int passes, GroupTable* table) {
  std::vector<OwedCall> out;
  const auto& ops = plan.ranks[rank];
  for (int pass = 0; pass < passes; ++pass) {
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const TrainingOp& op = ops[i];
      if (!issuesCall(op)) continue;
      OwedCall c;
      c.kind = *callKindOf(op.kind);
      c.group = table->idOf(op.ranks);
      c.bytes = true;
      const std::int64_t n = static_cast<std::int64_t>(op.ranks.size());
      c.in_size = c.out_size = op.bytes;
      if (c.kind == CallKind::kAllGather) c.in_size = op.bytes / n;
      if (c.kind == CallKind::kReduceScatter) c.out_size = op.bytes / n;
      if (c.kind == CallKind::kAllToAll && op.recv_bytes > 0) c.out_size = op.recv_bytes;
      markRoutedSides(ops, op, &c);
      c.op_index = i;
      c.pass = pass;
      // DeepEP's dispatch and combine move tokens through its own buffers.
      if (plan.source.config.deepep && op.axis == TrainAxis::kEp && c.kind == CallKind::kAllToAll)
        c.route = Route::kDeepEp;
      out.push_back(c);
    }
    // The step's calls outside the model (training_step.cc), after its ops.
    const std::vector<StepCall> step = stepLevelCalls(plan, rank);
    for (int k = 0; k < static_cast<int>(step.size()); ++k) {
      OwedCall c;
      c.kind = step[k].kind;
      c.group = table->idOf(step[k].ranks);
      c.bytes = true;
      c.in_size = c.out_size = step[k].bytes;
      c.op_index = -1;
      c.step_call = k;
      c.pass = pass;
      out.push_back(c);
    }
  }
  return out;
}

std::string rankList(const std::vector<int>& ranks) {
  std::string s = "[";
  for (std::size_t i = 0; i < ranks.size() && i < 16; ++i)
    s += (i ? "," : "") + (ranks[i] < 0 ? std::string("?") : std::to_string(ranks[i]));
  return s + (ranks.size() > 16 ? ",...]" : "]");
}

/// The recorded groups with the plan's member sets they are, as fits[g][id]
/// (a member whose recording is absent is unknown and compared with
/// nothing); refused when a group that carries a call is none of them.
Expected<std::vector<GroupAxes>> mapTrainingGroups(const Recording& rec, const GroupTable& table,
                                                   GroupFits* fits) {
  std::vector<bool> used(rec.groups.size(), false);
  for (const auto& calls : rec.ranks)
    for (const RecordedCall& c : calls) used[c.group] = true;
  std::vector<GroupAxes> out;
  fits->assign(rec.groups.size(), std::vector<char>(table.members.size(), 0));
  for (std::size_t g = 0; g < rec.groups.size(); ++g) {
    const RecordedGroup& group = rec.groups[g];
    std::vector<int> known;
    for (int m : group.members)
      if (m >= 0) known.push_back(m);
    std::sort(known.begin(), known.end());
    GroupAxes ga{group.name, group.members, {}, {}};
    for (std::size_t t = 0; t < table.members.size(); ++t) {
      const std::vector<int>& set = table.members[t];
      if (set.size() != group.members.size() ||
          !std::includes(set.begin(), set.end(), known.begin(), known.end()))
        continue;
      (*fits)[g][t] = 1;
      for (const std::string& l : table.labels[t])
        if (std::find(ga.labels.begin(), ga.labels.end(), l) == ga.labels.end())
          ga.labels.push_back(l);
    }
    const bool world = static_cast<int>(group.members.size()) == static_cast<int>(rec.ranks.size());
    if (ga.labels.empty() && used[g] && !world && group.members.size() > 1) {
      std::string sets;
      for (std::size_t t = 0; t < table.members.size() && t < 12; ++t)
        sets += std::string(t ? ", " : "") + rankList(table.members[t]);
      return Status::invalid("recording \"" + rec.source.substr(0, 200) + "\": group \"" +
                             group.name.substr(0, 80) + "\" of ranks " + rankList(group.members) +
                             " is no group of the training plan (" + sets +
                             (table.members.size() > 12 ? ", ..." : "") + ")");
    }
    out.push_back(std::move(ga));
  }
  return out;
}

std::string sizeWords(bool known, std::int64_t bytes) {
  return known ? std::to_string(bytes) : std::string("routing-dependent");
}

}  // namespace

std::vector<OwedCall> owedTrainingCalls(const TrainingPlan& plan, int rank, int passes) {
  GroupTable table(plan);
  return owedWith(plan, rank, passes, &table);
}

std::string describeOwedTraining(const TrainingPlan& plan, int rank, const OwedCall& owed) {
  if (owed.step_call >= 0) {
    const StepCall c = stepLevelCalls(plan, rank)[owed.step_call];
    return std::string("step ") + c.what + ": " + std::string(callKindName(c.kind)) + " " +
           rankList(c.ranks) + ", bytes in " + std::to_string(c.bytes) + ", out " +
           std::to_string(c.bytes) +
           (owed.pass > 0 ? ", pass " + std::to_string(owed.pass + 1) : "");
  }
  const TrainingOp& op = plan.ranks[rank][owed.op_index];
  std::string s = op.recompute ? "re" : op.pass == Pass::kForward ? "fwd" : "bwd";
  s += " layer " + std::to_string(op.layer);
  if (op.block != ' ') s += std::string(" (") + op.block + ")";
  s += " " + op.step + ": ";
  s += opName(op.kind);
  s += " over ";
  s += trainAxisName(op.axis);
  s += " " + rankList(op.ranks) + ", bytes in " + sizeWords(owed.in_known, owed.in_size) +
       ", out " + sizeWords(owed.out_known, owed.out_size);
  if (owed.pass > 0) s += ", pass " + std::to_string(owed.pass + 1);
  return s;
}

Expected<RecordingVerdict> judgeTrainingRecording(const Recording& rec, const TrainingPlan& plan,
                                                  int passes) {
  if (Status s = checkWorld(rec, plan.world()); !s) return s;
  GroupTable table(plan);
  GroupFits fits;
  auto groups = mapTrainingGroups(rec, table, &fits);
  if (!groups) return groups.status();
  RecordingVerdict v;
  v.groups = std::move(*groups);
  v.partial = rec.partial;
  int routed = 0;
  for (int r = 0; r < plan.world(); ++r) {
    if (!rec.present[r]) continue;
    const std::vector<OwedCall> owed = owedWith(plan, r, passes, &table);
    v.owed += static_cast<int>(owed.size());
    v.calls += static_cast<int>(rec.ranks[r].size());
    // The step's calls outside the model that are not owed: counted apart.
    std::vector<RecordedCall> model;
    for (const RecordedCall& c : rec.ranks[r]) {
      if (outsideTheModel(plan, rec.groups[c.group], c))
        ++v.outside;
      else
        model.push_back(c);
    }
    auto steps = align(owed, model, fits, r);
    if (!steps) return steps.status();
    rankFindings(
        r, owed, model, *steps, rec.lost_front[r],
        [&](const OwedCall& o) { return describeOwedTraining(plan, r, o); }, &v);
    for (const OwedCall& o : owed)
      routed += o.route == Route::kNccl && !(o.in_known && o.out_known);
  }
  for (Finding& f : crossRankFindings(rec)) v.findings.push_back(std::move(f));
  addHidden(&v);
  if (routed > 0)
    v.partial.push_back(
        {-1, std::to_string(routed) +
                 " calls move rows the routing decides (an EP dispatch's rows received, a "
                 "combine's sent, their backwards, expert-TP gathers); the recording holds no "
                 "splits, so those sizes are unchecked (the token side of each is checked)"});
  return v;
}

}  // namespace seam::recordings
