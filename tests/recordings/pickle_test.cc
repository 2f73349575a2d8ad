// Pickled Flight Recorder dumps (the recorder's default format) read without
// Python: tests/data/recordings/fr_pickle/ holds the JSON dumps of fr/ as
// torch::jit::Pickler writes them and as CPython re-saves them
// (make_fr_pickles.py says which rules); each must read to the calls of its
// JSON twin and be judged the same, and a broken pickle is refused in one line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "recording_test_support.h"
#include "seam/recordings/alignment.h"
#include "seam/recordings/recording.h"
#include "seam/sim/model/case_spec.h"
#include "seam/sim/policy/policy.h"

namespace seam::recordings {
namespace {

using test_support::dpCasePlan;
using test_support::kData;
using test_support::mustRead;

void expectSameCalls(const Recording& json, const Recording& pickled) {
  ASSERT_EQ(json.ranks.size(), pickled.ranks.size());
  EXPECT_EQ(pickled.version, json.version);
  for (std::size_t r = 0; r < json.ranks.size(); ++r) {
    ASSERT_EQ(json.ranks[r].size(), pickled.ranks[r].size()) << "rank " << r;
    for (std::size_t i = 0; i < json.ranks[r].size(); ++i) {
      const RecordedCall& a = json.ranks[r][i];
      const RecordedCall& b = pickled.ranks[r][i];
      EXPECT_EQ(a.kind, b.kind);
      EXPECT_EQ(a.op, b.op);
      EXPECT_EQ(json.groups[a.group].members, pickled.groups[b.group].members);
      EXPECT_EQ(json.groups[a.group].name, pickled.groups[b.group].name);
      EXPECT_EQ(a.in_elems, b.in_elems);
      EXPECT_EQ(a.out_elems, b.out_elems);
      EXPECT_EQ(a.dtype, b.dtype);
      EXPECT_EQ(a.seq, b.seq);
      EXPECT_EQ(a.state, b.state);
    }
  }
}

TEST(PickledDumps, ReadToTheCallsOfTheirJsonTwinsWithTheirStackFrames) {
  const Recording json = mustRead("fr/correct");
  const Recording pickled = mustRead("fr_pickle/correct");
  EXPECT_EQ(pickled.format, "flight-recorder");
  expectSameCalls(json, pickled);
  // Frames: pickle dumps carry them (the first is the issuing function).
  ASSERT_FALSE(pickled.ranks[0].empty());
  EXPECT_NE(pickled.ranks[0][0].frame.find("parallel_state.py:0 (all_reduce)"), std::string::npos)
      << pickled.ranks[0][0].frame;
  const RecordingVerdict v = *judgeRecording(pickled, dpCasePlan(), 1);
  EXPECT_TRUE(v.holds());
  EXPECT_EQ(v.explained, v.calls);
  EXPECT_EQ(v.calls, 20);
}

TEST(PickledDumps, ACPythonProtocol4ResaveReadsTheSame) {
  expectSameCalls(mustRead("fr/correct"), mustRead("fr_pickle/correct_py4"));
}

TEST(PickledDumps, APlantedExtraAllReduceIsFlaggedAsInItsJsonDump) {
  const Plan plan = dpCasePlan();
  const RecordingVerdict a = *judgeRecording(mustRead("fr/extra_allreduce"), plan, 1);
  const RecordingVerdict b = *judgeRecording(mustRead("fr_pickle/extra_allreduce"), plan, 1);
  ASSERT_EQ(a.findings.size(), b.findings.size());
  ASSERT_FALSE(b.findings.empty());
  for (std::size_t i = 0; i < a.findings.size(); ++i) {
    EXPECT_EQ(a.findings[i].kind, b.findings[i].kind);
    EXPECT_EQ(a.findings[i].rank, b.findings[i].rank);
    EXPECT_EQ(a.findings[i].seq, b.findings[i].seq);
    EXPECT_EQ(a.findings[i].group, b.findings[i].group);
    EXPECT_EQ(a.findings[i].frame, b.findings[i].frame);
  }
}

/// Reads `bytes` as rank 0's dump of a folder of its own; the error text.
std::string refusal(const std::string& name, const std::string& bytes) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("seam_pickle_test_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "nccl_trace_rank_0", std::ios::binary);
    out << bytes;
  }
  auto rec = readRecording(dir.string());
  std::filesystem::remove_all(dir);
  return rec ? std::string("read") : rec.status().message();
}

TEST(PickledDumps, BrokenOrForeignPicklesAreRefusedInOneLineNamingTheFileAndByte) {
  std::ifstream in(kData + "fr_pickle/correct/nccl_trace_rank_0", std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const struct {
    const char* name;
    std::string bytes;
    const char* says;
  } cases[] = {
      {"truncated", whole.substr(0, whole.size() / 2), "truncated"},
      {"tensor",
       std::string("\x80\x02"
                   "ctorch._utils\n_rebuild_tensor_v2\n)R.",
                   38),
       "a call of torch._utils._rebuild_tensor_v2"},
      {"memo", std::string("\x80\x02h\x07.", 5), "memo id 7 never stored"},
      {"bytes",
       std::string("\x80\x03"
                   "C\x01x.",
                   6),
       "opcode 0x43"},
      // A list appended to itself: refused, not followed forever.
      {"cycle",
       std::string("\x80\x02]q\x00h\x00"
                   "a.",
                   9),
       "containing itself"},
      {"not_a_dict", std::string("\x80\x02K\x01.", 5), "holds no dict"},
  };
  for (const auto& c : cases) {
    const std::string msg = refusal(c.name, c.bytes);
    EXPECT_NE(msg.find(c.says), std::string::npos) << c.name << ": " << msg;
    EXPECT_NE(msg.find("nccl_trace_rank_0"), std::string::npos) << c.name << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << c.name;
  }
}

}  // namespace
}  // namespace seam::recordings
