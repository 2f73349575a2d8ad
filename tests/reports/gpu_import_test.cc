#include "seam/reports/gpu_import.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace seam::reports {
namespace {

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "seam_gpu_import_" + std::to_string(getpid()) + "_" + name;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// The shape `seam-gpu run --json` writes (fields trimmed to what is imported).
const char* kRunJson = R"({
  "tool": "seam-gpu run", "version": "seam 0.1.0",
  "command": "build/tools/seam-gpu run --model nemotron-h-8b --tp 2",
  "case": {"model": "nemotron-h-8b", "pattern": "M-", "config": "pp=1 tp=2 attn_dp=1 attn_cp=1 moe_ep=1 moe_dp=1",
           "flags": "a2a=none fusion=on padding=max_len reduction=ar mode=decode", "tokens": "4",
           "policy": "declared", "reproduce": "seam check --model nemotron-h-8b --tp 2"},
  "numeric": {"mode": "exact", "hidden": 16, "inner": 64},
  "device": "2x NVIDIA H200", "versions": {"text": "cuda 13.0, driver 13.0, nccl 2.28.3"},
  "hashes": {"gpu_device": "0x6ee685932d86d175", "gpu_host": "0x6ee685932d86d175",
             "cpu": "0x6ee685932d86d175", "reference": "0x6ee685932d86d175"},
  "vs_cpu": {"identical": true}, "vs_reference": {"identical": false, "max_abs": 0.5},
  "verdict": "identical",
  "timings": [
    {"rank": 0, "op_index": 0, "op": "add_norm", "group": null, "group_size": 1, "bytes": 256,
     "median_us": 6.3, "p10_us": 6.0, "p90_us": 6.4, "algbw_gbs": 0.04, "busbw_gbs": 0.0},
    {"rank": 1, "op_index": 2, "op": "all_reduce", "group": "tp", "group_size": 2, "bytes": 256,
     "median_us": 11.0, "p10_us": 10.9, "p90_us": 11.5, "algbw_gbs": 0.02, "busbw_gbs": 0.02}]})";

TEST(GpuImport, WritesTheRunTheEquivalenceRowsAndEveryTiming) {
  const std::string db = temp("a.db"), file = temp("run.json");
  std::remove(db.c_str());
  write(file, kRunJson);
  auto store = Store::open(db);
  ASSERT_TRUE(store.hasValue()) << store.status().message();
  auto r = importGpuJson(*store, file, "test");
  ASSERT_TRUE(r.hasValue()) << r.status().message();
  EXPECT_EQ(r->equivalences, 2);
  EXPECT_EQ(r->timings, 2);
  auto eq = store->equivalences(r->run_id);
  ASSERT_TRUE(eq.hasValue());
  ASSERT_EQ(eq->size(), 2u);
  EXPECT_EQ((*eq)[0].plan_b, "cpu:declared");
  EXPECT_TRUE((*eq)[0].predicted_identical);
  EXPECT_TRUE((*eq)[0].observed_identical);
  EXPECT_EQ((*eq)[0].plan_a_hash, 0x6ee685932d86d175ULL);
  EXPECT_EQ((*eq)[1].plan_b, "reference");
  EXPECT_FALSE((*eq)[1].observed_identical);
  EXPECT_DOUBLE_EQ((*eq)[1].max_difference, 0.5);
  auto t = store->timings(r->run_id);
  ASSERT_TRUE(t.hasValue());
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[1].rank, 1);
  EXPECT_EQ((*t)[1].group, "tp/2");
  EXPECT_EQ((*t)[0].group, "-");
  EXPECT_DOUBLE_EQ((*t)[1].median_us, 11.0);
  auto runs = store->runs();
  ASSERT_TRUE(runs.hasValue());
  EXPECT_EQ(runs->back().gpu, "2x NVIDIA H200");
  EXPECT_NE(runs->back().finished_ms, 0);
  std::remove(file.c_str());
}

TEST(GpuImport, RefusesFilesThatAreNotSeamGpuResultsAndWritesNothing) {
  const std::string db = temp("b.db");
  std::remove(db.c_str());
  auto store = Store::open(db);
  ASSERT_TRUE(store.hasValue());
  const std::pair<std::string, std::string> bad[] = {
      {"text.json", "not json at all"},
      {"array.json", "[1, 2]"},
      {"other.json", R"({"tool": "nccl-tests"})"},
      {"partial.json", R"({"tool": "seam-gpu run", "version": "x", "case": {}})"},
      {"truncated.json", std::string(kRunJson).substr(0, 300)},
  };
  for (const auto& [name, text] : bad) {
    const std::string file = temp(name);
    write(file, text);
    auto r = importGpuJson(*store, file, "test");
    ASSERT_FALSE(r.hasValue()) << name;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput) << name;
    EXPECT_NE(r.status().message().find(file), std::string::npos) << r.status().message();
    std::remove(file.c_str());
  }
  EXPECT_FALSE(importGpuJson(*store, temp("missing.json"), "test").hasValue());
  auto runs = store->runs();
  ASSERT_TRUE(runs.hasValue());
  EXPECT_TRUE(runs->empty());
}

TEST(GpuImport, RefusesAnIntegerFieldHoldingAFloatOrANumberOutOfRangeNamingTheField) {
  // Found by tests/fuzz/gpu_json_fuzz.cc: a rank of 1e300 was cast to int
  // (undefined behaviour) instead of being refused.
  const std::pair<std::string, std::string> bad[] = {
      {"\"rank\": 1", "\"rank\": 1e300"},
      {"\"rank\": 1", "\"rank\": 4294967296"},
      {"\"rank\": 1", "\"rank\": 1.5"},
      {"\"bytes\": 256", "\"bytes\": 18446744073709551615"},
  };
  for (const auto& [from, to] : bad) {
    std::string text = kRunJson;
    const auto at = text.rfind(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    const std::string file = temp("range.json");
    write(file, text);
    auto r = readGpuJson(file, "test");
    ASSERT_FALSE(r.hasValue()) << to;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput) << to;
    const std::string key = to.substr(1, to.find('"', 1) - 1);
    EXPECT_NE(r.status().message().find("field \"" + key + " (not an integer in range)\""), std::string::npos)
        << r.status().message();
    std::remove(file.c_str());
  }
}

}  // namespace
}  // namespace seam::reports
