// Training recordings judged against a training plan: the Flight Recorder
// dumps of tests/data/recordings/training/correct (one PrimeRL step of
// nemotron-3-nano under FSDP2 + Ulysses CP + EP, derived from prime-rl's and
// torchtitan's code by make_training_recordings.py, not from seam), and bugs
// planted in copies of them that fr_trace's rules alone pass: an all-reduce
// added on every rank, a reduce-scatter over another group of the same size,
// a combine dropped. Malformed input is refused with one line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <system_error>

#include "seam/recordings/alignment.h"
#include "seam/recordings/recording.h"
#include "seam/sim/model/case_spec.h"

namespace seam::recordings {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kCorrect =
    std::string(SEAM_SOURCE_DIR) + "/tests/data/recordings/training/correct";
constexpr int kWorld = 4;

/// The training plan of nemotron-3-nano with --docs 8 under `layout` and
/// the sizes given (a case spec's other fields at their defaults).
TrainingPlan nanoPlan(const std::string& layout, int dp, int cp, int ep, int tp,
                      const std::string& ep_backend = "torch") {
  CaseSpec spec;
  spec.family = "training";
  spec.layout = layout;
  spec.model = "nemotron-3-nano";
  spec.dp = dp;
  spec.cp = cp;
  spec.ep = ep;
  spec.tp = tp;
  spec.docs = "8";
  spec.ep_backend = ep_backend;
  auto c = buildTrainingCase(spec);
  EXPECT_TRUE(c) << c.status().message();
  auto plan = c ? buildTrainingPlan(*c) : Expected<TrainingPlan>(c.status());
  EXPECT_TRUE(plan) << plan.status().message();
  return plan ? *plan : TrainingPlan{};
}

/// The case the dumps record: --layout primerl --model nemotron-3-nano --dp 2 --cp 2 --ep 2
/// --docs 8.
const TrainingPlan& plan() {
  static const TrainingPlan p = nanoPlan("primerl", 2, 2, 2, 1);
  return p;
}

json readDump(int rank) {
  std::ifstream in(kCorrect + "/nccl_trace_rank_" + std::to_string(rank));
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

/// The pg of `rank` whose desc is `desc`: [name, desc].
json pgOf(const json& dump, const std::string& desc) {
  for (const auto& [name, pg] : dump.at("pg_config").items())
    if (pg.at("desc") == desc) return json::array({name, desc});
  ADD_FAILURE() << "no pg " << desc;
  return json::array();
}

/// The index of the `nth` entry (1-based) on the pg named `desc` with this profiling name.
std::size_t nthOn(const json& dump, const std::string& desc, const std::string& op, int nth) {
  const json pg = pgOf(dump, desc);
  const json& entries = dump.at("entries");
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (entries[i].at("process_group") == pg && entries[i].at("profiling_name") == op && --nth == 0)
      return i;
  ADD_FAILURE() << "no such entry on " << desc;
  return 0;
}

/// Record ids and each group's sequence numbers counted again, as the
/// recorder would have numbered the edited run.
void renumber(json& dump) {
  std::map<std::string, int> seq;
  json& entries = dump.at("entries");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    entries[i]["record_id"] = i;
    const int s = ++seq[entries[i].at("process_group")[0].get<std::string>()];
    entries[i]["collective_seq_id"] = s;
    entries[i]["op_id"] = s;
  }
}

/// A copy of the correct dumps with `edit` applied on every rank, in a
/// folder of this process's own, removed when it goes out of scope.
class Planted {
 public:
  Planted(const std::string& name, const std::function<void(json&, int)>& edit)
      : dir_(fs::temp_directory_path() /
             ("seam_training_rec_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (int r = 0; r < kWorld; ++r) {
      json dump = readDump(r);
      edit(dump, r);
      renumber(dump);
      std::ofstream(dir_ / ("nccl_trace_rank_" + std::to_string(r))) << dump.dump();
    }
  }
  ~Planted() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  Planted(const Planted&) = delete;
  Planted& operator=(const Planted&) = delete;
  std::string path() const { return dir_.string(); }

