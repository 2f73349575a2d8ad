// PyTorch Flight Recorder JSON dumps (schema 2.x). The keys are those of
// torch/csrc/distributed/c10d/FlightRecorder.hpp (version_val "2.10": entries,
// pg_config, pg_status, record_id, pg_id, process_group, collective_seq_id,
// p2p_seq_id, is_p2p, op_id, profiling_name, input_sizes, input_dtypes,
// output_sizes, output_dtypes, time_created_ns, frames, state); the shape of
// pg_config (name -> {name, desc, ranks "[0, 1]"}) and the profiling names
// are those fr_trace reads (flight_recorder/components/builder.py, types.py).
#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "pickle.h"
#include "readers.h"

namespace seam::recordings {

namespace {

using nlohmann::json;

/// fr_trace's COLLECTIVES and P2P sets (types.py), each with seam's kind.
struct FrName {
  const char* name;
  CallKind kind;
};
constexpr FrName kFrNames[] = {
    {"all_reduce", CallKind::kAllReduce},
    {"allreduce_coalesced", CallKind::kAllReduce},
    {"all_gather", CallKind::kAllGather},
    {"all_gather_single", CallKind::kAllGather},
    {"_all_gather_base", CallKind::kAllGather},
    {"all_gather_into_tensor_coalesced", CallKind::kAllGather},
    {"ALLGATHER_coalesced", CallKind::kAllGather},
    {"all_gather_v", CallKind::kAllGatherv},
    {"reduce_scatter", CallKind::kReduceScatter},
    {"reduce_scatter_single", CallKind::kReduceScatter},
    {"_reduce_scatter_base", CallKind::kReduceScatter},
    {"reduce_scatter_tensor_coalesced", CallKind::kReduceScatter},
    {"REDUCE_SCATTER_coalesced", CallKind::kReduceScatter},
    {"reduce_scatter_v", CallKind::kReduceScatterv},
    {"all_to_all", CallKind::kAllToAll},
    {"all_to_all_single", CallKind::kAllToAll},
    {"all_to_all_v_single", CallKind::kAllToAll},
    {"send", CallKind::kSend},
    {"recv", CallKind::kRecv},
    {"broadcast", CallKind::kOther},
    {"_broadcast_oop", CallKind::kOther},
    {"reduce", CallKind::kOther},
    {"_reduce_oop", CallKind::kOther},
    {"gather", CallKind::kOther},
    {"scatter", CallKind::kOther},
    {"all_reduce_barrier", CallKind::kOther},
    {"barrier", CallKind::kOther},
    {"split", CallKind::kOther},
    {"new_window", CallKind::kOther},
    {"coalesced", CallKind::kOther},
};

/// The most elements a tensor may hold (2^48: far past any GPU's memory), so
/// that products and sums of sizes stay within 64 bits.
constexpr std::int64_t kMaxElems = std::int64_t{1} << 48;

struct EntryError {
  const std::string& path;
  std::size_t entry;
  Status operator()(const std::string& what) const {
    return Status::invalid(fileLabel("dump", path) + ", entry " + std::to_string(entry) + ": " +
                           what);
  }
};

/// The rank fr_trace's loader reads from a dump's name: its trailing digits.
int rankOfFileName(const std::string& path) {
  const std::string base = path.substr(path.find_last_of('/') + 1);
  std::size_t end = base.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(base[end - 1]))) --end;
  const std::string digits = base.substr(end);
  if (digits.empty() || digits.size() > 6) return -1;
  return std::stoi(digits);
}

/// "[0, 1, 2]" (pg_config's string) or a JSON list of ranks.
bool parseRanks(const json& j, std::vector<int>* out) {
  json list = j;
  if (j.is_string()) list = json::parse(j.get<std::string>(), nullptr, false);
  if (!list.is_array() || list.empty()) return false;
  for (const json& r : list) {
    if (!r.is_number_integer() || r.get<std::int64_t>() < 0 || r.get<std::int64_t>() > 1 << 20)
      return false;
    out->push_back(r.get<int>());
  }
  return true;
}

