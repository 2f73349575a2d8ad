#include "seam/reports/diff_view.h"

#include <sstream>

#include "seam/reports/table.h"

namespace seam::reports {

std::string renderDiff(const properties::DiffSpec& spec, const properties::DiffResult& r,
                       const std::string& worlds) {
  std::ostringstream out;
  out << "diff: " << policyName(spec.a) << " against " << policyName(spec.b) << ", " << r.cases
      << " cases (" << spec.models.size() << " models, worlds " << worlds << ")\n";
  Table t({"class", "cases", "bit-identical", "smallest example"}, {false, true, true, false});
  for (int k = 0; k < properties::kDiffClassCount; ++k) {
    if (r.counts[k] == 0) continue;
    const auto cls = static_cast<properties::DiffClass>(k);
    const bool planned = properties::equalValues(cls);
    t.addRow({std::string(properties::diffClassName(cls)), std::to_string(r.counts[k]),
              planned ? std::to_string(r.bit_identical[k]) : "-", r.examples[k].reproduce});
  }
  out << t.render();
  out << "  bit-identical: predicted to give the same bits on GPUs in real mode (the same "
         "roundings in the same order; bit_identity.h)\n";
  if (r.other_roundings.index >= 0) {
    out << "  equal values, bits may differ: e.g. " << r.other_roundings.reproduce << ": "
        << r.other_roundings.detail << "\n";
  }
  for (int k = 0; k < properties::kDiffClassCount; ++k) {
    if (r.counts[k] == 0 || r.examples[k].detail.empty()) continue;
    out << "  " << properties::diffClassName(static_cast<properties::DiffClass>(k)) << ": "
        << r.examples[k].detail << "\n";
  }
  const auto differ = r.counts[static_cast<int>(properties::DiffClass::kValuesDiffer)];
  if (r.run_here != r.cases) {
    out << "(" << r.cases - r.run_here
        << " of them compared by the interrupted run resumed here; this process compared "
        << r.run_here << ")\n";
  }
  out << r.cases << " cases, " << differ << " with values that differ\n";
  return out.str();
}

}  // namespace seam::reports
