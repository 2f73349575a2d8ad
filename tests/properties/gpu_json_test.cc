#include "seam/properties/gpu_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

namespace seam::properties {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::string written(const GpuResult& result) {
  return std::visit([](const auto& record) { return gpuResultJson(record); }, result);
}

// Files seam-gpu wrote on the GPU machine (docs/results/gpu/), one of each
// command and section as its current layout has them.
TEST(GpuJson, AFileSeamGpuWroteReadsBackIntoARecordThatWritesTheSameBytes) {
  for (const char* file :
       {"bit_identity_2026-12-01/compare_legacy.json",
        "bit_identity_2026-12-01/compare_planted.json",
        "dp_lowering_2026-12-01/nano_dp2_max_len_rs.json", "mpi_2026-11-30/mpi_h8b.json",
        "mpi_2026-11-30/mpi_h8b_graph.json", "mpi_2026-11-30/single_nano_dp2.json",
        "ll_2026-11-30/bench_fused_ll.json", "ll_2026-11-30/bench_h8b_decode.json",
        "raw/bench_allreduce.json"}) {
    const std::string text = readFile(std::string(SEAM_SOURCE_DIR) + "/docs/results/gpu/" + file);
    ASSERT_FALSE(text.empty()) << file;
    auto result = parseGpuResult(text);
    ASSERT_TRUE(result.hasValue()) << file << ": " << result.status().message();
    EXPECT_EQ(written(*result), text) << file;
  }
}

TEST(GpuJson, ARunThatHungEndsWithItsReportAndVerdict) {
  GpuRunRecord run;
  run.origin.version = "seam 0.1.0";
  run.origin.command = "seam-gpu run --model m";
  run.origin.device = "2x GPU";
  run.origin.versions = GpuVersionsRecord{13000, 13000, 22803, "cuda 13.0"};
  run.hung = true;
  run.hang_report = "no progress";
  run.verdict = "hung";
  run.cpu_ran = true;  // nothing of the comparisons is written for a hung run
  const std::string text = gpuResultJson(run);
  EXPECT_NE(text.find("\"hang_report\": \"no progress\",\n  \"verdict\": \"hung\"\n}\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("hashes"), std::string::npos) << text;
}

TEST(GpuJson, ANonFiniteDifferenceIsWrittenAsNullAndReadBackAsNaN) {
  GpuRunRecord run;
  run.origin.version = "seam 0.1.0";
  run.origin.device = "1x GPU";
  run.origin.versions = GpuVersionsRecord{};
  run.numeric.mode = "real";
  run.vs_cpu.identical = false;
  run.vs_cpu.max_abs = INFINITY;
  const std::string text = gpuResultJson(run);
  EXPECT_NE(text.find("\"max_abs\": null"), std::string::npos) << text;
  auto back = parseGpuResult(text);
  ASSERT_TRUE(back.hasValue()) << back.status().message();
  EXPECT_TRUE(std::isnan(std::get<GpuRunRecord>(*back).vs_cpu.max_abs));
  EXPECT_EQ(written(*back), text);
}

TEST(GpuJson, ARefusalNamesTheFirstFieldTheStoreNeedsThatIsMissingOrMistyped) {
  // The import reads the case before the verdict, and "model" first of the case.
  auto r = parseGpuResult(R"({"tool": "seam-gpu run", "version": "v", "device": "d",
                              "case": {"pattern": 7}})");
  ASSERT_FALSE(r.hasValue());
  EXPECT_EQ(r.status().message(), "not a seam-gpu result (field \"model\" is missing)");
  r = parseGpuResult(R"({"tool": "seam-gpu compare", "version": "v", "device": "d",
      "case": {"model": "m", "config": "c", "flags": "f", "tokens": "4", "reproduce": "r"},
      "class": "identical", "predicted_identical": 1})");
  ASSERT_FALSE(r.hasValue());
  EXPECT_EQ(r.status().message(),
            "not a seam-gpu result (field \"predicted_identical (wrong type)\" is missing)");
  EXPECT_EQ(parseGpuResult("[1]").status().message(),
            "not JSON (expected the object seam-gpu --json writes)");
  EXPECT_EQ(parseGpuResult(R"({"tool": "nccl-tests"})").status().message(),
            "not a seam-gpu result (\"tool\" is \"nccl-tests\")");
}

}  // namespace
}  // namespace seam::properties
