#include "run_output.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "kernels.h"
#include "seam/backend/check.h"
#include "seam/backend/raii.h"
#include "seam/sim/base/bytes.h"

namespace seam::backend {

std::uint64_t fnv1aFloats(std::uint64_t state, const float* values, std::size_t count) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(values);
  for (std::size_t i = 0; i < count * sizeof(float); ++i) {
    state ^= bytes[i];
    state *= kFnvPrime;
  }
  return state;
}

OutputDiff compareRankFinals(const RankFinals& finals, const NumericOutput& expected) {
  OutputDiff d;
  const int h = expected.hidden;
  for (size_t s = 0; s < finals.rows.size(); ++s) {
    if (finals.tokens[s].empty()) continue;
    if (s >= expected.rows.size()) {
      d.identical = false;
      d.max_abs = INFINITY;
      return d;
    }
    for (size_t i = 0; i < finals.tokens[s].size(); ++i) {
      const int t = finals.tokens[s][i];
      if (t < 0 || t >= expected.tokens) continue;
      for (int k = 0; k < h; ++k) {
        d.add(static_cast<int>(s), t, k, finals.rows[s][i * h + k],
              expected.rows[s][static_cast<size_t>(t) * h + k]);
      }
    }
  }
  d.finish();
  return d;
}

