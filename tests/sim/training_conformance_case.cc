#include "training_conformance_case.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "seam/sim/model/case_spec.h"

namespace seam::training_conformance {
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

Step parseStep(const std::string& text, const std::string& where) {
  const auto w = words(text);
  if (w.size() != 5) bad(where, "a step is 'pass Llayer op group bytes': '" + text + "'");
  Step s;
  s.text = text;
  s.pass = w[0];
  if (s.pass != "fwd" && s.pass != "re" && s.pass != "bwd")
    bad(where, "bad pass in '" + text + "'");
  if (w[1].size() < 2 || w[1][0] != 'L') bad(where, "bad layer in '" + text + "'");
  s.layer = std::stoi(w[1].substr(1));
  static const std::map<std::string, OpKind> kOps = {{"all_gather", OpKind::kAllGather},
                                                     {"reduce_scatter", OpKind::kReduceScatter},
                                                     {"all_reduce", OpKind::kAllReduce},
                                                     {"all_to_all", OpKind::kAllToAll},
                                                     {"send", OpKind::kSend},
                                                     {"recv", OpKind::kRecv}};
  const auto op = kOps.find(w[2]);
  if (op == kOps.end()) bad(where, "bad op in '" + text + "'");
  s.kind = op->second;
  s.group = w[3];
  if (w[4] != "*") {
    if (w[4].find_first_not_of("0123456789") != std::string::npos)
      bad(where, "bad bytes in '" + text + "'");
    s.bytes = std::stoll(w[4]);
  }
  return s;
}

Entry parseEntry(const json& j, const std::string& topic, int index) {
  const std::string where = topic + ".json #" + std::to_string(index);
  Entry e;
  e.topic = topic;
  e.index = index;
  try {
    e.name = j.at("name").get<std::string>();
    e.options = j.at("case").get<std::string>();
    e.ranks = j.at("ranks").get<std::vector<int>>();
    const auto win = j.at("layers").get<std::vector<int>>();
    if (win.size() != 2) bad(where, "layers is [first, last]");
    e.layers = {win[0], win[1]};
    for (const auto& s : j.at("expect")) e.expect.push_back(parseStep(s.get<std::string>(), where));
    e.cite = j.at("cite").get<std::vector<std::string>>();
    const std::string status = j.at("status").get<std::string>();
    if (status == "disagrees") {
      e.agrees = false;
      e.section = j.at("section").get<std::string>();
      e.first_difference = j.at("first_difference").get<int>();
    } else if (status != "agrees") {
      bad(where, "status is agrees or disagrees, not '" + status + "'");
    }
  } catch (const json::exception& ex) {
    bad(where, ex.what());
  }
  return e;
}

const char* passOf(const TrainingOp& op) {
  if (op.recompute) return "re";
  return op.pass == Pass::kForward ? "fwd" : "bwd";
}

std::string describe(const TrainingOp& op) {
  std::ostringstream o;
  o << passOf(op) << " L" << op.layer << " " << opName(op.kind) << " " << trainAxisName(op.axis)
    << "[";
  for (size_t i = 0; i < op.ranks.size(); ++i) o << (i ? "," : "") << op.ranks[i];
  o << "] " << op.bytes << " ('" << op.step << "')";
  return o.str();
}

}  // namespace

