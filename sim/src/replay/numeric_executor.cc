#include "seam/sim/replay/numeric_executor.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include "replay/numeric_domain.h"
#include "replay/replay.h"

namespace seam {

std::uint64_t NumericOutput::hash() const {
  // FNV-1a 64 over the float bytes in [stack][token][element] order: what the
  // GPU backend computes on the device.
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const auto& stack : rows) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(stack.data());
    for (size_t i = 0; i < stack.size() * sizeof(float); ++i) {
      h ^= bytes[i];
      h *= 0x100000001b3ULL;
    }
  }
  return h;
}

namespace {

int stackCount(const Pattern& p) { return p.mtp.empty() ? 1 : 2; }

}  // namespace

NumericOutput runReference(const Case& c, numeric::Mode mode, const numeric::Shape& shape) {
  NumericOutput out;
  out.hidden = shape.hidden;
  out.tokens = c.batch.total();
  const int h = shape.hidden;
  const int stacks = stackCount(c.model.pattern);
  out.rows.assign(stacks, std::vector<float>(static_cast<size_t>(out.tokens) * h));
  out.producers.assign(stacks, std::vector<int>(out.tokens, 1));
  ledger_detail::NumericDomain d;
  d.configure(mode, shape, c);
  for (int t = 0; t < out.tokens; ++t) {
    std::vector<float> input = d.embed(0, t);
    for (int stack = 0; stack < stacks; ++stack) {
      const auto& kinds = stack == 0 ? c.model.pattern.layers : c.model.pattern.mtp;
      std::vector<float> residual = input;  // residual := embedding
      // LongCat-Flash (branch-merge, five stages per layer): the MoE (stage
      // role 1) computes on its normed input and waits; mlp0 (role 2) reads
      // that same normed input; the MoE's output joins mlp1's (role 4)
      // before the residual add (layer_boundary/adapters/branch.py).
      // Its MTP layer (stack 1) is an ordinary two-stage layer.
      const bool branch = c.model.family == LayerFamily::kBranchMerge && stack == 0;
      const int spl = c.model.stagesPerLayer();
      std::vector<float> branch_x, branch_y;
      for (int s = 0; s < static_cast<int>(kinds.size()); ++s) {
        if (stack == 0 &&
            std::find(c.flags.capture.begin(), c.flags.capture.end(), s) != c.flags.capture.end()) {
          auto it = std::find_if(out.snapshots.begin(), out.snapshots.end(),
                                 [&](const auto& p) { return p.first == s; });
          if (it == out.snapshots.end()) {
            out.snapshots.emplace_back(s, std::vector<float>(static_cast<size_t>(out.tokens) * h));
            it = out.snapshots.end() - 1;
          }
          std::memcpy(it->second.data() + static_cast<size_t>(t) * h, residual.data(),
                      h * sizeof(float));
        }
        const int role = branch ? s % spl : -1;
        const std::vector<float> x = role == 2 ? branch_x : d.norm(residual, stack, s, t, 0);
        // All weight shards at once: one shard covering every inner column.
        std::vector<float> y = d.compute(x, stack, s, t, 0, 1, 0, 1);
        if (role == 1) {
          branch_x = x;
          branch_y = std::move(y);
          continue;
        }
        if (role == 4) d.add(y, branch_y);
        d.add(residual, y);
      }
      const std::vector<float> final_out =
          d.norm(residual, stack, static_cast<int>(kinds.size()), t, 0);
      std::memcpy(out.rows[stack].data() + static_cast<size_t>(t) * h, final_out.data(),
                  h * sizeof(float));
      if (stack + 1 < stacks) input = d.project(final_out, stack + 1, t, 0, 1);
    }
  }
  return out;
}

