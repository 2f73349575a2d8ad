#include "conformance_case.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "seam/sim/model/parallel_config.h"

namespace seam::conformance {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw std::runtime_error(where + ": " + what);
}

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::vector<int> intList(const std::string& text, const std::string& where) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
      bad(where, "not a list of integers: '" + text + "'");
    out.push_back(std::stoi(item));
  }
  return out;
}

Rows parseRowsSide(const std::string& text, const std::string& where) {
  const size_t colon = text.find(':');
  Rows rows;
  if (colon == std::string::npos || !parseRowKind(text.substr(0, colon), &rows.kind))
    bad(where, "bad rows '" + text + "' (want kind:count)");
  rows.count = intList(text.substr(colon + 1), where).at(0);
  return rows;
}

bool isGroupName(const std::string& w) {
  static const char* kNames[] = {"tp",     "attn_tp", "attn_cp", "attn_dp",
                                 "moe_ep", "moe_tp",  "moe_dp",  "pp"};
  return std::any_of(std::begin(kNames), std::end(kNames), [&](const char* n) { return w == n; });
}

Step parseStep(const std::string& text, const std::string& where) {
  const auto w = words(text);
  if (w.size() < 3) bad(where, "a step needs place, phase and op: '" + text + "'");
  Step s;
  s.text = text;
  const std::string& place = w[0];
  const bool mtp = place.rfind("mtp", 0) == 0;
  const std::string digits = place.substr(mtp ? 3 : 1);
  if ((!mtp && place[0] != 's') || digits.empty())
    bad(where, "bad place '" + place + "' (want s<N> or mtp<N>)");
  s.stack = mtp ? 1 : 0;
  // Stage -1 of the MTP stack is its input projection (eh_proj).
  const bool negative = digits[0] == '-';
  s.stage = intList(digits.substr(negative ? 1 : 0), where).at(0) * (negative ? -1 : 1);
  if (w[1] == "entry") {
    s.phase = Phase::kEntry;
  } else if (w[1] == "compute") {
    s.phase = Phase::kCompute;
  } else if (w[1] == "exit") {
    s.phase = Phase::kExit;
  } else {
    bad(where, "bad phase '" + w[1] + "'");
  }
  const size_t dot = w[2].find('.');
  if (!parseOpKind(w[2].substr(0, dot), &s.kind)) bad(where, "bad op '" + w[2] + "'");
  if (dot != std::string::npos && !parseTensor(w[2].substr(dot + 1), &s.tensor))
    bad(where, "bad tensor in '" + w[2] + "'");
  for (size_t i = 3; i < w.size(); ++i) {
    if (isGroupName(w[i])) {
      s.group = w[i];
    } else if (w[i].rfind("rows=", 0) == 0) {
      const std::string body = w[i].substr(5);
      const size_t arrow = body.find("->");
      if (arrow == std::string::npos) bad(where, "rows need in->out: '" + w[i] + "'");
      s.rows_in = parseRowsSide(body.substr(0, arrow), where);
      s.rows_out = parseRowsSide(body.substr(arrow + 2), where);
    } else if (w[i].rfind("sizes=", 0) == 0) {
      s.sizes = intList(w[i].substr(6), where);
    } else if (w[i] == "half=A" || w[i] == "half=B") {
      s.half = w[i] == "half=A" ? Half::kA : Half::kB;
    } else if (w[i] == "buffer=none" || w[i] == "buffer=child") {
      s.buffer = w[i] == "buffer=none" ? DpBuffer::kUnset : DpBuffer::kChildRows;
    } else {
      bad(where, "unknown word '" + w[i] + "' in '" + text + "'");
    }
  }
  return s;
}

std::vector<Step> parseSteps(const json& list, const std::string& where) {
  if (!list.is_array()) bad(where, "steps must be a list");
  std::vector<Step> steps;
  for (const json& s : list) steps.push_back(parseStep(s.get<std::string>(), where));
  return steps;
}

std::string required(const json& e, const char* key, const std::string& where) {
  if (!e.contains(key) || !e[key].is_string() || e[key].get<std::string>().empty())
    bad(where, std::string("missing '") + key + "'");
  return e[key].get<std::string>();
}