 private:
  fs::path dir_;
};

json frame(const char* fn, const char* file) {
  return json::array({{{"name", fn}, {"filename", file}, {"line", 0}}});
}

RecordingVerdict judge(const std::string& path) {
  auto rec = readRecording(path);
  EXPECT_TRUE(rec) << rec.status().message();
  if (!rec) return {};
  // fr_trace's rules alone pass every recording of this file.
  EXPECT_TRUE(crossRankFindings(*rec).empty()) << crossRankFindings(*rec).front().where;
  auto v = judgeTrainingRecording(*rec, plan(), 1);
  EXPECT_TRUE(v) << v.status().message();
  return v ? *v : RecordingVerdict{};
}

/// Per rank: the step's metric gathers on the default process group
/// (make_training_recordings.py step_end: all_gather_object's two, then two
/// for each of 14 keys).
constexpr int kMetricGathers = 2 + 2 * 14;

TEST(TrainingRecordings, HandDerivedPrimeRlStepIsExplainedCallByCall) {
  const RecordingVerdict v = judge(kCorrect);
  EXPECT_TRUE(v.findings.empty());
  EXPECT_EQ(v.calls, 4 * 1006);
  // The model's calls and the gradient norm's three all-reduces are owed
  // and explained; the metric gathers are counted outside the model.
  EXPECT_EQ(v.outside, 4 * kMetricGathers);
  EXPECT_EQ(v.explained, v.calls - v.outside);
  EXPECT_EQ(v.owed, v.explained);
  // Only the rows the routing decides are unchecked: 23 MoE layers x 6 EP exchanges per rank.
  ASSERT_EQ(v.partial.size(), 1u);
  EXPECT_EQ(v.partial[0].what.rfind(std::to_string(4 * 23 * 6) + " calls move rows the routing", 0),
            0u)
      << v.partial[0].what;
  for (const GroupAxes& g : v.groups) {
    if (g.name == "pg 7 (dp_shard_mod_ep)") {
      EXPECT_EQ(g.labels, std::vector<std::string>{"expert_dp"});
    }
    if (g.name == "pg 3 (cp)") {
      EXPECT_EQ(g.labels, (std::vector<std::string>{"cp", "ep"}));
    }
  }
}

TEST(TrainingRecordings, AnAllReduceAddedOnEveryRankIsAnExtraCall) {
  // After layer 1's combine (the ep pg's third all-to-all), the MoE output
  // all-reduced again over the EP group: every member agrees, fr_trace passes.
  const Planted dir("extra_allreduce", [](json& d, int) {
    const std::size_t at = nthOn(d, "ep", "nccl:all_to_all", 3);
    json e = d["entries"][at];
    e["profiling_name"] = "nccl:all_reduce";
    e["input_sizes"] = e["output_sizes"] = json::array({json::array({4, 2688})});
    e["frames"] = frame("forward", "prime_rl/trainer/models/layers/moe.py");
    d["entries"].insert(d["entries"].begin() + static_cast<std::ptrdiff_t>(at) + 1, e);
  });
  const RecordingVerdict v = judge(dir.path());
  ASSERT_FALSE(v.findings.empty());
  const Finding& f = v.findings.front();
  EXPECT_EQ(f.kind, FindingKind::kExtra);
  EXPECT_EQ(f.rank, 0);
  EXPECT_EQ(f.group, "pg 5 (ep)");
  EXPECT_EQ(f.seq, 4);
  EXPECT_EQ(f.frame, "prime_rl/trainer/models/layers/moe.py:0 (forward)");
  EXPECT_NE(f.expected.find("next: fwd layer 3 (E) fsdp all-gather block"), std::string::npos)
      << f.expected;
  EXPECT_EQ(v.findings.size(), 4u);  // each rank's one extra call
}

TEST(TrainingRecordings, AReduceScatterOverAnotherGroupOfTheSameSizeIsAWrongGroup) {
  // Layer 1's experts' gradient reduce-scattered over the EP group ([0,1])
  // instead of dp_shard_mod_ep ([0,2]): both of size 2.
  const Planted dir("wrong_group", [](json& d, int) {
    const json edp = pgOf(d, "dp_shard_mod_ep");
    json& entries = d["entries"];
    std::size_t last = 0;
    for (std::size_t i = 0; i < entries.size(); ++i)
      if (entries[i]["process_group"] == edp &&
          entries[i]["profiling_name"] == "nccl:_reduce_scatter_base")
        last = i;
    entries[last]["process_group"] = pgOf(d, "ep");
    entries[last]["frames"] =
        frame("post_backward", "torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py");
  });
  const RecordingVerdict v = judge(dir.path());
  ASSERT_FALSE(v.findings.empty());
  const Finding& f = v.findings.front();
  EXPECT_EQ(f.kind, FindingKind::kWrongGroup);
  EXPECT_EQ(f.rank, 0);
  EXPECT_EQ(f.group, "pg 5 (ep)");
  EXPECT_NE(f.expected.find("bwd layer 1 (E) fsdp reduce-scatter experts"), std::string::npos)
      << f.expected;
  EXPECT_NE(f.expected.find("expert_dp [0,2]"), std::string::npos) << f.expected;
}

TEST(TrainingRecordings, ACombineDroppedOnEveryRankIsAMissingCall) {
  const Planted dir("dropped_combine", [](json& d, int) {
    d["entries"].erase(d["entries"].begin() +
                       static_cast<std::ptrdiff_t>(nthOn(d, "ep", "nccl:all_to_all", 3)));
  });
  const RecordingVerdict v = judge(dir.path());
  ASSERT_EQ(v.findings.size(), 4u);
  const Finding& f = v.findings.front();
  EXPECT_EQ(f.kind, FindingKind::kMissing);
  EXPECT_EQ(f.rank, 0);
  EXPECT_NE(f.expected.find("fwd layer 1 (E) ep combine: all_to_all over ep [0,1]"),
            std::string::npos)
      << f.expected;
}

TEST(TrainingRecordings, TheGradientNormsAllReducesAreOwedAndADroppedOneIsMissing) {
  // _clip_grad_norm_with_ep's experts' norm over ep (its second all-reduce)
  // dropped on every rank: fr_trace passes, seam names the step's call.
  const Planted dir("dropped_norm", [](json& d, int) {
    const json ep = pgOf(d, "ep");
    json& entries = d["entries"];
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (entries[i]["process_group"] == ep && entries[i]["profiling_name"] == "nccl:all_reduce") {
        entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
    }
    ADD_FAILURE() << "no gradient-norm all-reduce on ep";
  });
  const RecordingVerdict v = judge(dir.path());
  ASSERT_EQ(v.findings.size(), 4u);
  const Finding& f = v.findings.front();
  EXPECT_EQ(f.kind, FindingKind::kMissing);
  EXPECT_EQ(f.rank, 0);
  EXPECT_NE(f.expected.find("step clip_grad_norm_: the experts' gradient norm (ep): all_reduce "
                            "[0,1], bytes in 4, out 4"),
            std::string::npos)
      << f.expected;
}

/// The index of the step's last gradient-norm all-reduce (over dp_shard_cp).
std::size_t lastNormAllReduce(const json& d) {
  const json fsdp = pgOf(d, "dp_shard_cp");
  const json& entries = d.at("entries");
  for (std::size_t i = entries.size(); i-- > 0;)
    if (entries[i].at("process_group") == fsdp &&
        entries[i].at("profiling_name") == "nccl:all_reduce")
      return i;
  ADD_FAILURE() << "no gradient-norm all-reduce";
  return 0;
}

TEST(TrainingRecordings, AnAllReduceOnTheDefaultGroupAfterTheStepIsStillAnExtraCall) {
  // A one-element fp32 all-reduce on the default process group after the
  // clipping, on every rank (a metric reduced where the step issues none):
  // not one of the step's known calls outside the model.
  const Planted dir("extra_default_allreduce", [](json& d, int) {
    const std::size_t at = lastNormAllReduce(d);
    json e = d["entries"][at];
    e["process_group"] = pgOf(d, "default_pg");
    d["entries"].insert(d["entries"].begin() + static_cast<std::ptrdiff_t>(at) + 1, e);
  });
  const RecordingVerdict v = judge(dir.path());
  ASSERT_EQ(v.findings.size(), 4u);
  const Finding& f = v.findings.front();
  EXPECT_EQ(f.kind, FindingKind::kExtra);
  EXPECT_EQ(f.rank, 0);
  EXPECT_EQ(f.group, "pg 0 (default_pg)");
  EXPECT_EQ(v.outside, 4 * kMetricGathers);
}

TEST(TrainingRecordings, ATokenExportBarrierIsCountedOutsideTheModel) {
  // enable_token_export: dist.barrier() before the clipping (train.py), which
  // ProcessGroupNCCL records as nccl:all_reduce_barrier of one float.
  const Planted dir("barrier", [](json& d, int) {
    const json ep = pgOf(d, "ep");
    json& entries = d["entries"];
    std::size_t first = 0;
    for (std::size_t i = entries.size(); i-- > 0;)
      if (entries[i]["process_group"] == ep && entries[i]["profiling_name"] == "nccl:all_reduce")
        first = i;
    json e = entries[first];
    e["process_group"] = pgOf(d, "default_pg");
    e["profiling_name"] = "nccl:all_reduce_barrier";
    e["input_sizes"] = e["output_sizes"] = json::array({json::array({1})});
    entries.insert(entries.begin() + static_cast<std::ptrdiff_t>(first) - 1, e);
  });
  const RecordingVerdict v = judge(dir.path());
  EXPECT_TRUE(v.findings.empty());
  EXPECT_EQ(v.outside, 4 * (kMetricGathers + 1));
  EXPECT_EQ(v.explained, v.calls - v.outside);
}

TEST(TrainingRecordings, AGroupNoPlanGroupFitsIsRefusedNamingIt) {
  const Planted dir("foreign_group", [](json& d, int r) {
    for (auto& [name, pg] : d["pg_config"].items())
      if (pg["desc"] == "dp_shard_mod_ep") pg["ranks"] = r % 2 == 0 ? "[0, 3]" : "[1, 2]";
  });
  auto rec = readRecording(dir.path());
  ASSERT_TRUE(rec) << rec.status().message();
  auto v = judgeTrainingRecording(*rec, plan(), 1);
  ASSERT_FALSE(v);
  EXPECT_NE(v.status().message().find("group \"pg 7 (dp_shard_mod_ep)\" of ranks [0,3] is no group "
                                      "of the training plan"),
            std::string::npos)
      << v.status().message();
  EXPECT_EQ(v.status().message().find('\n'), std::string::npos);
}

TEST(TrainingRecordings, AMalformedEntryIsRefusedNamingFileAndEntry) {
  const Planted dir("malformed", [](json& d, int r) {
    if (r == 2) d["entries"][500]["input_sizes"] = "4x2688";
  });
  auto rec = readRecording(dir.path());
  ASSERT_FALSE(rec);
  EXPECT_NE(rec.status().message().find("nccl_trace_rank_2\", entry 500: \"input_sizes\""),
            std::string::npos)
      << rec.status().message();
}

TEST(TrainingRecordings, DeepEpExchangesAbsentFromTheDumpAreHiddenNotMissing) {
  // With ep_comm_backend deepep (models/layers/moe.py _run_deepep_routed_experts,
  // distributed/deepep.py @559b447) the tokens move through DeepEP's own
  // buffers: no ProcessGroupNCCL call, so the Flight Recorder holds none of
  // the EP exchanges (nor the counts all-to-all, which DeepEP does not make).
  // Nor the gradient norm's all-reduces: under DeepEP PrimeRL sets
  // optim.max_norm to None (configs/trainer.py @559b447), so no clipping.
  const Planted dir("deepep", [](json& d, int) {
    const json ep = pgOf(d, "ep");
    json& entries = d["entries"];
    json kept = json::array();
    for (const json& e : entries) {
      const bool norm = e["profiling_name"] == "nccl:all_reduce" &&
                        e["input_sizes"] == json::array({json::array()});
      if (e["process_group"] != ep && !norm) kept.push_back(e);
    }
    entries = kept;
  });
  const TrainingPlan deepep = nanoPlan("primerl", 2, 2, 2, 1, "deepep");
  ASSERT_EQ(deepep.world(), kWorld);
  auto rec = readRecording(dir.path());
  ASSERT_TRUE(rec) << rec.status().message();
  auto v = judgeTrainingRecording(*rec, deepep, 1);
  ASSERT_TRUE(v) << v.status().message();
  EXPECT_TRUE(v->findings.empty());
  EXPECT_EQ(v->explained, v->calls - v->outside);
  // 23 MoE layers x (dispatch, combine) x (forward, recompute, backward) on 4 ranks.
  EXPECT_EQ(v->hidden[static_cast<int>(Route::kDeepEp)], 4 * 23 * 6);
  ASSERT_EQ(v->partial.size(), 1u);
  EXPECT_NE(v->partial[0].what.find("DeepEP"), std::string::npos) << v->partial[0].what;
}

TEST(TrainingRecordings, MegatronSequenceParallelCallsAreOwedWithTheirRecordedSizes) {
  // --layout megatron --tp 2 --docs 8: 4 tokens per rank under SP, bf16,
  // hidden 2688. By hand from Megatron-LM @d98e8a6: the embedding's output
  // reduce-scattered to the sequence (mappings.py
  // _ReduceScatterToSequenceParallelRegion: reduce_scatter_tensor, input 8
  // tokens, output 4); layer 0's norm output gathered back
  // (_GatherFromSequenceParallelRegion: all_gather_into_tensor, 4 -> 8).
  const TrainingPlan megatron = nanoPlan("megatron", 1, 1, 1, 2);
  ASSERT_EQ(megatron.world(), 2);
  const std::vector<OwedCall> owed = owedTrainingCalls(megatron, 0, 1);
  ASSERT_GE(owed.size(), 2u);
  const std::int64_t full = 8 * 2688 * 2, shard = full / 2;
  EXPECT_EQ(owed[0].kind, CallKind::kReduceScatter);
  EXPECT_EQ(owed[0].in_size, full);
  EXPECT_EQ(owed[0].out_size, shard);
  EXPECT_EQ(owed[1].kind, CallKind::kAllGather);
  EXPECT_EQ(owed[1].in_size, shard);
  EXPECT_EQ(owed[1].out_size, full);
  EXPECT_TRUE(owed[1].bytes && owed[1].in_known && owed[1].out_known);
  EXPECT_EQ(owed[0].group, owed[1].group);  // both over tp [0, 1]
}

/// The step-level calls the plan owes rank 0 (after its ops), and the group
/// id of rank 0's first owed call on the plan's `axis` (-1: none).
std::vector<OwedCall> stepCallsOfRankZero(const TrainingPlan& p) {
  std::vector<OwedCall> out;
  for (const OwedCall& c : owedTrainingCalls(p, 0, 1))
    if (c.step_call >= 0) out.push_back(c);
  return out;
}
int groupOfAxis(const TrainingPlan& p, TrainAxis axis) {
  for (const OwedCall& c : owedTrainingCalls(p, 0, 1))
    if (c.op_index >= 0 && p.ranks[0][c.op_index].axis == axis) return c.group;
  return -1;
}

TEST(TrainingRecordings, MegatronsOptimizerStepOwesTheNormThenTrainStepsReductions) {
  // --layout megatron --dp 2 --tp 2 (ep 1, etp = tp: the experts stay in the
  // dense buffer, so one optimizer). By hand from Megatron-LM: the dense
  // optimizer's get_grad_norm_fp32 all-reduces one fp32 over the
  // model-parallel group (tp at pp 1; optimizer.py, clip_grads.py); train_step
  // then all-reduces update_successful (int32) and the norm (fp32 max) over the
  // same group, and the 'lm loss' report [sum, tokens] (two fp32) over dp x cp
  // (training.py train_step, pretrain_mamba.py loss_func).
  const TrainingPlan p = nanoPlan("megatron", 2, 1, 1, 2);
  ASSERT_EQ(p.world(), 4);
  const std::vector<OwedCall> step = stepCallsOfRankZero(p);
  ASSERT_EQ(step.size(), 4u);
  const std::int64_t bytes[] = {4, 4, 4, 8};
  for (std::size_t i = 0; i < step.size(); ++i) {
    EXPECT_EQ(step[i].kind, CallKind::kAllReduce) << i;
    EXPECT_EQ(step[i].in_size, bytes[i]) << i;
    EXPECT_EQ(step[i].out_size, bytes[i]) << i;
  }
  const int tp = groupOfAxis(p, TrainAxis::kTp), dp_cp = groupOfAxis(p, TrainAxis::kDpCp);
  ASSERT_GE(tp, 0);
  ASSERT_GE(dp_cp, 0);
  EXPECT_EQ(step[0].group, tp);
  EXPECT_EQ(step[1].group, tp);
  EXPECT_EQ(step[2].group, tp);
  EXPECT_EQ(step[3].group, dp_cp);
}

TEST(TrainingRecordings, MegatronsExpertOptimizerAddsItsOwnNormOverTpEp) {
  // --ep 2 under tp 2 (etp = tp, world 4): the expert linears leave the dense
  // buffer (use_expert_pgs), so get_megatron_optimizer chains a second
  // optimizer whose grad-stats group is tp_ep_pp (tp_ep at pp 1); the groups
  // differ, so ChainedOptimizer.get_grad_norm takes each optimizer's norm: the
  // dense one's all-reduce, then the experts' over tp_ep.
  const TrainingPlan p = nanoPlan("megatron", 2, 1, 2, 2);
  const std::vector<OwedCall> step = stepCallsOfRankZero(p);
  ASSERT_EQ(step.size(), 5u);
  const int tp = groupOfAxis(p, TrainAxis::kTp), tp_ep = groupOfAxis(p, TrainAxis::kTpEp);
  ASSERT_GE(tp_ep, 0);
  EXPECT_EQ(step[0].group, tp);
  EXPECT_EQ(step[1].group, tp_ep);
  EXPECT_EQ(step[1].in_size, 4);
  EXPECT_EQ(step[2].group, tp);
}

}  // namespace
}  // namespace seam::recordings
