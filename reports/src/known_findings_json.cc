// A baseline read from a seam store or from the JSON file --write-baseline
// writes, that file itself, and a run's JSON with its verdict added.
#include <algorithm>
#include <cassert>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "seam/reports/input_file.h"
#include "seam/reports/known_findings.h"

namespace seam::reports {

namespace {

using Json = nlohmann::ordered_json;

/// The first member of every baseline file: what it is, and its version.
constexpr std::string_view kFormat = "seam baseline 1";

/// The identity's fields and the line that replays it, in the file's order.
constexpr const char* kFields[] = {"model", "pattern", "config", "flags",
                                   "batch", "policy",  "what",   "reproduce"};

std::string label(const std::string& path) { return "--baseline \"" + path.substr(0, 200) + "\""; }

Expected<Baseline> storeBaseline(const std::string& path, std::string_view command) {
  auto store = Store::openInput(path, label(path));
  if (!store) return store.status();
  auto runs = store->runs();
  if (!runs) return runs.status();
  // The latest finished run of `command` (runs come by id).
  const auto run = std::find_if(runs->rbegin(), runs->rend(), [&](const RunRecord& r) {
    return r.command == command && r.finished_ms != 0;
  });
  if (run == runs->rend()) {
    return Status::invalid(label(path) + ": a seam store with no finished `seam " +
                           std::string(command) + "` run to take the findings of");
  }
  auto findings = runFindings(*store, run->id, command);
  if (!findings) return findings.status();
  Baseline b;
  b.path = path;
  for (const Finding& f : *findings) b.keys.insert(f.key());
  return b;
}

Expected<Baseline> jsonBaseline(const std::string& path, std::string_view command) {
  auto text = readInputFile(label(path), path, kMaxBaselineBytes);
  if (!text) return text.status();
  Json doc;
  try {
    doc = Json::parse(*text);
  } catch (const Json::parse_error& e) {
    std::string why = e.what();
    const std::size_t at = why.find("] ");  // "[json.exception.parse_error.101] parse error ..."
    if (at != std::string::npos) why.erase(0, at + 2);
    return Status::invalid(label(path) + ": neither a seam store nor seam baseline JSON (" +
                           why.substr(0, 200) + ")");
  }
  const auto format = doc.is_object() ? doc.find("format") : doc.end();
  if (!doc.is_object() || format == doc.end() || !format->is_string() ||
      format->get<std::string>() != kFormat) {
    return Status::invalid(label(path) +
                           ": JSON, but not a seam baseline (its \"format\" is not \"" +
                           std::string(kFormat) + "\")");
  }
  const auto made = doc.find("command");
  if (made == doc.end() || !made->is_string())
    return Status::invalid(label(path) + ": a seam baseline without a \"command\"");
  if (made->get<std::string>() != command) {
    return Status::invalid(label(path) + ": a baseline of `seam " +
                           made->get<std::string>().substr(0, 64) + "`, not of `seam " +
                           std::string(command) + "`");
  }
  const auto findings = doc.find("findings");
  if (findings == doc.end() || !findings->is_array())
    return Status::invalid(label(path) + ": a seam baseline without a \"findings\" array");
  Baseline b;
  b.path = path;
  for (std::size_t i = 0; i < findings->size(); ++i) {
    const Json& entry = (*findings)[i];
    Finding f;
    std::string* fields[] = {&f.model, &f.pattern, &f.config, &f.flags,
                             &f.batch, &f.policy,  &f.what,   &f.reproduce};
    for (std::size_t k = 0; k < std::size(kFields); ++k) {
      const auto value = entry.is_object() ? entry.find(kFields[k]) : entry.end();
      if (value == entry.end() || !value->is_string()) {
        return Status::invalid(label(path) + ": findings[" + std::to_string(i) +
                               "] has no string \"" + kFields[k] + "\"");
      }
      *fields[k] = value->get<std::string>();
    }
    b.keys.insert(f.key());
  }
  return b;
}

}  // namespace

bool looksLikeStore(const std::string& path) {
  constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};
  char head[16] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(head, sizeof head) && std::string_view(head, sizeof head) == kSqliteMagic;
}

Expected<Baseline> readBaseline(const std::string& path, std::string_view command) {
  return looksLikeStore(path) ? storeBaseline(path, command) : jsonBaseline(path, command);
}

std::string baselineJson(std::string_view command, const std::vector<Finding>& findings,
                         const std::string& version) {
  std::vector<const Finding*> sorted;
  for (const Finding& f : findings) sorted.push_back(&f);
  std::sort(sorted.begin(), sorted.end(),
            [](const Finding* a, const Finding* b) { return a->key() < b->key(); });
  Json list = Json::array();
  for (const Finding* f : sorted) {
    const std::string* fields[] = {&f->model, &f->pattern, &f->config, &f->flags,
                                   &f->batch, &f->policy,  &f->what,   &f->reproduce};
    Json entry = Json::object();
    for (std::size_t k = 0; k < std::size(kFields); ++k) entry[kFields[k]] = *fields[k];
    list.push_back(std::move(entry));
  }
  Json doc = {{"format", std::string(kFormat)},
              {"command", std::string(command)},
              {"written_by", version},
              {"findings", std::move(list)}};
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string withBaselineJson(const std::string& run_json, const BaselineVerdict& v,
                             std::size_t listed) {
  // The run's own JSON, dumped by seam: it parses.
  Json doc = Json::parse(run_json, nullptr, false);
  assert(!doc.is_discarded() && "a run's JSON parses");
  doc["counts"]["baselined"] = v.known;
  doc["counts"]["new"] = v.fresh.size();
  Json fresh = Json::array();
  for (std::size_t i = 0; i < v.fresh.size() && i < listed; ++i)
    fresh.push_back({{"what", v.fresh[i].what}, {"reproduce", v.fresh[i].reproduce}});
  doc["baseline"] = {{"file", v.path}, {"unmet", v.unmet}, {"new_findings", std::move(fresh)}};
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace seam::reports
