#include "seam/reports/trace.h"

#include <fstream>
#include <nlohmann/json.hpp>

namespace seam::reports {

namespace {

using nlohmann::json;

/// One line's error: "trace \"f\", line 12: ...".
struct LineError {
  const std::string& path;
  int line;
  Status operator()(const std::string& what) const {
    return Status::invalid("trace \"" + path.substr(0, 200) + "\", line " + std::to_string(line) +
                           ": " + what);
  }
};

bool str(const json& j, const char* key, std::string* out) {
  if (!j.contains(key) || !j.at(key).is_string()) return false;
  *out = j.at(key).get<std::string>();
  return true;
}

bool integer(const json& j, const char* key, std::int64_t* out) {
  if (!j.contains(key) || !j.at(key).is_number_integer()) return false;
  *out = j.at(key).get<std::int64_t>();
  return true;
}

Status readRows(const json& j, const char* key, Rows* rows, const LineError& err) {
  if (!j.contains(key) || !j.at(key).is_object())
    return err(std::string("\"") + key + "\" is missing or not an object");
  const json& r = j.at(key);
  std::string layout;
  std::int64_t count = 0;
  if (!str(r, "layout", &layout) || !parseRowKind(layout, &rows->kind)) {
    return err(std::string("\"") + key +
               ".layout\" is not one of none, attention, local, full, dispatched");
  }
  if (!integer(r, "count", &count) || count < 0 || count > kMaxTokensPerShard * 64LL) {
    return err(std::string("\"") + key + ".count\" is not a row count");
  }
  rows->count = static_cast<std::int32_t>(count);
  return Status::ok();
}

/// Refuses an op at a stage the case does not have. Every op sits at a stage
/// of its stack (0..n-1) or at n, the stack's final norm; stage -1 is the MTP
/// stack's input projection (eh_proj), which reads the previous stack's
/// output, so it exists only in stack 1 and holds no norm. A compute op runs
/// a stage's weights, so the final norm has none.
Status checkStage(const Plan& plan, const Op& op, const LineError& err) {
  const int n = plan.stackSize(op.stack);
  const std::string where =
      "\"stage\" " + std::to_string(op.stage) + " of stack " + std::to_string(op.stack);
  if (n == 0) return err("\"stack\" 1, but the case has no MTP step");
  if (op.stage < -1 || op.stage > n) {
    return err(where + " is not a stage of the case (-1.." + std::to_string(n) + ")");
  }
  const bool norm =
      op.kind == OpKind::kNorm || op.kind == OpKind::kAddNorm || op.kind == OpKind::kArAddNorm;
  if (op.stage == -1 && (op.stack == 0 || norm)) {
    return err(where + ": stage -1 is the MTP input projection (stack 1, no norm)");
  }
  if (op.stage == n && op.kind == OpKind::kCompute) {
    return err(where + " is the final norm: no stage computes there");
  }
  return Status::ok();
}

}  // namespace

Expected<Plan> importTrace(const std::string& path, const Plan& skeleton) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::invalid("trace \"" + path.substr(0, 200) + "\": cannot read it");
  if (!skeleton.tbo_split.empty()) {
    return Status::invalid("trace \"" + path.substr(0, 200) +
                           "\": the case runs two-batch overlap (--tbo), and a "
                           "trace line does not say which half of the batch its op runs on");
  }
  Plan plan = skeleton;
  plan.policy = "trace";
  for (auto& ops : plan.ranks) ops.clear();
  const Topology topo(plan.source.config);
  std::string text;
  int line = 0, ops = 0;
  while (std::getline(in, text)) {
    ++line;
    const LineError err{path, line};
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines are allowed
    const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return err("not a JSON object (truncated or malformed)");
    if (!j.is_object()) return err("not a JSON object");
    std::int64_t rank = 0, layer = 0, stage = 0, stack = 0, bytes = 0;
    if (!integer(j, "rank", &rank) || rank < 0 || rank >= plan.world()) {
      return err("\"rank\" is missing or not a rank of the world of " +
                 std::to_string(plan.world()));
    }
    if (!integer(j, "layer", &layer) || !integer(j, "stage", &stage) || layer < -1 || stage < -1 ||
        layer > 32767 || stage > 32767) {
      return err("\"layer\" and \"stage\" must be integers");
    }
    if (j.contains("stack") && (!integer(j, "stack", &stack) || stack < 0 || stack > 1)) {
      return err("\"stack\" must be 0 or 1");
    }
    if (!integer(j, "bytes", &bytes) || bytes < 0) return err("\"bytes\" is missing or negative");
    Op op;
    std::string s;
    if (!str(j, "phase", &s) || (s != "entry" && s != "compute" && s != "exit")) {
      return err("\"phase\" is not one of entry, compute, exit");
    }
    op.phase = s == "entry" ? Phase::kEntry : s == "compute" ? Phase::kCompute : Phase::kExit;
    if (!str(j, "op", &s) || !parseOpKind(s, &op.kind))
      return err("\"op\" \"" + s.substr(0, 40) + "\" is not an op kind");
    if (!str(j, "tensor", &s) || !parseTensor(s, &op.tensor))
      return err("\"tensor\" is not one of hidden, residual, snapshot");
    if (!j.contains("group")) return err("\"group\" is missing (null when the op has none)");
    if (!j.at("group").is_null()) {
      Axis axis;
      if (!j.at("group").is_string() || !parseAxis(j.at("group").get<std::string>(), &axis)) {
        return err(
            "\"group\" is not an axis (tp, attn_tp, attn_cp, attn_dp, moe_ep, moe_tp, moe_dp, pp) "
            "or null");
      }
      op.axis = static_cast<std::int8_t>(axis);
      const auto& members = topo.groupOf(axis, static_cast<int>(rank));
      if (j.contains("ranks") && !j.at("ranks").is_null()) {
        if (!j.at("ranks").is_array()) return err("\"ranks\" is not a list");
        std::vector<int> listed;
        for (const json& m : j.at("ranks")) {
          if (!m.is_number_integer()) return err("\"ranks\" holds a non-integer");
          listed.push_back(m.get<int>());
        }
        if (listed != members) {
          return err("the " + std::string(axisName(axis)) + " group of rank " +
                     std::to_string(rank) +
                     " is not the group seam's topology gives for this config");
        }
      }
      std::int64_t size = 0;
      if (j.contains("group_size") && !j.at("group_size").is_null() &&
          (!integer(j, "group_size", &size) || size != static_cast<std::int64_t>(members.size()))) {
        return err("\"group_size\" disagrees with the group");
      }
    } else if (communicates(op.kind)) {
      return err(std::string(opName(op.kind)) + " needs a group");
    }
    if (j.contains("sizes_per")) {
      if (!str(j, "sizes_per", &s) || (s != "member" && s != "dp_shard"))
        return err("\"sizes_per\" is not one of member, dp_shard");
      if (op.kind != OpKind::kReduceScatterv && op.kind != OpKind::kAllGatherv)
        return err("\"sizes_per\" on " + std::string(opName(op.kind)) +
                   ", which takes no sizes (only reduce_scatterv and all_gatherv do)");
      op.sizes = s == "dp_shard" ? SplitSizes::kPerDpShard : SplitSizes::kPerMember;
    }
    if (Status st = readRows(j, "rows_in", &op.rows_in, err); !st) return st;
    if (Status st = readRows(j, "rows_out", &op.rows_out, err); !st) return st;
    op.layer = static_cast<std::int16_t>(layer);
    op.stage = static_cast<std::int16_t>(stage);
    op.stack = static_cast<std::uint8_t>(stack);
    if (Status st = checkStage(plan, op, err); !st) return st;
    op.bytes = bytes;
    plan.ranks[rank].push_back(op);
    ++ops;
  }
  if (in.bad()) return Status::invalid("trace \"" + path.substr(0, 200) + "\": read error");
  if (ops == 0) return Status::invalid("trace \"" + path.substr(0, 200) + "\": no calls in it");
  return plan;
}

}  // namespace seam::reports
