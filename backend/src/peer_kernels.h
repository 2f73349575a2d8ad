// Private to backend/: the one-shot all-reduce fused with the residual add and
// RMSNorm over peer memory (DESIGN §7), for the plans' `ar_add_norm` ops when
// every member of the group is a GPU of this process with peer access.
//
// Protocol (peer_kernels.cu): every member launches the same grid for a
// call (one block per row up to the group's limit); block b of each member
// handles rows b, b + grid, ... . A block pushes its rows of the partial sum
// into its slot of every peer's workspace, then exchanges a flag with block b
// of every peer (release/acquire at system scope), then sums the slots in
// member order, adds the residual and norms. The flag value is the call's
// number, kept in device memory (so a captured graph's replays keep counting):
// the last block of a call to finish advances it, and the next call, which
// starts after this one has finished on the stream, reads it. The workspace
// has two halves used by call parity: when a member starts call k+1, its call
// k has received a call-k flag from every peer, so every peer has started
// call k and finished call k-1, the last reader of the half call k+1 writes.
//
// The LL variant (FusedArAddNormArgs::ll) drops the flag exchange: each value
// goes out in an 8-byte word with the call number beside it (16-byte lines of
// two values), so the data carries its own arrival and a reader spins on the
// line itself. A peer's line of call k is read only after it carries k; the
// half argument above holds unchanged (a member that wrote a call-k line had
// finished call k-1). The LL lines have their own zeroed region behind the
// plain slots, written by nothing else, so a stale line only ever carries an
// older call number.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace seam::backend::kernels {

/// Members a peer group may have (the size of the flag arrays).
constexpr int kPeerMaxRanks = 8;
/// Blocks a fused launch may use.
constexpr int kPeerMaxBlocks = 1024;
/// Blocks of a fused kernel per SM in its grid, all resident at once (the
/// kernels' launch bounds hold them to that many registers): a block waits
/// for its twin on every peer, so no block may wait for another to finish.
constexpr int kPeerBlocksPerSm = 2;
/// Most values (fp32, one member's rows) one LL call carries.
constexpr std::size_t kPeerLlMaxElems = (1u << 20) / sizeof(float);

/// Floats of one member's workspace: the two halves of plain slots, then the
/// LL region (2 halves x `ranks` slots x kPeerLlMaxElems / 2 lines of 16
/// bytes). Zero it before the first call.
std::size_t peerWorkspaceFloats(int ranks, std::size_t slot_elems);
/// Whether a call of rows x h can go with the LL protocol: rows of at most
/// 4096 values (held in registers), whose line sets fit the LL slot (64 rows
/// of 4096; a row rounds up to whole line sets of 512 values).
bool llFits(int rows, int h);

/// The flags one member's blocks receive and its call counter, in that
/// member's device memory, zeroed before the first call.
struct PeerSignals {
  unsigned flags[kPeerMaxBlocks][kPeerMaxRanks];  ///< [block][sender]: the sender's call number
  unsigned calls;                                 ///< calls this member has completed
  unsigned finished;                              ///< blocks of the current call that have finished
};

/// One call of the fused kernel on one member.
struct FusedArAddNormArgs {
  int ranks = 0;  ///< members of the group
  int me = 0;     ///< this member's place in the group
  int blocks =
      0;  ///< most blocks a call uses (the same on every member): a call uses min(rows, blocks)
  PeerSignals* signals[kPeerMaxRanks] = {};  ///< every member's, by place
  /// Every member's workspace: 2 halves x `ranks` slots x slot_elems floats.
  float* workspace[kPeerMaxRanks] = {};
  std::size_t slot_elems = 0;
  const float* x = nullptr;   ///< this member's partial rows (rows x h)
  float* residual = nullptr;  ///< the residual rows: read when has_residual, written always
  float* out = nullptr;       ///< the normed rows; may equal x
  int rows = 0, h = 0;
  bool has_residual = false;
  bool real = false;              ///< round to bf16 as the unfused ops do
  bool ll = false;                ///< send with the LL protocol (requires llFits)
  const float* weight = nullptr;  ///< RMSNorm weight (real mode)
  const int* abort = nullptr;     ///< mapped host int: nonzero stops waiting for peers (a hung run)
};

/// Enqueues the fused all-reduce + residual add + RMSNorm: per row,
/// s = x_0 + x_1 + ... (member order; rounded to bf16 once when real),
/// r = residual + s (rounded when real; r = s without a residual),
/// residual = r, out = norm(r) exactly as addNormRows computes it.
cudaError_t fusedArAddNorm(const FusedArAddNormArgs& args, cudaStream_t stream);

}  // namespace seam::backend::kernels
