// The training family's cases: configurations, the engines' rules, packed
// batches, and the layout facts (training_layout.h) planner and ledger share.
#include <algorithm>
#include <numeric>

#include "seam/sim/model/config_space.h"
#include "seam/sim/training/training_case.h"
#include "training/training_layout.h"

namespace seam {

std::string_view layoutName(TrainingLayout layout) {
  return layout == TrainingLayout::kPrimeRl ? "primerl" : "megatron";
}

Expected<TrainingLayout> parseTrainingLayout(std::string_view name) {
  if (name == "primerl") return TrainingLayout::kPrimeRl;
  if (name == "megatron") return TrainingLayout::kMegatron;
  return Status::invalid("--layout \"" + std::string(name.substr(0, 64)) +
                         "\" is not primerl or megatron");
}

std::string describeConfig(const TrainingConfig& c) {
  std::string s = std::string(layoutName(c.layout));
  if (c.layout == TrainingLayout::kPrimeRl) s += " dp_replicate=" + std::to_string(c.dp_replicate);
  s += " dp=" + std::to_string(c.dp) + " cp=" + std::to_string(c.cp);
  if (c.layout == TrainingLayout::kMegatron)
    s += " tp=" + std::to_string(c.tp) + (c.sp ? " sp=on" : " sp=off");
  s += " ep=" + std::to_string(c.ep);
  if (c.layout == TrainingLayout::kMegatron && c.expertTp() != c.tp)
    s += " etp=" + std::to_string(c.expertTp());
  if (!c.recompute) s += " ac=off";
  if (!c.router_fp32) s += " router=bf16";
  if (c.probs_fp32) s += " router=fp32";
  if (c.expert_bias) s += " expert_bias=on";
  if (c.layout == TrainingLayout::kMegatron && !c.allGatherDispatch()) s += " dispatcher=alltoall";
  if (c.layout == TrainingLayout::kMegatron && c.cp_comm != CpComm::kP2p)
    s += c.cp_comm == CpComm::kA2a ? " cp_comm=a2a" : " cp_comm=all_gather";
  if (!c.reduce_fp32) s += " reduce=bf16";
  if (c.deepep) s += " ep_backend=deepep";
  return s;
}

Status applyEngineOptions(TrainingConfig& c, const std::string& ac, const std::string& router_dtype,
                          const std::string& reduce_dtype, const std::string& ep_backend) {
  if (ep_backend != "torch" && ep_backend != "deepep")
    return Status::invalid("--ep-backend \"" + ep_backend.substr(0, 64) +
                           "\" is not torch or deepep");
  if (ac != "on" && ac != "off")
    return Status::invalid("--ac \"" + ac.substr(0, 64) + "\" is not on or off");
  const bool megatron = c.layout == TrainingLayout::kMegatron;
  const std::string router =
      router_dtype.empty() ? (megatron ? "bfloat16" : "float32") : router_dtype;
  for (const auto& [flag, v] :
       {std::pair<const char*, const std::string&>{"--router-dtype", router},
        {"--reduce-dtype", reduce_dtype}}) {
    if (v != "float32" && v != "bfloat16")
      return Status::invalid(std::string(flag) + " \"" + v.substr(0, 64) +
                             "\" is not float32 or bfloat16");
  }
  c.recompute = ac == "on";
  c.router_fp32 = megatron || router == "float32";
  c.probs_fp32 = megatron && router == "float32";
  c.reduce_fp32 = reduce_dtype == "float32";
  c.deepep = ep_backend == "deepep";
  const bool non_default = !c.recompute || !c.reduce_fp32 || c.deepep;
  if (non_default && megatron)
    return Status::invalid(
        "--ac, --reduce-dtype and --ep-backend are PrimeRL options (--layout primerl)");
  return Status::ok();
}

Status applyDispatcher(TrainingConfig& c, const std::string& dispatcher) {
  if (dispatcher.empty()) return Status::ok();
  if (dispatcher != "allgather" && dispatcher != "alltoall")
    return Status::invalid("--dispatcher \"" + dispatcher.substr(0, 64) +
                           "\" is not allgather or alltoall");
  if (c.layout != TrainingLayout::kMegatron)
    return Status::invalid("--dispatcher applies to the megatron layout");
  c.dispatcher = dispatcher == "alltoall" ? MoeDispatcher::kAllToAll : MoeDispatcher::kAllGather;
  return Status::ok();
}

Status applyCpComm(TrainingConfig& c, const std::string& cp_comm_type) {
  if (cp_comm_type.empty()) return Status::ok();
  if (cp_comm_type == "a2a+p2p")
    return Status::notModelled("--cp-comm-type a2a+p2p (hierarchical CP groups) is not modelled");
  // Exactly what reaches Transformer Engine's attention: Megatron's parser
  // takes any string (arguments.py @d98e8a6 --cp-comm-type: nargs '+', no
  // choices) and TEDotProductAttention hands it on as it is; TE's
  // attn_forward_func_with_cp (context_parallel.py @d0067d0) runs p2p,
  // a2a+p2p, all_gather or a2a and raises ValueError on anything else.
  if (cp_comm_type != "p2p" && cp_comm_type != "all_gather" && cp_comm_type != "a2a") {
    const std::string why =
        cp_comm_type == "allgather"
            ? " (Megatron's help text spells it allgather, but Transformer Engine takes only "
              "all_gather)"
            : "";
    return Status::invalid("--cp-comm-type \"" + cp_comm_type.substr(0, 64) +
                           "\" is not p2p, all_gather, a2a or a2a+p2p" + why);
  }
  if (c.layout != TrainingLayout::kMegatron)
    return Status::invalid("--cp-comm-type applies to the megatron layout");
  c.cp_comm = cp_comm_type == "all_gather" ? CpComm::kAllGather
              : cp_comm_type == "a2a"      ? CpComm::kA2a
                                           : CpComm::kP2p;
  return Status::ok();
}

int TrainingCase::tokens() const { return std::accumulate(docs.begin(), docs.end(), 0); }

std::string reproduceTrainingCommand(const TrainingCase& c) {
  const TrainingConfig& k = c.config;
  std::string s = "seam check --family training --layout " + std::string(layoutName(k.layout)) +
                  " --model " + std::string(c.model ? c.model->name : "?");
  if (k.dp_replicate != 1) s += " --dp-replicate " + std::to_string(k.dp_replicate);
  s += " --dp " + std::to_string(k.dp) + " --cp " + std::to_string(k.cp);
  if (k.tp != 1) s += " --tp " + std::to_string(k.tp);
  s += " --ep " + std::to_string(k.ep);
  if (k.layout == TrainingLayout::kMegatron && k.expertTp() != k.tp)
    s += " --etp " + std::to_string(k.expertTp());
  if (!k.recompute) s += " --ac off";
  if (!k.router_fp32) s += " --router-dtype bfloat16";
  if (k.probs_fp32) s += " --router-dtype float32";
  if (k.expert_bias) s += " --expert-bias on";
  if (k.layout == TrainingLayout::kMegatron && !k.allGatherDispatch())
    s += " --dispatcher alltoall";
  if (k.layout == TrainingLayout::kMegatron && k.cp_comm != CpComm::kP2p)
    s += k.cp_comm == CpComm::kA2a ? " --cp-comm-type a2a" : " --cp-comm-type all_gather";
  if (!k.reduce_fp32) s += " --reduce-dtype bfloat16";
  if (k.deepep) s += " --ep-backend deepep";
  s += " --docs ";
  for (size_t i = 0; i < c.docs.size(); ++i) s += (i ? "," : "") + std::to_string(c.docs[i]);
  return s;
}

namespace {
std::string str(int v) { return std::to_string(v); }

Status refusedBy(std::string_view engine, const std::string& why) {
  return Status::refused(std::string(engine) + ": " + why);
}
Status refusedBy(TrainingLayout layout, const std::string& why) {
  return refusedBy(layout == TrainingLayout::kPrimeRl ? "PrimeRL" : "Megatron", why);
}
/// Megatron's expert grid: etp x ep x expert-DP over the same world
/// (parallel_state.py initialize_model_parallel), and TEGroupedLinear
/// splitting fc1's output and fc2's input over etp (divide()).
Status validateExpertGrid(const TrainingConfig& k, const training::Dims& dims) {
  if (k.etp < 0) return Status::invalid("--etp " + str(k.etp) + " is not >= 1");
  const int etp_ep = k.expertTp() * k.ep;
  if (k.world() % etp_ep != 0) {
    return refusedBy("Megatron", "world=" + str(k.world()) + " is not divisible by etp*ep=" +
                                     str(etp_ep) + " (parallel_state.py)");
  }
  if (dims.experts > 0 && dims.expert_inter % k.expertTp() != 0) {
    return refusedBy("Megatron", "etp=" + str(k.expertTp()) +
                                     " does not divide the experts' ffn size " +
                                     str(dims.expert_inter));
  }
  return Status::ok();
}
/// TE's attention CP flavours' own rules (context_parallel.py): packed
/// documents are THD, which the KV all-gather and the QKVO all-to-all refuse
/// (AttnFuncWithCPAndKVAllGather asserts qkv_format != "thd"; TE's tests skip
/// THD for both); the all-to-all splits every rank's q and KV heads over cp.
Status validateAttentionCp(const TrainingCase& c, const training::Dims& dims) {
  const TrainingConfig& k = c.config;
  if (k.cp == 1 || k.cp_comm == CpComm::kP2p ||
      std::count(dims.layers.begin(), dims.layers.end(), LayerKind::kAttention) == 0)
    return Status::ok();
  const char* name = k.cp_comm == CpComm::kA2a ? "a2a" : "all_gather";
  if (c.docs.size() > 1)
    return refusedBy("Megatron",
                     std::string("cp_comm_type ") + name +
                         " does not take packed documents (THD; TE context_parallel.py)");
  if (k.cp_comm == CpComm::kA2a &&
      ((dims.q_heads / k.tp) % k.cp != 0 || (dims.kv_heads / k.tp) % k.cp != 0)) {
    return refusedBy("Megatron", "cp_comm_type a2a: the heads per tp rank (" +
                                     str(dims.q_heads / k.tp) + " q, " + str(dims.kv_heads / k.tp) +
                                     " kv) are not divisible by cp=" + str(k.cp) +
                                     " (AttnFuncWithCPAndQKVOA2A)");
  }
  return Status::ok();
}
}  // namespace

std::vector<const ModelPreset*> trainingPresets() {
  std::vector<const ModelPreset*> out;
  for (const char* name : {"nemotron-3-nano", "nemotron-3-super"}) {
    auto p = findPreset(name);
    if (p) out.push_back(*p);
  }
  return out;
}

Status validateTrainingCase(const TrainingCase& c) {
  if (c.model == nullptr) return Status::invalid("no model");
  const TrainingConfig& k = c.config;
  const auto dims = training::dimsOf(*c.model);
  const std::string who = "model " + std::string(c.model->name) + ": ";
  for (int v : {k.dp_replicate, k.dp, k.cp, k.tp, k.ep}) {
    if (v < 1)
      return Status::invalid("every parallel size must be >= 1 (" + describeConfig(k) + ")");
  }
  if (k.world() > kMaxWorld)
    return Status::invalid("world=" + str(k.world()) + " is not in 1.." + str(kMaxWorld));
  if (c.docs.empty()) return Status::invalid("--docs: a packed row needs at least one document");
  for (int d : c.docs) {
    if (d < 1) return Status::invalid("--docs: document length " + str(d) + " is not positive");
  }
  if (c.tokens() > 4096)
    return Status::invalid("--docs: a row of " + str(c.tokens()) + " tokens exceeds 4096");
  const bool mamba = std::count(dims.layers.begin(), dims.layers.end(), LayerKind::kMamba) > 0;
  const int S = c.tokens();
  if (k.layout == TrainingLayout::kPrimeRl) {
    const char* e = "PrimeRL";
    if (k.etp != 0) return Status::invalid("--etp applies to the megatron layout");
    if (k.expert_bias) return Status::invalid("--expert-bias applies to the megatron layout");
    if (k.tp != 1)
      return refusedBy(e,
                       "no tensor parallelism on main (ParallelDims has no tp; only a side-branch "
                       "'broken tp impl')");
    if (k.sp) return refusedBy(e, "no sequence parallelism (no TP)");
    // trainer/parallel_dims.py L67-74.
    if (k.ep > 1 && k.ep % k.cp != 0)
      return refusedBy(e, "ep=" + str(k.ep) + " is not a multiple of cp=" + str(k.cp));
    if (k.ep > 1 && (k.dp * k.cp) % k.ep != 0) {
      return refusedBy(e, "ep=" + str(k.ep) + " does not divide dp_shard*cp=" + str(k.dp * k.cp));
    }
  } else {
    const char* e = "Megatron";
    if (k.dp_replicate != 1) return Status::invalid("--dp-replicate applies to the primerl layout");
    if (k.sp && k.tp == 1)
      return refusedBy(e, "sequence_parallel requires tp > 1 (model_parallel_config.py L502-504)");
    if (dims.q_heads % k.tp != 0)
      return refusedBy(e, "tp=" + str(k.tp) + " does not divide heads=" + str(dims.q_heads));
    if (dims.kv_heads % k.tp != 0) {
      return refusedBy(
          e, "tp=" + str(k.tp) + " does not divide num_query_groups=" + str(dims.kv_heads));
    }
    if (Status st = validateExpertGrid(k, dims); !st) return st;
    // Megatron runs TP without SP (and only warns with EP, L560-565); seam
    // models its TP layers with SP only.
    if (k.tp > 1 && !k.sp)
      return Status::notModelled("Megatron tensor parallelism without sequence parallelism");
  }
  if (dims.experts > 0 && dims.experts % k.ep != 0) {
    return refusedBy(k.layout, "ep=" + str(k.ep) + " does not divide experts=" + str(dims.experts));
  }
  if (mamba) {
    const int tpcp = k.tp * k.cp;
    if (dims.mamba_heads % tpcp != 0) {
      return refusedBy(k.layout, std::string(k.tp > 1 ? "tp*cp=" : "cp=") + str(tpcp) +
                                     " does not divide mamba heads=" + str(dims.mamba_heads));
    }
    if (dims.groups <= 0 && tpcp > 1) {
      return Status::notModelled(
          who +
          "Mamba n_groups is not established by the sources (checkpoints.md), so the "
          "group rules of cp/tp=" +
          str(tpcp) + " cannot be judged");
    }
    if (dims.groups > 0) {
      if (k.layout == TrainingLayout::kPrimeRl && dims.groups % k.cp != 0) {
        return refusedBy("PrimeRL", "cp=" + str(k.cp) + " does not divide n_groups=" +
                                        str(dims.groups) + " (modeling_nemotron_h.py L191-197)");
      }
      if (k.layout == TrainingLayout::kMegatron) {
        if (dims.groups % k.tp != 0)
          return refusedBy("Megatron",
                           "tp=" + str(k.tp) + " does not divide n_groups=" + str(dims.groups));
        const int gl = dims.groups / k.tp;
        if (gl % k.cp != 0 && k.cp % gl != 0) {
          return refusedBy("Megatron", "n_groups/tp=" + str(gl) + " and cp=" + str(k.cp) +
                                           " do not divide one another");
        }
      }
    }
  }
  if (k.layout == TrainingLayout::kPrimeRl) {
    if (dims.q_heads % k.cp != 0)
      return refusedBy("PrimeRL",
                       "cp=" + str(k.cp) + " does not divide heads=" + str(dims.q_heads));
    if (dims.kv_heads % k.cp != 0 && k.cp % dims.kv_heads != 0) {
      return refusedBy("PrimeRL", "kv_heads=" + str(dims.kv_heads) + " and cp=" + str(k.cp) +
                                      " do not divide one another");
    }
    if (S % k.cp != 0)
      return refusedBy("PrimeRL", "row length " + str(S) + " % cp=" + str(k.cp) +
                                      " != 0 (uneven shards deadlock)");
  } else {
    if (Status st = validateAttentionCp(c, dims); !st) return st;
    for (int d : c.docs) {
      if (k.cp > 1 && d % (2 * k.cp) != 0) {
        return refusedBy("Megatron", "document length " + str(d) + " % 2cp=" + str(2 * k.cp) +
                                         " != 0 (zigzag THD)");
      }
    }
    if (k.sp && (S / k.cp) % k.tp != 0) {
      return refusedBy("Megatron",
                       "per-CP-rank length " + str(S / k.cp) + " % tp=" + str(k.tp) + " != 0 (SP)");
    }
  }
  return Status::ok();
}

std::vector<TrainingConfig> trainingConfigs(TrainingLayout layout, int world) {
  std::vector<int> divs;
  for (int d = 1; d <= world; ++d) {
    if (world % d == 0) divs.push_back(d);
  }
  std::vector<TrainingConfig> out;
  for (int cp : divs) {
    for (int mid : divs) {  // PrimeRL: dp_shard; Megatron: tp
      if ((world / cp) % mid != 0) continue;
      const int rest = world / cp / mid;
      for (int ep : divs) {
        TrainingConfig c;
        c.layout = layout;
        c.cp = cp;
        c.ep = ep;
        if (layout == TrainingLayout::kPrimeRl) {
          c.dp = mid;
          c.dp_replicate = rest;
        } else {
          c.tp = mid;
          c.dp = rest;
          c.sp = c.tp > 1;
        }
        out.push_back(c);
        if (layout == TrainingLayout::kMegatron && c.tp > 1) {
          // Experts whole on their EP owner (--expert-tensor-parallel-size 1)
          // beside the default ETP = tp.
          TrainingConfig v = c;
          v.etp = 1;
          out.push_back(v);
        }
        if (layout == TrainingLayout::kMegatron && (c.tp > 1 || ep > 1)) {
          // The all-to-all dispatcher beside the default allgather one,
          // wherever either communicates (etp = tp, and etp 1 under EP).
          TrainingConfig v = c;
          v.dispatcher = MoeDispatcher::kAllToAll;
          out.push_back(v);
          if (c.tp > 1 && ep > 1) {
            v.etp = 1;
            out.push_back(v);
          }
        }
        if (layout == TrainingLayout::kMegatron && cp > 1) {
          // TE's KV all-gather and QKVO all-to-all CP beside the default
          // p2p ring (one document only: packed rows are THD, which they refuse).
          TrainingConfig v = c;
          v.cp_comm = CpComm::kAllGather;
          out.push_back(v);
          v.cp_comm = CpComm::kA2a;
          out.push_back(v);
        }
        if (layout == TrainingLayout::kPrimeRl) {
          // PrimeRL's options off their defaults: no recompute, the router
          // and the reductions in bf16, and DeepEP when there is EP.
          TrainingConfig v = c;
          v.recompute = v.router_fp32 = v.reduce_fp32 = false;
          v.deepep = ep > 1;
          out.push_back(v);
        }
      }
    }
  }
  return out;
}

std::vector<std::vector<int>> trainingBatches(const TrainingConfig& c) {
  if (c.layout == TrainingLayout::kPrimeRl) {
    const int S = std::max(8, 4 * c.cp);
    const int a = S / 4 + 1;
    return {{S}, {a, 2, S - a - 2}};
  }
  const int u = (c.cp > 1 ? 2 * c.cp : 2) * (c.sp ? c.tp : 1);
  return {{2 * u}, {2 * u, u, 3 * u}};
}

namespace training {

Dims dimsOf(const ModelPreset& m) {
  Dims d;
  const ModelShape& s = m.shape;
  d.hidden = s.hidden;
  d.q_heads = s.heads;
  d.kv_heads = s.kv_heads;
  d.head_dim = s.head_dim;
  d.mamba_heads = s.mamba_heads;
  d.mamba_head_dim = s.mamba_head_dim;
  d.groups = s.mamba_groups > 0 ? s.mamba_groups : 0;
  d.state = s.ssm_state;
  d.experts = s.moe_experts > 0 ? s.moe_experts : 0;
  d.top_k = s.moe_top_k > 0 ? s.moe_top_k : 0;
  d.expert_inter = s.ffn_intermediate;
  d.shared_inter = s.moe_shared_intermediate;
  // checkpoints.md: Super has moe_latent_size = 1024; Nano none.
  d.latent = m.name == std::string_view("nemotron-3-super") ? 1024 : 0;
  // Both checkpoints' config.json: vocab_size 131072, conv_kernel 4 (with a conv bias).
  d.vocab = 131072;
  d.conv_kernel = 4;
  auto p = parsePattern(m.pattern);
  if (p) d.layers = p->layers;  // the main stack (the MTP step is not trained here)
  return d;
}

Layout::Layout(const TrainingCase& c) : c_(&c), dims_(dimsOf(*c.model)), s_(c.tokens()) {
  const TrainingConfig& k = c.config;
  const int W = k.world();
  coords_.resize(W);
  local_.resize(W);
  cp_local_.resize(W);
  for (int r = 0; r < W; ++r) {
    Coord& x = coords_[r];
    if (k.layout == TrainingLayout::kPrimeRl) {
      x.cp = r % k.cp;
      x.dp = (r / k.cp) % k.dp;
      x.rep = r / (k.cp * k.dp);
      x.data = x.rep * k.dp + x.dp;
      x.fsdp = x.dp * k.cp + x.cp;
      x.ep = x.fsdp % k.ep;
      x.ep_group = x.rep * (k.dp * k.cp / k.ep) + x.fsdp / k.ep;
    } else {
      x.tp = r % k.tp;
      x.cp = (r / k.tp) % k.cp;
      x.dp = r / (k.tp * k.cp);
      x.data = x.dp;
      // The expert grid (parallel_state.py, order tp-ep-dp with etp in tp's place).
      const int etp = k.expertTp();
      x.etp = r % etp;
      x.ep = (r / etp) % k.ep;
      x.ep_group = r / (etp * k.ep) * etp + x.etp;
    }
    const int base = x.data * s_;
    std::vector<int>& cl = cp_local_[r];
    if (k.layout == TrainingLayout::kPrimeRl || k.cp == 1) {
      const int n = s_ / k.cp;
      for (int i = 0; i < n; ++i) cl.push_back(base + x.cp * n + i);
    } else {
      int start = 0;
      for (int d : c.docs) {
        const int chunk = d / (2 * k.cp);
        for (int which : {x.cp, 2 * k.cp - 1 - x.cp}) {
          for (int i = 0; i < chunk; ++i) cl.push_back(base + start + which * chunk + i);
        }
        start += d;
      }
    }
    if (k.sp && k.tp > 1) {
      const int n = static_cast<int>(cl.size()) / k.tp;
      local_[r].assign(cl.begin() + x.tp * n, cl.begin() + (x.tp + 1) * n);
    } else {
      local_[r] = cl;
    }
  }
  routes_.resize(dims_.layers.size());
  if (dims_.experts > 0) {
    const int T = s_ * k.dataReplicas();
    for (size_t l = 0; l < dims_.layers.size(); ++l) {
      if (dims_.layers[l] != LayerKind::kMoe) continue;
      routes_[l].resize(T);
      for (int t = 0; t < T; ++t) {
        std::uint64_t h = (static_cast<std::uint64_t>(l) << 32 | static_cast<std::uint32_t>(t)) *
                          0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
        const int start = static_cast<int>(h % static_cast<std::uint64_t>(dims_.experts));
        for (int i = 0; i < dims_.top_k; ++i)
          routes_[l][t].push_back((start + i * 7919) % dims_.experts);
      }
    }
  }
}

std::vector<int> Layout::group(TrainAxis axis, int rank) const {
  const TrainingConfig& k = config();
  const Coord& me = coords_[rank];
  std::vector<int> out;
  for (int r = 0; r < world(); ++r) {
    const Coord& x = coords_[r];
    bool in = false;
    switch (axis) {
      case TrainAxis::kNone:
        in = r == rank;
        break;
      case TrainAxis::kCp:
        in = x.data == me.data && x.tp == me.tp;
        break;
      case TrainAxis::kTp:
        in = x.data == me.data && x.cp == me.cp;
        break;
      case TrainAxis::kEp:
        in = x.ep_group == me.ep_group;
        break;
      case TrainAxis::kFsdp:
        in = x.rep == me.rep;
        break;
      case TrainAxis::kDpReplicate:
        in = x.fsdp == me.fsdp && x.tp == me.tp;
        break;
      case TrainAxis::kExpertDp:
        in = k.layout == TrainingLayout::kPrimeRl ? (x.rep == me.rep && x.ep == me.ep)
                                                  : x.ep == me.ep && x.etp == me.etp;
        break;
      case TrainAxis::kExpertTp:
        in = x.ep_group / k.expertTp() == me.ep_group / k.expertTp() && x.ep == me.ep;
        break;
      case TrainAxis::kTpEp:
        in = x.ep_group / k.expertTp() == me.ep_group / k.expertTp();
        break;
      case TrainAxis::kTpDpCp:
        in = true;
        break;
      case TrainAxis::kDpCp:
        in = x.tp == me.tp;
        break;
    }
    if (in) out.push_back(r);
  }
  return out;
}

std::vector<int> Layout::rowTokens(int rank) const {
  std::vector<int> out(s_);
  std::iota(out.begin(), out.end(), coords_[rank].data * s_);
  return out;
}

std::vector<int> Layout::globalSegments() const {
  std::vector<int> out{0};
  for (int d : c_->docs) out.push_back(out.back() + d);
  return out;
}

std::vector<int> Layout::localSegments(int rank) const {
  // The document pieces of the rank's own shard, as positions from 0.
  const std::vector<int>& mine = cp_local_[rank];
  const std::vector<int> global = globalSegments();
  std::vector<int> out{0};
  const int base = coords_[rank].data * s_;
  for (size_t i = 1; i < mine.size(); ++i) {
    const int prev = mine[i - 1] - base, cur = mine[i] - base;
    const bool boundary = cur != prev + 1 || std::binary_search(global.begin(), global.end(), cur);
    if (boundary) out.push_back(static_cast<int>(i));
  }
  out.push_back(static_cast<int>(mine.size()));
  return out;
}

std::vector<int> Layout::groupsOfBlock(int b) const {
  const int nh = dims_.mamba_heads;
  const int hb = nh / headBlocks();
  const int g = groupUnits();
  const int per_group = nh / g;
  std::vector<int> out;
  for (int h = b * hb; h < (b + 1) * hb; ++h) {
    const int grp = h / per_group;
    if (out.empty() || out.back() != grp) out.push_back(grp);
  }
  return out;
}

const std::vector<int>& Layout::route(int layer, int token) const { return routes_[layer][token]; }

}  // namespace training
}  // namespace seam