Status readGroups(const std::string& path, const json& config, DumpFile* dump) {
  if (!config.is_object())
    return Status::invalid(fileLabel("dump", path) + ": \"pg_config\" is not an object");
  for (const auto& [key, pg] : config.items()) {
    RecordedGroup g;
    const std::string desc = pg.is_object() && pg.contains("desc") && pg.at("desc").is_string()
                                 ? pg.at("desc").get<std::string>()
                                 : "undefined";
    g.name =
        "pg " + key.substr(0, 60) + (desc != "undefined" ? " (" + desc.substr(0, 60) + ")" : "");
    g.default_pg = desc == "default_pg";
    if (!pg.is_object() || !pg.contains("ranks") || !parseRanks(pg.at("ranks"), &g.members)) {
      return Status::invalid(fileLabel("dump", path) + ": pg_config \"" + key.substr(0, 60) +
                             "\" has no list of ranks");
    }
    dump->groups.push_back(std::move(g));
  }
  return Status::ok();
}

std::int64_t numel(const json& sizes, bool* ok) {
  std::int64_t total = 0;
  if (!sizes.is_array()) return *ok = false, 0;
  for (const json& shape : sizes) {
    if (!shape.is_array()) return *ok = false, 0;
    std::int64_t n = 1;
    for (const json& d : shape) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0 || d.get<std::int64_t>() > kMaxElems)
        return *ok = false, 0;
      n *= d.get<std::int64_t>();
      if (n > kMaxElems) return *ok = false, 0;
    }
    total += n;
    if (total > kMaxElems) return *ok = false, 0;
  }
  return total;
}

std::int64_t integerKey(const json& e, const char* key, bool* ok) {
  if (!e.contains(key) || !e.at(key).is_number_integer()) return *ok = false, 0;
  return e.at(key).get<std::int64_t>();
}

/// "nccl:send 0->1" / "nccl:recv 1<-0": kind and peer (inside the group).
Status readName(const json& e, const EntryError& err, RecordedCall* call) {
  if (!e.contains("profiling_name") || !e.at("profiling_name").is_string())
    return err("\"profiling_name\" is missing or not a string");
  call->op = e.at("profiling_name").get<std::string>();
  const auto colon = call->op.find(':');
  const std::string backend = call->op.substr(0, colon);
  if (colon == std::string::npos || (backend != "nccl" && backend != "xccl"))
    return err("profiling_name \"" + call->op.substr(0, 60) + "\" is not nccl:<op> or xccl:<op>");
  const std::string rest = call->op.substr(colon + 1);
  const std::string type = rest.substr(0, rest.find(' '));
  const auto* it = std::find_if(std::begin(kFrNames), std::end(kFrNames),
                                [&](const FrName& n) { return type == n.name; });
  if (it == std::end(kFrNames))
    return err("profiling_name \"" + call->op.substr(0, 60) +
               "\" is not a collective fr_trace knows");
  call->kind = it->kind;
  if (call->kind == CallKind::kSend || call->kind == CallKind::kRecv) {
    const std::string meta = rest.size() > type.size() ? rest.substr(type.size() + 1) : "";
    const char* arrow = call->kind == CallKind::kSend ? "->" : "<-";
    const auto at = meta.find(arrow);
    if (at == std::string::npos || at + 2 >= meta.size())
      return err("profiling_name \"" + call->op.substr(0, 60) + "\" names no peer");
    call->peer = std::atoi(meta.c_str() + at + 2);
  }
  return Status::ok();
}

