// Private to backend/: how `seam-gpu bench` (bench.h) times calls, as
// nccl-tests does: buffer sets rotated past the L2, every timed call of a
// sample queued behind a gate that all members open together (so the events
// measure device time and the members start aligned), one thread per member.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <vector>

#include "rank_executor.h"
#include "seam/backend/raii.h"
#include "seam/sim/base/status.h"

namespace seam::backend::detail {

/// Buffer sets to cycle through so that one pass over them is at least
/// kRotateL2Multiple times the L2 (no more sets than timed calls).
int rotatingSets(std::size_t set_bytes, int iters);

/// `iters` calls of `launch(i)` on `stream`, queued behind a gate; the ranks
/// meet at `barrier`, then each opens its gate. CUDA events around each call.
/// The device is kept busy for kWarmClockUs first (kernels::busy).
Status timeGated(const Stream& stream, int iters, SpinBarrier& barrier,
                 const std::atomic<bool>& abort, const std::function<Status(int)>& launch,
                 std::vector<double>* us);

/// Runs `body(place)` on one thread per member; the first real failure wins
/// (a member that gives up because another failed reports kAborted).
Status onThreads(int n, std::atomic<bool>& abort, const std::function<Status(int)>& body);

}  // namespace seam::backend::detail
