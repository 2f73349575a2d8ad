// Owning wrappers for CUDA streams and events (STYLE 9): created through a
// factory that returns a Status, destroyed exactly once, movable, not
// copyable. Communicators and cuBLAS handles join them with the executor.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "seam/sim/status.h"

namespace seam::backend {

/// A non-blocking CUDA stream on the current device.
class Stream {
 public:
  static Expected<Stream> create();
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  cudaStream_t get() const { return stream_; }
  Status synchronize() const;

 private:
  explicit Stream(cudaStream_t s) : stream_(s) {}
  cudaStream_t stream_ = nullptr;
};

/// A CUDA event that records timing (for per-op timings).
class Event {
 public:
  static Expected<Event> create();
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  cudaEvent_t get() const { return event_; }
  Status record(const Stream& stream) const;
  /// Milliseconds from `start` to this event; both must have completed.
  Expected<float> elapsedSince(const Event& start) const;

 private:
  explicit Event(cudaEvent_t e) : event_(e) {}
  cudaEvent_t event_ = nullptr;
};

}  // namespace seam::backend
