// The memory a command may plan to use, checked before it allocates: one
// case's replay (seam check, plan, diff, graph, import and seam-gpu), a
// space-wide command's enumerated cases plus a replay per worker (mutate,
// diff), and a sweep's replay per worker (it streams its cases). Past the budget the command is
// refused with one line, exit 2, naming the options that make it large (docs/cli.md, "Every
// command").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "seam/properties/sweep.h"
#include "seam/sim/base/status.h"
#include "seam/sim/model/case.h"
#include "seam/sim/model/config_space.h"

namespace seam::tools {

/// What seam plans to stay under: 2 GiB.
inline constexpr std::int64_t kMemoryBudgetBytes = std::int64_t{2} << 30;

/// The ledger holds a value per rank per token of each buffer: measured 25
/// bytes per rank and token (nemotron-h-4b, tp = dp = 1024 and 2048,
/// `seam check` peak RSS), rounded up.
inline constexpr std::int64_t kReplayBytesPerRankToken = 32;

/// A campaign or diff enumerates a model's cases of a world before it
/// runs them, about 1 KiB each plus 4 bytes per DP shard of its batch. Cases
/// per configuration: one MoE preset gives up to 160 (flags x batches; 115
/// and 135 measured for nemotron-3-nano at worlds 16 and 64); over every
/// preset the mean is lower (69 per model and configuration at world 32:
/// 950,226 cases, 930 MB peak), bounded here by 96.
inline constexpr std::int64_t kSpaceCasesPerConfigOneModel = 160;
inline constexpr std::int64_t kSpaceCasesPerConfigManyModels = 96;
inline constexpr std::int64_t kSpaceBytesPerCase = 1024;

/// The replay of one case: refused when its ranks x tokens would take more
/// than the budget.
Status checkCaseMemory(const Case& c);

/// A space-wide command over `worlds` and `models` models (fixed leaves in
/// `filter`) with `jobs` workers, keeping one of `shards` shards: its
/// enumerated cases (a shard's, and one model's whole while it is
/// enumerated) and the largest replay per worker (world ranks x 66 x world
/// tokens: the longest batch a space gives is the CP prefill batch of
/// attn_dp = world/2 shards of 131 tokens) within the budget.
/// The models of a space that are modelled (and so enumerated).
inline std::int64_t modelCount(const std::vector<properties::SweepModel>& models) {
  std::int64_t n = 0;
  for (const properties::SweepModel& m : models) n += m.model.has_value() ? 1 : 0;
  return n;
}

Status checkSpaceMemory(const std::vector<int>& worlds, std::int64_t models,
                        const ConfigFilter& filter, int jobs, int shards = 1);

/// A sweep's worker holds its case's plan, replay and judges together. Peak
/// RSS of a sweep of every preset on 2 workers, once the exact sums and the
/// judges' token lists were shared (docs/results/scale.md): world 128
/// `--shard 0/32` 142,416 KiB, 67 bytes per worker, rank and token of the
/// longest batch; world 256 `--shard 0/128` 449,320 KiB, 53 bytes. Those
/// shards took every n-th case (every configuration, not every batch), so
/// about twice that.
inline constexpr std::int64_t kSweepBytesPerRankToken = 128;

/// A sweep of `world` with `jobs` workers: its cases stream (one model x
/// configuration per worker in flight, measured flat in the number of cases:
/// docs/results/scale.md), so what grows is the largest case per worker.
Status checkSweepMemory(int world, int jobs);

/// checkSpaceMemory over the modelled ones of `models`.
inline Status checkSpaceMemory(const std::vector<int>& worlds,
                               const std::vector<properties::SweepModel>& models,
                               const ConfigFilter& filter, int jobs, int shards = 1) {
  return checkSpaceMemory(worlds, modelCount(models), filter, jobs, shards);
}

}  // namespace seam::tools
