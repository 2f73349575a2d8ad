#include "rank_outcome.h"

#include "seam/sim/base/bytes.h"

namespace seam::backend::detail {

RankOutcome outcomeOf(const SharedRun& s, const RankExecutor& rank, int r) {
  RankOutcome o;
  o.rank = r;
  for (int k = 0; k < s.stacks; ++k) {
    o.final_done.push_back(rank.finalDone(k) ? 1 : 0);
    o.final_kind.push_back(static_cast<std::int64_t>(rank.finalRows(k).kind));
    o.final_rows.push_back(rank.finalRows(k).rows);
    o.final_host.push_back(rank.finalDone(k) ? rank.finalHost(k) : std::vector<float>());
  }
  o.snapshots = rank.snapshotsHost();
  const std::vector<Op>& ops = s.plan.ranks[r];
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const TimingSummary t = summarizeTimes(rank.samples()[i]);
    o.timings.push_back({.rank = r,
                         .op_index = static_cast<int>(i),
                         .kind = op.kind,
                         .axis = op.axis,
                         .group_size = rank.opGroupSize()[i],
                         .bytes = rank.opBytes()[i],
                         .median_us = t.median,
                         .p10_us = t.p10,
                         .p90_us = t.p90,
                         .path = rank.opPath()[i],
                         .nccl_call = rank.opNccl()[i].call,
                         .nccl_count = rank.opNccl()[i].count});
  }
  if (s.options.graph_replays > 0) o.graph = rank.graphStep();
  o.notes = rank.notes();
  return o;
}

Status statusOf(StatusCode code, std::string message) {
  switch (code) {
    case StatusCode::kInvalidInput:
      return Status::invalid(std::move(message));
    case StatusCode::kRefused:
      return Status::refused(std::move(message));
    case StatusCode::kOk:
    case StatusCode::kInternal:
      break;
  }
  return Status::internal(std::move(message));
}

std::string encodeReport(const ProcessReport& p) {
  ByteWriter w;
  w.put(static_cast<std::int64_t>(p.end));
  w.put(static_cast<std::int64_t>(p.code));
  w.put(p.message);
  w.put(std::int64_t{p.position.rank});
  w.put(std::int64_t{p.position.op_index});
  w.put(std::int64_t{p.position.iteration});
  w.put(std::int64_t{p.position.setting_up});
  w.put(std::int64_t{p.position.finished});
  w.put(p.idle_seconds);
  const RankOutcome& o = p.outcome;
  w.put(std::int64_t{o.rank});
  w.put(static_cast<std::int64_t>(o.final_done.size()));
  for (size_t k = 0; k < o.final_done.size(); ++k) {
    w.put(o.final_done[k]);
    w.put(o.final_kind[k]);
    w.put(o.final_rows[k]);
    w.put(o.final_host[k]);
  }
  w.put(static_cast<std::int64_t>(o.snapshots.size()));
  for (const auto& snap : o.snapshots) {
    w.put(std::int64_t{snap.stack});
    w.put(std::int64_t{snap.stage});
    w.put(static_cast<std::int64_t>(snap.kind));
    w.put(std::int64_t{snap.rows});
    w.put(snap.values);
  }
  w.put(static_cast<std::int64_t>(o.timings.size()));
  for (const OpTiming& t : o.timings) {
    w.put(std::int64_t{t.rank});
    w.put(std::int64_t{t.op_index});
    w.put(static_cast<std::int64_t>(t.kind));
    w.put(std::int64_t{t.axis});
    w.put(std::int64_t{t.group_size});
    w.put(t.bytes);
    w.put(t.median_us);
    w.put(t.p10_us);
    w.put(t.p90_us);
    w.put(static_cast<std::int64_t>(t.path));
    w.put(t.nccl_call);
    w.put(t.nccl_count);
  }
  const GraphStep& g = o.graph;
  w.put(std::int64_t{g.rank});
  for (double v :
       {g.eager_median_us, g.eager_p10_us, g.eager_p90_us, g.graph_median_us, g.graph_p10_us,
        g.graph_p90_us, g.kernel_sum_us, g.kernel_busy_us, g.op_sum_us}) {
    w.put(v);
  }
  w.put(std::int64_t{g.kernels});
  w.put(std::int64_t{g.ops});
  w.put(std::int64_t{g.replays});
  w.put(std::int64_t{g.identical});
  w.put(static_cast<std::int64_t>(o.notes.size()));
  for (const std::string& n : o.notes) w.put(n);
  return w.take();
}

Expected<ProcessReport> decodeReport(const std::string& bytes) {
  ByteReader r(bytes);
  ProcessReport p;
  p.end = static_cast<RankEnd>(r.int64());
  p.code = static_cast<StatusCode>(r.int64());
  p.message = r.text();
  p.position.rank = static_cast<int>(r.int64());
  p.position.op_index = static_cast<int>(r.int64());
  p.position.iteration = static_cast<int>(r.int64());
  p.position.setting_up = r.int64() != 0;
  p.position.finished = r.int64() != 0;
  p.idle_seconds = r.real();
  RankOutcome& o = p.outcome;
  o.rank = static_cast<int>(r.int64());
  const std::int64_t stacks = r.count(32);
  for (std::int64_t k = 0; k < stacks && r.ok(); ++k) {
    o.final_done.push_back(r.int64());
    o.final_kind.push_back(r.int64());
    o.final_rows.push_back(r.int64());
    o.final_host.push_back(r.floats());
  }
  const std::int64_t snaps = r.count(40);
  for (std::int64_t i = 0; i < snaps && r.ok(); ++i) {
    RankExecutor::HostSnapshot snap;
    snap.stack = static_cast<int>(r.int64());
    snap.stage = static_cast<int>(r.int64());
    snap.kind = static_cast<RowKind>(r.int64());
    snap.rows = static_cast<int>(r.int64());
    snap.values = r.floats();
    o.snapshots.push_back(std::move(snap));
  }
  const std::int64_t timings = r.count(96);
  for (std::int64_t i = 0; i < timings && r.ok(); ++i) {
    OpTiming t;
    t.rank = static_cast<int>(r.int64());
    t.op_index = static_cast<int>(r.int64());
    t.kind = static_cast<OpKind>(r.int64());
    t.axis = static_cast<std::int8_t>(r.int64());
    t.group_size = static_cast<int>(r.int64());
    t.bytes = r.int64();
    t.median_us = r.real();
    t.p10_us = r.real();
    t.p90_us = r.real();
    t.path = static_cast<ArAddNormPath>(r.int64());
    t.nccl_call = r.text();
    t.nccl_count = r.int64();
    o.timings.push_back(std::move(t));
  }
  GraphStep& g = o.graph;
  g.rank = static_cast<int>(r.int64());
  for (double* v :
       {&g.eager_median_us, &g.eager_p10_us, &g.eager_p90_us, &g.graph_median_us, &g.graph_p10_us,
        &g.graph_p90_us, &g.kernel_sum_us, &g.kernel_busy_us, &g.op_sum_us}) {
    *v = r.real();
  }
  g.kernels = static_cast<int>(r.int64());
  g.ops = static_cast<int>(r.int64());
  g.replays = static_cast<int>(r.int64());
  g.identical = r.int64() != 0;
  const std::int64_t notes = r.count(8);
  for (std::int64_t i = 0; i < notes && r.ok(); ++i) o.notes.push_back(r.text());
  if (!r.ok() || !r.atEnd())
    return Status::internal("a rank's report sent by its process is malformed");
  return p;
}

}  // namespace seam::backend::detail
