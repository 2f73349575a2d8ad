// Recordings judged against a case's plan: the built Flight Recorder dumps
// and NCCL logs of tests/data/recordings/ (make_recordings.py says how each
// rank's calls were derived from SGLang's dp_attention.py), recordings of
// planted bugs that fr_trace's rules alone pass, partial evidence, and
// malformed or foreign input refused with one line.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

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

RecordingVerdict mustJudge(const Recording& rec, const Plan& plan, int passes = 1) {
  auto v = judgeRecording(rec, plan, passes);
  EXPECT_TRUE(v) << v.status().message();
  return v ? *v : RecordingVerdict{};
}

TEST(Recordings, CorrectFlightRecorderDumpsAreExplainedCallByCall) {
  const Recording rec = mustRead("fr/correct");
  EXPECT_EQ(rec.format, "flight-recorder");
  EXPECT_EQ(rec.version, "2.10");
  ASSERT_EQ(rec.ranks.size(), 4u);
  const RecordingVerdict v = mustJudge(rec, dpCasePlan());
  EXPECT_TRUE(v.holds());
  EXPECT_EQ(v.calls, 20);
  EXPECT_EQ(v.explained, 20);
  EXPECT_EQ(v.owed, 20);
}

TEST(Recordings, GroupsMapOntoTheAxesWhoseGroupsTheyAre) {
  const RecordingVerdict v = mustJudge(mustRead("fr/correct"), dpCasePlan());
  for (const GroupAxes& g : v.groups) {
    if (g.name == "pg 2 (attn_tp)") {
      EXPECT_EQ(g.axes, std::vector<Axis>{Axis::kAttnTp});
    }
    if (g.name == "pg 4 (attn_dp)") {
      EXPECT_EQ(g.axes, std::vector<Axis>{Axis::kAttnDp});
    }
    if (g.name == "pg 1 (tp)") {
      EXPECT_NE(std::find(g.axes.begin(), g.axes.end(), Axis::kTp), g.axes.end());
    }
  }
}

TEST(Recordings, NcclLogsPerRankAndInterleavedAreExplained) {
  const Plan plan = dpCasePlan();
  const Recording per_rank = mustRead("nccl/per_rank");
  EXPECT_EQ(per_rank.format, "nccl-log");
  EXPECT_TRUE(mustJudge(per_rank, plan).holds());
  // Two decode steps in one file, every rank's lines interleaved.
  const Recording two = mustRead("nccl/correct.log");
  EXPECT_TRUE(mustJudge(two, plan, 2).holds());
  const RecordingVerdict one = mustJudge(two, plan, 1);
  ASSERT_FALSE(one.findings.empty());
  EXPECT_EQ(one.findings.front().kind, FindingKind::kExtra);
}

TEST(Recordings, AnExtraAllReduceOnEveryRankIsFlaggedThoughFrTraceRulesPass) {
  const Recording rec = mustRead("fr/extra_allreduce");
  EXPECT_TRUE(crossRankFindings(rec).empty());
  const RecordingVerdict v = mustJudge(rec, dpCasePlan());
  ASSERT_FALSE(v.findings.empty());
  const Finding& f = v.findings.front();
  EXPECT_EQ(f.kind, FindingKind::kExtra);
  EXPECT_EQ(f.rank, 0);
  EXPECT_EQ(f.group, "pg 1 (tp)");
  EXPECT_EQ(f.seq, 3);
  EXPECT_NE(f.where.find("nccl_trace_rank_0\", entry 5"), std::string::npos) << f.where;
  EXPECT_NE(f.frame.find("tensor_model_parallel_all_reduce"), std::string::npos);
  EXPECT_EQ(v.findings.size(), 4u);  // one per rank
}

