#include <unistd.h>

#include <cstring>

#include "mpi_runs.h"
#include "mpi_stream.h"
#include "progress.h"
#include "seam/reports/shard_rows.h"

namespace seam::tools {

namespace {

/// Bytes of a list of case indices (what a resumed run skips), for the other ranks.
std::string encodeIndices(const std::vector<std::int64_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(std::int64_t));
}
std::vector<std::int64_t> decodeIndices(const std::string& bytes) {
  std::vector<std::int64_t> v(bytes.size() / sizeof(std::int64_t));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(std::int64_t));
  return v;
}

}  // namespace

/// `mpirun -np N seam sweep`: rank r of N takes shard i + n*r of n*N (the
/// user's shard i/n split further; the cases a resumed run skips are global
/// indices, so a run may be resumed with another N). Each rank sends every
/// batch of rows to rank 0 as it finishes, and rank 0 writes each batch, its
/// own too, in a transaction of its own as it arrives (a killed run keeps
/// every batch written), then prints the summary of the whole shard. Rank 0
/// has opened the run (`opened`) or failed to (`open_status`).
int sweepUnderMpi(const MpiWorld& mpi, properties::SweepSpec spec,
                  std::optional<reports::StoredRun> opened, const Status& open_status,
                  const SweepOutput& output) {
  if (!runOpened(mpi, open_status)) return mpi.root() ? fail(open_status) : kExitOk;
  spec.skip = decodeIndices(mpi.broadcast(encodeIndices(spec.skip)));
  const properties::SweepSpec whole = spec;  // what the run's summary describes
  spec.shard = {whole.shard.index + whole.shard.count * mpi.rank(), whole.shard.count * mpi.size()};

  ProgressLine progress;
  std::optional<properties::SweepResult> live;  // this rank's, once its work has ended
  Status stored;                                // rank 0: the first store error
  const std::vector<std::string> last_words = streamToRoot(
      mpi,
      [&](Outbox& outbox) {
        reports::SweepBatcher batcher(spec, mpi.root() && isatty(2) ? &progress : nullptr,
                                      [&outbox](std::vector<reports::CaseRows> batch) {
                                        reports::SweepShardRows rows;
                                        rows.cases = std::move(batch);
                                        outbox.post(reports::encodeSweepShard(rows));
                                      });
        auto result = properties::runSweep(spec, &batcher);
        batcher.flush();
        // Every rank has its last word, a failed one its message.
        if (!result) return "E" + result.status().message();
        live = std::move(*result);
        return "R" + reports::encodeSweepShard(reports::sweepTotals(*live));
      },
      [&](const std::string& batch) {
        if (!stored) return;  // the other ranks' batches are still taken, not written
        auto rows = reports::decodeSweepShard(batch);
        stored = rows
                     ? reports::writeCaseRows(opened->store, opened->run.id, std::move(rows->cases))
                     : rows.status();
      });
  if (!mpi.root()) return kExitOk;  // mpirun's code is rank 0's

  if (Status st = lastWordsStatus(last_words); !st) return fail(st);
  if (!stored) return fail(stored);
  std::vector<reports::SweepShardRows> ranks;
  for (const std::string& word : last_words) {
    auto shard = reports::decodeSweepShard(word.substr(1));
    if (!shard) return fail(shard.status());
    ranks.push_back(std::move(*shard));
  }
  return finishSweep(*opened, whole, reports::mergeSweepTotals(*live, ranks), output);
}

}  // namespace seam::tools