namespace detail {

void assembleOutput(const SharedRun& s, const std::vector<RankOutcome>& outcomes,
                    GpuRunResult* out) {
  const int h = s.options.shape.hidden;
  NumericOutput& o = out->output;
  o.hidden = h;
  o.tokens = s.plan.source.batch.total();
  o.rows.assign(s.stacks, std::vector<float>(static_cast<size_t>(o.tokens) * h, 0.0f));
  o.producers.assign(s.stacks, std::vector<int>(o.tokens, 0));
  for (int stage : s.plan.source.flags.capture) {
    if (std::any_of(o.snapshots.begin(), o.snapshots.end(),
                    [&](const auto& p) { return p.first == stage; }))
      continue;
    o.snapshots.emplace_back(stage, std::vector<float>(static_cast<size_t>(o.tokens) * h, 0.0f));
  }
  for (int r = 0; r < s.plan.world(); ++r) {
    for (const auto& snap : outcomes[r].snapshots) {
      if (snap.stack != 0 || snap.stage < 0) continue;
      auto it = std::find_if(o.snapshots.begin(), o.snapshots.end(),
                             [&](const auto& p) { return p.first == snap.stage; });
      if (it == o.snapshots.end()) continue;
      const auto& toks = s.rows.tokens(snap.kind, r);
      for (size_t i = 0; i < toks.size() && static_cast<int>(i) < snap.rows; ++i) {
        if (toks[i] < 0) continue;
        std::memcpy(it->second.data() + static_cast<size_t>(toks[i]) * h,
                    snap.values.data() + i * h, h * sizeof(float));
      }
    }
  }
  for (int r = 0; r < s.plan.world(); ++r) {
    const RankOutcome& rank = outcomes[r];
    RankFinals finals;
    finals.rank = r;
    finals.tokens.assign(s.stacks, {});
    finals.rows.assign(s.stacks, {});
    bool any = false;
    for (int k = 0; k < s.stacks; ++k) {
      if (!rank.final_done[k]) continue;
      any = true;
      const auto& toks = s.rows.tokens(static_cast<RowKind>(rank.final_kind[k]), r);
      const std::vector<float>& host = rank.final_host[k];
      const int n = std::min(static_cast<int>(toks.size()), static_cast<int>(rank.final_rows[k]));
      finals.tokens[k].assign(toks.begin(), toks.begin() + n);
      finals.rows[k].assign(host.begin(), host.begin() + static_cast<std::ptrdiff_t>(n) * h);
      for (int i = 0; i < n; ++i) {
        const int t = toks[i];
        if (t < 0) continue;
        float* dst = o.rows[k].data() + static_cast<size_t>(t) * h;
        const float* src = host.data() + static_cast<size_t>(i) * h;
        if (o.producers[k][t]++ == 0) {
          std::memcpy(dst, src, h * sizeof(float));
        } else if (std::memcmp(dst, src, h * sizeof(float)) != 0) {
          out->ranks_disagree = true;
        }
      }
    }
    if (any) out->finals.push_back(std::move(finals));
  }
}

void collectOutcomes(const SharedRun& s, const std::vector<RankOutcome>& outcomes,
                     GpuRunResult* out) {
  std::set<std::string> seen(out->notes.begin(), out->notes.end());
  for (const RankOutcome& o : outcomes) {
    for (const std::string& n : o.notes) {
      if (seen.insert(n).second) out->notes.push_back(n);
    }
    out->timings.insert(out->timings.end(), o.timings.begin(), o.timings.end());
    if (s.options.graph_replays > 0) out->graph.push_back(o.graph);
  }
}

Expected<std::uint64_t> deviceHash(const SharedRun& s,
                                   const std::vector<std::unique_ptr<RankExecutor>>& ranks,
                                   const NumericOutput& output, std::vector<std::string>* notes) {
  const int h = s.options.shape.hidden;
  const Batch& batch = s.plan.source.batch;
  std::uint64_t state = kFnvOffsetBasis;
  for (int k = 0; k < s.stacks; ++k) {
    int first_token = 0;
    for (int d = 0; d < static_cast<int>(batch.tokens.size()); ++d) {
      const int n = batch.tokens[d];
      int holder = -1;
      for (int r = 0; r < s.plan.world() && holder < 0 && n > 0; ++r) {
        if (!ranks[r]->finalDone(k)) continue;
        const DeviceRows& f = ranks[r]->finalRows(k);
        const auto& toks = s.rows.tokens(f.kind, r);
        if (f.rows != n || static_cast<int>(toks.size()) != n) continue;
        bool in_order = true;
        for (int i = 0; i < n && in_order; ++i) in_order = toks[i] == first_token + i;
        // The first producer of these tokens is the lowest rank holding them.
        if (in_order && output.producers[k][first_token] > 0) holder = r;
      }
      if (holder >= 0) {
        SEAM_CUDA_CHECK(cudaSetDevice(ranks[holder]->device()));
        auto dstate = DeviceArray<std::uint64_t>::create(1);
        if (!dstate) return dstate.status();
        SEAM_CUDA_CHECK(cudaMemcpy(dstate->get(), &state, sizeof state, cudaMemcpyHostToDevice));
        SEAM_CUDA_CHECK(kernels::fnv1a(ranks[holder]->finalRows(k).data.get(),
                                       static_cast<std::size_t>(n) * h, dstate->get(), nullptr));
        SEAM_CUDA_CHECK(cudaMemcpy(&state, dstate->get(), sizeof state, cudaMemcpyDeviceToHost));
      } else if (n > 0) {
        notes->push_back("stack " + std::to_string(k) + " shard " + std::to_string(d) +
                         ": no rank holds its rows in token order; hashed on the host");
        state = fnv1aFloats(state, output.rows[k].data() + static_cast<size_t>(first_token) * h,
                            static_cast<std::size_t>(n) * h);
      }
      first_token += n;
    }
  }
  return state;
}

Expected<GpuRunResult> joinProcesses(const SharedRun& shared, ProcessGroup& processes,
                                     const ProcessReport& mine, GpuRunResult result) {
  const std::vector<std::string> parts = processes.gather(encodeReport(mine));
  // The verdict rank 0 broadcasts: how the run ended, the status code, the
  // message (the failure or the hang report).
  ByteWriter verdict;
  if (processes.rank() == 0) {
    std::vector<ProcessReport> reports;
    Status failure;
    for (const std::string& part : parts) {
      auto report = decodeReport(part);
      if (!report) {
        failure = report.status();
        break;
      }
      reports.push_back(std::move(*report));
    }
    for (const ProcessReport& r : reports) {
      if (failure && r.end == RankEnd::kFailed) failure = statusOf(r.code, r.message);
    }
    std::vector<RankPosition> positions;
    double idle = 0;
    bool hung = false;
    for (const ProcessReport& r : reports) {
      hung = hung || r.end == RankEnd::kHung;
      positions.push_back(r.position);
      idle = std::max(idle, r.idle_seconds);
    }
    if (!failure) {
      verdict.put(static_cast<std::int64_t>(RankEnd::kFailed));
      verdict.put(static_cast<std::int64_t>(failure.code()));
      verdict.put(failure.message());
    } else if (hung) {
      result.hung = true;
      result.hang_report = formatHangReport(shared.plan, positions, idle,
                                            shared.options.warmup + shared.options.iters);
      verdict.put(static_cast<std::int64_t>(RankEnd::kHung));
      verdict.put(static_cast<std::int64_t>(StatusCode::kOk));
      verdict.put(result.hang_report);
    } else {
      std::vector<RankOutcome> outcomes;
      for (ProcessReport& r : reports) outcomes.push_back(std::move(r.outcome));
      assembleOutput(shared, outcomes, &result);
      collectOutcomes(shared, outcomes, &result);
      // Every rank's rows are on this host now; the devices are in other processes.
      result.device_hash = result.output.hash();
      result.notes.push_back(
          "one process per rank: the output hash is folded on rank 0's host from the gathered "
          "rows");
      verdict.put(static_cast<std::int64_t>(RankEnd::kDone));
      verdict.put(static_cast<std::int64_t>(StatusCode::kOk));
      verdict.put(std::string());
    }
  }
  const std::string said = processes.broadcast(verdict.take());
  ByteReader r(said);
  const auto end = static_cast<RankEnd>(r.int64());
  const auto code = static_cast<StatusCode>(r.int64());
  std::string message = r.text();
  if (!r.ok()) return Status::internal("rank 0's verdict on the run is malformed");
  if (end == RankEnd::kFailed) return statusOf(code, std::move(message));
  if (end == RankEnd::kHung) {
    result.hung = true;
    result.hang_report = std::move(message);
  }
  return result;
}

}  // namespace detail
}  // namespace seam::backend
