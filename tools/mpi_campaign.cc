#include <unistd.h>

#include <set>

#include "mpi_runs.h"
#include "mpi_stream.h"
#include "run_progress.h"
#include "seam/reports/shard_rows.h"

namespace seam::tools {

std::vector<const mutants::Mutant*> campaignList(const mutants::CampaignSpec& spec) {
  if (!spec.mutants.empty()) return spec.mutants;
  return {mutants::registry().begin(), mutants::registry().end()};
}

/// `mpirun -np N seam mutate`: the mutants not yet decided (with --resume,
/// those rank 0 found no row of) are dealt out by rank (the p-th of them to
/// rank p mod N, so a run may be resumed with another N); every rank runs the
/// baseline and its mutants over the whole case space (a mutant stops at its
/// first kill in case order, so each mutant's verdict is the one-process
/// verdict). Each rank sends a mutant's rows to rank 0 as soon as it is
/// decided and rank 0 writes each, its own too, in a transaction of its own
/// as it arrives (a killed campaign keeps every mutant written); at the end
/// rank 0 puts the rows in list order and prints the one summary. Rank 0 has
/// opened the run (`opened`) or failed to (`open_status`).
int campaignUnderMpi(const MpiWorld& mpi, const mutants::CampaignSpec& spec,
                     std::optional<reports::StoredRun> opened, const Status& open_status,
                     const std::vector<std::string>& decided, const CampaignOutput& output) {
  // Rank 0 says why it could not open the run; mpirun gives its code.
  if (!runOpened(mpi, open_status)) return mpi.root() ? fail(open_status) : kExitOk;
  const std::vector<const mutants::Mutant*> all = campaignList(spec);
  std::string lines;  // rank 0's decided ids, one a line, for every rank
  for (const std::string& id : decided) lines += id + "\n";
  lines = mpi.broadcast(lines);
  std::set<std::string> done;
  for (std::size_t begin = 0, end; (end = lines.find('\n', begin)) != std::string::npos;
       begin = end + 1) {
    done.insert(lines.substr(begin, end - begin));
  }
  std::set<std::string> share;
  std::size_t position = 0;
  for (const mutants::Mutant* m : all) {
    if (done.count(std::string(m->id())) > 0) continue;
    if (position++ % static_cast<std::size_t>(mpi.size()) == static_cast<std::size_t>(mpi.rank())) {
      share.insert(std::string(m->id()));
    }
  }

  CampaignProgress progress(mpi.root() && isatty(2));
  std::optional<mutants::CampaignResult> mine;  // this rank's, once its work has ended
  Status stored;                                // rank 0: the first store error
  const std::vector<std::string> last_words = streamToRoot(
      mpi,
      [&](Outbox& outbox) {
        reports::CampaignShare listener(spec.policy, share, &progress,
                                        [&outbox](reports::MutantRows rows) {
                                          reports::CampaignShardRows one;
                                          one.mutants.push_back(std::move(rows));
                                          outbox.post(reports::encodeCampaignShard(one));
                                        });
        mutants::CampaignSpec whole = spec;
        whole.mutants = all;
        auto result = mutants::runCampaign(whole, &listener);
        if (!result) return "E" + result.status().message();
        reports::CampaignShardRows baseline;
        baseline.cases = result->cases;
        baseline.baseline_refused = result->baseline_refused;
        baseline.baseline_holds = result->baseline_holds;
        mine = std::move(*result);
        return "R" + reports::encodeCampaignShard(baseline);
      },
      [&](const std::string& batch) {
        if (!stored) return;  // the other ranks' mutants are still taken, not written
        auto rows = reports::decodeCampaignShard(batch);
        stored = rows ? reports::writeMutantRows(opened->store, opened->run.id, rows->mutants)
                      : rows.status();
      });
  if (!mpi.root()) return kExitOk;  // mpirun's code is rank 0's

  if (Status st = lastWordsStatus(last_words); !st) return fail(st);
  if (!stored) return fail(stored);
  mutants::CampaignResult total = *mine;
  total.outcomes.clear();
  reports::Store& store = opened->store;
  const std::int64_t run_id = opened->run.id;
  if (total.baseline_holds) {
    auto rows = reports::putMutantRowsInOrder(store, run_id, all);
    if (!rows) return fail(rows.status());
    for (std::size_t i = 0; i < all.size(); ++i)
      total.outcomes.push_back(reports::outcomeFromRows(all[i], (*rows)[i]));
  }
  return finishCampaign(store, run_id, spec, total, output);
}

}  // namespace seam::tools