Entry parseEntry(const json& e, const std::string& topic, int index) {
  const std::string where = topic + ".json entry " + std::to_string(index);
  Entry entry;
  entry.topic = topic;
  entry.index = index;
  entry.name = required(e, "name", where);
  entry.options = required(e, "case", where);
  if (!e.contains("cite") || !e["cite"].is_array() || e["cite"].empty())
    bad(where, "every entry cites the code it was derived from");
  for (const json& c : e["cite"]) entry.cite.push_back(c.get<std::string>());
  const std::string status = required(e, "status", where);
  if (status == "disagrees") {
    entry.agrees = false;
    entry.section = required(e, "section", where);
    if (!e.contains("first_difference")) bad(where, "a disagreement names its first_difference");
    entry.first_difference = e["first_difference"].get<int>();
  } else if (status != "agrees") {
    bad(where, "status must be agrees or disagrees, not '" + status + "'");
  }
  if (e.contains("engine_finding")) entry.engine_finding = required(e, "engine_finding", where);
  if (e.contains("stages"))
    entry.stages = {e["stages"].at(0).get<int>(), e["stages"].at(1).get<int>()};
  entry.mtp = e.value("mtp", false);
  if (e.contains("mtp_stages")) {
    entry.mtp = true;
    entry.mtp_stages = {e["mtp_stages"].at(0).get<int>(), e["mtp_stages"].at(1).get<int>()};
  }
  if (e.contains("per_rank")) {
    for (const auto& [rank, steps] : e["per_rank"].items())
      entry.expect[intList(rank, where).at(0)] = parseSteps(steps, where);
  } else {
    if (!e.contains("ranks") || !e.contains("expect"))
      bad(where, "give ranks + expect, or per_rank");
    const std::vector<Step> steps = parseSteps(e["expect"], where);
    for (const json& r : e["ranks"]) entry.expect[r.get<int>()] = steps;
  }
  if (entry.expect.empty()) bad(where, "no rank stated");
  return entry;
}

}  // namespace

std::vector<Entry> loadEntries(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator(dir))
    if (f.path().extension() == ".json") files.push_back(f.path());
  std::sort(files.begin(), files.end());
  std::vector<Entry> entries;
  for (const auto& path : files) {
    std::ifstream in(path);
    const json doc = json::parse(in);
    int index = 0;
    for (const json& e : doc) entries.push_back(parseEntry(e, path.stem().string(), index++));
  }
  return entries;
}

CaseSpec parseOptions(const std::string& options) {
  // Shell-like words: single quotes group, as on the command line.
  std::vector<std::string> args;
  std::string cur;
  bool quoted = false, any = false;
  for (char ch : options) {
    if (ch == '\'') {
      quoted = !quoted;
      any = true;
    } else if (ch == ' ' && !quoted) {
      if (any) args.push_back(cur);
      cur.clear();
      any = false;
    } else {
      cur += ch;
      any = true;
    }
  }
  if (any) args.push_back(cur);
  CaseSpec s;
  const std::map<std::string, std::string*> strings = {{"--model", &s.model},
                                                       {"--pattern", &s.pattern},
                                                       {"--family", &s.family},
                                                       {"--tokens", &s.tokens},
                                                       {"--a2a", &s.a2a},
                                                       {"--fusion", &s.fusion},
                                                       {"--mode", &s.mode},
                                                       {"--dp-padding", &s.dp_padding},
                                                       {"--reduction", &s.reduction},
                                                       {"--dense-tp", &s.dense_tp},
                                                       {"--capture", &s.capture}};
  const std::map<std::string, int*> ints = {{"--pp", &s.pp}, {"--tp", &s.tp},
                                            {"--dp", &s.dp}, {"--cp", &s.cp},
                                            {"--ep", &s.ep}, {"--moe-dp", &s.moe_dp}};
  const std::map<std::string, bool*> flags = {{"--ln-sp", &s.ln_sp},
                                              {"--input-scattered", &s.input_scattered},
                                              {"--dp-gatherv", &s.dp_gatherv},
                                              {"--tbo", &s.tbo}};
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (auto f = flags.find(name); f != flags.end()) {
      *f->second = true;
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) bad(options, "no value for " + name);
      value = args[++i];
    }
    if (auto st = strings.find(name); st != strings.end()) {
      *st->second = value;
    } else if (auto it = ints.find(name); it != ints.end()) {
      *it->second = intList(value, options).at(0);
    } else {
      bad(options, "unknown case option " + name);
    }
  }
  return s;
}

