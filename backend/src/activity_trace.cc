// CUPTI activity records (activity_trace.h): kernels, copies and memsets.
#include "activity_trace.h"

#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

namespace seam::backend::detail {

namespace {

/// Bytes of one activity buffer handed to CUPTI (8-byte aligned, as it asks).
constexpr std::size_t kBufferBytes = 4u << 20;

/// The one collector CUPTI's callbacks can reach (see activity_trace.h).
struct Collector {
  std::mutex mutex;
  std::vector<DeviceActivity> records;
  std::atomic<bool> busy{false};
  bool callbacks_registered = false;
};
Collector& collector() {
  static Collector c;
  return c;
}

Status cuptiStatus(CUptiResult r, const char* call) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return Status::internal(std::string(call) + " failed: " + (text ? text : "unknown CUPTI error"));
}

#define SEAM_CUPTI_CHECK(call)                                                    \
  do {                                                                            \
    const CUptiResult seam_cupti_r_ = (call);                                     \
    if (seam_cupti_r_ != CUPTI_SUCCESS) return cuptiStatus(seam_cupti_r_, #call); \
  } while (0)

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI bufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Collector& c = collector();
  std::lock_guard<std::mutex> lock(c.mutex);
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        c.records.push_back({static_cast<int>(k->deviceId), k->start, k->end});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        c.records.push_back({static_cast<int>(m->deviceId), m->start, m->end});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        c.records.push_back({static_cast<int>(m->deviceId), m->start, m->end});
        break;
      }
      default:
        break;
    }
  }
  std::free(buffer);
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                         CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};

}  // namespace

DeviceBusy deviceBusy(const std::vector<DeviceActivity>& records, int device) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  for (const DeviceActivity& a : records) {
    if (a.device == device && a.end_ns >= a.start_ns) spans.emplace_back(a.start_ns, a.end_ns);
  }
  std::sort(spans.begin(), spans.end());
  DeviceBusy out;
  out.records = static_cast<int>(spans.size());
  std::uint64_t open_start = 0, open_end = 0, busy = 0, sum = 0;
  bool open = false;
  for (const auto& [start, end] : spans) {
    sum += end - start;
    if (open && start <= open_end) {
      open_end = std::max(open_end, end);
      continue;
    }
    if (open) busy += open_end - open_start;
    open = true;
    open_start = start;
    open_end = end;
  }
  if (open) busy += open_end - open_start;
  out.sum_us = static_cast<double>(sum) * 1e-3;
  out.busy_us = static_cast<double>(busy) * 1e-3;
  return out;
}

Expected<ActivityTrace> ActivityTrace::start() {
  Collector& c = collector();
  if (c.busy.exchange(true))
    return Status::internal("a CUPTI activity trace is already running in this process");
  ActivityTrace trace;
  trace.running_ = true;  // from here the destructor releases `busy`
  if (!c.callbacks_registered) {
    SEAM_CUPTI_CHECK(cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted));
    c.callbacks_registered = true;
  }
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    c.records.clear();
  }
  for (CUpti_ActivityKind k : kKinds) SEAM_CUPTI_CHECK(cuptiActivityEnable(k));
  return trace;
}

Expected<std::vector<DeviceActivity>> ActivityTrace::stop() {
  if (!running_) return Status::internal("the CUPTI activity trace is not running");
  for (CUpti_ActivityKind k : kKinds) SEAM_CUPTI_CHECK(cuptiActivityDisable(k));
  SEAM_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  Collector& c = collector();
  std::vector<DeviceActivity> out;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    out.swap(c.records);
  }
  running_ = false;
  c.busy = false;
  return out;
}

void SharedTrace::start() {
  auto trace = ActivityTrace::start();
  if (trace) {
    trace_.emplace(std::move(*trace));
  } else {
    error_ = trace.status().message();
  }
}

void SharedTrace::stop() {
  if (!trace_) return;
  auto records = trace_->stop();
  if (records) {
    records_ = std::move(*records);
  } else {
    error_ = records.status().message();
  }
  trace_.reset();
}

std::vector<DeviceActivity> SharedTrace::recordsOf(int device) const {
  std::vector<DeviceActivity> out;
  for (const DeviceActivity& a : records_) {
    if (a.device == device) out.push_back(a);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& x, const auto& y) { return x.start_ns < y.start_ns; });
  return out;
}

ActivityTrace::~ActivityTrace() {
  if (!running_) return;
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  collector().busy = false;
}

}  // namespace seam::backend::detail
