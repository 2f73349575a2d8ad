// The recorder's JSON lines (format "seam-recorder", recorder/seam_recorder/
// recording.py): a header naming the engine and the case's launch flags,
// every rank's collective calls in issue order, each rank's outcome, and the
// run's verdict (docs/recordings.md).
#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "readers.h"

namespace seam::recordings {

namespace {

using nlohmann::json;

/// The recorder's op names (GroupCoordinator's methods and the
/// torch.distributed functions it answers) in seam's words.
CallKind kindOf(const std::string& op) {
  static const std::map<std::string, CallKind> kKinds = {
      {"all_reduce", CallKind::kAllReduce},
      {"all_gather_into_tensor", CallKind::kAllGather},
      {"all_gather", CallKind::kAllGather},
      {"reduce_scatter_tensor", CallKind::kReduceScatter},
      {"reduce_scatter", CallKind::kReduceScatter},
      {"all_gatherv", CallKind::kAllGatherv},
      {"reduce_scatterv", CallKind::kReduceScatterv},
      {"all_to_all_single", CallKind::kAllToAll},
  };
  const auto it = kKinds.find(op);
  return it == kKinds.end() ? CallKind::kOther : it->second;
}

Status bad(const std::string& label, int line, const std::string& why) {
  return Status::invalid(label + ", line " + std::to_string(line) + ": " + why);
}

std::string str(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Expected<std::vector<std::int64_t>> shapeOf(const json& j, const char* key,
                                            const std::string& label, int line) {
  std::vector<std::int64_t> out;
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  if (!it->is_array()) return bad(label, line, std::string("\"") + key + "\" is not a list");
  for (const json& d : *it) {
    if (!d.is_number_integer() || d.get<std::int64_t>() < 0 || d.get<std::int64_t>() > (1LL << 40))
      return bad(label, line, std::string("\"") + key + "\" holds " + d.dump().substr(0, 40));
    out.push_back(d.get<std::int64_t>());
  }
  return out;
}

std::int64_t numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

/// The rows a call moves where its trailing dimension is the model's width.
std::int64_t rowsOf(const std::vector<std::int64_t>& shape, int width) {
  if (shape.size() != 2 || width <= 0 || shape[1] != width) return -1;
  return shape[0];
}

/// What this member receives, by the collective's definition (the recorder
/// gives the input shape; the output follows from the op and the group).
std::int64_t outScale(CallKind kind, std::int64_t in, int members) {
  switch (kind) {
    case CallKind::kAllGather:
      return in * members;
    case CallKind::kReduceScatter:
      return members > 0 ? in / members : in;
    default:
      return in;
  }
}

struct Reader {
  std::string label;
  Recording rec;
  std::map<std::pair<std::string, std::vector<int>>, int> group_of;
  bool header = false;
  bool verdict = false;

  Status readHeader(const json& j, int line) {
    if (str(j, "format") != "seam-recorder")
      return bad(label, line, "the first line is not a seam-recorder header");
    if (!j.contains("world") || !j["world"].is_number_integer() || j["world"].get<int>() < 1 ||
        j["world"].get<int>() > 4096)
      return bad(label, line, "the header's \"world\" is missing or out of range");
    const int world = j["world"].get<int>();
    rec.format = "seam-recorder";
    rec.ranks.resize(world);
    rec.present.assign(world, true);
    rec.lost_front.assign(world, false);
    rec.row_width = j.value("hidden", 0);
    EngineRun& e = rec.engine;
    e.engine = str(j, "engine");
    e.version = str(j, "engine_version");
    e.source = str(j, "engine_source");
    e.commit = str(j, "engine_commit");
    e.generation = str(j, "generation");
    rec.version = e.engine + " " + e.version;
    for (const char* key : {"launch_flags", "standins"}) {
      if (j.contains(key) && j[key].is_array())
        for (const json& f : j[key])
          if (f.is_string())
            (key[0] == 'l' ? e.launch_flags : e.standins).push_back(f.get<std::string>());
    }
    e.ranks.resize(world);
    header = true;
    return Status::ok();
  }

  Status readCall(const json& j, int line) {
    const int world = static_cast<int>(rec.ranks.size());
    const int rank = j.value("rank", -1);
    if (rank < 0 || rank >= world)
      return bad(label, line, "rank " + std::to_string(rank) + " is not a rank of the world");
    if (!j.contains("ranks") || !j["ranks"].is_array())
      return bad(label, line, "a call without its group's \"ranks\"");
    std::vector<int> members;
    for (const json& m : j["ranks"]) {
      if (!m.is_number_integer() || m.get<int>() < 0 || m.get<int>() >= world)
        return bad(label, line, "group member " + m.dump().substr(0, 20) + " is not a rank");
      members.push_back(m.get<int>());
    }
    const auto me = std::find(members.begin(), members.end(), rank);
    if (me == members.end())
      return bad(label, line, "rank " + std::to_string(rank) + " is not in its call's group");
    auto in_shape = shapeOf(j, "in_shape", label, line);
    if (!in_shape) return in_shape.status();
    RecordedCall c;
    c.op = str(j, "op");
    c.kind = kindOf(c.op);
    const auto key = std::make_pair(str(j, "group"), members);
    auto [it, fresh] = group_of.emplace(key, static_cast<int>(rec.groups.size()));
    if (fresh) rec.groups.push_back({key.first, members, false});
    c.group = it->second;
    const int n = static_cast<int>(members.size());
    const int pos = static_cast<int>(me - members.begin());
    c.in_elems = in_shape->empty() ? 0 : numel(*in_shape);
    c.in_rows = rowsOf(*in_shape, rec.row_width);
    c.out_elems = outScale(c.kind, c.in_elems, n);
    c.out_rows = c.in_rows < 0 ? -1 : outScale(c.kind, c.in_rows, n);
    const json sizes = j.value("sizes", json());
    if (sizes.is_array() && static_cast<int>(sizes.size()) == n && sizes[pos].is_number_integer()) {
      std::int64_t total = 0;
      for (const json& s : sizes) total += s.is_number_integer() ? s.get<std::int64_t>() : 0;
      const std::int64_t width = c.in_rows > 0 ? c.in_elems / c.in_rows : 0;
      if (c.kind == CallKind::kReduceScatterv) c.out_rows = sizes[pos].get<std::int64_t>();
      if (c.kind == CallKind::kAllGatherv) c.out_rows = total;
      if (c.in_rows >= 0) c.out_elems = c.out_rows * width;
    } else if (c.kind == CallKind::kAllGatherv || c.kind == CallKind::kReduceScatterv) {
      c.out_elems = c.kind == CallKind::kAllGatherv ? c.in_elems * n : c.in_elems / std::max(1, n);
      if (c.in_rows >= 0)
        c.out_rows = c.kind == CallKind::kAllGatherv ? c.in_rows * n : c.in_rows / std::max(1, n);
    }
    c.dtype = canonicalDtype(str(j, "dtype") == "float32"    ? "Float"
                             : str(j, "dtype") == "bfloat16" ? "BFloat16"
                                                             : str(j, "dtype"));
    c.seq = j.value("group_seq", -1);
    c.layer = j.contains("layer") && j["layer"].is_number_integer() ? j["layer"].get<int>() : -1;
    if (j.contains("frames") && j["frames"].is_array()) {
      for (const json& f : j["frames"]) {
        if (!f.is_string()) continue;
        if (c.frame.empty()) c.frame = f.get<std::string>();
        c.stack += (c.stack.empty() ? "" : " < ") + f.get<std::string>();
      }
    }
    c.where = label + ", line " + std::to_string(line);
    rec.ranks[rank].push_back(std::move(c));
    return Status::ok();
  }

  Status readOutcome(const json& j, int line) {
    const int rank = j.value("rank", -1);
    if (rank < 0 || rank >= static_cast<int>(rec.ranks.size()))
      return bad(label, line, "an outcome of rank " + std::to_string(rank));
    RankEnd& e = rec.engine.ranks[rank];
    e.outcome = str(j, "outcome");
    e.error = str(j, "error");
    e.where = str(j, "where");
    e.dp_padding = str(j, "dp_padding");
    e.output_digest = str(j, "output_digest");
    if (j.contains("output_shape") && j["output_shape"].is_array() && !j["output_shape"].empty() &&
        j["output_shape"][0].is_number_integer())
      e.output_rows = j["output_shape"][0].get<std::int64_t>();
    return Status::ok();
  }

  Status readVerdict(const json& j) {
    EngineRun& e = rec.engine;
    e.verdict = str(j, "verdict");
    e.failure = str(j, "failure").empty() ? str(j, "error") : str(j, "failure");
    e.where = str(j, "where");
    e.seconds = j.value("seconds", 0.0);
    verdict = true;
    return Status::ok();
  }

  Status line(const std::string& text, int number) {
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return bad(label, number, "not a JSON object");
    if (!header) return readHeader(j, number);
    if (verdict) return bad(label, number, "a line after the verdict");
    if (j.contains("verdict")) return readVerdict(j);
    if (j.contains("outcome")) return readOutcome(j, number);
    if (j.contains("op")) return readCall(j, number);
    return bad(label, number, "neither a call, an outcome nor the verdict");
  }
};

}  // namespace

bool looksLikeRecorderLines(const std::string& head) {
  const std::string first = head.substr(0, head.find('\n'));
  return first.find("\"format\":\"seam-recorder\"") != std::string::npos;
}

Expected<Recording> readRecorderLines(const std::string& path) {
  Reader r;
  r.label = fileLabel("recording", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::invalid(r.label + ": cannot read it");
  std::string text;
  std::int64_t total = 0;
  int number = 0;
  while (std::getline(in, text)) {
    ++number;
    total += static_cast<std::int64_t>(text.size()) + 1;
    if (total > kMaxLogBytes) return bad(r.label, number, "the recording passes its size cap");
    if (text.size() > kMaxLogLineBytes) return bad(r.label, number, "a line over 64 KiB");
    if (text.empty()) continue;
    if (Status s = r.line(text, number); !s) return s;
  }
  if (!r.header) return Status::invalid(r.label + ": empty");
  if (!r.verdict)
    return Status::invalid(r.label +
                           ": no verdict line (the recorder was stopped before it ended)");
  r.rec.source = path;
  if (r.rec.engine.verdict == "refused") r.rec.present.assign(r.rec.ranks.size(), false);
  return std::move(r.rec);
}

void scaleRows(Recording* rec, std::int64_t hidden) {
  if (rec->row_width <= 0) return;
  for (auto& calls : rec->ranks) {
    for (RecordedCall& c : calls) {
      if (c.in_rows >= 0) c.in_elems = c.in_rows * hidden;
      if (c.out_rows >= 0) c.out_elems = c.out_rows * hidden;
    }
  }
  rec->row_width = 0;
}

}  // namespace seam::recordings
