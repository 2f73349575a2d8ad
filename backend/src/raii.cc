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

}  // namespace seam::backend
