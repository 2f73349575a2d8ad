#include "seam/reports/plan_view.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "seam/sim/plan/dp_gather.h"
#include "seam/sim/plan/lane_rows.h"
#include "seam/sim/plan/tbo.h"

namespace seam::reports {

namespace {

// ordered_json keeps the keys in DESIGN §9's order, so a person reading the
// JSON sees layer/stage/phase/op first; readers look keys up by name anyway.
using Json = nlohmann::ordered_json;

Json rowsJson(const Rows& rows) {
  return Json{{"layout", std::string(rowKindName(rows.kind))}, {"count", rows.count}};
}

// The per-op object shared by the json and jsonl views. `rank` is added by
// the jsonl view only, where every line must stand on its own.
Json opJson(const Op& op, const Topology& topology, int rank) {
  Json j;
  j["layer"] = op.layer;
  j["stage"] = op.stage;
  // Only the MTP step's ops say which stack they are in: the main stack is
  // the default and its objects keep exactly the keys of DESIGN §9.
  if (op.stack != 0) j["stack"] = op.stack;
  j["phase"] = std::string(phaseName(op.phase));
  j["op"] = std::string(opName(op.kind));
  j["tensor"] = std::string(tensorName(op.tensor));
  if (op.hasGroup()) {
    const std::vector<int>& group = topology.groupOf(op.groupAxis(), rank);
    j["group"] = std::string(axisName(op.groupAxis()));
    j["group_size"] = group.size();
    j["ranks"] = group;
  } else {
    j["group"] = nullptr;
    j["group_size"] = nullptr;
    j["ranks"] = nullptr;
  }
  j["rows_in"] = rowsJson(op.rows_in);
  j["rows_out"] = rowsJson(op.rows_out);
  j["bytes"] = op.bytes;
  // A variable-size collective passed another list than one size per member
  // says so; the default keeps exactly the keys of DESIGN §9.
  if (op.sizes == SplitSizes::kPerDpShard) j["sizes_per"] = "dp_shard";
  return j;
}

Json configJson(const Plan& plan) {
  const ParallelConfig& c = plan.source.config;
  const Flags& f = plan.source.flags;
  return Json{{"world", c.world()},
              {"pp", c.pp},
              {"tp", c.tp},
              {"attn_tp", c.attnTp()},
              {"attn_dp", c.attn_dp},
              {"attn_cp", c.attn_cp},
              {"moe_ep", c.moe_ep},
              {"moe_tp", c.moeTp()},
              {"moe_dp", c.moe_dp},
              {"a2a", std::string(a2aName(f.a2a))},
              {"fusion", f.fusion},
              // The padding the plan was built with, which may differ from the
              // requested one (hybrid SSM with an idle rank forces MAX_LEN).
              {"dp_padding", std::string(paddingName(plan.padding))},
              {"reduction", std::string(reductionName(f.reduction))},
              {"mode", std::string(modeName(f.mode))},
              {"layernorm_sp", f.layernorm_sp},
              {"capture", f.capture},
              {"tokens", plan.source.batch.tokens}};
}

// Count of each op kind that occurs, keyed (and so ordered) by name.
std::map<std::string, int> countKinds(const std::vector<Op>& ops) {
  std::map<std::string, int> counts;
  for (const Op& op : ops) ++counts[std::string(opName(op.kind))];
  return counts;
}

// "0-7" for a run of consecutive ranks, "0,2,4,6" otherwise.
std::string rankList(const std::vector<int>& ranks) {
  if (ranks.empty()) return "-";
  bool consecutive = true;
  for (size_t i = 1; i < ranks.size(); ++i)
    consecutive = consecutive && ranks[i] == ranks[i - 1] + 1;
  if (ranks.size() == 1) return std::to_string(ranks.front());
  if (consecutive) return std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
  return out;
}

std::string rowsCell(const Rows& rows) {
  if (rows.kind == RowKind::kNone) return "-";
  return std::string(rowKindName(rows.kind)) + ":" + std::to_string(rows.count);
}

// The lowered steps of a DP op (dp_gather.h), as rows under it: the step in
// the op column, its group, rows of the buffer in flight (@ the slot offset).
void addLoweredRows(Table& t, const Plan& plan, const Op& op, int rank, const Topology& topology,
                    const DpLayouts& layouts) {
  const DpGeometry* geometry = layouts.ofFullRows(dpFullRowsOf(op));
  if (geometry == nullptr) {
    t.addRow({"", "", "", "", "  > (rows name no padding mode)", "", "-", "-", "-", "-", ""});
    return;
  }
  const DpLowering steps = lowerDpOp(op, plan.source.config, *geometry, rank,
                                     activationRowBytes(plan.source.model.shape));
  for (const DpStep& s : steps) {
    std::string group = "-", ranks = "-";
    if (s.axis != kNoAxis) {
      group = std::string(axisName(static_cast<Axis>(s.axis)));
      ranks = rankList(topology.groupOf(static_cast<Axis>(s.axis), rank));
    }
    const bool slot = s.kind == DpStepKind::kWriteSlot || s.kind == DpStepKind::kReadSlot;
    t.addRow({"", "", "", "", "  > " + std::string(dpStepName(s.kind)), "", std::move(group),
              std::move(ranks), std::to_string(s.rows_in),
              std::to_string(s.rows_out) + (slot ? " @" + std::to_string(s.offset) : ""),
              std::to_string(s.bytes)});
  }
}

std::string renderText(const Plan& plan, int rank, const Topology& topology, bool lower_dp) {
  const std::vector<Op>& ops = plan.ranks[rank];
  Flags shown = plan.source.flags;
  shown.dp_padding = plan.padding;
  std::string out = "plan: model " + plan.source.model.name + "  policy " + plan.policy +
                    "  rank " + std::to_string(rank) + " of " + std::to_string(plan.world()) +
                    "  (" + plan.source.config.describe() + "; " + shown.describe() + "; tokens " +
                    plan.source.batch.describe() + ")\n";
  for (const std::string& note : plan.source.engine_notes) out += "engine " + note + "\n";

  Table t({"#", "layer", "stage", "phase", "op", "tensor", "group", "ranks", "rows in", "rows out",
           "bytes"},
          {true, true, true, false, false, false, false, false, false, false, true});
  std::optional<DpLayouts>
      layouts[kHalfLanes];  // built at the first DP op shown lowered, per TBO lane
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    // The MTP step restarts its layer numbering; mark it so its layer 0 is
    // not read as the main stack's.
    std::string layer = (op.stack != 0 ? "mtp." : "") + std::to_string(op.layer);
    std::string group = "-";
    std::string ranks = "-";
    if (op.hasGroup()) {
      group = std::string(axisName(op.groupAxis()));
      ranks = rankList(topology.groupOf(op.groupAxis(), rank));
    }
    // A TBO half's ops say which half they run on; the split and the merge say so.
    std::string name(opName(op.kind));
    if (op.half != Half::kWhole) {
      const std::string move = !op.tbo_move ? "" : op.kind == OpKind::kSlice ? "split " : "merge ";
      name += " [" + move + std::string(halfName(op.half)) + "]";
    }
    t.addRow({std::to_string(i), std::move(layer), std::to_string(op.stage),
              std::string(phaseName(op.phase)), std::move(name), std::string(tensorName(op.tensor)),
              std::move(group), std::move(ranks), rowsCell(op.rows_in), rowsCell(op.rows_out),
              std::to_string(op.bytes)});
    if (lower_dp && isDpOp(op.kind)) {
      std::optional<DpLayouts>& lane = layouts[static_cast<int>(op.half)];
      if (!lane) lane.emplace(dpLayoutsOf(plan, op.half));
      addLoweredRows(t, plan, op, rank, topology, *lane);
    }
  }
  out += t.render();

