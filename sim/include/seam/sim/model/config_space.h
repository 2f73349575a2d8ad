// ConfigSpace: every valid parallel configuration of a world size, in a fixed
// order, so that a sweep's shard i/n is the same on every machine (DESIGN §2.1).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "seam/sim/base/status.h"
#include "seam/sim/model/model.h"
#include "seam/sim/model/parallel_config.h"

namespace seam {

/// Leaves fixed by the user (`--tp 4`); unset leaves are enumerated.
struct ConfigFilter {
  std::optional<int> pp, tp, attn_dp, attn_cp, moe_ep, moe_dp;
};

/// Which part of a space a process takes: entries with index % count == index.
struct Shard {
  int index = 0;  ///< i of i/n, 0-based
  int count = 1;  ///< n of i/n
};
/// Parses "i/n" (0 <= i < n); the error names the bad text.
Expected<Shard> parseShard(std::string_view text);

/// The valid configurations of one world size, optionally for one model.
/// Order: pp, then attn_dp, attn_cp, moe_ep, moe_dp ascending (tp = world/pp).
class ConfigSpace {
 public:
  /// Fails with a one-line message when world < 1 or a fixed leaf cannot be
  /// part of any config of this world (e.g. "tp=3 does not divide world=8").
  static Expected<ConfigSpace> build(int world, const ModelPreset* model = nullptr,
                                     const ConfigFilter& filter = {});

  int world() const { return world_; }
  int size() const { return static_cast<int>(configs_.size()); }
  const ParallelConfig& operator[](int i) const { return configs_[i]; }
  const std::vector<ParallelConfig>& all() const { return configs_; }
  /// The indices of this shard's configurations, ascending.
  std::vector<int> shardIndices(Shard shard) const;

 private:
  int world_ = 0;
  std::vector<ParallelConfig> configs_;
};

/// The largest world a ConfigSpace is built for (a guard against typos like --world 80000).
inline constexpr int kMaxWorld = 4096;

}  // namespace seam