std::vector<Entry> loadEntries(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    if (f.path().extension() == ".json") files.push_back(f.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<Entry> out;
  for (const std::string& path : files) {
    std::ifstream in(path);
    const json all = json::parse(in);
    const std::string topic = std::filesystem::path(path).stem().string();
    for (size_t i = 0; i < all.size(); ++i)
      out.push_back(parseEntry(all[i], topic, static_cast<int>(i)));
  }
  return out;
}

TrainingCase parseCase(const std::string& options) {
  CaseSpec s;
  s.family = "training";
  const auto w = words(options);
  for (size_t i = 0; i < w.size(); i += 2) {
    if (i + 1 >= w.size()) bad(options, "no value for " + w[i]);
    const std::string& k = w[i];
    const std::string& v = w[i + 1];
    if (k == "--layout")
      s.layout = v;
    else if (k == "--model")
      s.model = v;
    else if (k == "--dp-replicate")
      s.dp_replicate = std::stoi(v);
    else if (k == "--dp")
      s.dp = std::stoi(v);
    else if (k == "--cp")
      s.cp = std::stoi(v);
    else if (k == "--tp")
      s.tp = std::stoi(v);
    else if (k == "--ep")
      s.ep = std::stoi(v);
    else if (k == "--docs")
      s.docs = v;
    else if (k == "--ac")
      s.ac = v;
    else if (k == "--router-dtype")
      s.router_dtype = v;
    else if (k == "--reduce-dtype")
      s.reduce_dtype = v;
    else if (k == "--ep-backend")
      s.ep_backend = v;
    else if (k == "--etp")
      s.etp = std::stoi(v);
    else if (k == "--expert-bias")
      s.expert_bias = v;
    else if (k == "--dispatcher")
      s.dispatcher = v;
    else if (k == "--cp-comm-type")
      s.cp_comm_type = v;
    else
      bad(options, "unknown option " + k);
  }
  auto c = buildTrainingCase(s);
  if (!c) bad(options, c.status().message());
  return *c;
}

std::vector<int> engineGroup(const std::string& name, const TrainingConfig& c, int rank) {
  std::vector<int> out;
  // A send's or receive's pair, (sender, receiver), by the peer's global rank.
  if (name.rfind("to:", 0) == 0) return {rank, std::stoi(name.substr(3))};
  if (name.rfind("from:", 0) == 0) return {std::stoi(name.substr(5)), rank};
  const bool prime = c.layout == TrainingLayout::kPrimeRl;
  auto coords = [&](int r, int* rep, int* dp, int* cp, int* tp) {
    if (prime) {
      *tp = 0;
      *cp = r % c.cp;
      *dp = (r / c.cp) % c.dp;
      *rep = r / (c.cp * c.dp);
    } else {
      *tp = r % c.tp;
      *cp = (r / c.tp) % c.cp;
      *dp = r / (c.tp * c.cp);
      *rep = 0;
    }
  };
  // Megatron's expert grid: RankGenerator(tp=etp, ep, dp=rest, cp=1), order
  // tp-ep-dp, etp defaulting to tp (parallel_state.py initialize_model_parallel).
  const int etp = prime ? 1 : (c.etp > 0 ? c.etp : c.tp);
  const int block = etp * c.ep;  // one expert tp x ep group of consecutive ranks
  int mr, md, mc, mt;
  coords(rank, &mr, &md, &mc, &mt);
  const int mf = md * c.cp + mc;  // PrimeRL: position in dp_shard x cp
  for (int r = 0; r < c.world(); ++r) {
    int xr, xd, xc, xt;
    coords(r, &xr, &xd, &xc, &xt);
    const int xf = xd * c.cp + xc;
    bool in = false;
    if (name == "cp")
      in = xr == mr && xd == md && xt == mt;
    else if (name == "tp" && !prime)
      in = xd == md && xc == mc;
    else if (name == "dp_cp")  // PrimeRL: dp_replicate x dp_shard x cp
      in = xt == mt;
    else if (name == "fsdp" && prime)
      in = xr == mr;
    else if (name == "dp_replicate" && prime)
      in = xf == mf;
    else if (name == "ep")
      in = prime ? xr == mr && xf / c.ep == mf / c.ep
                 : r / block == rank / block && r % etp == rank % etp;
    else if (name == "expert_dp")
      in = prime ? xr == mr && xf % c.ep == mf % c.ep : r % block == rank % block;
    else if (name == "expert_tp" && !prime)
      in = r / etp == rank / etp;
    else if (name == "tp_ep" && !prime)
      in = r / block == rank / block;
    else if (name == "tp_dp_cp" && !prime)  // every rank: pp is 1
      in = true;
    else
      bad(name, "not a group of the " + std::string(layoutName(c.layout)) + " layout");
    if (in) out.push_back(r);
  }
  return out;
}

std::optional<Difference> firstDifference(const Entry& e, const TrainingPlan& plan, int rank) {
  std::vector<const TrainingOp*> ops;
  for (const TrainingOp& op : plan.ranks.at(rank)) {
    if (op.hasGroup() && op.layer >= e.layers.first && op.layer <= e.layers.second)
      ops.push_back(&op);
  }
  const TrainingConfig& c = plan.source.config;
  for (size_t i = 0; i < e.expect.size(); ++i) {
    const Step& s = e.expect[i];
    const int at = static_cast<int>(i);
    if (i >= ops.size()) return Difference{at, "expected " + s.text + ", seam has nothing more"};
    const TrainingOp& op = *ops[i];
    const bool same = s.pass == passOf(op) && s.layer == op.layer && s.kind == op.kind &&
                      engineGroup(s.group, c, rank) == op.ranks &&
                      (!s.bytes || *s.bytes == op.bytes);
    if (!same) return Difference{at, "expected " + s.text + ", seam has " + describe(op)};
  }
  if (ops.size() > e.expect.size())
    return Difference{static_cast<int>(e.expect.size()),
                      "seam has more: " + describe(*ops[e.expect.size()])};
  return std::nullopt;
}

}  // namespace seam::training_conformance
