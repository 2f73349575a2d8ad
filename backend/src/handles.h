// Private to backend/: owning wrappers (STYLE 9) for what the executor
// allocates besides streams and events (raii.h): device arrays, NCCL
// communicators and cuBLAS handles. Each is created through a Status-returning
// factory, destroyed exactly once, movable, not copyable.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <string>
#include <utility>

#include "seam/backend/check.h"
#include "seam/sim/base/status.h"

namespace seam::backend {

/// A cuBLAS call's failure as a Status with the call and file:line.
inline Status cublasStatus(cublasStatus_t st, const char* call, const char* file, int line) {
  return Status::internal(std::string(call) + " failed: " + cublasGetStatusString(st) + " (" +
                          file + ":" + std::to_string(line) + ")");
}

}  // namespace seam::backend

/// Evaluates a cuBLAS call; on failure returns a Status from the enclosing function.
#define SEAM_CUBLAS_CHECK(call)                                                         \
  do {                                                                                  \
    const cublasStatus_t seam_cublas_st_ = (call);                                      \
    if (seam_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                       \
      return ::seam::backend::cublasStatus(seam_cublas_st_, #call, __FILE__, __LINE__); \
  } while (0)

namespace seam::backend {

/// `count` elements of T in device memory of the current device.
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  static Expected<DeviceArray> create(std::size_t count) {
    T* p = nullptr;
    // cudaMalloc of 0 bytes returns nullptr; keep one element so every array is addressable.
    SEAM_CUDA_CHECK(cudaMalloc(&p, sizeof(T) * (count ? count : 1)));
    return DeviceArray(p, count);
  }
  DeviceArray(DeviceArray&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { reset(); }

  T* get() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  DeviceArray(T* p, std::size_t n) : p_(p), n_(n) {}
  void reset() {
    // Destructors cannot report; a failing free at teardown is not actionable.
    if (p_) cudaFree(p_);
    p_ = nullptr;
  }
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

/// An NCCL communicator. Destroyed by abort unless finalized: abort never
/// waits for the other members, which is what an error path needs; the
/// normal path finalizes (the executor polls the non-blocking finalize).
class NcclComm {
 public:
  NcclComm() = default;
  /// Takes ownership of `comm` (which may still be initializing).
  explicit NcclComm(ncclComm_t comm) : comm_(comm) {}
  NcclComm(NcclComm&& o) noexcept : comm_(std::exchange(o.comm_, nullptr)) {}
  NcclComm& operator=(NcclComm&& o) noexcept {
    if (this != &o) {
      abort();
      comm_ = std::exchange(o.comm_, nullptr);
    }
    return *this;
  }
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ~NcclComm() { abort(); }

  ncclComm_t get() const { return comm_; }
  explicit operator bool() const { return comm_ != nullptr; }
  /// Aborts whatever runs on the communicator (the NCCL kernels exit) and frees it.
  void abort() {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
  }
  /// Frees a communicator whose ncclCommFinalize has completed.
  Status destroy() {
    if (!comm_) return Status::ok();
    const ncclComm_t c = std::exchange(comm_, nullptr);
    SEAM_NCCL_CHECK(ncclCommDestroy(c));
    return Status::ok();
  }

 private:
  ncclComm_t comm_ = nullptr;
};

/// An int in pinned host memory that the device can read: a stream waits on
/// it (kernels::waitFlag) until the host stores a large enough value.
class PinnedFlag {
 public:
  PinnedFlag() = default;
  static Expected<PinnedFlag> create() {
    int* host = nullptr;
    SEAM_CUDA_CHECK(cudaHostAlloc(&host, sizeof(int), cudaHostAllocMapped));
    *host = 0;
    PinnedFlag f(host);
    SEAM_CUDA_CHECK(cudaHostGetDevicePointer(&f.device_, host, 0));
    return f;
  }
  PinnedFlag(PinnedFlag&& o) noexcept
      : host_(std::exchange(o.host_, nullptr)), device_(std::exchange(o.device_, nullptr)) {}
  PinnedFlag& operator=(PinnedFlag&& o) noexcept {
    if (this != &o) {
      reset();
      host_ = std::exchange(o.host_, nullptr);
      device_ = std::exchange(o.device_, nullptr);
    }
    return *this;
  }
  PinnedFlag(const PinnedFlag&) = delete;
  PinnedFlag& operator=(const PinnedFlag&) = delete;
  ~PinnedFlag() { reset(); }

  int* host() const { return host_; }
  const int* device() const { return device_; }
  /// Lets every wait for a value up to `value` pass (any thread may call it).
  void store(int value) const { __atomic_store_n(host_, value, __ATOMIC_RELEASE); }

 private:
  explicit PinnedFlag(int* host) : host_(host) {}
  void reset() {
    if (host_) cudaFreeHost(host_);
    host_ = nullptr;
    device_ = nullptr;
  }
  int* host_ = nullptr;
  int* device_ = nullptr;
};

/// A cuBLAS handle bound to the current device.
class BlasHandle {
 public:
  BlasHandle() = default;
  static Expected<BlasHandle> create() {
    cublasHandle_t h = nullptr;
    SEAM_CUBLAS_CHECK(cublasCreate(&h));
    return BlasHandle(h);
  }
  BlasHandle(BlasHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  BlasHandle& operator=(BlasHandle&& o) noexcept {
    if (this != &o) {
      if (h_) cublasDestroy(h_);
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;
  ~BlasHandle() {
    if (h_) cublasDestroy(h_);
  }
  cublasHandle_t get() const { return h_; }

 private:
  explicit BlasHandle(cublasHandle_t h) : h_(h) {}
  cublasHandle_t h_ = nullptr;
};

}  // namespace seam::backend