NumericRun runPlanNumeric(const Plan& plan, numeric::Mode mode, const numeric::Shape& shape,
                          ExecutionOrder order) {
  ledger_detail::Replay<ledger_detail::NumericDomain> replay;
  replay.domain().configure(mode, shape, plan.source);
  replay.domain().setOrder(order);
  LedgerOptions options;
  options.max_violations = 1;
  LedgerResult r = replay.run(plan, options);
  NumericRun run;
  run.failures = std::move(r.violations);
  NumericOutput& out = run.output;
  out.hidden = shape.hidden;
  out.tokens = plan.source.batch.total();
  const int h = shape.hidden;
  const int stacks = stackCount(plan.source.model.pattern);
  out.rows.assign(stacks, std::vector<float>(static_cast<size_t>(out.tokens) * h, 0.0f));
  out.producers.assign(stacks, std::vector<int>(out.tokens, 0));
  if (!run.ran()) return run;
  // Snapshots: every rank's copy of each captured stage must agree.
  for (int s : plan.source.flags.capture) {
    if (std::any_of(out.snapshots.begin(), out.snapshots.end(),
                    [&](const auto& p) { return p.first == s; }))
      continue;
    out.snapshots.emplace_back(s, std::vector<float>(static_cast<size_t>(out.tokens) * h, 0.0f));
  }
  replay.visitOutputs(
      [&](int stack, int t, const std::vector<float>& row) {
        if (stack >= stacks) return;
        float* dst = out.rows[stack].data() + static_cast<size_t>(t) * h;
        if (out.producers[stack][t]++ == 0) {
          std::memcpy(dst, row.data(), h * sizeof(float));
        } else if (std::memcmp(dst, row.data(), h * sizeof(float)) != 0) {
          run.ranks_disagree = true;
        }
      },
      [&](int stage, int t, const std::vector<float>& row) {
        auto it = std::find_if(out.snapshots.begin(), out.snapshots.end(),
                               [&](const auto& p) { return p.first == stage; });
        if (it == out.snapshots.end() || static_cast<int>(row.size()) != h) return;
        std::memcpy(it->second.data() + static_cast<size_t>(t) * h, row.data(), h * sizeof(float));
      });
  return run;
}

std::string OutputDiff::describe() const {
  if (identical) return "bit-identical";
  if (stack < 0) return "differs: the snapshot before stage " + std::to_string(element);
  return "differs: first at stack " + std::to_string(stack) + " token " + std::to_string(token) +
         " element " + std::to_string(element) + " (" + std::to_string(a) + " vs " +
         std::to_string(b) + "), max |diff| " + std::to_string(max_abs) + ", max " +
         std::to_string(max_ulps) + (bf16_ulps ? " bf16" : " fp32") + " ulps";
}

void OutputDiff::add(int s, int t, int k, float x, float y) {
  if (std::memcmp(&x, &y, sizeof x) == 0) return;
  if (identical) {
    identical = false;
    stack = s;
    token = t;
    element = k;
    a = x;
    b = y;
  }
  max_abs = std::max(max_abs, static_cast<double>(std::fabs(x - y)));
  max_ulps = std::max(max_ulps, numeric::ulpDistance(x, y));
  bf16_ulps = bf16_ulps && numeric::isBf16(x) && numeric::isBf16(y);
}

void OutputDiff::finish() {
  if (bf16_ulps) max_ulps /= 65536;
}

OutputDiff compareOutputs(const NumericOutput& a, const NumericOutput& b) {
  OutputDiff d;
  if (a.rows.size() != b.rows.size() || a.hidden != b.hidden || a.tokens != b.tokens) {
    d.identical = false;
    d.max_abs = INFINITY;
    return d;
  }
  for (size_t s = 0; s < a.rows.size(); ++s) {
    for (size_t i = 0; i < a.rows[s].size(); ++i) {
      d.add(static_cast<int>(s), static_cast<int>(i / a.hidden), static_cast<int>(i % a.hidden),
            a.rows[s][i], b.rows[s][i]);
    }
  }
  d.finish();
  // Snapshots are outputs too (the draft model reads them).
  if (a.snapshots.size() != b.snapshots.size()) {
    d.identical = false;
    return d;
  }
  for (size_t k = 0; k < a.snapshots.size(); ++k) {
    const auto& x = a.snapshots[k];
    const auto it = std::find_if(b.snapshots.begin(), b.snapshots.end(),
                                 [&](const auto& p) { return p.first == x.first; });
    if (it == b.snapshots.end() || it->second.size() != x.second.size() ||
        std::memcmp(it->second.data(), x.second.data(), x.second.size() * sizeof(float)) != 0) {
      if (d.identical) {
        d.identical = false;
        d.stack = -1;
        d.element = x.first;  // the snapshot's stage
      }
    }
  }
  return d;
}

}  // namespace seam
