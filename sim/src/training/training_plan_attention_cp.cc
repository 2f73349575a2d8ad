// The training planner's Megatron attention under context parallelism as
// Transformer Engine runs it (training_plan_builder.h; TE's
// attention/dot_product_attention/context_parallel.py). By default
// (cp_comm_type p2p) AttnFuncWithCPAndKVP2P passes the packed K and V buffer
// around the CP ring in forward, and in backward passes it again the other
// way with the dKV that accumulates on its way back to the buffer's owner;
// under a2a AttnFuncWithCPAndQKVOA2A all-to-alls q, k and v to heads and the
// output back. The all-gather flavour is in training_plan_forward.cc and
// training_plan_backward.cc.
#include <string>

#include "training/training_plan_builder.h"

namespace seam::training {

/// One exchange of the ring on rank r, appended to `out`: a send of `sends`
/// and a receive into `recvs` as flash_attn_p2p_communicate posts them (even
/// CP ranks the send first, odd ranks the receive). The forward sends to the
/// next CP rank and receives from the previous; the backward the other way.
/// TE batches the pair (batch_isend_irecv) when cp is 2 on GPUs before
/// compute capability 10, or when NVTE_BATCH_MHA_P2P_COMM is set; the ops
/// and their order are the same either way.
void Builder::ringExchange(int r, int layer, Pass pass, const std::string& what,
                           const std::vector<int>& sends, const std::vector<int>& recvs,
                           std::vector<TrainingOp>& out) const {
  const std::vector<int> g = lay_.group(TrainAxis::kCp, r);
  const int n = static_cast<int>(g.size());
  const int c = lay_.coord(r).cp;
  const int next = g[(c + 1) % n], prev = g[(c + n - 1) % n];
  const bool fwd = pass == Pass::kForward;
  TrainingOp s;
  s.pass = pass;
  s.layer = static_cast<std::int16_t>(layer);
  s.block = '*';
  s.kind = OpKind::kSend;
  s.axis = TrainAxis::kCp;
  s.ranks = {r, fwd ? next : prev};
  s.step = "cp p2p send " + what;
  for (int b : sends) {
    s.reads.push_back(static_cast<std::int16_t>(b));
    s.bytes += bytesOf(b, r);
  }
  TrainingOp v = s;
  v.kind = OpKind::kRecv;
  v.ranks = {fwd ? prev : next, r};
  v.step = "cp p2p recv " + what;
  v.reads.clear();
  v.bytes = 0;
  for (int b : recvs) {
    v.writes.push_back(static_cast<std::int16_t>(b));
    v.bytes += bytesOf(b, r);
  }
  if (c % 2 == 0) {
    out.push_back(std::move(s));
    out.push_back(std::move(v));
  } else {
    out.push_back(std::move(v));
    out.push_back(std::move(s));
  }
}

/// AttnFuncWithCPAndKVP2P.forward: K and V of the rank's own tokens are
/// chunk 0; before step s < cp-1 the rank sends chunk s to the next CP rank
/// and receives chunk s+1 (the KV of CP rank c-s-1) from the previous one,
/// so after cp-1 exchanges it has held every rank's KV once. Returns the
/// chunks, K's then V's.
std::vector<int> Builder::kvRingForward(int l, int kk, int vv) {
  const int cp = k().cp;
  std::vector<int> ks = {kk}, vs = {vv};
  for (int s = 1; s < cp; ++s) {
    for (auto* list : {&ks, &vs}) {
      const int src = list->front();
      const int chunk = derived(plan_.tensors[src].name + ".ring" + std::to_string(s), src);
      for (int r = 0; r < W(); ++r) cells_[chunk][r] = cells_[src][r];
      list->push_back(chunk);
    }
  }
  for (int r = 0; r < W(); ++r) {
    for (int s = 0; s + 1 < cp; ++s)
      ringExchange(r, l, Pass::kForward, "kv", {ks[s], vs[s]}, {ks[s + 1], vs[s + 1]}, fwd_[r]);
  }
  ks.insert(ks.end(), vs.begin(), vs.end());
  return ks;
}

/// The attention kernel just emitted reads chunk 0 of K and V; one kernel
/// op stands for TE's cp per-step kernels, so it reads every chunk (after
/// q: K's chunks, then V's), each chunk's gradient a contribution of this
/// rank like chunk 0's.
void Builder::addRingChunks(const std::vector<int>& chunks) {
  const size_t n = chunks.size() / 2;
  for (int r = 0; r < W(); ++r) {
    TrainingOp& op = fwd_[r].back();
    const int jk = op.grad_j[1], jv = op.grad_j[2];
    op.reads.resize(1);
    op.grad_j.resize(1);
    for (size_t i = 0; i < chunks.size(); ++i) {
      op.reads.push_back(static_cast<std::int16_t>(chunks[i]));
      op.grad_j.push_back(i < n ? jk : jv);
    }
  }
}

/// AttnFuncWithCPAndKVP2P.backward on rank r for the attention kernel at
/// forward index i (the forward ring's ops marked done: the backward has a
/// ring of its own). The kernel's backward first (it writes this rank's
/// contribution to every chunk's dKV; TE interleaves it with the steps),
/// then cp exchanges toward the previous CP rank with a two-slot [KV, dKV]
/// buffer: step 0 sends the KV it holds (chunk cp-1, rank c+1's), steps 1..cp-2
/// KV and the dKV accumulated so far, step cp-1 dKV only. Each chunk's
/// dKV, received from the next rank, lands where this rank's own
/// contribution to it is and adds to it, so after the last step chunk 0's
/// gradient, the rank's own dK and dV, holds every rank's contribution.
void Builder::attentionRingBackward(const std::vector<TrainingOp>& f, int i, int r,
                                    std::vector<TrainingOp>& bwd, std::vector<char>& done) {
  for (int j = i - 1; j >= 0 && f[j].layer == f[i].layer; --j) {
    if (f[j].kind == OpKind::kSend || f[j].kind == OpKind::kRecv) done[j] = 1;
  }
  bool keep = false;
  TrainingOp b = conjugate(f[i], i, r, &keep);
  bwd.push_back(std::move(b));
  const int n = k().cp;
  const TrainingOp& a = f[i];
  auto kv = [&](int s) { return std::vector<int>{a.reads[1 + s], a.reads[1 + n + s]}; };
  auto dkv = [&](int s) {
    return std::vector<int>{gradOf(a.reads[1 + s]), gradOf(a.reads[1 + n + s])};
  };
  for (int step = 0; step < n; ++step) {
    std::vector<int> send, recv;
    if (step < n - 1) {
      send = kv(n - 1 - step);
      recv = kv(n - 2 - step);
    }
    if (step > 0) {
      for (int t : dkv(n - step)) send.push_back(t);
      for (int t : dkv(n - 1 - step)) recv.push_back(t);
    }
    const char* what = step == 0 ? "kv" : step < n - 1 ? "kv+dkv" : "dkv";
    ringExchange(r, a.layer, Pass::kBackward, what, send, recv, bwd);
  }
}

/// AttnFuncWithCPAndQKVOA2A.forward, before the kernel: q, k and v each
/// all-to-all'd over cp from the sequence to the heads (in that order), then
/// each put back in the row's order (the load-balancing chunks reordered,
/// get_seq_chunk_ids_for_reordering_before_attn). Returns q, k, v so.
std::vector<int> Builder::a2aToHeads(int l, const std::vector<int>& qkv) {
  const std::string L = "L" + std::to_string(l) + ".";
  std::vector<int> cur = qkv;
  for (int& t : cur) {
    const int src = t;
    const int hh = derived(plan_.tensors[src].name + ".h", src);
    collective(l, '*', OpKind::kAllToAll, A2aMode::kSeqToHead, TrainAxis::kCp,
               "cp a2a seq->head " + plan_.tensors[src].name.substr(L.size()), src, hh,
               [&](int r) { return cells_[src][r]; });
    t = hh;
  }
  for (int& t : cur) {
    const int src = t;
    const int u = derived(plan_.tensors[src].name + ".seq", src);
    transform(l, '*', Transform::kReorder, "undo load balancing", {src}, u,
              [&](int r, TrainingOp& op) {
                op.perm = undoPerm(r, static_cast<int>(cells_[src][r] / lay_.tokens()));
                cells_[u][r] = cells_[src][r];
              });
    t = u;
  }
  return cur;
}

/// AttnFuncWithCPAndQKVOA2A.forward, after the kernel: the output put back
/// in the load-balancing order and all-to-all'd from the heads to the
/// sequence. Returns the rank's sequence piece.
int Builder::a2aToSeq(int l, int out) {
  const std::string L = "L" + std::to_string(l) + ".";
  const int lb = derived(L + "attn.lb", out);
  transform(l, '*', Transform::kReorder, "redo load balancing", {out}, lb,
            [&](int r, TrainingOp& op) {
              op.perm = redoPerm(r, static_cast<int>(cells_[out][r] / lay_.tokens()));
              cells_[lb][r] = cells_[out][r];
            });
  const int seq = derived(L + "attn.seq", lb);
  collective(l, '*', OpKind::kAllToAll, A2aMode::kHeadToSeq, TrainAxis::kCp, kA2aOut, lb, seq,
             [&](int r) { return cells_[lb][r]; });
  return seq;
}

/// AttnFuncWithCPAndQKVOA2A.backward on rank r for the attention kernel at
/// forward index i (the output's all-to-alls come before it: backward()'s
/// loop): the kernel's backward, then dq, dk and dv each reordered and
/// all-to-all'd back to the sequence, in q, k, v order, as the forward sent
/// them (not reversed).
void Builder::attentionA2aBackward(const std::vector<TrainingOp>& f, int i, int r,
                                   std::vector<TrainingOp>& bwd, std::vector<char>& done) {
  bool keep = false;
  bwd.push_back(conjugate(f[i], i, r, &keep));
  std::vector<int> a2as, undos;  // forward order
  for (int j = i - 1; j >= 0 && f[j].layer == f[i].layer; --j) {
    if (f[j].kind == OpKind::kAllToAll && f[j].a2a == A2aMode::kSeqToHead)
      a2as.insert(a2as.begin(), j);
    if (f[j].transform == Transform::kReorder) undos.insert(undos.begin(), j);
  }
  for (size_t x = 0; x < a2as.size() && x < undos.size(); ++x) {
    for (int j : {undos[x], a2as[x]}) {
      TrainingOp b = conjugate(f[j], j, r, &keep);
      if (keep) bwd.push_back(std::move(b));
      done[j] = 1;
    }
  }
}

}  // namespace seam::training
