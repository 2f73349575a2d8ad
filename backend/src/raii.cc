#include "seam/backend/raii.h"

#include "seam/backend/check.h"

namespace seam::backend {

Expected<Stream> Stream::create() {
  cudaStream_t s = nullptr;
  SEAM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream(s);
}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (stream_) cudaStreamDestroy(stream_);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

Stream::~Stream() {
  // Destructors cannot report; a failing destroy at teardown is not actionable.
  if (stream_) cudaStreamDestroy(stream_);
}

Status Stream::synchronize() const {
  SEAM_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return Status::ok();
}

Expected<Event> Event::create() {
  cudaEvent_t e = nullptr;
  SEAM_CUDA_CHECK(cudaEventCreate(&e));
  return Event(e);
}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_) cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

Event::~Event() {
  if (event_) cudaEventDestroy(event_);
}

Status Event::record(const Stream& stream) const {
  SEAM_CUDA_CHECK(cudaEventRecord(event_, stream.get()));
  return Status::ok();
}

Expected<float> Event::elapsedSince(const Event& start) const {
  float ms = 0;
  SEAM_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), event_));
  return ms;
}

Expected<EventPairs> EventPairs::create(int count) {
  EventPairs out;
  for (int i = 0; i < count; ++i) {
    auto a = Event::create();
    auto b = Event::create();
    if (!a) return a.status();
    if (!b) return b.status();
    out.start.push_back(std::move(*a));
    out.stop.push_back(std::move(*b));
  }
  return out;
}

Expected<double> EventPairs::microseconds(int i) const {
  auto ms = stop[i].elapsedSince(start[i]);
  if (!ms) return ms.status();
  return static_cast<double>(*ms) * 1e3;
}

Expected<std::vector<double>> EventPairs::allMicroseconds() const {
  std::vector<double> out;
  for (int i = 0; i < static_cast<int>(start.size()); ++i) {
    auto us = microseconds(i);
    if (!us) return us.status();
    out.push_back(*us);
  }
  return out;
}

CudaGraph& CudaGraph::operator=(CudaGraph&& other) noexcept {
  if (this != &other) {
    if (graph_) cudaGraphDestroy(graph_);
    graph_ = std::exchange(other.graph_, nullptr);
  }
  return *this;
}

CudaGraph::~CudaGraph() {
  if (graph_) cudaGraphDestroy(graph_);
}

Expected<GraphExec> GraphExec::instantiate(const CudaGraph& graph) {
  if (!graph.get()) return Status::internal("the stream capture produced no graph");
  cudaGraphExec_t e = nullptr;
  SEAM_CUDA_CHECK(cudaGraphInstantiate(&e, graph.get(), 0));
  return GraphExec(e);
}

GraphExec& GraphExec::operator=(GraphExec&& other) noexcept {
  if (this != &other) {
    if (exec_) cudaGraphExecDestroy(exec_);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

GraphExec::~GraphExec() {
  if (exec_) cudaGraphExecDestroy(exec_);
}

Status GraphExec::launch(const Stream& stream) const {
  SEAM_CUDA_CHECK(cudaGraphLaunch(exec_, stream.get()));
  return Status::ok();
}

}  // namespace seam::backend
