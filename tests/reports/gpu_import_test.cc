#include "seam/reports/gpu_import.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "seam/reports/input_file.h"
#include "seam/reports/report.h"

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
  auto r = importGpuJson(*store, file, "seam 0.1.0");
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

// The shape `seam-gpu compare --json` writes, as the 1x H200 wrote it for a
// planted decision (docs/results/gpu/bit_identity_2026-12-01/), fields trimmed.
std::string compareJson(bool predicted, bool observed, const std::string& reproduce) {
  return std::string(
             R"({"tool": "seam-gpu compare", "version": "seam 0.1.0", "command": "seam-gpu compare",
  "case": {"model": "nemotron-h-8b", "config": "pp=1 tp=1 attn_dp=1 attn_cp=1 moe_ep=1 moe_dp=1",
           "flags": "a2a=none", "tokens": "4", "reproduce": ")") +
         reproduce + R"("},
  "numeric": {"mode": "real", "hidden": 512, "inner": 1024}, "device": "1x NVIDIA H200",
  "class": "values differ", "detail": "", "predicted_identical": )" +
         (predicted ? "true" : "false") + R"(, "observed_identical": )" +
         (observed ? "true" : "false") + R"(, "max_abs": 2.51171875,
  "max_ulps": 32531, "hash_a": 1, "hash_b": 2})";
}

TEST(GpuImport, ACompareNamesBothPlansAndOnlyARefutedIdentityIsAViolation) {
  const std::string db = temp("compare.db"), file = temp("compare.json");
  std::remove(db.c_str());
  auto store = Store::open(db);
  ASSERT_TRUE(store.hasValue()) << store.status().message();
  // Plan A carries the planted decision, wherever the line puts it.
  for (const std::string line : {"seam diff --model nemotron-h-8b --tp 1 --decision "
                                 "stack_never_entered --policy declared --against declared",
                                 "seam diff --model nemotron-h-8b --tp 1 --policy declared "
                                 "--against declared --decision stack_never_entered"}) {
    write(file, compareJson(false, false, line));
    auto r = importGpuJson(*store, file, "seam 0.1.0");
    ASSERT_TRUE(r.hasValue()) << r.status().message();
    auto eq = store->equivalences(r->run_id);
    ASSERT_TRUE(eq.hasValue());
    ASSERT_EQ(eq->size(), 1u);
    EXPECT_EQ((*eq)[0].plan_a, "gpu:declared --decision stack_never_entered") << line;
    EXPECT_EQ((*eq)[0].plan_b, "gpu:declared") << line;
    EXPECT_DOUBLE_EQ((*eq)[0].max_difference, 2.51171875);
  }
  // predicted, observed -> the case's outcome: holds unless an identity was refuted.
  const std::string line =
      "seam diff --model nemotron-h-8b --tp 2 --policy legacy --against declared";
  for (const auto& [predicted, observed, violated] : std::vector<std::tuple<bool, bool, bool>>{
           {true, true, false}, {true, false, true}, {false, false, false}, {false, true, false}}) {
    write(file, compareJson(predicted, observed, line));
    auto r = importGpuJson(*store, file, "seam 0.1.0");
    ASSERT_TRUE(r.hasValue()) << r.status().message();
    auto cases = store->cases(r->run_id);
    ASSERT_TRUE(cases.hasValue());
    ASSERT_EQ(cases->size(), 1u);
    EXPECT_EQ((*cases)[0].outcome == CaseOutcome::kViolated, violated) << predicted << observed;
  }
  std::remove(file.c_str());
}