TEST(Recordings, AReductionOverAWrongGroupOfTheSameSizeIsFlaggedThoughFrTraceRulesPass) {
  const Recording rec = mustRead("fr/wrong_group");
  EXPECT_TRUE(crossRankFindings(rec).empty());
  const RecordingVerdict v = mustJudge(rec, dpCasePlan());
  ASSERT_FALSE(v.findings.empty());
  const Finding& f = v.findings.front();
  EXPECT_EQ(f.kind, FindingKind::kWrongGroup);
  EXPECT_EQ(f.group, "pg 4 (attn_dp)");
  EXPECT_EQ(f.seq, 1);
  EXPECT_NE(f.expected.find("layer 1 stage 1 entry all_reduce over attn_tp"), std::string::npos)
      << f.expected;
  EXPECT_NE(f.expected.find("boundary 0->1"), std::string::npos);
}

TEST(Recordings, ADroppedCombineIsFlaggedInDumpsAndLogsThoughFrTraceRulesPass) {
  for (const char* rel : {"fr/dropped_combine", "nccl/dropped_combine.log"}) {
    const Recording rec = mustRead(rel);
    EXPECT_TRUE(crossRankFindings(rec).empty()) << rel;
    const RecordingVerdict v = mustJudge(rec, dpCasePlan());
    ASSERT_EQ(v.findings.size(), 8u) << rel;  // two collectives on each of four ranks
    const Finding& f = v.findings.front();
    EXPECT_EQ(f.kind, FindingKind::kMissing);
    EXPECT_EQ(f.rank, 0);
    EXPECT_NE(
        f.expected.find("layer 1 stage 1 exit dp_reduce_scatter (its reduce_scatter) over tp"),
        std::string::npos)
        << f.expected;
    EXPECT_NE(f.expected.find("boundary 1->2"), std::string::npos);
  }
}

TEST(Recordings, ACallOnAnotherRanksGroupOfTheOwedAxisIsAWrongGroup) {
  Recording rec = mustRead("fr/correct");
  int other = -1;  // ranks 2 and 3's attention-TP group
  for (std::size_t g = 0; g < rec.groups.size(); ++g)
    if (rec.groups[g].members == std::vector<int>{2, 3}) other = static_cast<int>(g);
  ASSERT_GE(other, 0);
  rec.ranks[0][0].group = other;
  const RecordingVerdict v = mustJudge(rec, dpCasePlan());
  ASSERT_FALSE(v.findings.empty());
  EXPECT_EQ(v.findings.front().kind, FindingKind::kWrongGroup);
  EXPECT_EQ(v.findings.front().rank, 0);
}

TEST(Recordings, SizesThatDifferAcrossRanksAreWhatFrTraceCatchesAndSeamToo) {
  const Recording rec = mustRead("fr/size_mismatch");
  const auto cross = crossRankFindings(rec);
  ASSERT_EQ(cross.size(), 1u);
  EXPECT_EQ(cross[0].kind, FindingKind::kCrossRankSize);
  EXPECT_EQ(cross[0].rank, 3);
  const RecordingVerdict v = mustJudge(rec, dpCasePlan());
  ASSERT_FALSE(v.findings.empty());
  EXPECT_EQ(v.findings.front().kind, FindingKind::kWrongSize);
  EXPECT_EQ(v.findings.front().rank, 3);
}

TEST(Recordings, AMissingRanksDumpIsPartialEvidenceNeverPassed) {
  const RecordingVerdict v = mustJudge(mustRead("fr/missing_rank"), dpCasePlan());
  EXPECT_TRUE(v.findings.empty());
  ASSERT_EQ(v.partial.size(), 1u);
  EXPECT_EQ(v.partial[0].rank, 3);
  EXPECT_FALSE(v.holds());
}

TEST(Recordings, AWrappedRingBufferIsPartialEvidenceNotMissingCalls) {
  const RecordingVerdict v = mustJudge(mustRead("fr/truncated"), dpCasePlan());
  EXPECT_TRUE(v.findings.empty());
  ASSERT_EQ(v.partial.size(), 1u);
  EXPECT_NE(v.partial[0].what.find("record_id 2"), std::string::npos);
  EXPECT_FALSE(v.holds());
}

