#include "seam/properties/sweep.h"

#include <algorithm>
#include <map>

#include "sweep_cases.h"

namespace seam::properties {

std::vector<SweepModel> defaultSweepModels() {
  std::vector<SweepModel> out;
  for (const ModelPreset& p : presets()) {
    SweepModel m;
    m.name = std::string(p.name);
    auto ref = modelFromPreset(p);
    if (ref) {
      m.model = std::move(*ref);
    } else {
      m.why_not = ref.status().message();
    }
    out.push_back(std::move(m));
  }
  return out;
}

Expected<SweepModel> sweepModel(std::string_view preset, std::string_view pattern) {
  SweepModel m;
  if (!pattern.empty()) {
    auto ref = modelFromPattern(pattern);
    if (!ref) return ref.status();
    m.name = "pattern " + ref->pattern.text();
    m.model = std::move(*ref);
    return m;
  }
  auto p = findPreset(preset);
  if (!p) return p.status();
  m.name = std::string((*p)->name);
  auto ref = modelFromPreset(**p);
  if (!ref) return ref.status();
  m.model = std::move(*ref);
  return m;
}

Expected<std::vector<SweepModel>> sweepModels(std::string_view preset, std::string_view pattern) {
  if (!preset.empty() && !pattern.empty())
    return Status::invalid("give --model or --pattern, not both");
  if (preset.empty() && pattern.empty()) return defaultSweepModels();
  auto m = sweepModel(preset, pattern);
  if (!m) return m.status();
  return std::vector<SweepModel>{std::move(*m)};
}

namespace {

bool hasMoe(const Pattern& p) {
  auto moe = [](LayerKind k) { return k == LayerKind::kMoe; };
  return std::any_of(p.layers.begin(), p.layers.end(), moe) ||
         std::any_of(p.mtp.begin(), p.mtp.end(), moe);
}

// A few batch shapes per config: every shard with one token; a shard split
// unevenly over attention TP; with DP attention, one with an idle rank.
std::vector<Batch> batchesFor(const ParallelConfig& c) {
  const int d = c.attn_dp;
  const int a = c.attnTp();
  std::vector<Batch> out;
  out.push_back(Batch{std::vector<int>(d, 1)});
  out.push_back(Batch{std::vector<int>(d, a + 1)});
  if (d > 1) {
    Batch idle;
    for (int i = 0; i < d; ++i) idle.tokens.push_back(i % 3);  // shard 0 idle, the rest uneven
    out.push_back(std::move(idle));
  }
  return out;
}

std::vector<Flags> flagsFor(const ModelRef& m, const ParallelConfig& c) {
  std::vector<Flags> out;
  // EAGLE3-style aux hidden-state capture (SGLang captures layers near 2,
  // L/2 and L-3), on the default flags.
  // Captures sit before a decoder layer: stage layer * stages-per-layer.
  const int spl = m.stagesPerLayer();
  const int n = m.pattern.size() / spl;
  if (n >= 4) {
    Flags f;
    for (int layer : {1, n / 2, n - 3}) {
      const int s = layer * spl;
      if (std::find(f.capture.begin(), f.capture.end(), s) == f.capture.end())
        f.capture.push_back(s);
    }
    out.push_back(f);
  }
  std::vector<A2aBackend> a2a = {A2aBackend::kNone};
  if (hasMoe(m.pattern)) a2a.push_back(A2aBackend::kDeepep);
  for (A2aBackend b : a2a) {
    for (bool fusion : {true, false}) {
      if (c.attn_dp == 1) {
        Flags f;
        f.a2a = b;
        f.fusion = fusion;
        out.push_back(f);
        continue;
      }
      // Decode batches with either padding mode; extend batches, whose padding
      // SGLang picks itself (resolvePadding).
      for (int variant = 0; variant < 3; ++variant) {
        for (BoundaryReduction red : {BoundaryReduction::kAr, BoundaryReduction::kRs,
                                      BoundaryReduction::kRsv, BoundaryReduction::kRsRsv}) {
          Flags f;
          f.a2a = b;
          f.fusion = fusion;
          f.dp_padding = variant == 1 ? DpPadding::kSumLen : DpPadding::kMaxLen;
          f.mode = variant == 2 ? ForwardMode::kExtend : ForwardMode::kDecode;
          f.reduction = red;
          out.push_back(f);
          // SGLANG_DP_USE_GATHERV where the engine applies it (attn_tp 1,
          // tp == attn_dp, SUM_LEN): the gathers become tp all_gatherv.
          if (variant == 1 && c.attn_dp > 1 && c.attnTp() == 1 && c.tp == c.attn_dp) {
            f.dp_gatherv = true;
            out.push_back(f);
          }
        }
      }
    }
  }
  // The extend-batch variants of two-stage layers at tp > 1 without DP
  // attention, fused and unfused: input-scattered attention (MLA models with
  // q_lora_rank) and LayerNorm SP.
  if (m.family != LayerFamily::kSingleStage && c.tp > 1 && c.attn_dp == 1) {
    for (bool Flags::*variant : {&Flags::input_scattered, &Flags::layernorm_sp}) {
      if (variant == &Flags::input_scattered && m.shape.q_lora_rank <= 0) continue;
      for (bool fusion : {true, false}) {
        Flags f;
        f.fusion = fusion;
        f.mode = ForwardMode::kExtend;
        f.*variant = true;
        out.push_back(f);
      }
    }
  }
  // Prefill CP shards only extend batches: two-stage layers under attention
  // CP without DP attention also get the ordinary extend variant (MLA's
  // interleave, GQA's zigzag on the CP batches enumerateCases adds), with
  // either a2a backend, fused and unfused, and the rs strategy (MLA's attn_cp
  // reduce-scatter).
  if (m.family != LayerFamily::kSingleStage && c.attn_cp > 1 && c.attn_dp == 1) {
    for (A2aBackend b : a2a) {
      for (bool fusion : {true, false}) {
        for (BoundaryReduction red : {BoundaryReduction::kAr, BoundaryReduction::kRs}) {
          if (b != A2aBackend::kNone && red != BoundaryReduction::kAr) continue;
          Flags f;
          f.a2a = b;
          f.fusion = fusion;
          f.mode = ForwardMode::kExtend;
          f.reduction = red;
          out.push_back(f);
        }
      }
    }
  }
  // Two-batch overlap (tbo.h) on DeepSeek decoder layers (two-stage, MLA,
  // MoE): every plain flag set (no capture) once more with TBO, the ones the
  // engine refuses (no a2a backend and no DP attention) included.
  if (m.family == LayerFamily::kTwoStage && m.shape.q_lora_rank > 0 && hasMoe(m.pattern)) {
    const size_t n_plain = out.size();
    for (size_t i = 0; i < n_plain; ++i) {
      Flags f = out[i];
      if (f.input_scattered || f.layernorm_sp || !f.capture.empty()) continue;
      f.tbo = true;
      out.push_back(std::move(f));
    }
  }
  // Two-stage dense FFNs also run fully data parallel (moe_dense_tp_size 1).
  const bool dense = std::any_of(m.pattern.layers.begin(), m.pattern.layers.end(),
                                 [](LayerKind k) { return k == LayerKind::kDenseMlp; });
  if (m.family != LayerFamily::kSingleStage && dense && c.tp > 1) {
    const size_t n_plain = out.size();
    for (size_t i = 0; i < n_plain; ++i) {
      Flags f = out[i];
      if (f.input_scattered || f.layernorm_sp) continue;
      f.dense_tp1 = true;
      out.push_back(std::move(f));
    }
  }
  return out;
}

ModelPreset fitProbe(const ModelRef& m) {
  ModelPreset p{};
  p.name = m.name;
  p.family = m.family;
  p.layers = m.pattern.size() / m.stagesPerLayer();
  p.shape = m.shape;
  return p;
}

}  // namespace

std::vector<ParallelConfig> sweepConfigs(const ModelRef& model, int world,
                                         const ConfigFilter& filter) {
  std::vector<ParallelConfig> out;
  const ModelPreset probe = fitProbe(model);
  auto space = ConfigSpace::build(world, &probe, filter);
  if (!space) return out;
  for (const ParallelConfig& config : space->all()) {
    if (!model.pattern.cuts.empty() && static_cast<int>(model.pattern.cuts.size()) + 1 != config.pp)
      continue;
    out.push_back(config);
  }
  return out;
}

std::vector<FlagCases> flagCases(const ModelRef& model, const ParallelConfig& config,
                                 const FlagFilter& keep) {
  std::vector<FlagCases> out;
  for (Flags& f : flagsFor(model, config)) {
    if (!keep.keeps(model, f)) continue;
    // An input-scattered batch: two tokens per TP rank, and one more, which
    // the engine pads to a multiple of tp (prepare_attn_tp_scatter_input).
    std::vector<Batch> batches =
        f.input_scattered ? std::vector<Batch>{Batch{{2 * config.tp}}, Batch{{2 * config.tp + 1}}}
                          : batchesFor(config);
    if (config.attn_cp > 1 && f.mode == ForwardMode::kExtend && !f.input_scattered) {
      // Prefill CP shards a batch only when its strategy applies: the
      // interleave (MLA) strategy from cp tokens on (2cp + 1: uneven over
      // CP, so the shards are padded), zigzag (GQA) from max(128, 2cp)
      // tokens per sequence.
      batches.push_back(Batch{std::vector<int>(config.attn_dp, 2 * config.attn_cp + 1)});
      batches.push_back(Batch{
          std::vector<int>(config.attn_dp, std::max(kZigzagMinTokens, 2 * config.attn_cp) + 3)});
    }
    out.push_back({std::move(f), std::move(batches)});
  }
  return out;
}

std::vector<Case> enumerateCases(const ModelRef& model, int world, const ConfigFilter& filter,
                                 const FlagFilter& flags) {
  std::vector<Case> out;
  for (const ParallelConfig& config : sweepConfigs(model, world, filter)) {
    for (FlagCases& fc : flagCases(model, config, flags)) {
      for (Batch& b : fc.batches) {
        Case c;
        c.model = model;
        c.config = config;
        c.flags = fc.flags;
        c.batch = std::move(b);
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

std::uint64_t planHash(const Plan& plan) {
  // Three 64-bit words per op, each mixed in with one multiply (a stable,
  // fast, well-spread hash; not cryptographic).
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ plan.ranks.size();
  auto mixIn = [&h](std::uint64_t v) {
    h = (h ^ v) * 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  };
  for (const auto& ops : plan.ranks) {
    mixIn(ops.size());
    for (const Op& op : ops) {
      mixIn(static_cast<std::uint64_t>(static_cast<std::uint16_t>(op.layer)) |
            static_cast<std::uint64_t>(static_cast<std::uint16_t>(op.stage)) << 16 |
            static_cast<std::uint64_t>(op.stack) << 32 |
            static_cast<std::uint64_t>(op.phase) << 36 | static_cast<std::uint64_t>(op.kind) << 40 |
            static_cast<std::uint64_t>(op.tensor) << 48 |
            static_cast<std::uint64_t>(static_cast<std::uint8_t>(op.axis)) << 52 |
            static_cast<std::uint64_t>(static_cast<std::uint8_t>(op.slice_of)) << 56);
      mixIn(static_cast<std::uint64_t>(op.rows_in.kind) |
            static_cast<std::uint64_t>(op.rows_out.kind) << 8 |
            (static_cast<std::uint64_t>(static_cast<std::uint32_t>(op.rows_in.count)) << 16 ^
             static_cast<std::uint64_t>(static_cast<std::uint32_t>(op.rows_out.count)) << 40));
      // A planted DP fault changes the op (kNone leaves the hash as before).
      mixIn(static_cast<std::uint64_t>(op.bytes) ^ (static_cast<std::uint64_t>(op.dp_fault) << 56) ^
            (static_cast<std::uint64_t>(op.half) << 60) ^
            (static_cast<std::uint64_t>(op.tbo_move) << 62));
      // A planted rank order, chunk or scale too (the defaults leave it as before).
      if (op.divide_by != 1 || op.chunk_shift != 0) {
        mixIn(static_cast<std::uint64_t>(static_cast<std::uint16_t>(op.divide_by)) |
              static_cast<std::uint64_t>(static_cast<std::uint8_t>(op.chunk_shift)) << 16);
      }
    }
  }
  return h;
}

std::vector<std::pair<std::string, std::int64_t>> sortedRefusals(
    const std::map<std::string, std::int64_t>& counts) {
  std::vector<std::pair<std::string, std::int64_t>> out(counts.begin(), counts.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  return out;
}

}  // namespace seam::properties
