// The training conformance suite's entries (tests/sim/training_conformance/
// *.json) and how one is compared with seam's training plan. An entry states,
// per rank, the ordered collectives (pass, layer, op, group, bytes) that
// PrimeRL or Megatron issues for one case inside a window of layers, derived
// by hand from the engine's code it cites; nothing here is computed from
// seam's planner. Groups are compared by their members, computed here from
// the engines' rank layouts, so a step on the wrong group fails even where
// seam's axis names agree.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "seam/sim/training/training_plan.h"

namespace seam::training_conformance {

/// One expected collective: "bwd L3 reduce_scatter fsdp 154979584"; "re" is
/// a forward op recomputed in backward; bytes "*" when they depend on seam's
/// routing (EP splits). A point-to-point op names its peer's global rank:
/// "fwd L5 send to:3 8192", "fwd L5 recv from:1 8192".
struct Step {
  std::string pass;  ///< fwd, re, bwd
  int layer = 0;     ///< -1: the embedding; the layer count: lm_head and loss
  OpKind kind = OpKind::kAllGather;
  std::string group;
  std::optional<std::int64_t> bytes;
  std::string text;
};

struct Entry {
  std::string topic;  ///< the file's stem
  int index = 0;
  std::string name;
  std::string options;  ///< `seam plan --family training` options
  std::vector<int> ranks;
  std::pair<int, int> layers{0, 0};  ///< the window compared, inclusive
  std::vector<Step> expect;
  std::vector<std::string> cite;
  bool agrees = true;
  std::string section;        ///< disagrees: its heading in docs/modelling/<engine>.md
  int first_difference = -1;  ///< disagrees: the first expected step seam does not match
};

/// Every *.json under `dir`; a malformed entry throws with its file, index
/// and the bad field.
std::vector<Entry> loadEntries(const std::string& dir);

/// The training case the options describe (through the CLI's own parser).
TrainingCase parseCase(const std::string& options);

/// Members of the engine's group `name` that `rank` belongs to. PrimeRL's
/// world mesh is (dp_replicate, dp_shard, cp), row-major (parallel_dims.py):
/// fsdp = dp_shard x cp, cp, dp_replicate, ep = contiguous blocks of ep in
/// dp_shard x cp, expert_dp = dp_shard_mod_ep, dp_cp = every rank. Megatron's order is
/// tp-cp-ep-dp (parallel_state.py): tp, cp, dp_cp; its experts' grid is
/// etp-ep-dp (etp defaults to tp): expert_tp blocks of etp consecutive ranks,
/// ep stride etp inside blocks of etp x ep (tp_ep), expert_dp stride etp x ep.
/// "to:R" and "from:R" are a send's and a receive's (sender, receiver) pair.
std::vector<int> engineGroup(const std::string& name, const TrainingConfig& c, int rank);

/// The first expected step the plan's collectives of `rank` (inside the
/// window) do not match; nullopt when all match and nothing is left over.
struct Difference {
  int index = 0;
  std::string what;
};
std::optional<Difference> firstDifference(const Entry& e, const TrainingPlan& plan, int rank);

}  // namespace seam::training_conformance
