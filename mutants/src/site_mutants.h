// Private to mutants/: the systematic plan operators. Where a first-site
// operator (plan_mutants.h) edits the first op it finds, these offer every
// op of a plan they apply to as a site: sites are numbered in a fixed order
// (rank by rank, op by op, an op that several ranks run listed once, at its
// first rank), times the variants an op offers (the axes a regroup may
// move it to, the neighbour a snapshot may move past). The edit of a site
// is the same on every rank that runs that op: a planner bug is.
#pragma once

#include <vector>

#include "plan_mutants.h"

namespace seam::mutants {

/// A plan operator whose sites are every op its predicate accepts.
class SiteMutant : public ParameterizedPlanMutant {
 public:
  using ParameterizedPlanMutant::ParameterizedPlanMutant;
  int sites(const Plan& plan) const override;
  bool applyAt(Plan& plan, int site) const override;

 protected:
  /// How many variants op `i` of `ops` offers as a site (0: not a site).
  virtual int variants(const Topology& topo, const std::vector<Op>& ops, int i) const = 0;
  /// Edits op `i` of rank `rank`'s `ops` (the same op as the site's).
  virtual void edit(const Topology& topo, std::vector<Op>& ops, int i, int rank,
                    int variant) const = 0;
};

#define SEAM_SITE_MUTANT(Class)                                                           \
  class Class final : public SiteMutant {                                                 \
   public:                                                                                \
    using SiteMutant::SiteMutant;                                                         \
                                                                                          \
   protected:                                                                             \
    int variants(const Topology& topo, const std::vector<Op>& ops, int i) const override; \
    void edit(const Topology& topo, std::vector<Op>& ops, int i, int rank,                \
              int variant) const override;                                                \
  }

/// A collective (not a send/recv) over a group of more than one rank is dropped.
SEAM_SITE_MUTANT(DropCollectiveAt);
/// A collective over a group of more than one rank runs twice.
SEAM_SITE_MUTANT(DuplicateCollectiveAt);
/// An op and the next op of its rank on the same buffer run in the other order.
SEAM_SITE_MUTANT(SwapWithNextAt);
/// An all-reduce, gather, reduce-scatter or all-to-all runs over another axis
/// whose group has a different size (more than one rank): one variant per axis.
SEAM_SITE_MUTANT(RegroupAt);
/// An op reads or writes one row more than it should (a variant per layout it has).
SEAM_SITE_MUTANT(RowsOffByOneAt);
/// A collective moves twice the bytes it should, on every member alike.
SEAM_SITE_MUTANT(BytesDoubledAt);
/// A slice takes the next attention-TP (or CP) position's slice.
SEAM_SITE_MUTANT(SliceOtherAt);
/// A residual fold (add, add-norm, fused all-reduce-add-norm) runs twice.
SEAM_SITE_MUTANT(ResidualAddedTwiceAt);
/// A residual fold does not add the residual (an add is dropped, an add-norm
/// only normalises).
SEAM_SITE_MUTANT(ResidualNotAddedAt);
/// A snapshot is not taken.
SEAM_SITE_MUTANT(SnapshotDroppedAt);
/// A snapshot is taken one op earlier or later (a variant per neighbour).
SEAM_SITE_MUTANT(SnapshotMovedAt);
/// A gather concatenates its members' chunks in another rank order (member
/// p's slot gets member p + 1's chunk).
SEAM_SITE_MUTANT(GatherRankOrderAt);
/// A reduce-scatter leaves each member the next member's chunk of the sum.
SEAM_SITE_MUTANT(ReduceScatterOtherChunkAt);
/// An all-to-all delivers each member's chunk one member along (what member
/// p is owed lands on member p - 1): splits indexed by the wrong rank.
SEAM_SITE_MUTANT(AllToAllOtherChunkAt);
/// A reduction averages (ncclAvg) where a sum is owed.
SEAM_SITE_MUTANT(ReduceAveragedAt);
/// A reduction averages and its result is scaled by 1/n again.
SEAM_SITE_MUTANT(ReduceScaledTwiceAt);
/// A collective's rows and bytes shrunk to the local chunk (1/n of them,
/// rounded up), on every member alike.
SEAM_SITE_MUTANT(RowsShrunkToChunkAt);

#undef SEAM_SITE_MUTANT

}  // namespace seam::mutants
