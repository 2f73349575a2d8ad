// A build without MPI: every process is a world of one; one started by
// mpirun as one of several says so and stops (several processes each
// running the whole command would write the same store).
#include <cassert>

#include "mpi_world.h"

namespace seam::tools {

namespace {
MpiWorld gWorld;
}

std::vector<std::string> MpiWorld::gather(const std::string& mine) const { return {mine}; }
std::string MpiWorld::broadcast(const std::string& bytes) const { return bytes; }
std::int64_t MpiWorld::broadcast(std::int64_t value) const { return value; }
void MpiWorld::sendToRoot(int, const std::string&) const {
  assert(false && "a world of one has no rank 0 to send to");
}
std::optional<MpiWorld::Message> MpiWorld::poll() const { return std::nullopt; }

MpiSession::MpiSession(int*, char***) {
  if (launchedAsOneOfSeveral()) {
    status_ = Status::invalid(
        "started by mpirun as one of several processes, but this build has no MPI "
        "(install libopenmpi-dev and rebuild: tools/setup.sh)");
  }
}
MpiSession::~MpiSession() = default;

const MpiWorld& mpiWorld() { return gWorld; }

}  // namespace seam::tools