std::vector<int> sglangGroup(const std::string& name, const ParallelConfig& c, int rank) {
  // initialize_model_parallel inside one TP group (reference §2).
  const int T = c.tp, base = rank / T * T, l = rank % T;
  const int a = T / (c.attn_dp * c.attn_cp);
  const int mt = T / (c.moe_ep * c.moe_dp);
  std::vector<int> m;
  if (name == "tp") {
    for (int i = 0; i < T; ++i) m.push_back(base + i);
  } else if (name == "attn_tp") {
    for (int i = 0; i < a; ++i) m.push_back(base + l / a * a + i);
  } else if (name == "attn_cp") {
    const int block = l / (a * c.attn_cp) * a * c.attn_cp;
    for (int j = 0; j < c.attn_cp; ++j) m.push_back(base + block + l % a + j * a);
  } else if (name == "attn_dp") {
    for (int d = 0; d < c.attn_dp; ++d) m.push_back(base + d * a * c.attn_cp + l % (a * c.attn_cp));
  } else if (name == "moe_tp") {
    for (int i = 0; i < mt; ++i) m.push_back(base + l / mt * mt + i);
  } else if (name == "moe_ep") {
    const int block = l / (c.moe_ep * mt) * c.moe_ep * mt;
    for (int e = 0; e < c.moe_ep; ++e) m.push_back(base + block + l % mt + e * mt);
  } else if (name == "moe_dp") {
    for (int j = 0; j < c.moe_dp; ++j) m.push_back(base + l % (mt * c.moe_ep) + j * mt * c.moe_ep);
  } else if (name == "pp") {
    for (int s = 0; s < c.pp; ++s) m.push_back(l + s * T);
  } else {
    bad("group", "unknown SGLang group '" + name + "'");
  }
  return m;
}

std::vector<const Op*> comparedOps(const Entry& entry, const Plan& plan, int rank) {
  std::vector<const Op*> out;
  for (const Op& op : plan.ranks.at(rank)) {
    const bool matters = communicates(op.kind) || op.kind == OpKind::kDpScatter ||
                         op.kind == OpKind::kSlice || op.kind == OpKind::kSnapshot;
    if (!matters) continue;
    const auto& window = op.stack == 0 ? entry.stages : entry.mtp_stages;
    if (entry.stages && op.stack == 1 && !entry.mtp) continue;
    if (window && (op.stage < window->first || op.stage > window->second)) continue;
    out.push_back(&op);
  }
  return out;
}

