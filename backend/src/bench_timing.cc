#include "bench_timing.h"

#include <algorithm>
#include <exception>
#include <string>
#include <thread>

#include "kernels.h"
#include "seam/backend/bench.h"
#include "seam/backend/check.h"

namespace seam::backend::detail {

int rotatingSets(std::size_t set_bytes, int iters) {
  int device = 0;
  int l2 = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) != cudaSuccess) {
    l2 = 64 << 20;
  }
  const std::size_t want =
      static_cast<std::size_t>(kRotateL2Multiple) * static_cast<std::size_t>(l2);
  const std::size_t sets = (want + set_bytes - 1) / std::max<std::size_t>(set_bytes, 1);
  return static_cast<int>(
      std::clamp<std::size_t>(sets, 1, static_cast<std::size_t>(std::max(iters, 1))));
}

Status timeGated(const Stream& stream, int iters, SpinBarrier& barrier,
                 const std::atomic<bool>& abort, const std::function<Status(int)>& launch,
                 std::vector<double>* us) {
  auto gate = PinnedFlag::create();
  if (!gate) return gate.status();
  auto events = EventPairs::create(iters);
  if (!events) return events.status();
  const std::vector<Event>& start = events->start;
  const std::vector<Event>& stop = events->stop;
  SEAM_CUDA_CHECK(kernels::busy(kWarmClockUs, kernels::kBusyBlocks, stream.get()));
  SEAM_CUDA_CHECK(kernels::waitFlag(gate->device(), 1, stream.get()));
  Status queued;
  for (int i = 0; i < iters && queued; ++i) {
    queued = start[i].record(stream);
    if (queued) queued = launch(i);
    if (queued) queued = stop[i].record(stream);
  }
  // Open the gate whatever happened: the stream must drain before the flag is freed.
  const bool met = queued && barrier.arriveAndWait(abort);
  gate->store(kGateOpen);
  if (Status st = stream.synchronize(); !st) return st;
  if (!queued) return queued;
  if (!met) return Status::internal(kAborted);
  auto all = events->allMicroseconds();
  if (!all) return all.status();
  *us = std::move(*all);
  return Status::ok();
}

Status onThreads(int n, std::atomic<bool>& abort, const std::function<Status(int)>& body) {
  std::vector<Status> status(n);
  std::vector<std::thread> threads;
  for (int p = 0; p < n; ++p) {
    threads.emplace_back([&, p] {
      try {
        status[p] = body(p);
      } catch (const std::exception& e) {
        status[p] = Status::internal(std::string("bench thread: ") + e.what());
      }
      if (!status[p]) abort = true;
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Status& st : status) {
    if (!st && st.message() != kAborted) return st;
  }
  for (const Status& st : status) {
    if (!st) return st;
  }
  return Status::ok();
}

}  // namespace seam::backend::detail