Status readEntry(const json& e, const EntryError& err, DumpFile* dump, std::int64_t* record_id) {
  if (!e.is_object()) return err("not an object");
  RecordedCall call;
  if (Status s = readName(e, err, &call); !s) return s;
  bool ok = true;
  *record_id = integerKey(e, "record_id", &ok);
  const std::int64_t cseq = integerKey(e, "collective_seq_id", &ok);
  const std::int64_t pseq = integerKey(e, "p2p_seq_id", &ok);
  if (!ok) return err("\"record_id\", \"collective_seq_id\" or \"p2p_seq_id\" is not an integer");
  call.seq = call.kind == CallKind::kSend || call.kind == CallKind::kRecv ? pseq : cseq;
  const json* pg = e.contains("process_group") ? &e.at("process_group") : nullptr;
  if (pg == nullptr || !pg->is_array() || pg->size() != 2 || !(*pg)[0].is_string())
    return err("\"process_group\" is not [name, desc]");
  const std::string prefix = "pg " + (*pg)[0].get<std::string>().substr(0, 60);
  for (std::size_t g = 0; g < dump->groups.size(); ++g) {
    const std::string& n = dump->groups[g].name;
    if (n == prefix || n.rfind(prefix + " (", 0) == 0) call.group = static_cast<int>(g);
  }
  if (call.group < 0)
    return err("process group \"" + (*pg)[0].get<std::string>().substr(0, 60) +
               "\" is not in pg_config");
  call.in_elems = numel(e.contains("input_sizes") ? e.at("input_sizes") : json(), &ok);
  call.out_elems = numel(e.contains("output_sizes") ? e.at("output_sizes") : json(), &ok);
  if (!ok)
    return err(
        "\"input_sizes\" or \"output_sizes\" is not a list of shapes of at most 2^48 "
        "elements");
  for (const char* key : {"input_dtypes", "output_dtypes"}) {
    if (call.dtype.empty() && e.contains(key) && e.at(key).is_array() && !e.at(key).empty() &&
        e.at(key)[0].is_string())
      call.dtype = canonicalDtype(e.at(key)[0].get<std::string>());
  }
  if (!e.contains("state") || !e.at("state").is_string()) return err("\"state\" is missing");
  call.state = e.at("state").get<std::string>();
  if (call.state != "scheduled" && call.state != "started" && call.state != "completed")
    return err("\"state\" \"" + call.state.substr(0, 40) +
               "\" is not scheduled, started, completed");
  if (e.contains("frames") && e.at("frames").is_array() && !e.at("frames").empty()) {
    const json& f = e.at("frames")[0];
    auto text = [&](const char* key) {
      if (!f.is_object() || !f.contains(key)) return std::string("?");
      const json& v = f.at(key);
      return v.is_string()           ? v.get<std::string>().substr(0, 200)
             : v.is_number_integer() ? std::to_string(v.get<std::int64_t>())
                                     : "?";
    };
    call.frame = text("filename") + ":" + text("line") + " (" + text("name") + ")";
  }
  call.where = fileLabel("dump", err.path) + ", entry " + std::to_string(err.entry);
  dump->calls.push_back(std::move(call));
  return Status::ok();
}

}  // namespace

bool looksLikeDump(const std::string& head) {
  if (looksLikePickle(head)) return true;
  const auto first = head.find_first_not_of(" \t\r\n");
  return first != std::string::npos && head[first] == '{';
}

Expected<DumpFile> readDump(const std::string& path, const std::string& text) {
  const std::string label = fileLabel("dump", path);
  json j;
  if (looksLikePickle(text)) {
    // The default dump (_dump_nccl_trace, TORCH_NCCL_DEBUG_INFO_TEMP_FILE)
    // is torch::jit::Pickler's protocol 2 of the same dict.
    Expected<json> unpickled = unpickle(text, label);
    if (!unpickled) return unpickled.status();
    j = std::move(*unpickled);
    if (!j.is_object()) return Status::invalid(label + ": the pickle holds no dict");
  } else {
    j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object())
      return Status::invalid(label + ": not a JSON object or a pickle (truncated?)");
  }
  DumpFile dump;
  if (!j.contains("version") || !j.at("version").is_string())
    return Status::invalid(label + ": no \"version\": not a Flight Recorder dump");
  dump.version = j.at("version").get<std::string>();
  if (dump.version.rfind("2.", 0) != 0)
    return Status::invalid(label + ": schema version \"" + dump.version.substr(0, 20) +
                           "\" is not 2.x, the one seam reads");
  for (const char* key : {"pg_config", "entries"}) {
    if (!j.contains(key))
      return Status::invalid(label + ": no \"" + key + "\": not a Flight Recorder dump");
  }
  dump.rank = rankOfFileName(path);
  if (dump.rank < 0)
    return Status::invalid(label +
                           ": its name does not end in the rank (as fr_trace's loader "
                           "reads it: <prefix><rank>)");
  if (Status s = readGroups(path, j.at("pg_config"), &dump); !s) return s;
  const json& entries = j.at("entries");
  if (!entries.is_array()) return Status::invalid(label + ": \"entries\" is not a list");
  std::int64_t previous = -1;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    std::int64_t id = 0;
    if (Status s = readEntry(entries[i], EntryError{path, i}, &dump, &id); !s) return s;
    if (i == 0) dump.first_record_id = id;
    if (previous >= 0 && id != previous + 1) dump.gaps = true;
    previous = id;
  }
  return dump;
}

}  // namespace seam::recordings