/// --pattern '*E' --tp 2 --ep 2 --a2a deepep --tokens 2, each rank's calls as
/// SGLang's DeepEP path issues them: the attention's reduce-scatter over
/// attn_tp (2 rows -> 1), the dispatch and combine all-to-alls over moe_ep,
/// the all-gather back over attn_tp (1 -> 2); hidden 2688.
Recording a2aRecording(bool drop_combine) {
  Recording rec;
  rec.format = "flight-recorder";
  rec.source = "built in the test";
  rec.groups.push_back({"pg 0 (default_pg)", {0, 1}});
  rec.present = {true, true};
  rec.lost_front = {false, false};
  rec.ranks.resize(2);
  const std::int64_t h = 2688;
  for (int r = 0; r < 2; ++r) {
    auto add = [&](CallKind k, const char* op, std::int64_t in, std::int64_t out) {
      RecordedCall c;
      c.kind = k;
      c.op = op;
      c.group = 0;
      c.in_elems = in * h;
      c.out_elems = out * h;
      c.dtype = "bf16";
      c.seq = static_cast<std::int64_t>(rec.ranks[r].size()) + 1;
      rec.ranks[r].push_back(c);
    };
    add(CallKind::kReduceScatter, "nccl:_reduce_scatter_base", 2, 1);
    add(CallKind::kAllToAll, "nccl:all_to_all_single", 1, 3);  // routing decides the split
    if (!drop_combine) add(CallKind::kAllToAll, "nccl:all_to_all_single", 3, 1);
    add(CallKind::kAllGather, "nccl:_all_gather_base", 1, 2);
  }
  return rec;
}

Plan a2aPlan() {
  CaseSpec spec;
  spec.pattern = "*E";
  spec.tp = 2;
  spec.ep = 2;
  spec.a2a = "deepep";
  spec.tokens = "2";
  auto c = buildCase(spec);
  EXPECT_TRUE(c) << c.status().message();
  auto plan = buildPlan(*c, PolicyKind::kDeclared);
  EXPECT_TRUE(plan) << plan.status().message();
  return *plan;
}

TEST(Recordings, AllToAllsWithoutTheirSplitsArePartialEvidence) {
  const RecordingVerdict v = mustJudge(a2aRecording(false), a2aPlan());
  EXPECT_TRUE(v.findings.empty());
  EXPECT_EQ(v.explained, 8);
  ASSERT_EQ(v.partial.size(), 1u);
  EXPECT_NE(v.partial[0].what.find("all_to_all"), std::string::npos);
  EXPECT_FALSE(v.holds());
}

TEST(Recordings, ADroppedAllToAllCombineIsNamedAtItsLayer) {
  const RecordingVerdict v = mustJudge(a2aRecording(true), a2aPlan());
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0].kind, FindingKind::kMissing);
  EXPECT_NE(v.findings[0].expected.find("layer 1 stage 1 compute all_to_all over moe_ep"),
            std::string::npos)
      << v.findings[0].expected;
}

/// --pattern 'M-|*-' --pp 2 --tokens 2 (nemotron-h-8b's hidden 4096): the
/// first pipeline stage sends the hidden state and the residual to the
/// second, which receives both (the pp group is the whole world here).
TEST(Recordings, PipelineSendsAndRecvsAreTiedToTheCutAndAMissingRecvIsNamed) {
  CaseSpec spec;
  spec.pattern = "M-|*-";
  spec.pp = 2;
  spec.tokens = "2";
  auto c = buildCase(spec);
  ASSERT_TRUE(c) << c.status().message();
  auto plan = buildPlan(*c, PolicyKind::kDeclared);
  ASSERT_TRUE(plan) << plan.status().message();
  Recording rec;
  rec.format = "flight-recorder";
  rec.source = "built in the test";
  rec.groups.push_back({"pg 0 (default_pg)", {0, 1}});
  rec.present = {true, true};
  rec.lost_front = {false, false};
  rec.ranks.resize(2);
  for (int k = 0; k < 2; ++k) {
    RecordedCall send{CallKind::kSend, "nccl:send 0->1", 0, 2 * 4096, 2 * 4096, "bf16", k + 1, 1};
    RecordedCall recv{CallKind::kRecv, "nccl:recv 1<-0", 0, 2 * 4096, 2 * 4096, "bf16", k + 1, 0};
    rec.ranks[0].push_back(send);
    rec.ranks[1].push_back(recv);
  }
  EXPECT_TRUE(mustJudge(rec, *plan).holds());
  rec.ranks[1].pop_back();
  const RecordingVerdict v = mustJudge(rec, *plan);
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_EQ(v.findings[0].kind, FindingKind::kMissing);
  EXPECT_EQ(v.findings[0].rank, 1);
  EXPECT_NE(v.findings[0].expected.find("layer 2 stage 2 entry recv over pp"), std::string::npos)
      << v.findings[0].expected;
}