// The shape `seam-gpu bench --json` writes (one row of each section).
const char* kBenchJson = R"({
  "tool": "seam-gpu bench", "version": "seam 0.1.0",
  "command": "seam-gpu bench --model nemotron-h-8b --tp 2",
  "case": {"model": "nemotron-h-8b", "pattern": "M-", "config": "pp=1 tp=2 attn_dp=1 attn_cp=1 moe_ep=1 moe_dp=1", "flags": "fusion=off",
           "tokens": "4096", "policy": "declared", "reproduce": "seam check --model nemotron-h-8b --tp 2"},
  "numeric": {"mode": "exact", "hidden": 4096, "inner": 512},
  "device": "2x NVIDIA H200", "versions": {"text": "cuda 13.0, driver 13.0, nccl 2.28.3"},
  "collectives": [{"op": "all_reduce", "group": "tp/2", "members": [0, 1], "nccl_call": "all_reduce",
                   "nccl_count": 16777216, "bytes": 67108864, "occurrences": 3,
                   "plan": {"median_us": 200.0, "p10_us": 199.0, "p90_us": 201.0},
                   "bare": {"median_us": 190.0, "p10_us": 189.0, "p90_us": 191.0},
                   "plan_algbw_gbs": 335.5, "plan_busbw_gbs": 335.5, "bare_algbw_gbs": 353.2,
                   "bare_busbw_gbs": 353.2, "plan_over_bare_busbw": 0.95, "rotating_sets": 2}],
  "fused": [{"hidden": 4096, "tokens": 64, "ranks": 2, "bytes": 1048576,
             "fused": {"median_us": 8.0, "p10_us": 7.9, "p90_us": 8.2},
             "unfused": {"median_us": 16.0, "p10_us": 15.8, "p90_us": 16.4},
             "nccl_all_reduce": {"median_us": 12.0, "p10_us": 11.9, "p90_us": 12.2},
             "speedup": 2.0, "fused_kernels": {"median_us": 4.0, "p10_us": 3.9, "p90_us": 4.1},
             "unfused_kernels": {"median_us": 10.0, "p10_us": 9.9, "p90_us": 10.1},
             "nccl_all_reduce_kernels": {"median_us": 7.0, "p10_us": 6.9, "p90_us": 7.1}, "rotating_sets": 64, "exact_identical": true, "real_identical": false,
             "real_max_abs": 0.0078125, "real_max_ulps_bf16": 1}],
  "graph": [{"rank": 0, "ops": 106, "replays": 50, "eager_median_us": 900.0, "eager_p10_us": 880.0,
             "eager_p90_us": 950.0, "graph_median_us": 600.0, "graph_p10_us": 598.0, "graph_p90_us": 603.0,
             "kernel_sum_us": 590.0, "kernels": 420, "op_sum_us": 700.0, "identical": true}],
  "verdict": "completed"})";

TEST(GpuImport, ABenchBecomesOneCasePerComparedRowAndItsTables) {
  const std::string db = temp("c.db"), file = temp("bench.json");
  std::remove(db.c_str());
  write(file, kBenchJson);
  auto store = Store::open(db);
  ASSERT_TRUE(store.hasValue()) << store.status().message();
  auto r = importGpuJson(*store, file, "seam 0.1.0");
  ASSERT_TRUE(r.hasValue()) << r.status().message();
  EXPECT_EQ(r->timings, 2 + 6 + 4);
  EXPECT_EQ(r->equivalences, 2 + 1);
  EXPECT_NE(r->summary.find("worst plan/bare busbw 0.95"), std::string::npos) << r->summary;
  auto cases = store->cases(r->run_id);
  ASSERT_TRUE(cases.hasValue());
  ASSERT_EQ(cases->size(), 3u);
  EXPECT_EQ((*cases)[0].group, kBenchCollectives);
  EXPECT_EQ((*cases)[1].group, kBenchFused);
  EXPECT_EQ((*cases)[1].batch, "64 tokens x 4096");
  EXPECT_EQ((*cases)[2].group, kBenchGraph);
  auto t = store->timings(r->run_id);
  ASSERT_TRUE(t.hasValue());
  EXPECT_EQ((*t)[0].op_kind, "bare nccl all_reduce");
  EXPECT_DOUBLE_EQ((*t)[1].busbw_gbps, 335.5);
  auto md = renderReport(*store, ReportFormat::kMarkdown, {});
  ASSERT_TRUE(md.hasValue()) << md.status().message();
  EXPECT_NE(md->find("| all_reduce in plan | tp/2 | 67108864 bytes, 3 ops | 200.00 | 190.00 | "
                     "335.50 | 353.20 | 0.950 |"),
            std::string::npos)
      << *md;
  EXPECT_NE(md->find("| 64 tokens x 4096 | 1048576 | 8.00 | 16.00 | 12.00 | 2.000 | 4.00 | 10.00 | "
                     "2.500 | identical | "
                     "max 0.007812 |"),
            std::string::npos)
      << *md;
  EXPECT_NE(md->find("| 0 | sum of 106 ops, 420 kernels | 900.0 | 600.0 | 590.0 | 1.017 | 700.0 | "
                     "1.500 | yes |"),
            std::string::npos)
      << *md;
  // A bench from before the fused kernel had protocols shows none.
  EXPECT_EQ(md->find("4096, ll"), std::string::npos);
  // A bench file missing a field of a row is refused whole.
  const std::string broken = temp("broken.json");
  std::string text = kBenchJson;
  text.replace(text.find("\"speedup\""), 9, "\"speedupX\"");
  write(broken, text);
  EXPECT_FALSE(importGpuJson(*store, broken, "seam 0.1.0").hasValue());
  std::remove(file.c_str());
  std::remove(broken.c_str());
}

