#include "memory_budget.h"

#include <algorithm>

namespace seam::tools {

namespace {

std::string mib(std::int64_t bytes) {
  return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}

/// The largest replay a space of `world` holds per worker: world ranks x 66 x
/// world tokens (the CP prefill batch of attn_dp = world/2 shards of 131 tokens).
std::int64_t replayBytes(std::int64_t world, int jobs,
                         std::int64_t per_rank_token = kReplayBytesPerRankToken) {
  return std::int64_t{jobs} * world * 66 * world * per_rank_token;
}

}  // namespace

Status checkCaseMemory(const Case& c) {
  const std::int64_t ranks = c.config.world();
  const std::int64_t tokens = c.batch.total();
  const std::int64_t bytes = ranks * tokens * kReplayBytesPerRankToken;
  if (bytes <= kMemoryBudgetBytes) return Status::ok();
  return Status::invalid("the case needs about " + mib(bytes) + " to replay (" +
                         std::to_string(ranks) + " ranks x " + std::to_string(tokens) +
                         " tokens x " + std::to_string(kReplayBytesPerRankToken) +
                         " bytes), more than seam's budget of " + mib(kMemoryBudgetBytes) +
                         "; use fewer ranks (--pp, --tp) or tokens (--tokens)");
}

Status checkSpaceMemory(const std::vector<int>& worlds, std::int64_t models,
                        const ConfigFilter& filter, int jobs, int shards) {
  const std::int64_t per_config =
      models > 1 ? kSpaceCasesPerConfigManyModels : kSpaceCasesPerConfigOneModel;
  std::int64_t cases = 0, largest_world = 0;
  for (const int world : worlds) {
    auto space = ConfigSpace::build(world, nullptr, filter);
    if (!space) continue;  // the command refuses it with its own message
    for (const ParallelConfig& c : space->all()) {
      cases += per_config * (kSpaceBytesPerCase + 4 * c.attn_dp);
    }
    largest_world = std::max<std::int64_t>(largest_world, world);
  }
  const std::int64_t kept = (models + shards - 1) / std::max(1, shards);
  const std::int64_t enumerated = (kept + (shards > 1 ? 1 : 0)) * cases;
  const std::int64_t replays = replayBytes(largest_world, jobs);
  const std::int64_t bytes = enumerated + replays;
  if (bytes <= kMemoryBudgetBytes) return Status::ok();
  return Status::invalid(
      "--world " + std::to_string(largest_world) + ": the space needs about " + mib(bytes) + " (" +
      mib(enumerated) + " for its cases of " + std::to_string(models) +
      (models == 1 ? " model, " : " models, ") + mib(replays) + " for " + std::to_string(jobs) +
      " workers' replays), more than seam's budget of " + mib(kMemoryBudgetBytes) +
      "; use a smaller --world, one --model, fixed leaves (--tp ...) or "
      "fewer --jobs");
}

Status checkSweepMemory(int world, int jobs) {
  const std::int64_t bytes = replayBytes(world, jobs, kSweepBytesPerRankToken);
  if (bytes <= kMemoryBudgetBytes) return Status::ok();
  return Status::invalid("--world " + std::to_string(world) + ": the sweep needs about " +
                         mib(bytes) + " for " + std::to_string(jobs) +
                         (jobs == 1 ? " worker's case" : " workers' cases") +
                         ", more than seam's budget of " + mib(kMemoryBudgetBytes) +
                         "; use a smaller --world or fewer --jobs");
}

}  // namespace seam::tools
