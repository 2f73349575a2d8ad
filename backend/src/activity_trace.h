// Private to backend/: what the devices ran, kernel by kernel, through
// CUPTI's activity API: the "sum of its kernels" of a captured decode step
// is the sum of the durations of the kernels, copies and memsets
// CUPTI records while one replay runs, per device. CUDA events around a
// stream's ops also count the launch gaps between kernels, which a graph
// hides; CUPTI's records do not.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "seam/sim/base/status.h"

namespace seam::backend::detail {

/// One kernel, copy or memset as CUPTI recorded it (device timestamps, ns).
struct DeviceActivity {
  int device = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
};

/// Per device: the sum of the records' durations and their union (the time
/// the device was busy: overlapping records counted once), in microseconds,
/// and the number of records.
struct DeviceBusy {
  double sum_us = 0, busy_us = 0;
  int records = 0;
};
DeviceBusy deviceBusy(const std::vector<DeviceActivity>& records, int device);

/// The process's device activity between start() and stop(). CUPTI delivers
/// records through C callbacks that carry no user pointer, so at most one
/// trace runs at a time in a process (start() refuses a second).
class ActivityTrace {
 public:
  static Expected<ActivityTrace> start();
  ActivityTrace(ActivityTrace&& other) noexcept : running_(other.running_) {
    other.running_ = false;
  }
  ActivityTrace& operator=(ActivityTrace&&) = delete;
  ActivityTrace(const ActivityTrace&) = delete;
  ActivityTrace& operator=(const ActivityTrace&) = delete;
  ~ActivityTrace();

  /// Stops recording and returns every record (after the devices have
  /// finished the traced work: the caller synchronizes first).
  Expected<std::vector<DeviceActivity>> stop();

 private:
  ActivityTrace() = default;
  bool running_ = false;
};

/// A trace the rank threads share: one thread starts and stops it, between
/// barriers of all of them; each then reads its own device's records. A
/// CUPTI failure is kept as a message, not returned: timing goes on without.
class SharedTrace {
 public:
  void start();
  void stop();
  /// The records of `device`, by start time (after stop()).
  std::vector<DeviceActivity> recordsOf(int device) const;
  /// Why CUPTI could not trace, or "".
  const std::string& error() const { return error_; }

 private:
  std::optional<ActivityTrace> trace_;
  std::vector<DeviceActivity> records_;
  std::string error_;
};

}  // namespace seam::backend::detail