  std::map<std::string, int> counts = countKinds(ops);
  std::vector<std::pair<std::string, int>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  out += std::to_string(ops.size()) + " ops";
  for (size_t i = 0; i < sorted.size(); ++i) {
    out += (i == 0 ? ": " : ", ") + std::to_string(sorted[i].second) + " " + sorted[i].first;
  }
  return out + "\n";
}

}  // namespace

Status checkRank(const Plan& plan, int rank) {
  const int world = plan.world();
  if (rank < 0 || rank >= world) {
    return Status::invalid("--rank " + std::to_string(rank) + " is not in 0.." +
                           std::to_string(world - 1) + " (world " + std::to_string(world) + ")");
  }
  return Status::ok();
}

std::string renderPlan(const Plan& plan, int rank, Format format, bool lower_dp) {
  assert(checkRank(plan, rank).isOk() && "renderPlan of a rank outside the plan");
  const Topology topology(plan.source.config);
  if (format == Format::kText) return renderText(plan, rank, topology, lower_dp);

  const std::vector<Op>& ops = plan.ranks[rank];
  if (format == Format::kJsonl) {
    std::string out;
    for (const Op& op : ops) {
      Json j = opJson(op, topology, rank);
      j["rank"] = rank;
      out += j.dump() + "\n";
    }
    return out;
  }

  Json list = Json::array();
  for (const Op& op : ops) list.push_back(opJson(op, topology, rank));
  Json summary = Json::object();
  for (const auto& [name, count] : countKinds(ops)) summary[name] = count;
  Json doc{{"model", plan.source.model.name},
           {"pattern", plan.source.model.pattern.text()},
           {"policy", plan.policy},
           {"config", configJson(plan)},
           {"rank", rank},
           {"ops", std::move(list)},
           {"summary", std::move(summary)}};
  return doc.dump(2) + "\n";
}

}  // namespace seam::reports
