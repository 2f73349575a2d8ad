// readRecording: a file or a folder, its format told from its content, and
// the Flight Recorder dumps of a folder joined into one recording.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "readers.h"
#include "seam/reports/input_file.h"

namespace seam::recordings {

std::string_view callKindName(CallKind kind) {
  switch (kind) {
    case CallKind::kAllReduce:
      return "all_reduce";
    case CallKind::kAllGather:
      return "all_gather";
    case CallKind::kReduceScatter:
      return "reduce_scatter";
    case CallKind::kAllGatherv:
      return "all_gatherv";
    case CallKind::kReduceScatterv:
      return "reduce_scatterv";
    case CallKind::kAllToAll:
      return "all_to_all";
    case CallKind::kSend:
      return "send";
    case CallKind::kRecv:
      return "recv";
    case CallKind::kOther:
      return "other";
  }
  return "?";
}

std::string fileLabel(const char* kind, const std::string& path) {
  return std::string(kind) + " \"" + path.substr(0, 200) + "\"";
}

std::string canonicalDtype(const std::string& recorded) {
  // ncclDataType_t (nccl.h.in) by value; c10::ScalarType by its name.
  static const std::map<std::string, std::string> kNames = {{"0", "int8"},
                                                            {"1", "uint8"},
                                                            {"2", "int32"},
                                                            {"3", "uint32"},
                                                            {"4", "int64"},
                                                            {"5", "uint64"},
                                                            {"6", "fp16"},
                                                            {"7", "fp32"},
                                                            {"8", "fp64"},
                                                            {"9", "bf16"},
                                                            {"10", "fp8e4m3"},
                                                            {"11", "fp8e5m2"},
                                                            {"Char", "int8"},
                                                            {"Byte", "uint8"},
                                                            {"Int", "int32"},
                                                            {"Long", "int64"},
                                                            {"Half", "fp16"},
                                                            {"Float", "fp32"},
                                                            {"Double", "fp64"},
                                                            {"BFloat16", "bf16"},
                                                            {"Float8_e4m3fn", "fp8e4m3"},
                                                            {"Float8_e5m2", "fp8e5m2"}};
  const auto it = kNames.find(recorded);
  return it == kNames.end() ? recorded.substr(0, 40) : it->second;
}

int dtypeBytes(const std::string& canonical) {
  static const std::map<std::string, int> kWidths = {
      {"int8", 1},  {"uint8", 1},  {"fp8e4m3", 1}, {"fp8e5m2", 1}, {"fp16", 2},   {"bf16", 2},
      {"int32", 4}, {"uint32", 4}, {"fp32", 4},    {"int64", 8},   {"uint64", 8}, {"fp64", 8}};
  const auto it = kWidths.find(canonical);
  return it == kWidths.end() ? 0 : it->second;
}

Expected<Recording> mergeDumps(const std::string& source, std::vector<DumpFile> dumps) {
  Recording rec;
  rec.format = "flight-recorder";
  rec.source = source;
  int world = 0;
  for (const DumpFile& d : dumps) {
    world = std::max(world, d.rank + 1);
    for (const RecordedGroup& g : d.groups)
      for (int m : g.members) world = std::max(world, m + 1);
  }
  rec.ranks.resize(world);
  rec.present.assign(world, false);
  rec.lost_front.assign(world, false);
  std::map<std::pair<std::string, std::vector<int>>, int> group_of;
  for (DumpFile& d : dumps) {
    if (rec.present[d.rank])
      return Status::invalid(fileLabel("dump", source) + ": two dumps of rank " +
                             std::to_string(d.rank));
    rec.present[d.rank] = true;
    if (rec.version.empty()) rec.version = d.version;
    std::vector<int> index(d.groups.size());
    for (std::size_t g = 0; g < d.groups.size(); ++g) {
      const auto key = std::make_pair(d.groups[g].name, d.groups[g].members);
      auto [it, fresh] = group_of.emplace(key, static_cast<int>(rec.groups.size()));
      if (fresh) rec.groups.push_back(d.groups[g]);
      index[g] = it->second;
    }
    for (RecordedCall& c : d.calls) {
      c.group = index[c.group];
      rec.ranks[d.rank].push_back(std::move(c));
    }
    rec.lost_front[d.rank] = d.first_record_id > 0;
    if (d.first_record_id > 0)
      rec.partial.push_back(
          {d.rank, "rank " + std::to_string(d.rank) + ": the ring buffer starts at record_id " +
                       std::to_string(d.first_record_id) + " (earlier calls were overwritten)"});
    if (d.gaps)
      rec.partial.push_back({d.rank, "rank " + std::to_string(d.rank) +
                                         ": record ids skip (calls are missing between entries)"});
  }
  for (int r = 0; r < world; ++r)
    if (!rec.present[r]) rec.partial.push_back({r, "no dump of rank " + std::to_string(r)});
  return rec;
}

namespace {

/// The first bytes of a file (empty when it cannot be read: the reader
/// that follows names the failure).
std::string head(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string out(4096, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
  return out;
}

Expected<std::vector<std::string>> filesOf(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return std::vector<std::string>{path};
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
    if (!e.is_regular_file(ec)) continue;
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.' || name == "README.md") continue;
    if (files.size() >= static_cast<std::size_t>(kMaxRecordingFiles))
      return Status::invalid(fileLabel("recording", path) + ": more than " +
                             std::to_string(kMaxRecordingFiles) + " files");
    files.push_back(e.path().string());
  }
  if (ec)
    return Status::invalid(fileLabel("recording", path) + ": cannot read it (" + ec.message() +
                           ")");
  if (files.empty()) return Status::invalid(fileLabel("recording", path) + ": an empty folder");
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

Expected<Recording> readRecording(const std::string& path) {
  auto files = filesOf(path);
  if (!files) return files.status();
  if (files->size() == 1 && looksLikeRecorderLines(head(files->front())))
    return readRecorderLines(files->front());
  const bool dumps = looksLikeDump(head(files->front()));
  for (const std::string& f : *files) {
    if (looksLikeDump(head(f)) != dumps)
      return Status::invalid(fileLabel("recording", path) + ": \"" + f.substr(0, 200) + "\" " +
                             (dumps ? "is not" : "is") +
                             " a JSON dump, unlike the first file; give dumps or logs, not both");
  }
  if (!dumps) return readNcclLogs(*files);
  std::vector<DumpFile> read;
  for (const std::string& f : *files) {
    auto text = reports::readInputFile(fileLabel("dump", f), f, kMaxDumpBytes);
    if (!text) return text.status();
    auto dump = readDump(f, *text);
    if (!dump) return dump.status();
    read.push_back(std::move(*dump));
  }
  return mergeDumps(path, std::move(read));
}

}  // namespace seam::recordings
