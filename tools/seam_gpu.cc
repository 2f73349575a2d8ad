// seam-gpu: the GPU side of seam (DESIGN §7), a separate binary so that the
// GPU machine needs neither SQLite nor Graphviz. A thin main (STYLE 3):
//   seam-gpu info                       devices and versions
//   seam-gpu run CASE [options]         a case's plan on the GPUs, against the
//                                       CPU executor and the reference
//   seam-gpu bench CASE [options]       a plan's collectives against bare NCCL,
//                                       the fused ar_add_norm kernel against
//                                       NCCL + add+norm, a captured step
//   seam-gpu bench-allreduce --bytes N  bare NCCL against a one-op plan
// Exit codes (DESIGN §9): 0 identical (run) / done, 1 not identical or hung,
// 2 bad input (including too few GPUs), 3 device or internal error.
// The numeric mode is --numeric exact|real: --mode is the case's forward mode
// (decode|extend), shared with every seam command.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "case_options.h"
#include "command.h"
#include "mpi_world.h"
#include "seam/properties/diff.h"
#include "seam/backend/bench.h"
#include "seam/backend/device.h"
#include "seam/backend/executor.h"
#include "seam/sim/bit_identity.h"
#include "seam/sim/numeric_executor.h"

namespace seam::tools {
namespace {

using Json = nlohmann::ordered_json;

/// The processes mpirun started, for the backend (one process per rank);
/// null when this process runs every rank.
class MpiProcesses : public backend::ProcessGroup {
 public:
  explicit MpiProcesses(const MpiWorld& world) : world_(world) {}
  int rank() const override { return world_.rank(); }
  int size() const override { return world_.size(); }
  int device() const override { return world_.localRank(); }
  std::string broadcast(const std::string& bytes) override { return world_.broadcast(bytes); }
  std::vector<std::string> gather(const std::string& mine) override { return world_.gather(mine); }

