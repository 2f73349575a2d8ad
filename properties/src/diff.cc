#include "seam/properties/diff.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <tuple>

#include "seam/properties/check.h"
#include "seam/sim/replay/bit_identity.h"

namespace seam::properties {

std::string_view diffClassName(DiffClass c) {
  switch (c) {
    case DiffClass::kIdentical:
      return "identical";
    case DiffClass::kMoved:
      return "same ops, another order";
    case DiffClass::kZeroUpdateDropped:
      return "a reduction of a zero update dropped";
    case DiffClass::kSize1Dropped:
      return "a reduction over a size-1 group dropped";
    case DiffClass::kEqualValues:
      return "different reductions, equal ledger values";
    case DiffClass::kValuesDiffer:
      return "values differ";
    case DiffClass::kOneRefuses:
      return "one side refuses";
    case DiffClass::kBothRefuse:
      return "both refuse";
  }
  return "?";
}

namespace {

/// What an op does, without where it is labelled (layer, stage, phase): a
/// reduction run at a producer's exit or at the consumer's entry is the same
/// call in the same place of the rank's sequence.
struct Call {
  OpKind kind;
  Tensor tensor;
  int communicator;  // -1: none
  RowKind in, out;
  std::int32_t rows_in, rows_out;
  std::int64_t bytes;
  friend bool operator==(const Call&, const Call&) = default;
  friend bool operator<(const Call& x, const Call& y) {
    return std::tie(x.kind, x.tensor, x.communicator, x.in, x.out, x.rows_in, x.rows_out, x.bytes) <
           std::tie(y.kind, y.tensor, y.communicator, y.in, y.out, y.rows_in, y.rows_out, y.bytes);
  }
};

std::vector<Call> calls(const std::vector<Op>& ops, const Topology& topo, int rank) {
  std::vector<Call> out;
  out.reserve(ops.size());
  for (const Op& op : ops) {
    const int comm =
        op.hasGroup() && communicates(op.kind) ? topo.communicator(op.groupAxis(), rank) : -1;
    out.push_back({op.kind, op.tensor, comm, op.rows_in.kind, op.rows_out.kind, op.rows_in.count,
                   op.rows_out.count, op.bytes});
  }
  return out;
}

/// Drops what a refactor may drop without changing a value: a zero update's
/// fold-and-reduce (add residual, zero_fill hidden, its all-reduce, then the
/// add+norm = one add_norm), and reductions over a group of one rank.
std::vector<Op> normalise(const std::vector<Op>& ops, const Topology& topo, bool* zero_update,
                          bool* size1) {
  std::vector<Op> out;
  out.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.kind == OpKind::kAdd && op.tensor == Tensor::kResidual && i + 2 < ops.size() &&
        ops[i + 1].kind == OpKind::kZeroFill && ops[i + 1].tensor == Tensor::kHidden) {
      size_t j = i + 2;
      Op add_norm = ops[j];
      if (add_norm.kind == OpKind::kAllReduce && j + 1 < ops.size() &&
          ops[j + 1].kind == OpKind::kAddNorm) {
        add_norm = ops[++j];
      }
      if (add_norm.kind == OpKind::kArAddNorm || add_norm.kind == OpKind::kAddNorm) {
        add_norm.kind = OpKind::kAddNorm;
        add_norm.axis = kNoAxis;
        *zero_update = true;
        out.push_back(add_norm);
        i = j;
        continue;
      }
    }
    if (op.hasGroup() && reduces(op.kind) && op.kind != OpKind::kArAddNorm &&
        topo.groupSize(op.groupAxis()) == 1) {
      *size1 = true;
      continue;
    }
    out.push_back(op);
  }
  // Legacy's aux capture (a copy of the hidden state, its all-reduce, the
  // residual added) with no reduction left is the declared capture of the
  // completed value after the entry: move it there, in the declared form.
  for (size_t i = 0; i + 1 < out.size(); ++i) {
    if (out[i].kind != OpKind::kSnapshot || out[i].tensor != Tensor::kHidden) continue;
    if (out[i + 1].kind != OpKind::kAdd || out[i + 1].tensor != Tensor::kSnapshot) continue;
    Op capture = out[i];
    capture.tensor = Tensor::kSnapshot;
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(i),
              out.begin() + static_cast<std::ptrdiff_t>(i) + 2);
    size_t j = i;
    while (j < out.size() && !(out[j].kind == OpKind::kCompute && out[j].stage == capture.stage))
      ++j;
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(j), capture);
  }
  return out;
}

