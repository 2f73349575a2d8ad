#include "seam/sim/model/parallel_config.h"

#include <algorithm>
#include <cassert>
#include <string>

namespace seam {

std::string ParallelConfig::describe() const {
  return "pp=" + std::to_string(pp) + " tp=" + std::to_string(tp) +
         " attn_dp=" + std::to_string(attn_dp) + " attn_cp=" + std::to_string(attn_cp) +
         " moe_ep=" + std::to_string(moe_ep) + " moe_dp=" + std::to_string(moe_dp);
}

Status validate(const ParallelConfig& c) {
  const std::pair<const char*, int> leaves[] = {{"pp", c.pp},           {"tp", c.tp},
                                                {"attn_dp", c.attn_dp}, {"attn_cp", c.attn_cp},
                                                {"moe_ep", c.moe_ep},   {"moe_dp", c.moe_dp}};
  for (const auto& [name, value] : leaves) {
    if (value < 1) {
      return Status::invalid(std::string(name) + "=" + std::to_string(value) + " must be >= 1");
    }
  }
  // derive_attn_tp_size: "Invalid attention topology" unless exact.
  if (c.tp % (c.attn_dp * c.attn_cp) != 0) {
    return Status::invalid("attn_dp*attn_cp=" + std::to_string(c.attn_dp * c.attn_cp) +
                           " does not divide tp=" + std::to_string(c.tp));
  }
  if (c.tp % (c.moe_ep * c.moe_dp) != 0) {
    return Status::invalid("moe_ep*moe_dp=" + std::to_string(c.moe_ep * c.moe_dp) +
                           " does not divide tp=" + std::to_string(c.tp));
  }
  return Status::ok();
}

Status serverArgsMoeDp(const ParallelConfig& c) {
  if (c.moe_dp == 1) return Status::ok();
  const std::string sizes = " (AssertionError in ServerArgs._handle_context_parallelism; attn_cp=" +
                            std::to_string(c.attn_cp) + " moe_dp=" + std::to_string(c.moe_dp);
  if (c.pp > 1) {
    return Status::refused("PP is not supported with context parallelism" + sizes +
                           " pp=" + std::to_string(c.pp) + ")");
  }
  if (c.moe_ep > 1 && c.moe_ep * c.moe_dp != c.tp) {
    return Status::refused("ep_size * moe_dp_size must be equal to tp_size" + sizes + " moe_ep=" +
                           std::to_string(c.moe_ep) + " tp=" + std::to_string(c.tp) + ")");
  }
  if (c.attn_cp != c.moe_dp) {
    return Status::refused("attn_cp_size != moe_dp_size is only supported when moe_dp_size == 1" +
                           sizes + ")");
  }
  return Status::ok();
}

namespace {
constexpr std::string_view kAxisNames[kAxisCount] = {"tp",     "attn_tp", "attn_cp", "attn_dp",
                                                     "moe_ep", "moe_tp",  "moe_dp",  "pp"};
}  // namespace

std::string_view axisName(Axis axis) { return kAxisNames[static_cast<int>(axis)]; }

bool parseAxis(std::string_view name, Axis* axis) {
  for (int i = 0; i < kAxisCount; ++i) {
    if (kAxisNames[i] == name) {
      *axis = static_cast<Axis>(i);
      return true;
    }
  }
  return false;
}

int groupSizeOf(const ParallelConfig& c, Axis axis) {
  switch (axis) {
    case Axis::kTp:
      return c.tp;
    case Axis::kAttnTp:
      return c.attnTp();
    case Axis::kAttnCp:
      return c.attn_cp;
    case Axis::kAttnDp:
      return c.attn_dp;
    case Axis::kMoeEp:
      return c.moe_ep;
    case Axis::kMoeTp:
      return c.moeTp();
    case Axis::kMoeDp:
      return c.attn_cp > c.moe_dp ? c.attn_cp : c.moe_dp;
    case Axis::kPp:
      return c.pp;
  }
  return 1;
}

std::vector<int> groupMembers(const ParallelConfig& c, Axis axis, int rank) {
  const int T = c.tp, atp = c.attnTp(), acp = c.attn_cp, mtp = c.moeTp(), mep = c.moe_ep;
  const int b = rank / T * T;  // base of the rank's TP group
  const int l = rank % T;
  std::vector<int> g;
  g.reserve(groupSizeOf(c, axis));
  switch (axis) {
    case Axis::kTp:
      for (int i = 0; i < T; ++i) g.push_back(b + i);
      break;
    case Axis::kAttnTp:
      for (int i = 0; i < atp; ++i) g.push_back(b + l / atp * atp + i);
      break;
    case Axis::kAttnCp:
      for (int j = 0; j < acp; ++j)
        g.push_back(b + l / (atp * acp) * atp * acp + l % atp + j * atp);
      break;
    case Axis::kAttnDp:
      for (int d = 0; d < c.attn_dp; ++d) g.push_back(b + d * atp * acp + l % (atp * acp));
      break;
    case Axis::kMoeEp:
      for (int e = 0; e < mep; ++e)
        g.push_back(b + l / (mep * mtp) * mep * mtp + l % mtp + e * mtp);
      break;
    case Axis::kMoeTp:
      for (int i = 0; i < mtp; ++i) g.push_back(b + l / mtp * mtp + i);
      break;
    case Axis::kMoeDp:
      if (acp > c.moe_dp) return groupMembers(c, Axis::kAttnCp, rank);  // SGLang's MoE-CP alias
      for (int k = 0; k < c.moe_dp; ++k) g.push_back(b + l % (mtp * mep) + k * mtp * mep);
      break;
    case Axis::kPp:
      for (int s = 0; s < c.pp; ++s) g.push_back(l + s * T);
      break;
  }
  return g;
}

// Group construction follows SGLang's initialize_model_parallel: every group
// except pp lives inside one TP group of T ranks starting at b = stage * T.
Topology::Topology(const ParallelConfig& config) : config_(config) {
  assert(validate(config).isOk() && "Topology of an invalid config");
  const int world = config.world();
  const int T = config.tp;
  const int atp = config.attnTp();
  const int acp = config.attn_cp;
  const int adp = config.attn_dp;
  const int mtp = config.moeTp();
  const int mep = config.moe_ep;
  const int mdp = config.moe_dp;

  std::vector<std::vector<int>> tp, attn_tp, attn_cp, attn_dp, moe_ep, moe_tp, moe_dp, pp;
  for (int b = 0; b < world; b += T) {
    tp.emplace_back();
    for (int l = 0; l < T; ++l) tp.back().push_back(b + l);
    // attn_tp: contiguous blocks of attn_tp ranks.
    for (int k = 0; k < adp * acp; ++k) {
      std::vector<int> g;
      for (int i = 0; i < atp; ++i) g.push_back(b + k * atp + i);
      attn_tp.push_back(std::move(g));
    }
    // attn_cp: inside each DP block of attn_tp*attn_cp ranks, stride attn_tp.
    for (int d = 0; d < adp; ++d) {
      for (int i = 0; i < atp; ++i) {
        std::vector<int> g;
        for (int j = 0; j < acp; ++j) g.push_back(b + d * atp * acp + i + j * atp);
        attn_cp.push_back(std::move(g));
      }
    }
    // attn_dp: the ranks holding the same attention position in every DP block.
    for (int pos = 0; pos < atp * acp; ++pos) {
      std::vector<int> g;
      for (int d = 0; d < adp; ++d) g.push_back(b + d * atp * acp + pos);
      attn_dp.push_back(std::move(g));
    }
    // moe_tp: contiguous blocks of moe_tp ranks.
    for (int k = 0; k < T / mtp; ++k) {
      std::vector<int> g;
      for (int i = 0; i < mtp; ++i) g.push_back(b + k * mtp + i);
      moe_tp.push_back(std::move(g));
    }
    // moe_ep: per moe_dp block of moe_ep*moe_tp ranks and per moe_tp position,
    // stride moe_tp.
    for (int q = 0; q < mdp; ++q) {
      for (int t = 0; t < mtp; ++t) {
        std::vector<int> g;
        for (int e = 0; e < mep; ++e) g.push_back(b + q * mep * mtp + t + e * mtp);
        moe_ep.push_back(std::move(g));
      }
    }
    // moe_dp: stride moe_tp*moe_ep across the TP group.
    for (int pos = 0; pos < mtp * mep; ++pos) {
      std::vector<int> g;
      for (int k = 0; k < mdp; ++k) g.push_back(b + pos + k * mtp * mep);
      moe_dp.push_back(std::move(g));
    }
  }
  // pp: stride world / pp.
  for (int l = 0; l < T; ++l) {
    std::vector<int> g;
    for (int s = 0; s < config.pp; ++s) g.push_back(l + s * T);
    pp.push_back(std::move(g));
  }
  // SGLang: the moe_dp handle *is* the attn_cp ("MoE-CP") group when
  // attn_cp > moe_dp.
  if (acp > mdp) moe_dp = attn_cp;

  set(Axis::kTp, std::move(tp));
  set(Axis::kAttnTp, std::move(attn_tp));
  set(Axis::kAttnCp, std::move(attn_cp));
  set(Axis::kAttnDp, std::move(attn_dp));
  set(Axis::kMoeEp, std::move(moe_ep));
  set(Axis::kMoeTp, std::move(moe_tp));
  set(Axis::kMoeDp, std::move(moe_dp));
  set(Axis::kPp, std::move(pp));
}

void Topology::set(Axis axis, std::vector<std::vector<int>> groups) {
  AxisGroups& a = axes_[static_cast<int>(axis)];
  // The constructor generates every group ascending and the groups in the
  // order of their lowest rank; no sort is needed (this runs once per plan).
  assert(std::is_sorted(groups.begin(), groups.end()) && "groups out of order");
  a.groups = std::move(groups);
  a.group_of.assign(config_.world(), -1);
  a.rank_in.assign(config_.world(), -1);
  for (int gi = 0; gi < static_cast<int>(a.groups.size()); ++gi) {
    const auto& g = a.groups[gi];
    for (int i = 0; i < static_cast<int>(g.size()); ++i) {
      assert(a.group_of[g[i]] == -1 && "rank in two groups of one axis");
      a.group_of[g[i]] = gi;
      a.rank_in[g[i]] = i;
    }
  }
}

}  // namespace seam