/// The same case logged by NCCL, each all-to-all as ProcessGroupNCCL runs
/// it without ncclAlltoAll: a Send to and a Recv from every member, grouped;
/// the reader folds each group of four lines into one all-to-all.
TEST(Recordings, GroupedSendRecvAllToAllsInNcclLogsAreFoldedAndExplained) {
  const std::string path = ::testing::TempDir() + "seam_a2a_nccl.log";
  std::string text;
  for (int r = 0; r < 2; ++r) {
    const std::string pre =
        "node:" + std::to_string(700 + r) + ":1 [" + std::to_string(r) + "] NCCL INFO ";
    text += pre + "ncclCommInitRank comm 0xa" + std::to_string(r) + " rank " + std::to_string(r) +
            " nranks 2 cudaDev 0 nvmlDev 0 busId 1 commId 0x77 - Init COMPLETE\n";
    auto call = [&](const char* op, int count, int root) {
      text += pre + op + ": opCount 0 sendbuff 0x1 recvbuff 0x2 count " + std::to_string(count) +
              " datatype 9 op 0 root " + std::to_string(root) + " comm 0xa" + std::to_string(r) +
              " [nranks=2] stream 0x3\n";
    };
    call("ReduceScatter", 2688, 0);
    for (int pass = 0; pass < 2; ++pass) {  // dispatch, then combine: uneven splits
      for (int peer = 0; peer < 2; ++peer) {
        call("Send", 2688 * (peer + 1), peer);
        call("Recv", 2688 * (2 - peer), peer);
      }
    }
    call("AllGather", 2688, 0);
  }
  std::ofstream(path) << text;
  auto rec = readRecording(path);
  ASSERT_TRUE(rec) << rec.status().message();
  ASSERT_EQ(rec->ranks[0].size(), 4u);
  EXPECT_EQ(rec->ranks[0][1].kind, CallKind::kAllToAll);
  EXPECT_EQ(rec->ranks[0][1].in_elems, 3 * 2688);
  const RecordingVerdict v = mustJudge(*rec, a2aPlan());
  EXPECT_TRUE(v.findings.empty());
  EXPECT_EQ(v.explained, 8);
  ASSERT_EQ(v.partial.size(), 1u);
  EXPECT_NE(v.partial[0].what.find("all_to_all"), std::string::npos);
}

/// Every malformed or foreign recording is refused with one line naming
/// the file and, where the fault is inside it, the entry or line.
TEST(Recordings, MalformedOrForeignRecordingsAreRefusedWithOneLineNamingTheFileAndEntry) {
  const Plan plan = dpCasePlan();
  const std::pair<const char*, const char*> cases[] = {
      {"bad/fr_malformed", "nccl_trace_rank_0\": not a JSON object"},
      {"bad/fr_foreign", "results_0\": no \"version\""},
      {"bad/fr_version", "schema version \"1.0\""},
      {"bad/fr_unknown_op", "nccl_trace_rank_0\", entry 2: profiling_name \"nccl:frobnicate\""},
      {"bad/fr_no_axis", "group \"pg 6 (odd)\" of ranks [0, 3] is no group"},
      {"bad/nccl_bad_line.log", "nccl_bad_line.log\", line 8: the ReduceScatter line lacks"},
      {"bad/nccl_no_init.log", "line 1: comm 0x55d0a0002000 has no Init COMPLETE line"},
      {"bad/not_a_log.txt", "no \"NCCL INFO\" line"},
  };
  for (const auto& [rel, says] : cases) {
    auto rec = readRecording(kData + rel);
    Status s = Status::ok();
    if (!rec) {
      s = rec.status();
    } else if (auto v = judgeRecording(*rec, plan, 1); !v) {
      s = v.status();
    }
    ASSERT_FALSE(s.isOk()) << rel;
    EXPECT_NE(s.message().find(says), std::string::npos) << rel << ": " << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << rel;
  }
}

