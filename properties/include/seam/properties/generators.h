// rapidcheck generators, one per domain type (STYLE 14), composed with
// map / apply / mapcat / suchThat into whole cases for `seam prop` and the
// property tests. Every choice shrinks towards the simplest value (fewer
// layers, `M`, world 1, pp 1, no DP attention, default flags, one token), so
// a failure ends at a minimal case (DESIGN §4).
#pragma once

#include <rapidcheck.h>

#include <ostream>
#include <vector>

#include "seam/sim/model/case.h"
#include "seam/sim/model/config_space.h"
#include "seam/sim/model/parallel_config.h"
#include "seam/sim/model/pattern.h"
#include "seam/sim/training/training_case.h"

namespace seam::properties {

/// The longest pattern genPattern is asked for by default.
inline constexpr int kDefaultMaxLayers = 64;
/// The world sizes generated when none is fixed, smallest first (the shrink target).
inline constexpr int kGeneratedWorlds[] = {1, 2, 4, 8, 16};

/// A world size from kGeneratedWorlds; shrinks towards 1.
rc::Gen<int> genWorld();

/// A layer kind of M * - E, uniformly; shrinks M <- - <- * <- E.
rc::Gen<LayerKind> genLayerKind();

/// A single-stage pattern of 1..max_layers layers over M * - E (longer as the
/// rapidcheck size grows), including shapes no released checkpoint has: FFN
/// after FFN, an FFN at the stack start, all-FFN and all-mixer stacks; with a
/// small probability an MTP tail of * and E. No cuts: genCase places them
/// once the config's pp is known. Shrinks by removing layers, then towards
/// simpler kinds, then drops the MTP tail.
rc::Gen<Pattern> genPattern(int max_layers = kDefaultMaxLayers);

/// A two-stage stack (PatternAlphabet::kTwoStage) of 1..max_layers/2 decoder
/// layers, each a mixer of * G M P then an FFN of - E; with a small
/// probability one MTP decoder layer. Shrinks by removing layers, then
/// towards attention and dense FFNs, then drops the MTP layer.
rc::Gen<Pattern> genTwoStagePattern(int max_layers = kDefaultMaxLayers);

/// A config of ConfigSpace::build(world, model's shapes): each leaf (pp,
/// attn_dp, attn_cp, moe_ep as a split of tp) is drawn along its divisors,
/// half the time at its simple end, moe_dp as 1 or attn_cp (what ServerArgs
/// accepts: serverArgsMoeDp), and the nearest valid config is taken. attn_cp > 1, which the engine
/// refuses for these layers, is drawn one time in ten. Not uniform over the space, so that
/// shrinking another part of a case leaves the config where it was (generators.cc explains). world
/// == 0: the world comes from genWorld(). Precondition: 0 <= world <= kMaxWorld (else generation
/// fails with ConfigSpace's message).
rc::Gen<ParallelConfig> genConfig(const ModelRef& model, int world);

/// Flags for a case: a2a none, or deepep when the model has an `E` and
/// moe_ep == tp (SGLang's DeepEP setting; other combinations are only
/// refusals); fusion on/off; padding; reduction; decode/extend; usually no
/// capture, sometimes one or two stages of the main stack. Shrinks to Flags{}.
rc::Gen<Flags> genFlags(const ModelRef& model, const ParallelConfig& config);

/// Tokens per DP shard, 0..9 each (1..9 without DP attention), at least one in
/// all, uneven; an idle shard is likely (1 in 4 per shard) when attn_dp > 1.
rc::Gen<Batch> genBatch(const ParallelConfig& config);

/// Pipeline cuts for `layers` layers under `pp` stages: none (SGLang's even
/// split), or pp - 1 distinct cut positions in 1..layers-1. Shrinks to none.
rc::Gen<std::vector<int>> genCuts(int layers, int pp);

/// A whole case: world (genWorld when 0), pattern (model = modelFromPattern),
/// config, cuts, flags, batch, drawn independently and put together as the
/// generators above do, so that each part shrinks while the others hold.
/// Every case is valid input (validateCase holds); a few (attn_cp > 1) are
/// combinations the engine refuses.
rc::Gen<Case> genCase(int world, int max_layers = kDefaultMaxLayers);

/// A training case: a training preset, a layout, a valid config of a world
/// in 1..max_world (the engines' rules hold), and 1..4 packed documents of
/// uneven lengths the layout accepts (PrimeRL: the row padded to a multiple
/// of cp; Megatron: every document a multiple of 2cp, times tp under SP).
/// Shrinks towards smaller worlds, fewer and shorter documents.
rc::Gen<TrainingCase> genTrainingCase(int max_world = 4);

}  // namespace seam::properties

namespace seam {

/// rapidcheck prints a generated case as the command that reproduces it.
void showValue(const Case& c, std::ostream& os);
void showValue(const Pattern& p, std::ostream& os);
void showValue(const ParallelConfig& c, std::ostream& os);
void showValue(const Flags& f, std::ostream& os);
void showValue(const Batch& b, std::ostream& os);

}  // namespace seam

namespace rc {

/// `rc::gen::arbitrary<seam::Case>()`: a case of a generated world.
template <>
struct Arbitrary<seam::Case> {
  static Gen<seam::Case> arbitrary() { return seam::properties::genCase(0); }
};

}  // namespace rc
