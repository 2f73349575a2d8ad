// `mpirun -np 2 seam-gpu run CASE` (one process per GPU, NCCL's unique id
// broadcast over MPI, ar_add_norm unfused) against the one-process run of
// the same case in exact mode: both bit-identical to the reference, with the
// same output hash. Needs 2 GPUs and mpirun, and skips with a message without
// them. SEAM_GPU_BIN and SEAM_MPIRUN in the environment name carried
// binaries (tools/gpu_mpi_check.sh sets them).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "seam/backend/device.h"

namespace seam::backend {
namespace {

std::string fromEnv(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

struct Ran {
  int code = -1;
  std::string out;
};

Ran shell(const std::string& cmd) {
  Ran r;
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// The "output: gpu 0x..., cpu executor 0x..., reference 0x..." line.
std::string outputLine(const std::string& out) {
  const auto at = out.find("\noutput: ");
  if (at == std::string::npos) return "";
  return out.substr(at + 1, out.find('\n', at + 1) - at - 1);
}

TEST(GpuMpiRun, OneProcessPerGpuGivesTheOneProcessOutputBitForBit) {
#ifndef SEAM_MPIRUN
  GTEST_SKIP() << "built without MPI";
#else
  auto devices = listDevices();
  if (!devices || devices->size() < 2) {
    GTEST_SKIP() << "needs 2 CUDA GPUs (the lent GPU machine: tools/gpu_mpi_check.sh)";
  }
  const std::string gpu = fromEnv("SEAM_GPU_BIN", SEAM_GPU_BIN);
  const std::string mpirun = fromEnv("SEAM_MPIRUN", SEAM_MPIRUN);
  const std::string args = " run --model nemotron-h-8b --tp 2 --tokens 8 --iters 2";
  const Ran one = shell(gpu + args);
  const Ran two = shell(mpirun + " --allow-run-as-root --bind-to none -np 2 " + gpu + args);
  ASSERT_EQ(one.code, 0) << one.out;
  ASSERT_EQ(two.code, 0) << two.out;
  EXPECT_NE(two.out.find("IDENTICAL"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("NCCL all-reduce + add+norm kernel (its members are different processes"),
            std::string::npos)
      << two.out;
  ASSERT_FALSE(outputLine(one.out).empty()) << one.out;
  EXPECT_EQ(outputLine(two.out), outputLine(one.out));
#endif
}

}  // namespace
}  // namespace seam::backend
