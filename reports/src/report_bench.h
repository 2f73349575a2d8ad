// The `seam gpu bench` part of `seam report`: a bench run's three tables
// (collectives inside the plan against bare NCCL, the fused kernel against
// NCCL all-reduce + add+norm, the captured step against eager launches) and,
// in the HTML page, their points as three plots over every bench run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report_doc.h"
#include "seam/reports/store.h"
#include "svg_plot.h"

namespace seam::reports {

/// The points of the bench plots, gathered over every bench run of the store.
struct BenchPlots {
  LinePlot collectives{"Collectives: inside the plan vs bare NCCL",
                       "message size (bytes)",
                       "busbw GB/s (slowest rank)",
                       true,
                       true,
                       {{"inside the plan", {}, false}, {"bare NCCL", {}, true}}};
  LinePlot fused{"Fused all-reduce + add + RMSNorm vs NCCL all-reduce + add+norm",
                 "tokens",
                 "median us (slowest rank)",
                 true,
                 false,
                 {}};
  BarPlot graph{"Decode step: eager vs CUDA-graph replay vs sum of its kernels",
                "us (median)",
                {"eager launches", "graph replay", "sum of kernels (CUPTI)"},
                {}};
  bool empty() const {
    return collectives.series[0].points.empty() && fused.series.empty() && graph.groups.empty();
  }
};

/// `v` with `digits` decimals.
std::string fixed(double v, int digits);

/// `seam gpu bench` rows (gpu_import.h's bench groups) as three tables; their
/// points go into `plots` (labelled with run `run_id`).
void renderBench(Doc& d, const std::vector<CaseRecord>& cases,
                 const std::vector<TimingRecord>& timings,
                 const std::vector<EquivalenceRecord>& equivalences, std::int64_t run_id,
                 BenchPlots& plots);

/// The bench plots over every bench run: drawn in the HTML page, named in
/// the Markdown.
void renderBenchPlots(Doc& d, const BenchPlots& plots);

}  // namespace seam::reports
