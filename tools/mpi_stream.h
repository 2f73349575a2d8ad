// Rows that reach the store while the work goes on (under mpirun a killed
// run keeps every batch rank 0 has committed). Each rank's work runs
// on a thread of its own and posts its finished batches; the main thread,
// the only one that calls MPI (MPI_THREAD_FUNNELED), sends them to rank 0,
// and rank 0 stores its own and the other ranks' batches as they arrive.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "mpi_world.h"

namespace seam::tools {

/// The finished batches of one rank's work, waiting for the main thread.
class Outbox {
 public:
  /// Queues one batch (from any thread).
  void post(std::string batch);

 private:
  friend std::vector<std::string> streamToRoot(const MpiWorld&,
                                               const std::function<std::string(Outbox&)>&,
                                               const std::function<void(const std::string&)>&);
  /// Waits up to `wait` (forever when absent) for a batch or the end of the
  /// work; takes every queued batch. `closed`: the work has ended and
  /// nothing of it is left queued.
  std::vector<std::string> take(std::optional<std::chrono::milliseconds> wait, bool& closed);
  void close();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::string> queue_;
  bool closed_ = false;
};

/// Runs `work` on a thread of its own while this thread moves the batches it
/// posts: rank 0 hands its own batches and those the other ranks send to
/// `store` (on this thread) as each arrives; the other ranks send theirs to
/// rank 0 as each is posted. `work` returns the rank's last word (its totals,
/// or why it failed), sent after its batches. Returns on rank 0, once every
/// rank's work has ended and every batch is stored, the last words in rank
/// order; on the other ranks an empty list. A world of one is rank 0 alone.
std::vector<std::string> streamToRoot(const MpiWorld& mpi,
                                      const std::function<std::string(Outbox&)>& work,
                                      const std::function<void(const std::string&)>& store);

/// Tells every rank whether rank 0 opened the run (`open_status`, rank 0's);
/// false when it did not: rank 0 then fails with it, the others end.
bool runOpened(const MpiWorld& mpi, const Status& open_status);

/// The last words of a sweep or campaign: "R" then a rank's totals, or "E"
/// then why its work failed. The first failure among them; ok when none.
Status lastWordsStatus(const std::vector<std::string>& last_words);

}  // namespace seam::tools