/// Real NCCL logs of one H200 (tests/data/recordings/nccl_h200/README.md:
/// record_calls issues nine calls on a one-rank communicator and two split
/// from it). Skipped while the folder is absent.
TEST(Recordings, RealOneGpuNcclLogsAreReadCallByCall) {
  const std::string dir = kData + "nccl_h200/";
  if (!std::filesystem::exists(dir + "record_calls.log")) GTEST_SKIP() << "no " << dir;
  const Recording rec = mustRead("nccl_h200/record_calls.log");
  ASSERT_EQ(rec.ranks.size(), 1u);
  EXPECT_EQ(rec.groups.size(), 3u);  // ncclCommInitAll, then two ncclCommSplit colours
  const auto& calls = rec.ranks[0];
  ASSERT_EQ(calls.size(), 9u);
  const CallKind kinds[] = {CallKind::kAllReduce, CallKind::kAllReduce, CallKind::kReduceScatter,
                            CallKind::kAllGather, CallKind::kAllToAll,  CallKind::kOther,
                            CallKind::kAllReduce, CallKind::kSend,      CallKind::kRecv};
  const char* dtypes[] = {"bf16", "fp32", "bf16", "bf16", "bf16", "bf16", "int64", "bf16", "bf16"};
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(calls[i].kind, kinds[i]) << i;
    EXPECT_EQ(calls[i].dtype, dtypes[i]) << i;
  }
  EXPECT_EQ(calls[0].in_elems, 20480);  // hidden 4096 x 5 tokens
  EXPECT_EQ(calls[6].in_elems, 1);
  EXPECT_EQ(calls[7].in_elems, 12288);
  EXPECT_EQ(calls[5].op, "Broadcast");
  // The split communicators' calls are numbered on each communicator.
  EXPECT_EQ(calls[1].seq, 1);
  EXPECT_EQ(calls[3].seq, 3);
  // A one-rank case owes no collective (the engine skips a group of one):
  // every recorded call is unexplained.
  CaseSpec spec;
  spec.pattern = "M";
  spec.tokens = "5";
  auto c = buildCase(spec);
  ASSERT_TRUE(c);
  auto plan = buildPlan(*c, PolicyKind::kDeclared);
  ASSERT_TRUE(plan);
  const RecordingVerdict v = mustJudge(rec, *plan);
  EXPECT_EQ(v.findings.size(), 9u);
  EXPECT_EQ(v.findings.front().kind, FindingKind::kExtra);
  const Recording bench = mustRead("nccl_h200/bench_allreduce.log");
  ASSERT_EQ(bench.ranks.size(), 1u);
  EXPECT_EQ(bench.ranks[0].size(), 8u);
  for (const RecordedCall& call : bench.ranks[0]) EXPECT_EQ(call.kind, CallKind::kAllReduce);
  // Without NCCL_DEBUG_SUBSYS=INIT no call can be tied to its communicator's members.
  auto coll_only = readRecording(dir + "record_calls_coll_only.log");
  ASSERT_FALSE(coll_only);
  EXPECT_NE(coll_only.status().message().find("line 2: comm"), std::string::npos);
}