std::string opText(const Op& op) {
  return std::string(opName(op.kind)) +
         (op.hasGroup() ? "[" + std::string(axisName(op.groupAxis())) + "]" : "") + " (layer " +
         std::to_string(op.layer) + " " + std::string(phaseName(op.phase)) + ")";
}

/// Same calls on every rank? If the labels differ, say which call moved.
bool sameCalls(const Plan& a, const Plan& b, const std::vector<std::vector<Op>>& ra,
               const std::vector<std::vector<Op>>& rb, const Topology& topo, std::string* moved) {
  for (int r = 0; r < a.world(); ++r) {
    if (calls(ra[r], topo, r) != calls(rb[r], topo, r)) return false;
  }
  for (int r = 0; r < a.world() && moved->empty(); ++r) {
    for (size_t i = 0; i < ra[r].size(); ++i) {
      const Op& x = ra[r][i];
      const Op& y = rb[r][i];
      if (x.layer != y.layer || x.phase != y.phase) {
        *moved = opText(x) + " in " + a.policy + " runs as " + opText(y) + " in " + b.policy +
                 " (rank " + std::to_string(r) + "): moved across the boundary into layer " +
                 std::to_string(y.layer);
        break;
      }
    }
  }
  return true;
}

}  // namespace

CaseDiff diffCase(const Case& c, PolicyKind pa, PolicyKind pb, Ledger& ledger) {
  CaseDiff d;
  auto a = buildPlan(c, pa);
  auto b = buildPlan(c, pb);
  if (!a && !b) {
    d.cls = DiffClass::kBothRefuse;
    d.detail = a.status().message();
    return d;
  }
  if (!a || !b) {
    d.cls = DiffClass::kOneRefuses;
    d.detail = std::string(policyName(!a ? pa : pb)) +
               " refuses: " + (!a ? a.status() : b.status()).message();
    return d;
  }
  return diffPlans(*a, *b, ledger);
}

namespace {

/// The prediction for two plans whose values are equal.
CaseDiff withRoundings(CaseDiff d, const Plan& a, const Plan& b) {
  const BitIdentityPrediction p = predictBitIdentity(a, b);
  d.bit_identical = p.identical;
  d.rounding = p.reason;
  return d;
}

CaseDiff classify(const Plan& pa, const Plan& pb, Ledger& ledger);

}  // namespace

CaseDiff diffPlans(const Plan& a, const Plan& b, Ledger& ledger) {
  CaseDiff d = classify(a, b, ledger);
  if (d.cls == DiffClass::kIdentical) {
    d.bit_identical = true;
    return d;
  }
  if (d.cls == DiffClass::kValuesDiffer) return d;
  return withRoundings(std::move(d), a, b);
}

namespace {

CaseDiff classify(const Plan& pa, const Plan& pb, Ledger& ledger) {
  CaseDiff d;
  const Plan* a = &pa;
  const Plan* b = &pb;
  if (a->ranks == b->ranks) return d;  // identical
  const Topology topo(a->source.config);
  std::string moved;
  if (sameCalls(*a, *b, a->ranks, b->ranks, topo, &moved)) {
    d.cls = DiffClass::kMoved;
    d.detail = moved;
    return d;
  }
  bool zero_a = false, size1_a = false, zero_b = false, size1_b = false;
  std::vector<std::vector<Op>> na(a->ranks.size()), nb(b->ranks.size());
  for (size_t r = 0; r < a->ranks.size(); ++r) {
    na[r] = normalise(a->ranks[r], topo, &zero_a, &size1_a);
    nb[r] = normalise(b->ranks[r], topo, &zero_b, &size1_b);
  }
  std::string moved_after;
  if (sameCalls(*a, *b, na, nb, topo, &moved_after)) {
    const bool zero = zero_a || zero_b;
    d.cls = zero ? DiffClass::kZeroUpdateDropped : DiffClass::kSize1Dropped;
    const std::string who = (zero ? zero_a : size1_a) ? a->policy : b->policy;
    d.detail = zero ? who + " all-reduces a zero update that the other drops"
                    : who + " reduces over a group of one rank that the other drops";
    if (!moved_after.empty()) d.detail += "; " + moved_after;
    return d;
  }
  const auto va = checkPlan(*a, ledger).firstViolation();
  const auto vb = checkPlan(*b, ledger).firstViolation();
  if (!va && !vb) {
    d.cls = DiffClass::kEqualValues;
    d.detail = "different reductions; the ledger proves every sum completed once in both";
    return d;
  }
  d.cls = DiffClass::kValuesDiffer;
  d.detail =
      va ? a->policy + ": " + describeViolation(*va) : b->policy + ": " + describeViolation(*vb);
  return d;
}

}  // namespace

