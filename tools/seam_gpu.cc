// seam-gpu: the GPU side of seam (DESIGN §7), a separate binary so that the
// GPU machine needs neither SQLite nor Graphviz. A thin main (STYLE 3):
//   seam-gpu info                       devices and versions
//   seam-gpu run CASE [options]         a case's plan on the GPUs, against the
//                                       CPU executor and the reference (gpu_run.cc)
//   seam-gpu compare CASE [options]     two policies' plans against the
//                                       simulator's prediction (gpu_compare.cc)
//   seam-gpu bench CASE [options]       a plan's collectives against bare NCCL,
//                                       the fused ar_add_norm kernel against
//                                       NCCL + add+norm, a captured step (gpu_bench.cc)
//   seam-gpu bench-allreduce --bytes N  bare NCCL against a one-op plan (gpu_allreduce.cc)
// Exit codes (DESIGN §9): 0 identical (run) / done, 1 not identical or hung,
// 2 bad input (including too few GPUs), 3 device or internal error.
// The numeric mode is --numeric exact|real: --mode is the case's forward mode
// (decode|extend), shared with every seam command.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "gpu_command.h"
#include "gpu_views.h"
#include "mpi_world.h"
#include "seam/backend/device.h"

namespace seam::tools {

namespace {

/// The processes mpirun started, for the backend (one process per rank).
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

int runInfo() {
  auto versions = backend::runtimeVersions();
  if (!versions) return failGpu(versions.status());
  auto devices = backend::listDevices();
  if (!devices) return failGpu(devices.status());
  std::cout << versions->describe() << "\n";
  if (devices->empty()) std::cout << "no CUDA device visible\n";
  for (const backend::DeviceInfo& d : *devices) {
    std::cout << "device " << d.index << ": " << d.name << ", sm_" << d.sm_major << d.sm_minor
              << ", " << fixed(static_cast<double>(d.memory_bytes) / (1u << 30), 1) << " GiB, "
              << d.multiprocessors << " SMs\n";
  }
  return kExitOk;
}

int runSeamGpu(int argc, char** argv) {
  try {
    CLI::App app{
        "seam-gpu: run seam's plans on CUDA GPUs with NCCL and compare them with the CPU executor"};
    app.require_subcommand(1);
    // Every flag of every subcommand (they copy the app's defaults) takes no value.
    app.option_defaults()->disable_flag_override();
    app.set_version_flag("--version", kSeamVersion);
    CLI::App* info = app.add_subcommand("info", "Visible CUDA devices, CUDA and NCCL versions");
    std::string command_line;  // filled in once parsed, for the result files
    const std::vector<Command> commands = {
        registerGpuRun(app, command_line), registerGpuCompare(app, command_line),
        registerGpuBench(app, command_line), registerGpuBenchAllReduce(app)};

    if (const int code = parseCommandLine(app, argc, argv, "seam-gpu"); code >= 0) return code;
    if (info->parsed()) return mpiWorld().root() ? runInfo() : kExitOk;
    for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
    for (const Command& c : commands) {
      if (!c.app->parsed()) continue;
      const std::string& name = c.app->get_name();
      if (mpiWorld().split() && (name == "bench" || name == "bench-allreduce")) {
        return failGpu(Status::invalid(
            name + " under mpirun: not done yet; run it as one process (one thread per GPU)"));
      }
      return c.run();
    }
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "seam-gpu: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace

int failGpu(const Status& status) {
  // Under mpirun a rank other than 0 says which it is: its failure may be its
  // own (its host's GPUs), which rank 0 never hears of.
  const std::string rank =
      mpiWorld().root() ? "" : "rank " + std::to_string(mpiWorld().rank()) + ": ";
  std::cerr << "seam-gpu: " << rank << oneLine(status.message()) << "\n";
  return status.code() == StatusCode::kInternal ? kExitInternal : kExitBadInput;
}

backend::ProcessGroup* processGroup() {
  static MpiProcesses processes(mpiWorld());
  return mpiWorld().split() ? &processes : nullptr;
}

Expected<numeric::Mode> parseNumeric(const std::string& text) {
  if (text == "exact") return numeric::Mode::kExact;
  if (text == "real") return numeric::Mode::kReal;
  return Status::invalid("--numeric \"" + text.substr(0, 64) + "\" is not one of exact, real");
}

Expected<backend::PeerProtocol> parseProtocol(const std::string& text) {
  backend::PeerProtocol p;
  if (backend::parsePeerProtocol(text, &p)) return p;
  return Status::invalid("--fused-protocol \"" + text.substr(0, 64) + "\" is not auto, flag or ll");
}

const std::string& protocolHelp() {
  static const std::string help =
      "how the fused kernel's members send rows: auto|flag|ll (auto: ll up to " +
      std::to_string(backend::kFusedLlAutoBytes >> 10) + " KiB per member)";
  return help;
}

Status writeJson(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) return Status::invalid("cannot write --json " + path.substr(0, 200));
  out << text;
  if (!out) return Status::invalid("cannot write --json " + path.substr(0, 200));
  return Status::ok();
}

}  // namespace seam::tools

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