TEST(GpuImport, TheFusedKernelsProtocolIsKeptWithItsTimingAndShownBesideTheSize) {
  const std::string db = temp("p.db"), file = temp("bench_ll.json");
  std::remove(db.c_str());
  std::string json = kBenchJson;
  const std::string at = "\"bytes\": 1048576,";
  json.replace(json.find(at), at.size(), at + " \"protocol\": \"ll\",");
  write(file, json);
  auto store = Store::open(db);
  ASSERT_TRUE(store.hasValue()) << store.status().message();
  auto r = importGpuJson(*store, file, "seam 0.1.0");
  ASSERT_TRUE(r.hasValue()) << r.status().message();
  auto t = store->timings(r->run_id);
  ASSERT_TRUE(t.hasValue());
  int tagged = 0;
  for (const TimingRecord& x : *t)
    tagged +=
        x.op_kind == "fused ar_add_norm [ll]" || x.op_kind == "fused ar_add_norm (kernels) [ll]";
  EXPECT_EQ(tagged, 2);
  auto md = renderReport(*store, ReportFormat::kMarkdown, {});
  ASSERT_TRUE(md.hasValue()) << md.status().message();
  EXPECT_NE(md->find("| 64 tokens x 4096, ll | 1048576 | 8.00 | 16.00 |"), std::string::npos)
      << *md;
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
    auto r = importGpuJson(*store, file, "seam 0.1.0");
    ASSERT_FALSE(r.hasValue()) << name;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput) << name;
    EXPECT_NE(r.status().message().find(file), std::string::npos) << r.status().message();
    std::remove(file.c_str());
  }
  EXPECT_FALSE(importGpuJson(*store, temp("missing.json"), "seam 0.1.0").hasValue());
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
    auto r = readGpuJson(file, "seam 0.1.0");
    ASSERT_FALSE(r.hasValue()) << to;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput) << to;
    const std::string key = to.substr(1, to.find('"', 1) - 1);
    EXPECT_NE(r.status().message().find("field \"" + key + " (not an integer in range)\""),
              std::string::npos)
        << r.status().message();
    std::remove(file.c_str());
  }
}

}  // namespace
}  // namespace seam::reports