namespace {

std::string describe(const Op& op, const ParallelConfig& config, int rank) {
  std::ostringstream o;
  o << (op.stack ? "mtp" : "s") << op.stage << ' ' << phaseName(op.phase) << ' ' << opName(op.kind);
  if (op.tensor != Tensor::kHidden) o << '.' << tensorName(op.tensor);
  if (op.hasGroup()) {
    o << ' ' << axisName(op.groupAxis()) << '(';
    const auto members = groupMembers(config, op.groupAxis(), rank);
    for (size_t i = 0; i < members.size(); ++i) o << (i ? "," : "") << members[i];
    o << ')';
  }
  if (op.half != Half::kWhole) o << " half=" << halfName(op.half);
  o << " rows=" << rowKindName(op.rows_in.kind) << ':' << op.rows_in.count << "->"
    << rowKindName(op.rows_out.kind) << ':' << op.rows_out.count;
  return o.str();
}

// The split sizes seam's op implies: each member's rows out, in group order,
// from the same occurrence of the same step on that member.
std::vector<int> impliedSizes(const Entry& entry, const Plan& plan, int rank, size_t at,
                              const std::vector<int>& members) {
  const auto mine = comparedOps(entry, plan, rank);
  const Op& op = *mine[at];
  auto same = [&](const Op* o) {
    return o->stack == op.stack && o->stage == op.stage && o->phase == op.phase &&
           o->kind == op.kind;
  };
  const auto nth = std::count_if(mine.begin(), mine.begin() + static_cast<long>(at), same);
  std::vector<int> sizes;
  for (int m : members) {
    const auto theirs = comparedOps(entry, plan, m);
    long seen = 0;
    int rows = -1;
    for (const Op* o : theirs)
      if (same(o) && seen++ == nth) {
        rows = o->rows_out.count;
        break;
      }
    sizes.push_back(rows);
  }
  return sizes;
}

std::string joined(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::optional<std::string> stepDiffers(const Entry& entry, const Plan& plan, int rank,
                                       const Step& step, size_t at) {
  const Op& op = *comparedOps(entry, plan, rank)[at];
  const ParallelConfig& config = plan.source.config;
  if (op.stack != step.stack || op.stage != step.stage || op.phase != step.phase ||
      op.kind != step.kind || op.tensor != step.tensor)
    return "a different step";
  if (step.group.empty() != !op.hasGroup()) return "a different group";
  if (!step.group.empty()) {
    const auto want = sglangGroup(step.group, config, rank);
    if (groupMembers(config, op.groupAxis(), rank) != want)
      return "the group's members differ (SGLang's " + step.group + " is " + joined(want) + ")";
  }
  if (step.half && op.half != *step.half) return "a different half";
  if (step.buffer && op.dp_buffer != *step.buffer) return "a different global DP buffer";
  if (step.rows_in && !(op.rows_in == *step.rows_in)) return "different rows in";
  if (step.rows_out && !(op.rows_out == *step.rows_out)) return "different rows out";
  if (!step.sizes.empty() && op.sizes == SplitSizes::kPerDpShard) {
    // seam plans the call with one size per DP shard, as the engine passes
    // them: each shard's rows, read on the shard's first member.
    const auto members = sglangGroup(step.group, config, rank);
    const int per_shard = config.attnTp() * config.attn_cp;
    std::vector<int> shard_members;
    for (size_t i = 0; i < members.size(); i += static_cast<size_t>(per_shard))
      shard_members.push_back(members[i]);
    const auto implied = impliedSizes(entry, plan, rank, at, shard_members);
    if (implied != step.sizes)
      return "split sizes differ (seam's per-DP-shard rows: " + joined(implied) + ")";
  } else if (!step.sizes.empty()) {
    const auto members = sglangGroup(step.group, config, rank);
    if (step.sizes.size() != members.size())
      return "the engine's " + std::to_string(step.sizes.size()) +
             " split sizes cannot fit a group of " + std::to_string(members.size()) + " ranks";
    const auto implied = impliedSizes(entry, plan, rank, at, members);
    if (implied != step.sizes) return "split sizes differ (seam's rows: " + joined(implied) + ")";
  }
  return std::nullopt;
}

}  // namespace

std::optional<Difference> firstDifference(const Entry& entry, const Plan& plan, int rank) {
  if (rank >= plan.world()) return Difference{0, "rank " + std::to_string(rank) + " not in plan"};
  const auto ops = comparedOps(entry, plan, rank);
  const auto& steps = entry.expect.at(rank);
  const ParallelConfig& config = plan.source.config;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (i >= ops.size())
      return Difference{static_cast<int>(i),
                        "expected '" + steps[i].text + "', seam has no more steps"};
    if (auto why = stepDiffers(entry, plan, rank, steps[i], i))
      return Difference{static_cast<int>(i), "expected '" + steps[i].text + "', seam has '" +
                                                 describe(*ops[i], config, rank) + "': " + *why};
  }
  if (ops.size() > steps.size())
    return Difference{
        static_cast<int>(steps.size()),
        "expected no more steps, seam has '" + describe(*ops[steps.size()], config, rank) + "'"};
  return std::nullopt;
}

}  // namespace seam::conformance
