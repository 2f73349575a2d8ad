// The processes mpirun started, seen from one of them (DESIGN §7). MPI sits at this edge only:
// tools/ moves bytes between ranks with it; the libraries produce and consume the bytes. Built with
// MPI when CMake finds it (mpi_world_mpi.cc), otherwise as a world of one (mpi_world_none.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "seam/sim/base/status.h"

namespace seam::tools {

/// This process's rank among `size` processes (0 of 1 when not under mpirun).
class MpiWorld {
 public:
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// More than one process: the command splits its work by rank.
  bool split() const { return size_ > 1; }
  bool root() const { return rank_ == 0; }
  /// This process's rank among the processes of its host (which GPU it takes).
  int localRank() const { return local_rank_; }

  /// Rank 0 gets every rank's bytes in rank order; the others an empty list.
  std::vector<std::string> gather(const std::string& mine) const;
  /// Every rank gets rank 0's `bytes`.
  std::string broadcast(const std::string& bytes) const;
  /// Every rank gets rank 0's `value`.
  std::int64_t broadcast(std::int64_t value) const;

  /// What another rank sent rank 0.
  struct Message {
    int source = 0;
    int tag = 0;
    std::string bytes;
  };
  /// A rank other than 0 sends `bytes` to rank 0 under `tag`. Returns once
  /// MPI is done with them; until rank 0 takes them it sleeps in short
  /// steps rather than spinning (the cores are the workers').
  void sendToRoot(int tag, const std::string& bytes) const;
  /// Rank 0: the next message another rank has sent, if one has arrived (it
  /// never waits). Messages of one sender come in the order it sent them.
  std::optional<Message> poll() const;

 private:
  friend class MpiSession;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
};

/// Starts MPI when this process was started by mpirun (its environment says
/// so); without mpirun nothing of MPI runs. Finalizes MPI when destroyed.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  /// Not ok when mpirun started this process but this build has no MPI, or
  /// MPI would not start: the one line to print.
  const Status& status() const { return status_; }

 private:
  bool started_ = false;
  Status status_;
};

/// The world of the live MpiSession (a world of one without one).
const MpiWorld& mpiWorld();

/// Whether the environment says mpirun (or another MPI launcher) started
/// this process as one of several.
bool launchedAsOneOfSeveral();

}  // namespace seam::tools