std::vector<SweepModel> syntheticDiffModels() {
  std::vector<SweepModel> out;
  for (const char* p : {"M-M*-", "--", "-M", "*E-M", "E*E-", "M*E-/*E", "ME*E", "M-*E-"}) {
    auto m = sweepModel("", p);
    if (m) out.push_back(std::move(*m));
  }
  return out;
}

std::string diffCommand(const Case& c, PolicyKind a, PolicyKind b) {
  // The case's `seam check` options, with both policies instead of one.
  std::string line = reproduceCommand(c, policyName(b));
  const std::string policy = " --policy " + std::string(policyName(b));
  const auto pos = line.find(policy);
  if (pos != std::string::npos) line.erase(pos, policy.size());
  line.replace(0, std::string("seam check").size(), "seam diff");
  return line + " --policy " + std::string(policyName(a)) + " --against " +
         std::string(policyName(b));
}

namespace {

std::tuple<int, int, int> sizeOf(const Case& c) {
  return {c.model.pattern.size() + static_cast<int>(c.model.pattern.mtp.size()), c.config.world(),
          c.batch.total()};
}

/// Is case `index` a better example than `ex` (smaller, or as small and earlier)?
bool smaller(const std::vector<Case>& cases, std::int64_t index, const DiffExample& ex) {
  if (ex.index < 0) return true;
  const auto mine = sizeOf(cases[static_cast<size_t>(index)]);
  const auto theirs = sizeOf(cases[static_cast<size_t>(ex.index)]);
  return mine != theirs ? mine < theirs : index < ex.index;
}

}  // namespace

Expected<std::vector<Case>> diffCases(const DiffSpec& spec) {
  std::vector<Case> cases;
  for (const auto& m : spec.models) {
    if (!m.model) continue;
    for (int w : spec.worlds) {
      if (w < 1 || w > kMaxWorld)
        return Status::invalid("world " + std::to_string(w) + " is out of range");
      for (Case& c : enumerateCases(*m.model, w)) cases.push_back(std::move(c));
    }
  }
  return cases;
}

void foldDiff(DiffResult& r, const std::vector<Case>& cases, std::int64_t index, const CaseDiff& d,
              PolicyKind a, PolicyKind b) {
  const Case& c = cases[static_cast<size_t>(index)];
  const int k = static_cast<int>(d.cls);
  ++r.cases;
  ++r.counts[k];
  if (d.bit_identical) {
    ++r.bit_identical[k];
  } else if (equalValues(d.cls) && smaller(cases, index, r.other_roundings)) {
    r.other_roundings = {index, diffCommand(c, a, b), d.rounding};
  }
  if (smaller(cases, index, r.examples[k])) r.examples[k] = {index, diffCommand(c, a, b), d.detail};
}

Expected<DiffResult> runDiff(const DiffSpec& spec) {
  if (spec.jobs < 1)
    return Status::invalid("--jobs " + std::to_string(spec.jobs) + " must be >= 1");
  const auto start = std::chrono::steady_clock::now();
  auto listed = diffCases(spec);
  if (!listed) return listed.status();
  const std::vector<Case>& cases = *listed;
  std::vector<size_t> todo;
  todo.reserve(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!std::binary_search(spec.skip.begin(), spec.skip.end(), static_cast<std::int64_t>(i)))
      todo.push_back(i);
  }
  DiffResult r;
  std::mutex fold;
  std::atomic<size_t> next{0};
  const auto total = static_cast<std::int64_t>(cases.size());
  std::atomic<std::int64_t> compared{total - static_cast<std::int64_t>(todo.size())};
  auto worker = [&]() {
    Ledger ledger;
    for (size_t t; (t = next.fetch_add(1)) < todo.size();) {
      const auto i = static_cast<std::int64_t>(todo[t]);
      const CaseDiff d = diffCase(cases[todo[t]], spec.a, spec.b, ledger);
      if (spec.on_case) spec.on_case(i, cases[todo[t]], d);
      {
        std::lock_guard<std::mutex> lock(fold);
        foldDiff(r, cases, i, d, spec.a, spec.b);
      }
      const std::int64_t done = ++compared;
      if (spec.on_progress && (done % 64 == 0 || done == total)) spec.on_progress(done, total);
    }
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < spec.jobs; ++j) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  r.run_here = r.cases;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace seam::properties