 private:
  const MpiWorld& world_;
};

backend::ProcessGroup* processGroup() {
  static MpiProcesses processes(mpiWorld());
  return mpiWorld().split() ? &processes : nullptr;
}

int failGpu(const Status& status) {
  // Under mpirun a rank other than 0 says which it is: its failure may be its
  // own (its host's GPUs), which rank 0 never hears of.
  const std::string rank = mpiWorld().root() ? "" : "rank " + std::to_string(mpiWorld().rank()) + ": ";
  std::cerr << "seam-gpu: " << rank << oneLine(status.message()) << "\n";
  return status.code() == StatusCode::kInternal ? kExitInternal : kExitBadInput;
}

std::string hex(std::uint64_t v) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

Status writeJson(const std::string& path, const Json& j) {
  std::ofstream out(path);
  if (!out) return Status::invalid("cannot write --json " + path.substr(0, 200));
  out << j.dump(2) << "\n";
  if (!out) return Status::invalid("cannot write --json " + path.substr(0, 200));
  return Status::ok();
}

Json versionsJson(const backend::RuntimeVersions& v) {
  return {{"cuda_runtime", v.cuda_runtime}, {"cuda_driver", v.cuda_driver}, {"nccl", v.nccl}, {"text", v.describe()}};
}

Json diffJson(const OutputDiff& d) {
  Json j = {{"identical", d.identical}};
  if (!d.identical) {
    j["first"] = {{"stack", d.stack}, {"token", d.token}, {"element", d.element}, {"a", d.a}, {"b", d.b}};
    j["max_abs"] = std::isfinite(d.max_abs) ? Json(d.max_abs) : Json(nullptr);
    j["max_ulps"] = d.max_ulps;
    j["ulps_of"] = d.bf16_ulps ? "bf16" : "fp32";
    j["describe"] = d.describe();
  }
  return j;
}

// ---- info -------------------------------------------------------------------------

int runInfo() {
  auto versions = backend::runtimeVersions();
  if (!versions) return failGpu(versions.status());
  auto devices = backend::listDevices();
  if (!devices) return failGpu(devices.status());
  std::cout << versions->describe() << "\n";
  if (devices->empty()) std::cout << "no CUDA device visible\n";
  for (const backend::DeviceInfo& d : *devices) {
    std::cout << "device " << d.index << ": " << d.name << ", sm_" << d.sm_major << d.sm_minor << ", "
              << fixed(static_cast<double>(d.memory_bytes) / (1u << 30), 1) << " GiB, " << d.multiprocessors
              << " SMs\n";
  }
  return kExitOk;
}

// ---- run --------------------------------------------------------------------------------

struct RunOptions {
  CaseOptions c;
  std::string numeric = "exact";
  int hidden = numeric::Shape{}.hidden;
  int inner = numeric::Shape{}.inner;
  int warmup = backend::GpuRunOptions{}.warmup;
  int iters = backend::GpuRunOptions{}.iters;
  double watchdog = backend::GpuRunOptions{}.watchdog_seconds;
  int rank = 0;  ///< whose ops the timing table shows
  std::string fused = "on";
  std::string fused_protocol = "auto";
  int graph_replays = 0;
  bool check_unfused = false;  ///< run again with ar_add_norm unfused and compare
  std::string json;
};

const std::string kProtocolHelp = "how the fused kernel's members send rows: auto|flag|ll (auto: ll up to " +
                                  std::to_string(backend::kFusedLlAutoBytes >> 10) + " KiB per member)";

Expected<backend::PeerProtocol> parseProtocol(const std::string& text) {
  backend::PeerProtocol p;
  if (backend::parsePeerProtocol(text, &p)) return p;
  return Status::invalid("--fused-protocol \"" + text.substr(0, 64) + "\" is not auto, flag or ll");
}

Expected<bool> parseOnOff(const std::string& text, const char* option) {
  if (text == "on") return true;
  if (text == "off") return false;
  return Status::invalid(std::string(option) + " \"" + text.substr(0, 64) + "\" is not one of on, off");
}

Json graphJson(const std::vector<backend::GraphStep>& steps) {
  Json out = Json::array();
  for (const backend::GraphStep& g : steps) {
    out.push_back({{"rank", g.rank},
                   {"ops", g.ops},
                   {"replays", g.replays},
                   {"eager_median_us", g.eager_median_us},
                   {"eager_p10_us", g.eager_p10_us},
                   {"eager_p90_us", g.eager_p90_us},
                   {"graph_median_us", g.graph_median_us},
                   {"graph_p10_us", g.graph_p10_us},
                   {"graph_p90_us", g.graph_p90_us},
                   {"kernel_sum_us", g.kernel_sum_us},
                   {"kernel_busy_us", g.kernel_busy_us},
                   {"kernels", g.kernels},
                   {"graph_over_kernel_sum", g.kernel_sum_us > 0 ? g.graph_median_us / g.kernel_sum_us : 0.0},
                   {"graph_over_kernel_busy", g.kernel_busy_us > 0 ? g.graph_median_us / g.kernel_busy_us : 0.0},
                   {"op_sum_us", g.op_sum_us},
                   {"eager_over_graph", g.graph_median_us > 0 ? g.eager_median_us / g.graph_median_us : 0.0},
                   {"identical", g.identical}});
  }
  return out;
}

/// One line per rank: the step eager, replayed, and the sum of its kernels.
void printGraph(const std::vector<backend::GraphStep>& steps) {
  for (const backend::GraphStep& g : steps) {
    std::printf("graph rank %d: %d ops; eager step %.1f us, graph replay %.1f us (%.2fx faster than eager); "
                "%d kernels sum to %.1f us (replay/sum %.3f; busy %.1f us, replay/busy %.3f); ops' event times sum "
                "to %.1f us; replay %s the eager step\n",
                g.rank, g.ops, g.eager_median_us, g.graph_median_us,
                g.graph_median_us > 0 ? g.eager_median_us / g.graph_median_us : 0.0, g.kernels, g.kernel_sum_us,
                g.kernel_sum_us > 0 ? g.graph_median_us / g.kernel_sum_us : 0.0, g.kernel_busy_us,
                g.kernel_busy_us > 0 ? g.graph_median_us / g.kernel_busy_us : 0.0, g.op_sum_us,
                g.identical ? "bit-identical to" : "DIFFERS from");
  }
}

Expected<numeric::Mode> parseNumeric(const std::string& text) {
  if (text == "exact") return numeric::Mode::kExact;
  if (text == "real") return numeric::Mode::kReal;
  return Status::invalid("--numeric \"" + text.substr(0, 64) + "\" is not one of exact, real");
}

std::string groupText(const Op& op, int group_size) {
  if (!op.hasGroup()) return "-";
  return std::string(axisName(op.groupAxis())) + "/" + std::to_string(group_size);
}

int runRun(const RunOptions& o, const std::string& command_line) {
  if (!o.c.trace.empty()) return failGpu(Status::invalid("--trace: seam-gpu runs a policy's plan; traces are for seam check and seam diff"));
  auto mode = parseNumeric(o.numeric);
  if (!mode) return failGpu(mode.status());
  auto c = buildCase(o.c);
  if (!c) return failGpu(c.status());
  auto plan = buildPolicyPlan(o.c, *c);
  if (!plan) return failGpu(plan.status());
  if (o.rank < 0 || o.rank >= plan->world()) {
    return failGpu(Status::invalid("--rank " + std::to_string(o.rank) + " is not a rank of the world of " +
                                   std::to_string(plan->world())));
  }
  auto fused = parseOnOff(o.fused, "--fused");
  if (!fused) return failGpu(fused.status());
  auto protocol = parseProtocol(o.fused_protocol);
  if (!protocol) return failGpu(protocol.status());
  backend::GpuRunOptions options;
  options.mode = *mode;
  options.shape = numeric::Shape{.hidden = o.hidden, .inner = o.inner};
  options.warmup = o.warmup;
  options.iters = o.iters;
  options.watchdog_seconds = o.watchdog;
  options.fuse_ar_add_norm = *fused;
  options.fused_protocol = *protocol;
  options.graph_replays = o.graph_replays;
  if (Status st = backend::validateRunOptions(options); !st) return failGpu(st);

  auto gpu = backend::runPlanOnGpus(*plan, options, processGroup());
  if (!gpu) return failGpu(gpu.status());
  std::optional<OutputDiff> vs_unfused;
  if (o.check_unfused && !gpu->hung) {
    backend::GpuRunOptions unfused = options;
    unfused.fuse_ar_add_norm = false;
    unfused.graph_replays = 0;
    auto other = backend::runPlanOnGpus(*plan, unfused, processGroup());
    if (!other) return failGpu(other.status());
    if (!other->hung) vs_unfused = compareOutputs(gpu->output, other->output);
  }
  // Under mpirun rank 0 holds the whole result; the others are done.
  if (!mpiWorld().root()) return kExitOk;
  const NumericRun cpu = runPlanNumeric(*plan, *mode, options.shape);
  const NumericOutput reference = runReference(*c, *mode, options.shape);
  const bool exact = *mode == numeric::Mode::kExact;

  Json j;
  j["tool"] = "seam-gpu run";
  j["version"] = kSeamVersion;
  j["command"] = command_line;
  j["case"] = {{"model", c->model.name},
               {"pattern", c->model.pattern.text()},
               {"config", c->config.describe()},
               {"flags", c->flags.describe()},
               {"tokens", c->batch.describe()},
               {"policy", plan->policy},
               {"reproduce", reproduceCommand(*c, plan->policy) +
                                 (o.c.decision.empty() ? "" : " --decision " + o.c.decision)}};
  j["numeric"] = {{"mode", o.numeric}, {"hidden", o.hidden}, {"inner", o.inner}};
  j["warmup"] = o.warmup;
  j["iters"] = o.iters;
  j["device"] = gpu->device;
  j["versions"] = versionsJson(gpu->versions);
  j["hung"] = gpu->hung;
  j["notes"] = gpu->notes;

  std::cout << "seam-gpu run: " << c->model.name << " " << c->model.pattern.text() << "  policy "
            << plan->policy << (o.c.decision.empty() ? "" : " with --decision " + o.c.decision) << "  (" << c->config.describe() << "; " << c->flags.describe() << "; tokens "
            << c->batch.describe() << ")\n";
  std::cout << o.numeric << " mode, hidden " << o.hidden << ", inner " << o.inner << ", on " << gpu->device << " ("
            << gpu->versions.describe() << ")\n";
  for (const std::string& n : gpu->notes) std::cout << "note: " << n << "\n";

  if (gpu->hung) {
    j["hang_report"] = gpu->hang_report;
    j["verdict"] = "hung";
    std::cout << "HUNG: " << gpu->hang_report << "\n";
    if (!o.json.empty()) {
      if (Status st = writeJson(o.json, j); !st) return failGpu(st);
    }
    return kExitPropertyFailed;
  }

  // Verdicts: the assembled output by hash first (computed on the devices),
  // element by element where the hashes differ; then every rank's own rows.
  const bool cpu_ran = cpu.ran();
  const OutputDiff vs_cpu = cpu_ran ? compareOutputs(gpu->output, cpu.output) : OutputDiff{.identical = false};
  const OutputDiff vs_ref = compareOutputs(gpu->output, reference);
  const std::uint64_t cpu_hash = cpu.output.hash();
  const std::uint64_t ref_hash = reference.hash();
  j["hashes"] = {{"gpu_device", hex(gpu->device_hash)}, {"gpu_host", hex(gpu->output.hash())},
                 {"cpu", hex(cpu_hash)}, {"reference", hex(ref_hash)}};
  j["cpu_ran"] = cpu_ran;
  if (!cpu_ran) j["cpu_failure"] = describeViolation(cpu.failures.front());
  j["vs_cpu"] = diffJson(vs_cpu);
  j["vs_reference"] = diffJson(vs_ref);
  j["ranks_disagree"] = gpu->ranks_disagree;

  std::cout << "output: gpu " << hex(gpu->device_hash) << ", cpu executor " << hex(cpu_hash) << ", reference "
            << hex(ref_hash) << "\n";
  if (!cpu_ran) std::cout << "the CPU executor refuses the plan: " << describeViolation(cpu.failures.front()) << "\n";
  Json ranks = Json::array();
  bool all_identical = cpu_ran && vs_cpu.identical && vs_ref.identical && !gpu->ranks_disagree;
  for (const backend::RankFinals& f : gpu->finals) {
    const OutputDiff rc = cpu_ran ? backend::compareRankFinals(f, cpu.output) : OutputDiff{.identical = false};
    const OutputDiff rr = backend::compareRankFinals(f, reference);
    all_identical = all_identical && rc.identical && rr.identical;
    ranks.push_back({{"rank", f.rank}, {"vs_cpu", diffJson(rc)}, {"vs_reference", diffJson(rr)}});
    std::cout << "rank " << f.rank << ": vs the CPU executor " << (cpu_ran ? rc.describe() : "n/a")
              << "; vs the reference " << rr.describe() << "\n";
  }
  j["ranks"] = ranks;
  if (gpu->finals.empty()) {
    all_identical = false;
    std::cout << "no rank produced a final output\n";
  }
  if (gpu->ranks_disagree) std::cout << "ranks holding the same token produced different rows\n";

  // Real mode: bit-identity with the CPU is not expected (cuBLAS sums in
  // another order); the run must complete with every rank agreeing and
  // finite outputs.
  bool finite = true;
  for (const auto& stack : gpu->output.rows) {
    for (float v : stack) finite = finite && std::isfinite(v);
  }
  bool graph_identical = true;
  for (const backend::GraphStep& g : gpu->graph) graph_identical = graph_identical && g.identical;
  // Exact mode: the fused and unfused ar_add_norm must agree bit for bit;
  // real mode: reported (within bf16 rounding when NCCL adds in another order).
  bool unfused_ok = true;
  if (vs_unfused) {
    j["fused_vs_unfused"] = diffJson(*vs_unfused);
    std::cout << "fused ar_add_norm vs unfused: " << vs_unfused->describe() << "\n";
    unfused_ok = !exact || vs_unfused->identical;
  }
  if (!gpu->graph.empty()) {
    j["graph"] = graphJson(gpu->graph);
    printGraph(gpu->graph);
  }
  const bool ok = graph_identical && unfused_ok && (exact ? all_identical : (!gpu->ranks_disagree && finite && !gpu->finals.empty()));
  j["verdict"] = exact ? (all_identical ? "identical" : "differs") : (ok ? "completed" : "failed");

  // Timings: every rank's in the JSON, one rank's as a table.
  Json timings = Json::array();
  std::cout << "timings of rank " << o.rank << " (median, p10, p90 of " << o.iters << " iterations, us):\n";
  std::printf("%4s  %-20s %-10s %12s %10s %10s %10s %10s %10s  %s\n", "#", "op", "group", "bytes", "median", "p10",
              "p90", "algbw", "busbw", "path");
  for (const backend::OpTiming& t : gpu->timings) {
    const Op& op = plan->ranks[t.rank][t.op_index];
    const double algbw = backend::algBandwidthGBs(t.bytes, t.median_us);
    const double factor = backend::busBandwidthFactor(t.kind, t.group_size);
    timings.push_back({{"rank", t.rank},
                       {"op_index", t.op_index},
                       {"op", std::string(opName(t.kind))},
                       {"group", op.hasGroup() ? Json(std::string(axisName(op.groupAxis()))) : Json(nullptr)},
                       {"group_size", t.group_size},
                       {"layer", op.layer},
                       {"stage", op.stage},
                       {"stack", op.stack},
                       {"phase", std::string(phaseName(op.phase))},
                       {"bytes", t.bytes},
                       {"median_us", t.median_us},
                       {"p10_us", t.p10_us},
                       {"p90_us", t.p90_us},
                       {"algbw_gbs", algbw},
                       {"busbw_gbs", algbw * factor},
                       {"path", backend::arAddNormPathName(t.path)},
                       {"nccl_call", t.nccl_call},
                       {"nccl_count", t.nccl_count}});
    if (t.rank != o.rank) continue;
    std::printf("%4d  %-20s %-10s %12lld %10.2f %10.2f %10.2f %10s %10s  %s\n", t.op_index,
                std::string(opName(t.kind)).c_str(), groupText(op, t.group_size).c_str(),
                static_cast<long long>(t.bytes), t.median_us, t.p10_us, t.p90_us, fixed(algbw, 2).c_str(),
                factor > 0 ? fixed(algbw * factor, 2).c_str() : "-", backend::arAddNormPathName(t.path));
  }
  j["timings"] = timings;
  if (!graph_identical) std::cout << "the graph replay differs from the eager step\n";
  std::cout << (exact ? (all_identical ? "IDENTICAL" : "DIFFERS")
                      : (ok ? "COMPLETED (real mode: " + vs_cpu.describe() + " vs the CPU executor)" : "FAILED"))
            << "\n";
  if (!o.json.empty()) {
    if (Status st = writeJson(o.json, j); !st) return failGpu(st);
  }
  return ok ? kExitOk : kExitPropertyFailed;
}

// ---- bench-allreduce ----------------------------------------------------------------------

int runBench(std::int64_t bytes, int iters, const std::string& json) {
  auto bench = backend::benchAllReduce(bytes, iters);
  if (!bench) return failGpu(bench.status());
  const double ratio = bench->bare_busbw > 0 ? bench->plan_busbw / bench->bare_busbw : 0;
  std::cout << "all-reduce of " << bench->bytes << " bytes over " << bench->devices << " GPU(s), median of "
            << bench->iters << " iterations (slowest rank):\n";
  std::printf("  %-12s %12.2f us  busbw %10.2f GB/s\n", "bare NCCL", bench->bare_median_us, bench->bare_busbw);
  std::printf("  %-12s %12.2f us  busbw %10.2f GB/s\n", "one-op plan", bench->plan_median_us, bench->plan_busbw);
  if (bench->devices > 1) std::printf("  plan / bare busbw: %.3f\n", ratio);
  if (!json.empty()) {
    Json j = {{"tool", "seam-gpu bench-allreduce"},
              {"version", kSeamVersion},
              {"devices", bench->devices},
              {"bytes", bench->bytes},
              {"iters", bench->iters},
              {"bare_median_us", bench->bare_median_us},
              {"plan_median_us", bench->plan_median_us},
              {"bare_busbw_gbs", bench->bare_busbw},
              {"plan_busbw_gbs", bench->plan_busbw},
              {"plan_over_bare", ratio}};
    if (Status st = writeJson(json, j); !st) return failGpu(st);
  }
  return kExitOk;
}

// ---- bench ----------------------------------------------------------------------------

struct BenchOptions {
  CaseOptions c;
  std::string numeric = "exact";
  int hidden = 4096;
  int inner = 8192;
  int iters = 50;  ///< timed runs of the plan, and bare calls per collective
  int graph_replays = 50;
  int fused_iters = 200;
  std::string fused_hidden = "2688,4096";
  std::string fused_tokens = "1,2,4,8,16,32,64,128,256,512,1024,2048";
  std::string sections = "collectives,fused,graph";
  std::string fused_protocol = "auto";
  std::string json;
};

Json summaryJson(const backend::TimingSummary& t) {
  return {{"median_us", t.median}, {"p10_us", t.p10}, {"p90_us", t.p90}};
}

/// Everything is checked before any GPU is looked for.
int runBenchCmd(const BenchOptions& o, const std::string& command_line) {
  if (!o.c.trace.empty()) return failGpu(Status::invalid("--trace: seam-gpu bench runs a policy's plan"));
  auto mode = parseNumeric(o.numeric);
  if (!mode) return failGpu(mode.status());
  bool collectives = false, fused = false, graph = false;
  {
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = o.sections.find(',', start);
      const std::string name = o.sections.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (name == "collectives") collectives = true;
      else if (name == "fused") fused = true;
      else if (name == "graph") graph = true;
      else {
        return failGpu(Status::invalid("--sections \"" + o.sections.substr(0, 64) +
                                       "\" is not a list of collectives, fused, graph"));
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  auto fused_hidden = parseIntList(o.fused_hidden, "--fused-hidden");
  if (!fused_hidden) return failGpu(fused_hidden.status());
  auto fused_tokens = parseIntList(o.fused_tokens, "--fused-tokens");
  if (!fused_tokens) return failGpu(fused_tokens.status());
  for (int v : *fused_hidden) {
    if (v < 1) return failGpu(Status::invalid("--fused-hidden " + std::to_string(v) + " is not positive"));
  }
  for (int v : *fused_tokens) {
    if (v < 1) return failGpu(Status::invalid("--fused-tokens " + std::to_string(v) + " is not positive"));
  }
  if (o.fused_iters < 1) return failGpu(Status::invalid("--fused-iters " + std::to_string(o.fused_iters) + " is not positive"));
  auto protocol = parseProtocol(o.fused_protocol);
  if (!protocol) return failGpu(protocol.status());
  if (o.graph_replays < 1) {
    return failGpu(Status::invalid("--graph-replays " + std::to_string(o.graph_replays) + " is not positive"));
  }
  auto c = buildCase(o.c);
  if (!c) return failGpu(c.status());
  auto plan = buildPolicyPlan(o.c, *c);
  if (!plan) return failGpu(plan.status());
  backend::GpuRunOptions options;
  options.mode = *mode;
  options.shape = numeric::Shape{.hidden = o.hidden, .inner = o.inner};
  options.iters = o.iters;
  options.graph_replays = graph ? o.graph_replays : 0;
  options.fused_protocol = *protocol;
  if (Status st = backend::validateRunOptions(options); !st) return failGpu(st);

  Json j;
  j["tool"] = "seam-gpu bench";
  j["version"] = kSeamVersion;
  j["command"] = command_line;
  j["case"] = {{"model", c->model.name},
               {"pattern", c->model.pattern.text()},
               {"config", c->config.describe()},
               {"flags", c->flags.describe()},
               {"tokens", c->batch.describe()},
               {"policy", plan->policy},
               {"reproduce", reproduceCommand(*c, plan->policy)}};
  j["numeric"] = {{"mode", o.numeric}, {"hidden", o.hidden}, {"inner", o.inner}};
  j["iters"] = o.iters;
  bool ok = true;
  std::cout << "seam-gpu bench: " << c->model.name << " (" << c->config.describe() << "; " << c->flags.describe()
            << "; tokens " << c->batch.describe() << "), " << o.numeric << " mode, hidden " << o.hidden << ", inner "
            << o.inner << "\n";

  if (collectives || graph) {
    auto run = backend::runPlanOnGpus(*plan, options);
    if (!run) return failGpu(run.status());
    j["device"] = run->device;
    j["versions"] = versionsJson(run->versions);
    j["notes"] = run->notes;
    std::cout << "on " << run->device << " (" << run->versions.describe() << ")\n";
    for (const std::string& n : run->notes) std::cout << "note: " << n << "\n";
    if (run->hung) {
      std::cout << "HUNG: " << run->hang_report << "\n";
      j["hang_report"] = run->hang_report;
      if (!o.json.empty()) (void)writeJson(o.json, j);
      return kExitPropertyFailed;
    }
    if (collectives) {
      std::vector<std::string> skipped;
      auto rows = backend::benchPlanCollectives(*plan, *run, o.iters, &skipped);
      if (!rows) return failGpu(rows.status());
      Json arr = Json::array();
      std::cout << "collectives of the plan against bare NCCL (median of " << o.iters
                << " timed calls, slowest rank; bare on rotating buffers):\n";
      std::printf("  %-16s %-8s %-15s %12s %5s %10s %10s %10s %10s %7s\n", "op", "group", "nccl call", "bytes", "ops",
                  "plan us", "bare us", "plan busbw", "bare busbw", "ratio");
      for (const backend::CollectiveBench& b : *rows) {
        const double ratio = b.bare_busbw > 0 ? b.plan_busbw / b.bare_busbw : 0.0;
        std::printf("  %-16s %-8s %-15s %12lld %5d %10.2f %10.2f %10.2f %10.2f %7.3f\n", b.op.c_str(), b.group.c_str(),
                    b.nccl_call.c_str(), static_cast<long long>(b.bytes), b.occurrences, b.plan.median, b.bare.median,
                    b.plan_busbw, b.bare_busbw, ratio);
        arr.push_back({{"op", b.op},
                       {"group", b.group},
                       {"members", b.members},
                       {"nccl_call", b.nccl_call},
                       {"nccl_count", b.nccl_count},
                       {"bytes", b.bytes},
                       {"occurrences", b.occurrences},
                       {"plan", summaryJson(b.plan)},
                       {"bare", summaryJson(b.bare)},
                       {"plan_algbw_gbs", b.plan_algbw},
                       {"plan_busbw_gbs", b.plan_busbw},
                       {"bare_algbw_gbs", b.bare_algbw},
                       {"bare_busbw_gbs", b.bare_busbw},
                       {"plan_over_bare_busbw", ratio},
                       {"rotating_sets", b.rotating_sets}});
      }
      for (const std::string& sk : skipped) std::cout << "  not compared: " << sk << "\n";
      j["collectives"] = arr;
      j["collectives_not_compared"] = skipped;
    }
    if (graph) {
      printGraph(run->graph);
      j["graph"] = graphJson(run->graph);
      for (const backend::GraphStep& g : run->graph) ok = ok && g.identical;
    }
  }
  if (fused) {
    auto rows = backend::benchFusedArAddNorm(*fused_hidden, *fused_tokens, o.fused_iters, *protocol);
    if (!rows) return failGpu(rows.status());
    if (!j.contains("device")) {
      auto devices = backend::listDevices();
      auto versions = backend::runtimeVersions();
      if (devices && !devices->empty()) j["device"] = std::to_string(devices->size()) + "x " + devices->front().name;
      if (versions) j["versions"] = versionsJson(*versions);
    }
    Json arr = Json::array();
    std::cout << "fused all-reduce + add + RMSNorm against NCCL all-reduce + add+norm kernel (real mode, median of "
              << o.fused_iters << " calls, slowest rank):\n";
    std::cout << "  (events: CUDA events around each call; kernels: CUPTI's durations of each call's kernels)\n";
    std::printf("  %6s %6s %12s %5s %10s %10s %10s %8s %10s %10s %8s %6s  %s\n", "hidden", "tokens", "bytes", "proto",
                "fused us", "unfused us", "nccl us", "speedup", "fused k", "unfused k", "k speedup", "sets", "checks");
    for (const backend::FusedBench& b : *rows) {
      const double speedup = b.fused.median > 0 ? b.unfused.median / b.fused.median : 0.0;
      const double kernel_speedup = b.fused_kernels.median > 0 ? b.unfused_kernels.median / b.fused_kernels.median : 0.0;
      ok = ok && b.exact_identical;
      std::printf("  %6d %6d %12lld %5s %10.2f %10.2f %10.2f %8.2f %10.2f %10.2f %8.2f %6d  exact %s; real %s\n", b.hidden,
                  b.tokens, static_cast<long long>(b.bytes), backend::peerProtocolName(b.protocol), b.fused.median,
                  b.unfused.median, b.nccl.median, speedup, b.fused_kernels.median, b.unfused_kernels.median,
                  kernel_speedup, b.rotating_sets,
                  b.exact_identical ? "identical" : "DIFFERS",
                  b.real_identical ? "identical"
                                   : ("max " + fixed(b.real_max_abs, 6) + " (" + std::to_string(b.real_max_ulps) +
                                      " bf16 ulps)").c_str());
      arr.push_back({{"hidden", b.hidden},
                     {"tokens", b.tokens},
                     {"ranks", b.ranks},
                     {"bytes", b.bytes},
                     {"protocol", backend::peerProtocolName(b.protocol)},
                     {"fused", summaryJson(b.fused)},
                     {"unfused", summaryJson(b.unfused)},
                     {"nccl_all_reduce", summaryJson(b.nccl)},
                     {"speedup", speedup},
                     {"fused_kernels", summaryJson(b.fused_kernels)},
                     {"unfused_kernels", summaryJson(b.unfused_kernels)},
                     {"nccl_all_reduce_kernels", summaryJson(b.nccl_kernels)},
                     {"kernel_speedup", kernel_speedup},
                     {"rotating_sets", b.rotating_sets},
                     {"exact_identical", b.exact_identical},
                     {"real_identical", b.real_identical},
                     {"real_max_abs", b.real_max_abs},
                     {"real_max_ulps_bf16", b.real_max_ulps}});
    }
    j["fused"] = arr;
    if (!rows->empty() && !rows->front().trace_error.empty()) {
      std::cout << "note: CUPTI could not trace the fused calls: " << rows->front().trace_error << "\n";
      j["cupti_error"] = rows->front().trace_error;
    }
  }
  j["verdict"] = ok ? "completed" : "failed";
  if (!o.json.empty()) {
    if (Status st = writeJson(o.json, j); !st) return failGpu(st);
  }
  return ok ? kExitOk : kExitPropertyFailed;
}

}  // namespace
// ---- compare --------------------------------------------------------------------------------

struct CompareOptions {
  CaseOptions c;
  std::string against = "declared";
  std::string numeric = "real";
  int hidden = 512;
  int inner = 1024;
  std::string json;
};

/// Two policies' plans of one case on the same GPUs: the simulator predicts
/// bit-identity when every output row of both plans is computed by the same
/// roundings in the same order (predictBitIdentity: two-operand sums commute,
/// zeros drop out, an NCCL reduction of more operands adds in the call's own
/// order, a GEMM's rounding follows its size); the run observes it. seam
/// diff's class says what differs between the plans.
int runCompare(const CompareOptions& o, const std::string& command_line) {
  if (!o.c.trace.empty()) return failGpu(Status::invalid("--trace: seam-gpu runs a policy's plan; traces are for seam check and seam diff"));
  auto mode = parseNumeric(o.numeric);
  if (!mode) return failGpu(mode.status());
  auto c = buildCase(o.c);
  if (!c) return failGpu(c.status());
  auto pa = parsePolicy(o.c.policy);
  if (!pa) return failGpu(pa.status());
  auto pb = parsePolicy(o.against);
  if (!pb) return failGpu(Status::invalid("--against " + pb.status().message().substr(std::string("--policy ").size())));
  // Plan A is --policy's, with --decision planted when given (a planner bug
  // against its parent: values differ, and the run shows by how much).
  auto plan_a = buildPolicyPlan(o.c, *c);
  auto plan_b = buildPlan(*c, *pb);
  if (!plan_a) return failGpu(plan_a.status());
  if (!plan_b) return failGpu(plan_b.status());
  Ledger ledger;
  const properties::CaseDiff d = properties::diffPlans(*plan_a, *plan_b, ledger);
  BitIdentityPrediction prediction = predictBitIdentity(*plan_a, *plan_b);
  const bool predicted = prediction.identical;
  // Not a question of roundings when the ledger says the values differ.
  if (d.cls == properties::DiffClass::kValuesDiffer) prediction.reason = "the values differ (the ledger's violation above)";
  backend::GpuRunOptions options;
  options.mode = *mode;
  options.shape = numeric::Shape{.hidden = o.hidden, .inner = o.inner};
  auto ga = backend::runPlanOnGpus(*plan_a, options, processGroup());
  if (!ga) return failGpu(ga.status());
  auto gb = backend::runPlanOnGpus(*plan_b, options, processGroup());
  if (!gb) return failGpu(gb.status());
  if (!mpiWorld().root()) return kExitOk;  // rank 0 holds both results
  const OutputDiff diff = compareOutputs(ga->output, gb->output);
  const PredictionVerdict verdict = judgePrediction(predicted, diff.identical);
  std::cout << "seam-gpu compare: " << c->model.name << " " << c->config.describe() << " tokens " << c->batch.describe()
            << "; " << policyName(*pa) << (o.c.decision.empty() ? "" : " with --decision " + o.c.decision)
            << " against " << policyName(*pb) << ", " << o.numeric << " mode, hidden "
            << o.hidden << ", on " << ga->device << "\n";
  std::cout << "simulator: " << properties::diffClassName(d.cls) << (d.detail.empty() ? "" : " (" + d.detail + ")")
            << "; predicts " << (predicted ? "bit-identical" : "a difference: " + prediction.reason) << "\n";
  std::cout << "observed: " << diff.describe() << "\n";
  std::cout << "PREDICTION " << (verdict == PredictionVerdict::kHolds     ? "HOLDS"
                                 : verdict == PredictionVerdict::kRefuted ? "REFUTED"
                                                                          : "UNTESTED: other roundings gave the same bits here")
            << "\n";
  if (!o.json.empty()) {
    // The one-case `seam diff` line, the planted decision (plan A's) before --policy.
    std::string reproduce = properties::diffCommand(*c, *pa, *pb);
    if (!o.c.decision.empty()) reproduce.insert(reproduce.rfind(" --policy "), " --decision " + o.c.decision);
    nlohmann::json j = {{"tool", "seam-gpu compare"},
                        {"version", kSeamVersion},
                        {"command", command_line},
                        {"case", {{"model", c->model.name}, {"config", c->config.describe()},
                                  {"flags", c->flags.describe()}, {"tokens", c->batch.describe()},
                                  {"reproduce", reproduce}}},
                        {"numeric", {{"mode", o.numeric}, {"hidden", o.hidden}, {"inner", o.inner}}},
                        {"device", ga->device},
                        {"class", properties::diffClassName(d.cls)},
                        {"detail", d.detail},
                        {"predicted_identical", predicted},
                        {"prediction", prediction.reason},
                        {"verdict", predictionVerdictName(verdict)},
                        {"observed_identical", diff.identical},
                        {"max_abs", diff.max_abs},
                        {"max_ulps", diff.max_ulps},
                        {"first", diff.identical ? nlohmann::json(nullptr)
                                                 : nlohmann::json({{"stack", diff.stack}, {"token", diff.token},
                                                                   {"element", diff.element}, {"a", diff.a}, {"b", diff.b}})},
                        {"hash_a", ga->output.hash()},
                        {"hash_b", gb->output.hash()}};
    std::ofstream(o.json) << j.dump(2) << "\n";
  }
  return verdict == PredictionVerdict::kRefuted ? kExitPropertyFailed : kExitOk;
}

}  // namespace seam::tools

namespace {
int runSeamGpu(int argc, char** argv);
}

int main(int argc, char** argv) {
  using namespace seam::tools;
  // Under mpirun (`mpirun -np N seam-gpu run|compare CASE`): one process per
  // rank; rank 0 prints and exits with the verdict, the others print only
  // their own failures (named by rank) and exit 0 once they have run.
  MpiSession mpi(&argc, &argv);
  if (!mpi.status()) return failGpu(mpi.status());
  if (!mpiWorld().root()) std::freopen("/dev/null", "w", stdout);
  return runSeamGpu(argc, argv);
}

namespace {
int runSeamGpu(int argc, char** argv) {
  using namespace seam::tools;
  try {
    CLI::App app{"seam-gpu: run seam's plans on CUDA GPUs with NCCL and compare them with the CPU executor"};
    app.require_subcommand(1);
    app.set_version_flag("--version", kSeamVersion);

    CLI::App* info = app.add_subcommand("info", "Visible CUDA devices, CUDA and NCCL versions");

    RunOptions run;
    CLI::App* run_cmd = app.add_subcommand(
        "run", "Run a case's plan on the GPUs; compare with the CPU executor and the reference. Exit 0: exact mode "
               "bit-identical on every rank (real mode: completed, ranks agree, outputs finite)");
    addCaseOptions(run_cmd, run.c);
    run_cmd->add_option("--numeric", run.numeric, "numeric mode: exact|real")->capture_default_str();
    run_cmd->add_option("--hidden", run.hidden, "row width of the numeric model")->capture_default_str();
    run_cmd->add_option("--inner", run.inner, "inner width of every stage")->capture_default_str();
    run_cmd->add_option("--warmup", run.warmup, "untimed runs of the plan")->capture_default_str();
    run_cmd->add_option("--iters", run.iters, "timed runs of the plan")->capture_default_str();
    run_cmd->add_option("--watchdog", run.watchdog, "seconds without progress before a run counts as hung")
        ->capture_default_str();
    run_cmd->add_option("--rank", run.rank, "whose ops the timing table shows")->capture_default_str();
    run_cmd->add_option("--fused", run.fused, "ar_add_norm as the fused peer-memory kernel where possible: on|off")
        ->capture_default_str();
    run_cmd->add_option("--fused-protocol", run.fused_protocol, kProtocolHelp)->capture_default_str();
    run_cmd->add_flag("--check-unfused", run.check_unfused,
                      "run the plan again with ar_add_norm unfused and compare the outputs");
    run_cmd->add_option("--graph-replays", run.graph_replays,
                        "also time eager steps and replays of the step captured in a CUDA graph (0: none)")
        ->capture_default_str();
    run_cmd->add_option("--json", run.json, "write everything as one JSON object to this file");

    CompareOptions cmp;
    cmp.c.policy = "legacy";
    CLI::App* cmp_cmd = app.add_subcommand(
        "compare", "Run two policies' plans of one case on the GPUs: is the simulator's bit-identity prediction right?");
    addCaseOptions(cmp_cmd, cmp.c);
    cmp_cmd->add_option("--against", cmp.against, "the policy compared with --policy")->capture_default_str();
    cmp_cmd->add_option("--numeric", cmp.numeric, "numeric mode: exact|real")->capture_default_str();
    cmp_cmd->add_option("--hidden", cmp.hidden, "row width of the numeric model")->capture_default_str();
    cmp_cmd->add_option("--inner", cmp.inner, "inner width of every stage")->capture_default_str();
    cmp_cmd->add_option("--json", cmp.json, "write the comparison as one JSON object to this file");

    BenchOptions bo;
    CLI::App* bench_cmd = app.add_subcommand(
        "bench", "In one run on the same GPUs: the plan's collectives against bare NCCL, the fused ar_add_norm kernel "
                 "against NCCL all-reduce + add+norm, a captured decode step against eager launches and its ops' sum");
    addCaseOptions(bench_cmd, bo.c);
    bench_cmd->add_option("--numeric", bo.numeric, "numeric mode of the plan run: exact|real")->capture_default_str();
    bench_cmd->add_option("--hidden", bo.hidden, "row width of the numeric model")->capture_default_str();
    bench_cmd->add_option("--inner", bo.inner, "inner width of every stage")->capture_default_str();
    bench_cmd->add_option("--iters", bo.iters, "timed runs of the plan; bare calls per collective")->capture_default_str();
    bench_cmd->add_option("--graph-replays", bo.graph_replays, "eager steps and graph replays timed")->capture_default_str();
    bench_cmd->add_option("--fused-iters", bo.fused_iters, "timed calls per fused-kernel size")->capture_default_str();
    bench_cmd->add_option("--fused-hidden", bo.fused_hidden, "hidden sizes of the fused-kernel table")->capture_default_str();
    bench_cmd->add_option("--fused-tokens", bo.fused_tokens, "token counts of the fused-kernel table")->capture_default_str();
    bench_cmd->add_option("--fused-protocol", bo.fused_protocol, kProtocolHelp)->capture_default_str();
    bench_cmd->add_option("--sections", bo.sections, "which of collectives,fused,graph to run")->capture_default_str();
    bench_cmd->add_option("--json", bo.json, "write everything as one JSON object to this file");

    std::int64_t bytes = 64 << 20;
    int bench_iters = 20;
    std::string bench_json;
    CLI::App* bench = app.add_subcommand(
        "bench-allreduce", "Bare NCCL all-reduce over every visible GPU against the same all-reduce as a one-op plan");
    bench->add_option("--bytes", bytes, "message size in bytes (a multiple of 4)")->capture_default_str();
    bench->add_option("--iters", bench_iters, "timed iterations")->capture_default_str();
    bench->add_option("--json", bench_json, "write the result as one JSON object to this file");

    if (const int code = parseCommandLine(app, argc, argv, "seam-gpu"); code >= 0) return code;
    if (mpiWorld().split() && (bench->parsed() || bench_cmd->parsed())) {
      return failGpu(seam::Status::invalid(std::string(bench->parsed() ? "bench-allreduce" : "bench") +
                                     " under mpirun: not done yet; run it as one process (one thread per GPU)"));
    }
    if (info->parsed()) return mpiWorld().root() ? runInfo() : kExitOk;
    if (bench->parsed()) return runBench(bytes, bench_iters, bench_json);
    std::string command_line;
    for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
    if (cmp_cmd->parsed()) return runCompare(cmp, command_line);
    if (bench_cmd->parsed()) return runBenchCmd(bo, command_line);
    return runRun(run, command_line);
  } catch (const std::exception& e) {
    std::cerr << "seam-gpu: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
}  // namespace
