// Layer patterns: the one-character-per-layer language of Nemotron-H's
// hybrid_override_pattern (`M`, `*`, `-`, `E`), with Megatron's `|` for a
// pipeline cut and `/` before the MTP pattern (reference: checkpoints.md,
// training-layouts.md §2.1). Bad patterns are refused with the position.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "seam/sim/base/status.h"

namespace seam {

/// What one layer (one stage of a single-stage hybrid) is.
enum class LayerKind : std::uint8_t {
  kMamba,          ///< `M` Mamba-2 mixer
  kAttention,      ///< `*` attention mixer
  kDenseMlp,       ///< `-` dense MLP (an FFN)
  kMoe,            ///< `E` mixture of experts (an FFN)
  kGatedDeltaNet,  ///< `G` Gated DeltaNet (two-stage layers only)
  kParallelMixer,  ///< `P` attention || Mamba-2 on one normed input, outputs summed (Falcon-H1)
};

/// Mixers (`M`, `*`, `G`, `P`) leave an attention-TP partial; FFNs (`-`, `E`) do not.
inline bool isMixer(LayerKind kind) {
  return kind == LayerKind::kMamba || kind == LayerKind::kAttention ||
         kind == LayerKind::kGatedDeltaNet || kind == LayerKind::kParallelMixer;
}
inline bool isFfn(LayerKind kind) { return !isMixer(kind); }
char layerChar(LayerKind kind);

/// Which alphabet a pattern string is written in.
enum class PatternAlphabet : std::uint8_t {
  kSingleStage,  ///< Nemotron-H: M * - E, `|` cuts, `/` then an MTP pattern of * and E
  kMixerOnly,    ///< two-stage models' per-layer mixer string: G and *
  /// Two-stage decoder layers written stage by stage: each layer is a mixer
  /// (M * G P) then an FFN (- E); `|` cuts only between layers; `/` then one
  /// MTP decoder layer (DeepSeek's nextn layer).
  kTwoStage,
};

/// A parsed pattern. Plain data.
struct Pattern {
  std::vector<LayerKind> layers;  ///< the main stack's stages, cuts removed
  std::vector<int> cuts;          ///< stage indices that start a new pipeline stage (ascending)
  std::vector<LayerKind> mtp;     ///< the MTP step's layers (empty: none)

  int size() const { return static_cast<int>(layers.size()); }
  /// The canonical text: layers with `|` at the cuts, then `/` and the MTP layers.
  std::string text() const;
  friend bool operator==(const Pattern&, const Pattern&) = default;
};

/// The longest pattern text parsePattern reads, in characters.
inline constexpr std::size_t kMaxPatternLength = 4096;

/// Parses `text`; the error names the character and its 0-based position, e.g.
/// `pattern "M-x*": 'x' at position 2 is not a layer (M * - E), '|' or '/'`.
Expected<Pattern> parsePattern(std::string_view text,
                               PatternAlphabet alphabet = PatternAlphabet::kSingleStage);

}  // namespace seam