namespace seam::reports {
namespace {

TEST(GpuImport, RefusesAValueSeamGpuCouldNotHaveWrittenNamingTheKey) {
  const std::pair<std::pair<std::string, std::string>, std::string> bad[] = {
      {{"\"verdict\": \"identical\"", "\"verdict\": \"maybe\""},
       "\"verdict\" \"maybe\": not one of"},
      {{"\"timings\": [", "\"timings\": \"lots\", \"x\": ["}, "timings (not a list)"},
      {{"\"model\": \"nemotron-h-8b\"", "\"model\": \"gpt-7\""},
       "\"case.model\" \"gpt-7\": not a model preset"},
      {{"\"config\": \"pp=1 tp=2 attn_dp=1", "\"config\": \"pp=1 tp=2 attn_dp=3"},
       "\"case.config\" \"pp=1 tp=2 attn_dp=3 attn_cp=1 moe_ep=1 moe_dp=1\": "
       "attn_dp*attn_cp=3 does not divide tp=2"},
      {{"\"rank\": 1", "\"rank\": -1"}, "\"timings.rank\" -1"},
      {{"\"rank\": 1", "\"rank\": 2"}, "not a rank of the case's world of 2"},
      {{"\"bytes\": 256,\n     \"median_us\": 11.0", "\"bytes\": -256,\n     \"median_us\": 11.0"},
       "\"timings.bytes\" -256"},
      {{"\"op\": \"all_reduce\"", "\"op\": \"all_gossip\""}, "\"timings.op\" \"all_gossip\""},
      {{"\"version\": \"seam 0.1.0\"", "\"version\": \"seam 9.9.9\""},
       "\"version\" \"seam 9.9.9\": written by another seam; this one reads seam 0.1.0"},
      {{"\"mode\": \"exact\"", "\"mode\": \"fuzzy\""}, "\"numeric.mode\" \"fuzzy\""},
  };
  for (const auto& [edit, needle] : bad) {
    std::string text = kRunJson;
    const auto at = text.rfind(edit.first);
    ASSERT_NE(at, std::string::npos) << edit.first;
    text.replace(at, edit.first.size(), edit.second);
    const std::string file = temp("value.json");
    write(file, text);
    auto r = readGpuJson(file, "seam 0.1.0");
    ASSERT_FALSE(r.hasValue()) << edit.second;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
    std::remove(file.c_str());
  }
}

TEST(GpuImport, AFileOverTheCapOrADirectoryIsRefusedInOneLineBeforeItIsParsed) {
  const std::string file = temp("huge.json");
  write(file, "{}");
  ASSERT_EQ(::truncate(file.c_str(), kMaxGpuJsonBytes + 1), 0);
  auto r = readGpuJson(file, "seam 0.1.0");
  ASSERT_FALSE(r.hasValue());
  EXPECT_NE(r.status().message().find("larger than 64 MiB"), std::string::npos)
      << r.status().message();
  std::remove(file.c_str());
  auto dir = readGpuJson(::testing::TempDir(), "seam 0.1.0");
  ASSERT_FALSE(dir.hasValue());
  EXPECT_NE(dir.status().message().find("a directory, not a file"), std::string::npos);
}

TEST(GpuImport, AFileImportedBeforeIsFoundAsItsRunAndAnotherTimingIsNot) {
  const std::string db = temp("dup.db"), file = temp("dup.json"), other = temp("other.json");
  std::remove(db.c_str());
  write(file, kRunJson);
  std::string retimed = kRunJson;
  retimed.replace(retimed.find("\"median_us\": 6.3"), 16, "\"median_us\": 6.4");
  write(other, retimed);
  auto store = Store::open(db);
  ASSERT_TRUE(store.hasValue());
  auto first = readGpuJson(file, "seam 0.1.0");
  ASSERT_TRUE(first.hasValue()) << first.status().message();
  auto none = importedAs(*store, *first);
  ASSERT_TRUE(none.hasValue());
  EXPECT_EQ(*none, 0);
  auto written = writeGpuResult(*store, *first);
  ASSERT_TRUE(written.hasValue());
  auto again = importedAs(*store, *readGpuJson(file, "seam 0.1.0"));
  ASSERT_TRUE(again.hasValue());
  EXPECT_EQ(*again, written->run_id);
  // The same command on the same GPUs timed again is another run.
  auto second = importedAs(*store, *readGpuJson(other, "seam 0.1.0"));
  ASSERT_TRUE(second.hasValue());
  EXPECT_EQ(*second, 0);
  EXPECT_TRUE(sameGpuResult(*first, *readGpuJson(file, "seam 0.1.0")));
  EXPECT_FALSE(sameGpuResult(*first, *readGpuJson(other, "seam 0.1.0")));
  for (const std::string& f : {db, file, other}) std::remove(f.c_str());
}

}  // namespace
}  // namespace seam::reports
