// Owning wrappers for CUDA streams, events and graphs (STYLE 9): created through a
// factory that returns a Status, destroyed exactly once, movable, not
// copyable. Communicators and cuBLAS handles join them with the executor.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>
#include <vector>

#include "seam/sim/base/status.h"

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

/// Start and stop events around each of a number of timed calls.
struct EventPairs {
  std::vector<Event> start, stop;
  static Expected<EventPairs> create(int count);
  /// Microseconds from start[i] to stop[i]; both must have completed.
  Expected<double> microseconds(int i) const;
  /// microseconds(i) of every pair, in order.
  Expected<std::vector<double>> allMicroseconds() const;
};

/// A CUDA graph as a stream capture ended it (cudaStreamEndCapture).
class CudaGraph {
 public:
  /// Takes ownership of `graph` (may be null: a failed capture).
  explicit CudaGraph(cudaGraph_t graph) : graph_(graph) {}
  CudaGraph(CudaGraph&& other) noexcept : graph_(std::exchange(other.graph_, nullptr)) {}
  CudaGraph& operator=(CudaGraph&& other) noexcept;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  ~CudaGraph();

  cudaGraph_t get() const { return graph_; }

 private:
  cudaGraph_t graph_ = nullptr;
};

/// An instantiated graph, launched as one unit on a stream.
class GraphExec {
 public:
  static Expected<GraphExec> instantiate(const CudaGraph& graph);
  GraphExec(GraphExec&& other) noexcept : exec_(std::exchange(other.exec_, nullptr)) {}
  GraphExec& operator=(GraphExec&& other) noexcept;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec();

  Status launch(const Stream& stream) const;

 private:
  explicit GraphExec(cudaGraphExec_t e) : exec_(e) {}
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace seam::backend
