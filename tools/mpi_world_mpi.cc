// A build with MPI (Open MPI here): MPI_Init_thread only when a launcher
// started this process as one of several. Only the main thread calls MPI
// (MPI_THREAD_FUNNELED); worker threads never do.
#include <mpi.h>

#include <cassert>
#include <chrono>
#include <limits>
#include <thread>

#include "mpi_world.h"

namespace seam::tools {

namespace {
MpiWorld gWorld;
}

std::vector<std::string> MpiWorld::gather(const std::string& mine) const {
  if (size_ == 1) return {mine};
  assert(mine.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()) &&
         "a shard over 2 GiB");
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(rank_ == 0 ? size_ : 0);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(counts.size());
  std::string all;
  if (rank_ == 0) {
    long long total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[r] = static_cast<int>(total);
      total += counts[r];
    }
    assert(total <= std::numeric_limits<int>::max() && "gathered rows over 2 GiB");
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(mine.data(), count, MPI_BYTE, all.data(), counts.data(), offsets.data(), MPI_BYTE, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; rank_ == 0 && r < size_; ++r) out.push_back(all.substr(offsets[r], counts[r]));
  return out;
}

std::string MpiWorld::broadcast(const std::string& bytes) const {
  if (size_ == 1) return bytes;
  std::int64_t n = broadcast(static_cast<std::int64_t>(bytes.size()));
  std::string out = rank_ == 0 ? bytes : std::string(static_cast<std::size_t>(n), '\0');
  MPI_Bcast(out.data(), static_cast<int>(n), MPI_BYTE, 0, MPI_COMM_WORLD);
  return out;
}

std::int64_t MpiWorld::broadcast(std::int64_t value) const {
  if (size_ == 1) return value;
  long long v = value;
  MPI_Bcast(&v, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  return v;
}

void MpiWorld::sendToRoot(int tag, const std::string& bytes) const {
  assert(rank_ != 0 && "rank 0 does not send to itself");
  assert(bytes.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()) &&
         "a message over 2 GiB");
  MPI_Request request;
  MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0, tag, MPI_COMM_WORLD,
            &request);
  // A blocking MPI_Send of a large message spins until rank 0 receives it.
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::optional<MpiWorld::Message> MpiWorld::poll() const {
  if (size_ == 1) return std::nullopt;  // MPI may not even be started
  int arrived = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &arrived, &status);
  if (arrived == 0) return std::nullopt;
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  Message m{status.MPI_SOURCE, status.MPI_TAG, std::string(static_cast<std::size_t>(count), '\0')};
  // Only this thread receives, so the probed message is the one received.
  MPI_Recv(m.bytes.data(), count, MPI_BYTE, m.source, m.tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return m;
}

MpiSession::MpiSession(int* argc, char*** argv) {
  if (!launchedAsOneOfSeveral()) return;
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    status_ = Status::internal("MPI_Init_thread failed");
    return;
  }
  started_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &gWorld.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &gWorld.size_);
  MPI_Comm host;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, gWorld.rank_, MPI_INFO_NULL, &host);
  MPI_Comm_rank(host, &gWorld.local_rank_);
  MPI_Comm_free(&host);
}

MpiSession::~MpiSession() {
  if (started_) MPI_Finalize();
}

const MpiWorld& mpiWorld() { return gWorld; }

}  // namespace seam::tools
