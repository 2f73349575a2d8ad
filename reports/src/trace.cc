#include "seam/reports/trace.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>

#include "seam/reports/input_file.h"
#include "seam/sim/model/config_space.h"

namespace seam::reports {

namespace {

using nlohmann::json;

/// One line's error: "trace \"f\", line 12: ...".
struct LineError {
  const std::string& path;
  int line;
  std::string prefix = {};  ///< put before a key's name: "rows_in." for the keys inside it
  Status operator()(std::string what) const {
    if (!prefix.empty() && what.starts_with('"')) what.insert(1, prefix);
    return Status::invalid("trace \"" + path.substr(0, 200) + "\", line " + std::to_string(line) +
                           ": " + what);
  }
};

/// The keys a trace line may hold (plan_view.cc writes them); any other is
/// refused, so that a misspelt key is not read as a missing one.
constexpr std::string_view kKeys[] = {"rank",    "layer",    "stage", "stack",      "phase",
                                      "op",      "tensor",   "group", "group_size", "ranks",
                                      "rows_in", "rows_out", "bytes", "sizes_per"};

Status unknownKeys(const json& j, const LineError& err) {
  for (const auto& [key, value] : j.items()) {
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
      return err("\"" + key.substr(0, 40) + "\" is not a key of a trace line");
    }
  }
  return Status::ok();
}

/// `key` as a string: missing and mistyped are told apart.
Status str(const json& j, const char* key, std::string* out, const LineError& err) {
  if (!j.contains(key)) return err(std::string("\"") + key + "\" is missing");
  if (!j.at(key).is_string()) return err(std::string("\"") + key + "\" is not a string");
  *out = j.at(key).get<std::string>();
  return Status::ok();
}

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

/// `key` as an integer in lo..hi: missing, not an integer and out of range
/// are told apart, the value named.
Status integer(const json& j, const char* key, std::int64_t lo, std::int64_t hi, std::int64_t* out,
               const LineError& err) {
  if (!j.contains(key)) return err(std::string("\"") + key + "\" is missing");
  if (!integer(j, key, out)) return err(std::string("\"") + key + "\" is not an integer");
  if (*out < lo || *out > hi) {
    return err(std::string("\"") + key + "\" " + std::to_string(*out) + " is out of range (" +
               std::to_string(lo) + ".." + std::to_string(hi) + ")");
  }
  return Status::ok();
}

Status readRows(const json& j, const char* key, Rows* rows, const LineError& err) {
  const std::string name = std::string("\"") + key;
  if (!j.contains(key)) return err(name + "\" is missing");
  if (!j.at(key).is_object()) return err(name + "\" is not an object");
  const json& r = j.at(key);
  for (const auto& [k, value] : r.items()) {
    if (k != "layout" && k != "count") {
      return err(name + "." + k.substr(0, 40) + "\" is not a key of rows (layout, count)");
    }
  }
  std::string layout;
  if (!r.contains("layout")) return err(name + ".layout\" is missing");
  if (!str(r, "layout", &layout) || !parseRowKind(layout, &rows->kind)) {
    return err(name + ".layout\" is not one of none, attention, local, full, dispatched, sequence");
  }
  std::int64_t count = 0;
  const LineError inner{err.path, err.line, name.substr(1) + "."};
  if (Status s = integer(r, "count", 0, kMaxTokensPerShard * 64LL, &count, inner); !s) return s;
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

/// The decoder layer every op of a stage carries (the planner's emission):
/// the stage's layer; the final norm's is one past the stack's last layer;
/// the MTP input projection's is -1.
Status checkLayer(const Plan& plan, const Op& op, const LineError& err) {
  int layer = -1;
  if (op.stage >= 0) {
    const int n = plan.stackSize(op.stack);
    const int last = plan.stageIndex(op.stack, op.stage < n ? op.stage : n - 1);
    layer = last < 0 ? -1 : plan.stages[last].layer + (op.stage < n ? 0 : 1);
  }
  if (op.layer != layer) {
    return err("\"layer\" " + std::to_string(op.layer) + " is not the layer of stage " +
               std::to_string(op.stage) + " of stack " + std::to_string(op.stack) + " (" +
               std::to_string(layer) + ")");
  }
  return Status::ok();
}

/// The group of a communicating op, checked against seam's topology for
/// `rank`: "ranks" must list its members, "group_size" count them.
Status readGroup(const json& j, const Topology& topo, int rank, Op* op, const LineError& err) {
  if (!j.contains("group")) return err("\"group\" is missing (null when the op has none)");
  if (j.at("group").is_null()) {
    for (const char* key : {"ranks", "group_size"}) {
      if (j.contains(key) && !j.at(key).is_null()) {
        return err(std::string("\"") + key + "\" is given for an op without a group");
      }
    }
    if (communicates(op->kind)) return err(std::string(opName(op->kind)) + " needs a group");
    return Status::ok();
  }
  Axis axis;
  if (!j.at("group").is_string() || !parseAxis(j.at("group").get<std::string>(), &axis)) {
    return err(
        "\"group\" is not an axis (tp, attn_tp, attn_cp, attn_dp, moe_ep, moe_tp, moe_dp, pp) "
        "or null");
  }
  op->axis = static_cast<std::int8_t>(axis);
  const auto& members = topo.groupOf(axis, rank);
  if (j.contains("ranks") && !j.at("ranks").is_null()) {
    if (!j.at("ranks").is_array()) return err("\"ranks\" is not a list");
    std::vector<int> listed;
    for (const json& m : j.at("ranks")) {
      std::int64_t v = 0;
      if (!m.is_number_integer() || (v = m.get<std::int64_t>()) < 0 || v >= kMaxWorld) {
        return err("\"ranks\" holds something that is not a rank");
      }
      listed.push_back(static_cast<int>(v));
    }
    if (listed != members) {
      return err("the " + std::string(axisName(axis)) + " group of rank " + std::to_string(rank) +
                 " is not the group seam's topology gives for this config");
    }
  }
  std::int64_t size = 0;
  if (j.contains("group_size") && !j.at("group_size").is_null() &&
      (!integer(j, "group_size", &size) || size != static_cast<std::int64_t>(members.size()))) {
    return err("\"group_size\" disagrees with the group");
  }
  return Status::ok();
}

/// One line's op, every key checked against the schema and the case.
Status readOp(const json& j, const Plan& plan, const Topology& topo, const LineError& err, Op* op,
              int* rank_out) {
  if (Status s = unknownKeys(j, err); !s) return s;
  std::int64_t rank = 0, layer = 0, stage = 0, stack = 0, bytes = 0;
  if (Status s = integer(j, "rank", 0, plan.world() - 1, &rank, err); !s) return s;
  if (Status s = integer(j, "layer", -1, 32767, &layer, err); !s) return s;
  if (Status s = integer(j, "stage", -1, 32767, &stage, err); !s) return s;
  if (j.contains("stack")) {
    if (Status s = integer(j, "stack", 0, 1, &stack, err); !s) return s;
  }
  std::string text;
  if (Status s = str(j, "phase", &text, err); !s) return s;
  if (text != "entry" && text != "compute" && text != "exit") {
    return err("\"phase\" \"" + text.substr(0, 40) + "\" is not one of entry, compute, exit");
  }
  op->phase = text == "entry" ? Phase::kEntry : text == "compute" ? Phase::kCompute : Phase::kExit;
  if (Status s = str(j, "op", &text, err); !s) return s;
  if (!parseOpKind(text, &op->kind))
    return err("\"op\" \"" + text.substr(0, 40) + "\" is not an op kind");
  if (Status s = str(j, "tensor", &text, err); !s) return s;
  if (!parseTensor(text, &op->tensor)) {
    return err("\"tensor\" \"" + text.substr(0, 40) +
               "\" is not one of hidden, residual, snapshot");
  }
  if (Status s = readGroup(j, topo, static_cast<int>(rank), op, err); !s) return s;
  if (j.contains("sizes_per")) {
    if (!str(j, "sizes_per", &text) || (text != "member" && text != "dp_shard"))
      return err("\"sizes_per\" is not one of member, dp_shard");
    if (op->kind != OpKind::kReduceScatterv && op->kind != OpKind::kAllGatherv)
      return err("\"sizes_per\" on " + std::string(opName(op->kind)) +
                 ", which takes no sizes (only reduce_scatterv and all_gatherv do)");
    op->sizes = text == "dp_shard" ? SplitSizes::kPerDpShard : SplitSizes::kPerMember;
  }
  if (Status s = readRows(j, "rows_in", &op->rows_in, err); !s) return s;
  if (Status s = readRows(j, "rows_out", &op->rows_out, err); !s) return s;
  if (Status s = integer(j, "bytes", 0, std::numeric_limits<std::int64_t>::max(), &bytes, err);
      !s) {
    return s;
  }
  op->layer = static_cast<std::int16_t>(layer);
  op->stage = static_cast<std::int16_t>(stage);
  op->stack = static_cast<std::uint8_t>(stack);
  op->bytes = bytes;
  if (Status s = checkStage(plan, *op, err); !s) return s;
  if (Status s = checkLayer(plan, *op, err); !s) return s;
  *rank_out = static_cast<int>(rank);
  return Status::ok();
}

}  // namespace

Expected<Plan> importTrace(const std::string& path, const Plan& skeleton) {
  const std::string label = "trace \"" + path.substr(0, 200) + "\"";
  if (!skeleton.tbo_split.empty()) {
    return Status::invalid(label +
                           ": the case runs two-batch overlap (--tbo), and a "
                           "trace line does not say which half of the batch its op runs on");
  }
  auto reader = LineReader::open(label, path, kMaxTraceFileBytes, kMaxTraceLineBytes);
  if (!reader) return reader.status();
  Plan plan = skeleton;
  plan.policy = "trace";
  for (auto& ops : plan.ranks) ops.clear();
  const Topology topo(plan.source.config);
  std::string text;
  int ops = 0;
  for (;;) {
    auto more = reader->next(&text);
    if (!more) return more.status();
    if (!*more) break;
    const LineError err{path, reader->lineNumber()};
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines are allowed
    const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return err("not a JSON object (truncated or malformed)");
    if (!j.is_object()) return err("not a JSON object");
    Op op;
    int rank = 0;
    if (Status s = readOp(j, plan, topo, err, &op, &rank); !s) return s;
    plan.ranks[rank].push_back(op);
    ++ops;
  }
  if (ops == 0) return Status::invalid(label + ": no calls in it");
  return plan;
}

}  // namespace seam::reports
