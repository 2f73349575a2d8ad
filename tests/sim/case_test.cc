#include "seam/sim/model/case.h"

#include <gtest/gtest.h>

#include <string>

namespace seam {
namespace {

// --- names and parsing of the flag values ---------------------------------

TEST(Flags, EveryA2aNameParsesBackToItsValue) {
  for (A2aBackend v : {A2aBackend::kNone, A2aBackend::kDeepep}) {
    auto parsed = parseA2a(a2aName(v));
    ASSERT_TRUE(parsed.hasValue()) << a2aName(v);
    EXPECT_EQ(*parsed, v);
  }
  EXPECT_EQ(a2aName(A2aBackend::kNone), "none");
  EXPECT_EQ(a2aName(A2aBackend::kDeepep), "deepep");
}

TEST(Flags, EveryPaddingNameParsesBackToItsValue) {
  for (DpPadding v : {DpPadding::kMaxLen, DpPadding::kSumLen}) {
    auto parsed = parsePadding(paddingName(v));
    ASSERT_TRUE(parsed.hasValue()) << paddingName(v);
    EXPECT_EQ(*parsed, v);
  }
  EXPECT_EQ(paddingName(DpPadding::kMaxLen), "max_len");
  EXPECT_EQ(paddingName(DpPadding::kSumLen), "sum_len");
}

TEST(Flags, EveryReductionNameParsesBackToItsValue) {
  const BoundaryReduction all[] = {BoundaryReduction::kAr, BoundaryReduction::kRs,
                                   BoundaryReduction::kRsv, BoundaryReduction::kRsRsv};
  const char* names[] = {"ar", "rs", "rsv", "rs+rsv"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(reductionName(all[i]), names[i]);
    auto parsed = parseReduction(names[i]);
    ASSERT_TRUE(parsed.hasValue()) << names[i];
    EXPECT_EQ(*parsed, all[i]);
  }
}

TEST(Flags, EveryModeNameParsesBackToItsValue) {
  for (ForwardMode v : {ForwardMode::kDecode, ForwardMode::kExtend}) {
    auto parsed = parseMode(modeName(v));
    ASSERT_TRUE(parsed.hasValue()) << modeName(v);
    EXPECT_EQ(*parsed, v);
  }
  EXPECT_EQ(modeName(ForwardMode::kDecode), "decode");
  EXPECT_EQ(modeName(ForwardMode::kExtend), "extend");
}

TEST(Flags, AnUnknownValueIsRefusedNamingTheOptionAndTheAcceptedValues) {
  auto a2a = parseA2a("foo");
  ASSERT_FALSE(a2a.hasValue());
  EXPECT_EQ(a2a.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(a2a.status().message(), "--a2a \"foo\" is not one of none, deepep");
  auto padding = parsePadding("MAX_LEN");
  ASSERT_FALSE(padding.hasValue());
  EXPECT_EQ(padding.status().message(), "--dp-padding \"MAX_LEN\" is not one of max_len, sum_len");
  auto reduction = parseReduction("");
  ASSERT_FALSE(reduction.hasValue());
  EXPECT_EQ(reduction.status().message(), "--reduction \"\" is not one of ar, rs, rsv, rs+rsv");
  auto mode = parseMode("prefill");
  ASSERT_FALSE(mode.hasValue());
  EXPECT_EQ(mode.status().message(), "--mode \"prefill\" is not one of decode, extend");
}

TEST(Flags, ARefusalEscapesUnprintableBytesAndTruncatesLongText) {
  auto bad = parseMode("de\x01\xff");
  ASSERT_FALSE(bad.hasValue());
  EXPECT_EQ(bad.status().message(), "--mode \"de\\x01\\xff\" is not one of decode, extend");
  auto long_text = parseA2a(std::string(100, 'x'));
  ASSERT_FALSE(long_text.hasValue());
  EXPECT_EQ(long_text.status().message(),
            "--a2a \"" + std::string(64, 'x') + "\" is not one of none, deepep");
}

TEST(Flags, FusionParsesOnAndOffAndRefusesAnythingElseNamingIt) {
  EXPECT_EQ(parseFusion("on").value(), true);
  EXPECT_EQ(parseFusion("off").value(), false);
  for (const char* bad : {"ON", "true", "1", ""}) {
    auto parsed = parseFusion(bad);
    ASSERT_FALSE(parsed.hasValue()) << bad;
    EXPECT_EQ(parsed.status().message(),
              "--fusion \"" + std::string(bad) + "\" is not one of on, off");
  }
}

TEST(Flags, TheReductionOptionTakesAutoAsNoneAndEveryReductionName) {
  auto automatic = parseReductionOption("auto");
  ASSERT_TRUE(automatic.hasValue());
  EXPECT_FALSE(automatic->has_value());
  const BoundaryReduction all[] = {BoundaryReduction::kAr, BoundaryReduction::kRs,
                                   BoundaryReduction::kRsv, BoundaryReduction::kRsRsv};
  for (BoundaryReduction r : all) {
    auto parsed = parseReductionOption(reductionName(r));
    ASSERT_TRUE(parsed.hasValue()) << reductionName(r);
    EXPECT_EQ(parsed->value(), r);
  }
  auto bad = parseReductionOption("rsvv");
  ASSERT_FALSE(bad.hasValue());
  EXPECT_EQ(bad.status().message(), "--reduction \"rsvv\" is not one of auto, ar, rs, rsv, rs+rsv");
}

// --- the flag values a space keeps ------------------------------------------

TEST(FlagFilter, AnEmptyFilterKeepsEveryFlagSet) {
  const ModelRef model = *modelFromPattern("M-*E");
  Flags f;
  f.a2a = A2aBackend::kDeepep;
  f.fusion = false;
  f.dp_padding = DpPadding::kSumLen;
  f.reduction = BoundaryReduction::kRsv;
  f.mode = ForwardMode::kExtend;
  EXPECT_TRUE(FlagFilter{}.keeps(model, f));
  EXPECT_TRUE(FlagFilter{}.keeps(model, Flags{}));
  EXPECT_EQ(FlagFilter{}.describe(), "");
}

TEST(FlagFilter, EachListKeepsOnlyItsValuesAndTheListsMustAllAgree) {
  const ModelRef model = *modelFromPattern("M-*E");
  FlagFilter keep;
  keep.fusion = {false};
  keep.mode = {ForwardMode::kDecode, ForwardMode::kExtend};
  Flags f;
  EXPECT_FALSE(keep.keeps(model, f)) << "fusion on is not kept";
  f.fusion = false;
  EXPECT_TRUE(keep.keeps(model, f));
  f.mode = ForwardMode::kExtend;
  EXPECT_TRUE(keep.keeps(model, f));
  keep.a2a = {A2aBackend::kDeepep};
  EXPECT_FALSE(keep.keeps(model, f)) << "a2a none is not kept";
  f.a2a = A2aBackend::kDeepep;
  EXPECT_TRUE(keep.keeps(model, f));
  keep.dp_padding = {DpPadding::kSumLen};
  EXPECT_FALSE(keep.keeps(model, f)) << "max_len is not kept";
  EXPECT_EQ(keep.describe(), " a2a=deepep fusion=off padding=sum_len mode=decode,extend");
}

TEST(FlagFilter, AutoKeepsTheReductionTheEngineDefaultsToForTheCasesModel) {
  // model_boundary_reduction: ar for Qwen3ForCausalLM, rs+rsv for the rest.
  const ModelRef qwen = *modelFromPreset(**findPreset("qwen3-8b"));
  const ModelRef nemotron = *modelFromPreset(**findPreset("nemotron-3-nano"));
  FlagFilter keep;
  keep.reduction = {std::nullopt};
  Flags ar;
  Flags rs_rsv;
  rs_rsv.reduction = BoundaryReduction::kRsRsv;
  EXPECT_TRUE(keep.keeps(qwen, ar));
  EXPECT_FALSE(keep.keeps(qwen, rs_rsv));
  EXPECT_FALSE(keep.keeps(nemotron, ar));
  EXPECT_TRUE(keep.keeps(nemotron, rs_rsv));
  keep.reduction.push_back(BoundaryReduction::kAr);
  EXPECT_TRUE(keep.keeps(nemotron, ar));
  EXPECT_EQ(keep.describe(), " reduction=auto,ar");
}

TEST(Flags, DescribeListsEveryFlagAndTheOptionalOnesOnlyWhenSet) {
  Flags f;
  EXPECT_EQ(f.describe(), "a2a=none fusion=on padding=max_len reduction=ar mode=decode");
  f.a2a = A2aBackend::kDeepep;
  f.fusion = false;
  f.dp_padding = DpPadding::kSumLen;
  f.reduction = BoundaryReduction::kRsRsv;
  f.mode = ForwardMode::kExtend;
  f.layernorm_sp = true;
  f.capture = {2, 5};
  EXPECT_EQ(
      f.describe(),
      "a2a=deepep fusion=off padding=sum_len reduction=rs+rsv mode=extend ln_sp=on capture=2,5");
}

// --- batches ----------------------------------------------------------------

TEST(Batch, SummarisesItsShards) {
  Batch b{{4, 0, 3}};
  EXPECT_EQ(b.total(), 7);
  EXPECT_EQ(b.maxShard(), 4);
  EXPECT_TRUE(b.hasIdleShard());
  EXPECT_EQ(b.describe(), "4,0,3");
  Batch busy{{1, 2}};
  EXPECT_FALSE(busy.hasIdleShard());
  Batch empty;
  EXPECT_EQ(empty.maxShard(), 0);
  EXPECT_EQ(empty.total(), 0);
  EXPECT_EQ(empty.describe(), "");
}

TEST(Batch, ParsesCommaSeparatedCountsAndPrintsThemBack) {
  auto b = parseBatch("4,0,3");
  ASSERT_TRUE(b.hasValue()) << b.status().message();
  EXPECT_EQ(b->tokens, (std::vector<int>{4, 0, 3}));
  EXPECT_EQ(b->describe(), "4,0,3");
  auto one = parseBatch("5");
  ASSERT_TRUE(one.hasValue());
  EXPECT_EQ(one->tokens, (std::vector<int>{5}));
  auto leading_zero = parseBatch("007,0");
  ASSERT_TRUE(leading_zero.hasValue());
  EXPECT_EQ(leading_zero->tokens, (std::vector<int>{7, 0}));
}

TEST(Batch, AcceptsTheLargestShardAndRefusesOneMore) {
  auto max = parseBatch(std::to_string(kMaxTokensPerShard));
  ASSERT_TRUE(max.hasValue());
  EXPECT_EQ(max->tokens, (std::vector<int>{kMaxTokensPerShard}));
  auto over = parseBatch("1," + std::to_string(kMaxTokensPerShard + 1));
  ASSERT_FALSE(over.hasValue());
  EXPECT_EQ(over.status().message(),
            "--tokens \"1,1048577\": shard 1 \"1048577\" exceeds 1048576 tokens per shard");
  auto huge = parseBatch("99999999999999999999999");
  ASSERT_FALSE(huge.hasValue());
  EXPECT_EQ(huge.status().code(), StatusCode::kInvalidInput);
}

struct BadBatch {
  const char* text;
  const char* message;
};

class BatchRefusal : public ::testing::TestWithParam<BadBatch> {};

TEST_P(BatchRefusal, NamesTheTextAndTheBadEntry) {
  auto b = parseBatch(GetParam().text);
  ASSERT_FALSE(b.hasValue());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(b.status().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Bad, BatchRefusal,
    ::testing::Values(
        BadBatch{"", "--tokens \"\": no entries (expected token counts per DP shard, e.g. 4,0,3)"},
        BadBatch{"0,0", "--tokens \"0,0\": no tokens in the batch"},
        BadBatch{"0", "--tokens \"0\": no tokens in the batch"},
        BadBatch{"4,,3", "--tokens \"4,,3\": shard 1 is empty"},
        BadBatch{"4,", "--tokens \"4,\": shard 1 is empty"},
        BadBatch{",4", "--tokens \",4\": shard 0 is empty"},
        BadBatch{"4,-1",
                 "--tokens \"4,-1\": shard 1 \"-1\" is not a token count (a non-negative integer)"},
        BadBatch{"+4",
                 "--tokens \"+4\": shard 0 \"+4\" is not a token count (a non-negative integer)"},
        BadBatch{"4, 3",
                 "--tokens \"4, 3\": shard 1 \" 3\" is not a token count (a non-negative integer)"},
        BadBatch{"4;3",
                 "--tokens \"4;3\": shard 0 \"4;3\" is not a token count (a non-negative integer)"},
        BadBatch{
            "0x10",
            "--tokens \"0x10\": shard 0 \"0x10\" is not a token count (a non-negative integer)"},
        BadBatch{"4,\t",
                 "--tokens \"4,\\x09\": shard 1 \"\\x09\" is not a token count (a non-negative "
                 "integer)"}),
    [](const ::testing::TestParamInfo<BadBatch>& info) {
      return "case" + std::to_string(info.index);
    });

// --- models -----------------------------------------------------------------

TEST(CaseModel, APresetBringsItsPatternAndShapes) {
  auto preset = findPreset("nemotron-h-8b");
  ASSERT_TRUE(preset.hasValue());
  auto model = modelFromPreset(**preset);
  ASSERT_TRUE(model.hasValue()) << model.status().message();
  EXPECT_EQ(model->name, "nemotron-h-8b");
  EXPECT_EQ(model->family, LayerFamily::kSingleStage);
  EXPECT_EQ(model->pattern.size(), 52);
  EXPECT_EQ(model->pattern.text(), (*preset)->pattern);
  EXPECT_EQ(model->shape.hidden, (*preset)->shape.hidden);
}

TEST(CaseModel, AParallelHybridPresetIsAParallelMixerThenAnMlpPerDecoderLayer) {
  auto preset = findPreset("falcon-h1-7b");
  ASSERT_TRUE(preset.hasValue());
  auto model = modelFromPreset(**preset);
  ASSERT_TRUE(model.hasValue()) << model.status().message();
  EXPECT_EQ(model->family, LayerFamily::kParallelHybrid);
  EXPECT_EQ(model->pattern.size(), 2 * 44);
  EXPECT_EQ(model->pattern.layers[0], LayerKind::kParallelMixer);
  EXPECT_EQ(model->pattern.layers[1], LayerKind::kDenseMlp);
  EXPECT_TRUE(model->allow_reduce_scatter);
}

TEST(CaseModel, ATwoStagePatternBorrowsQwen3OrDeepSeekShapesAndItsRules) {
  auto dense = modelFromPattern("*-*-", LayerFamily::kTwoStage);
  ASSERT_TRUE(dense.hasValue()) << dense.status().message();
  EXPECT_EQ(dense->family, LayerFamily::kTwoStage);
  EXPECT_EQ(dense->shape.hidden, (*findPreset("qwen3-8b"))->shape.hidden);
  EXPECT_FALSE(dense->allow_reduce_scatter);
  auto moe = modelFromPattern("*-*E", LayerFamily::kTwoStage);
  ASSERT_TRUE(moe.hasValue());
  EXPECT_EQ(moe->shape.moe_experts, 256);
  EXPECT_TRUE(moe->allow_reduce_scatter);
  EXPECT_FALSE(modelFromPattern("*--", LayerFamily::kTwoStage).hasValue());
  EXPECT_EQ(parsePatternFamily("three-stage").status().message(),
            "--family \"three-stage\" is not one of single-stage, two-stage");
}

TEST(CaseModel, ABarePatternBorrowsDenseOrMoeShapes) {
  auto dense = modelFromPattern("M-M*-");
  ASSERT_TRUE(dense.hasValue()) << dense.status().message();
  EXPECT_EQ(dense->name, "pattern");
  EXPECT_EQ(dense->family, LayerFamily::kSingleStage);
  EXPECT_EQ(dense->pattern.text(), "M-M*-");
  EXPECT_EQ(dense->shape.hidden, (*findPreset("nemotron-h-8b"))->shape.hidden);

  auto moe = modelFromPattern("MEM*E");
  ASSERT_TRUE(moe.hasValue());
  EXPECT_EQ(moe->shape.moe_experts, (*findPreset("nemotron-3-nano"))->shape.moe_experts);

  // An E only in the MTP step still makes it a MoE model.
  auto mtp_moe = modelFromPattern("M-M*-/*E");
  ASSERT_TRUE(mtp_moe.hasValue());
  EXPECT_EQ(mtp_moe->shape.moe_experts, (*findPreset("nemotron-3-nano"))->shape.moe_experts);
}

TEST(CaseModel, ABadPatternKeepsTheParsersMessage) {
  auto bad = modelFromPattern("M-x*");
  ASSERT_FALSE(bad.hasValue());
  EXPECT_EQ(bad.status().message(),
            "pattern \"M-x*\": 'x' at position 2 is not a layer (M * - E), '|' or '/'");
}

// --- validateCase and the reproduce line ------------------------------------

Case presetCase(const char* name, ParallelConfig config, std::vector<int> tokens) {
  Case c;
  c.model = modelFromPreset(**findPreset(name)).value();
  c.config = config;
  c.batch.tokens = std::move(tokens);
  return c;
}

TEST(Case, AWellFormedCaseIsValid) {
  Case c = presetCase("nemotron-h-8b", {.tp = 4, .attn_dp = 2}, {3, 0});
  EXPECT_TRUE(validateCase(c).isOk()) << validateCase(c).message();
}

TEST(Case, AnInvalidConfigIsRefusedFirst) {
  Case c = presetCase("nemotron-h-8b", {.tp = 4, .attn_dp = 3}, {1, 1, 1});
  Status s = validateCase(c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(), "attn_dp*attn_cp=3 does not divide tp=4");
}

TEST(Case, TheBatchNeedsOneEntryPerDpShard) {
  Case c = presetCase("nemotron-h-8b", {.tp = 4, .attn_dp = 4}, {4, 0});
  Status s = validateCase(c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(), "--tokens \"4,0\" has 2 entries but attn_dp=4 (one per DP shard)");
  c.batch.tokens = {4};
  EXPECT_EQ(validateCase(c).message(),
            "--tokens \"4\" has 1 entry but attn_dp=4 (one per DP shard)");
}

TEST(Case, ABatchWithNoTokensIsRefused) {
  Case c = presetCase("nemotron-h-8b", {.tp = 4, .attn_dp = 2}, {0, 0});
  EXPECT_EQ(validateCase(c).message(), "--tokens \"0,0\": no tokens in the batch");
  c.batch.tokens = {-1, 3};
  EXPECT_EQ(validateCase(c).message(), "--tokens \"-1,3\": shard 0 has -1 tokens (0..1048576)");
}

TEST(Case, TheConfigMustFitTheModelsShapes) {
  // nemotron-h-8b has 32 heads: attn_tp=64 does not divide them.
  Case heads = presetCase("nemotron-h-8b", {.tp = 64}, {1});
  EXPECT_EQ(validateCase(heads).message(),
            "model nemotron-h-8b: attn_tp=64 does not divide heads=32");
  // A dense model has no MoE axes.
  Case dense = presetCase("nemotron-h-8b", {.tp = 4, .moe_ep = 4}, {1});
  EXPECT_EQ(validateCase(dense).message(),
            "model nemotron-h-8b: a dense model has no MoE axes (moe_ep=4 moe_dp=1)");
  // A bare pattern names itself and is held to its own layer count.
  Case bare;
  bare.model = modelFromPattern("M-*").value();
  bare.config = {.pp = 4};
  bare.batch.tokens = {1};
  EXPECT_EQ(validateCase(bare).message(), "model pattern: pp=4 exceeds layers=3");
}

TEST(Case, PipelineCutsMustMatchPp) {
  Case c;
  c.model = modelFromPattern("M-|M*|-E").value();
  c.config = {.pp = 4, .tp = 1};
  c.batch.tokens = {2};
  EXPECT_EQ(validateCase(c).message(), "pattern has 2 pipeline cuts but pp=4");
  c.config.pp = 3;
  EXPECT_TRUE(validateCase(c).isOk()) << validateCase(c).message();

  c.model = modelFromPattern("M-|M*").value();
  c.config.pp = 1;
  EXPECT_EQ(validateCase(c).message(), "pattern has 1 pipeline cut but pp=1");

  // Without cuts any pp up to the layer count is fine (the planner splits).
  c.model = modelFromPattern("M-M*").value();
  c.config.pp = 2;
  EXPECT_TRUE(validateCase(c).isOk());
}

TEST(Case, ReproduceCommandNamesAPresetAndEveryOption) {
  Case c = presetCase("nemotron-3-nano", {.pp = 1, .tp = 4, .attn_dp = 2, .moe_ep = 4}, {3, 0});
  EXPECT_EQ(reproduceCommand(c, "declared"),
            "seam check --model nemotron-3-nano --tp 4 --pp 1 --dp 2 --cp 1 --ep 4 --moe-dp 1 "
            "--tokens 3,0"
            " --a2a none --fusion on --dp-padding max_len --reduction ar --mode decode --policy "
            "declared");
}

TEST(Case, ReproduceCommandQuotesABarePatternAndAddsTheOptionalFlags) {
  Case c;
  c.model = modelFromPattern("M-|*E/*E").value();
  c.config = {.pp = 2, .tp = 2, .moe_ep = 2};
  c.batch.tokens = {5};
  c.flags.a2a = A2aBackend::kDeepep;
  c.flags.fusion = false;
  c.flags.dp_padding = DpPadding::kSumLen;
  c.flags.reduction = BoundaryReduction::kRsv;
  c.flags.mode = ForwardMode::kExtend;
  c.flags.layernorm_sp = true;
  c.flags.capture = {2, 5};
  EXPECT_EQ(
      reproduceCommand(c, "legacy"),
      "seam check --pattern 'M-|*E/*E' --tp 2 --pp 2 --dp 1 --cp 1 --ep 2 --moe-dp 1 --tokens 5"
      " --a2a deepep --fusion off --dp-padding sum_len --reduction rsv --mode extend --policy "
      "legacy"
      " --ln-sp --capture 2,5");
}

// ServerArgs' start-up asserts (server_args.py @001067fffe33), each by its
// message, for every model and batch; what the engine starts stays ok.
TEST(Case, ServerArgsRefusesAtStartUpWhatTheEngineAssertsOnWithItsMessage) {
  auto refusal = [](const Case& c) {
    const Status st = serverArgsRefusal(c);
    EXPECT_EQ(st.code(), StatusCode::kRefused) << c.config.describe();
    return st.message();
  };
  auto caseOf = [](const char* pattern, ParallelConfig config, Flags flags = {}) {
    Case c;
    c.model = modelFromPattern(pattern, LayerFamily::kTwoStage).value();
    c.config = config;
    c.batch.tokens.assign(config.attn_dp, 4);
    c.flags = std::move(flags);
    return c;
  };
  // check_server_args: "Pipeline parallelism is not compatible with overlap
  // schedule, speculative decoding" -- an MTP step or an EAGLE3 capture.
  EXPECT_NE(refusal(caseOf("*-*E/*E", {.pp = 2, .tp = 2}))
                .find("Pipeline parallelism is not compatible with overlap "
                      "schedule, speculative decoding"),
            std::string::npos);
  Flags capture;
  capture.capture = {2};
  EXPECT_NE(
      refusal(caseOf("*-*E", {.pp = 2, .tp = 2}, capture)).find("pp=2 with EAGLE3 aux capture"),
      std::string::npos);
  EXPECT_TRUE(serverArgsRefusal(caseOf("*-*E", {.pp = 2, .tp = 2})).isOk());
  EXPECT_TRUE(serverArgsRefusal(caseOf("*-*E/*E", {.tp = 4})).isOk());
  // _check_two_batch_overlap: TBO without an a2a backend needs DP attention.
  Flags tbo;
  tbo.tbo = true;
  EXPECT_NE(refusal(caseOf("*-*E", {.tp = 2}, tbo))
                .find("When enabling two batch overlap without an EP a2a backend "
                      "(moe_a2a_backend='none'), --enable-dp-attention is required"),
            std::string::npos);
  EXPECT_TRUE(serverArgsRefusal(caseOf("*-*E", {.tp = 2, .attn_dp = 2}, tbo)).isOk());
  tbo.a2a = A2aBackend::kDeepep;
  EXPECT_TRUE(serverArgsRefusal(caseOf("*-*E", {.tp = 2, .moe_ep = 2}, tbo)).isOk());
  // _handle_context_parallelism's moe_dp asserts come first (serverArgsMoeDp) on a GQA model.
  Case gqa_pp = caseOf("*-*E/*E", {.pp = 2, .tp = 4, .attn_cp = 2, .moe_dp = 2});
  gqa_pp.model.shape.q_lora_rank = kNotApplicable;
  EXPECT_NE(refusal(gqa_pp).find("PP is not supported with context parallelism"),
            std::string::npos);
  // _deepseek_family_overrides: MLA prefill CP runs only as deepep, ep = tp,
  // moe_dense_tp_size 1 and attn_cp = tp // dp; it rewrites any other ask
  // (before the moe_dp asserts read the rewritten values), for every batch.
  Flags engine;
  engine.a2a = A2aBackend::kDeepep;
  engine.dense_tp1 = true;
  EXPECT_TRUE(
      serverArgsRefusal(caseOf("*-*E", {.tp = 4, .attn_cp = 4, .moe_ep = 4}, engine)).isOk());
  EXPECT_TRUE(
      serverArgsRefusal(caseOf("*-*E", {.tp = 4, .attn_dp = 2, .attn_cp = 2, .moe_ep = 4}, engine))
          .isOk());
  EXPECT_TRUE(serverArgsRefusal(caseOf("*E*E", {.tp = 4, .attn_cp = 4, .moe_ep = 4}, tbo))
                  .isOk());  // no dense FFN
  EXPECT_EQ(refusal(caseOf("*-*E", {.tp = 4, .attn_cp = 2})),
            "SGLang's _deepseek_family_overrides runs MLA prefill CP only with --moe-a2a-backend "
            "deepep, ep_size = tp, "
            "moe_dense_tp_size = 1 and attn_cp_size = tp // dp = 4 (asked: a2a none, ep 1, dense "
            "tp tp, attn_cp 2)");
  Flags tp_dense = engine;
  tp_dense.dense_tp1 = false;
  EXPECT_NE(
      refusal(caseOf("*-*E", {.tp = 4, .attn_cp = 4, .moe_ep = 4}, tp_dense)).find("dense tp tp"),
      std::string::npos);
  EXPECT_NE(refusal(caseOf("*-*E", {.tp = 4, .attn_cp = 4, .moe_ep = 2}, engine)).find("ep 2"),
            std::string::npos);
  EXPECT_NE(refusal(caseOf("*-*E", {.tp = 4, .attn_cp = 2, .moe_ep = 4}, engine)).find("attn_cp 2"),
            std::string::npos);
  EXPECT_NE(refusal(caseOf("*-*E/*E", {.pp = 2, .tp = 4, .attn_cp = 2, .moe_dp = 2}))
                .find("_deepseek_family_"),
            std::string::npos);
}

}  // namespace
}  // namespace seam