/// Recorded on the H200 (record_graph.cc): two calls captured in a CUDA
/// graph are logged once, when captured, in the very line an eager call
/// writes; its three replays log nothing, under INIT,COLL and under ALL.
/// So a log cannot say which calls a graph replayed (docs/limitations.md).
TEST(Recordings, ARealLogShowsCapturedCallsOnceAndLikeEagerOnesAndNoReplay) {
  if (!std::filesystem::exists(kData + "nccl_h200/record_graph.log")) GTEST_SKIP();
  for (const char* log : {"nccl_h200/record_graph.log", "nccl_h200/record_graph_all.log"}) {
    const Recording rec = mustRead(log);
    ASSERT_EQ(rec.ranks.size(), 1u) << log;
    const auto& calls = rec.ranks[0];
    ASSERT_EQ(calls.size(), 4u) << log;  // eager, captured x 2, eager; no replay
    const CallKind kinds[] = {CallKind::kAllReduce, CallKind::kAllReduce, CallKind::kAllGather,
                              CallKind::kAllReduce};
    for (int i = 0; i < 4; ++i) EXPECT_EQ(calls[i].kind, kinds[i]) << log << " " << i;
    EXPECT_EQ(calls[0].in_elems, calls[1].in_elems);
  }
}

/// One planted change to a correct recording (a call dropped, or one
/// duplicated) on one rank is always a finding when the run had no custom
/// all-reduce, and never passes when it may have had one (a dropped call
/// that custom all-reduce could have carried is unchecked, not missing).
RC_GTEST_PROP(Recordings, AnyDroppedOrDuplicatedCallOnOneRankIsAFinding, ()) {
  static const Plan plan = dpCasePlan();
  static const Recording correct = *readRecording(kData + "fr/correct");
  Recording rec = correct;
  const int rank = *rc::gen::inRange(0, 4);
  auto& calls = rec.ranks[rank];
  const int at = *rc::gen::inRange(0, static_cast<int>(calls.size()));
  if (*rc::gen::arbitrary<bool>()) {
    calls.erase(calls.begin() + at);
  } else {
    calls.insert(calls.begin() + at, calls[at]);
  }
  auto v = judgeRecording(rec, plan, 1, RecordingRoutes{.custom_all_reduce = false});
  RC_ASSERT(v.hasValue());
  RC_ASSERT(!v->findings.empty());
  auto with_custom = judgeRecording(rec, plan, 1);
  RC_ASSERT(with_custom.hasValue());
  RC_ASSERT(!with_custom->holds());
}

TEST(Recordings, AnUnrecordedAllReduceCustomAllReduceCouldCarryIsUncheckedNotMissing) {
  // parallel_state.py GroupCoordinator.all_reduce (sgl-project/sglang
  // @0005973a) takes custom all-reduce before NCCL when should_custom_ar
  // holds (custom_all_reduce.py @004e6561: groups of 2, 4, 6 or 8, under
  // 8 MiB, a multiple of 16 bytes). The case's all-reduces run over
  // attention TP groups of 2, a few rows of hidden 2688: custom all-reduce
  // carries them, so a recording of SGLang lacks them.
  const Plan plan = dpCasePlan();
  Recording rec = mustRead("fr/correct");
  int dropped = 0;
  for (auto& calls : rec.ranks) {
    const auto before = calls.size();
    std::erase_if(calls, [](const RecordedCall& c) { return c.kind == CallKind::kAllReduce; });
    dropped += static_cast<int>(before - calls.size());
  }
  ASSERT_GT(dropped, 0);
  const RecordingVerdict v = mustJudge(rec, plan);
  EXPECT_TRUE(v.findings.empty());
  EXPECT_FALSE(v.holds());
  EXPECT_EQ(v.hidden[static_cast<int>(Route::kCustomAllReduce)], dropped);
  ASSERT_FALSE(v.partial.empty());
  EXPECT_NE(v.partial.back().what.find(std::to_string(dropped) + " all_reduce calls"),
            std::string::npos)
      << v.partial.back().what;
  // Recorded without custom all-reduce, the same recording misses every one.
  auto off = judgeRecording(rec, plan, 1, RecordingRoutes{.custom_all_reduce = false});
  ASSERT_TRUE(off);
  int missing = 0;
  for (const Finding& f : off->findings) missing += f.kind == FindingKind::kMissing;
  EXPECT_EQ(missing, dropped);
}

}  // namespace
}  // namespace seam::recordings
