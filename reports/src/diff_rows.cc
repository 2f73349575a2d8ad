// A `seam diff` of a space in the store: its case rows written as they are
// compared, read back into the comparisons they record, and the summary
// rebuilt from them, so that a resumed run prints what an uninterrupted one
// does.
#include "seam/reports/recorders.h"

namespace seam::reports {

namespace {

/// Appended to a planned pair's class (its group) when its bits may differ,
/// and between its detail and rounding in its refusal text.
constexpr std::string_view kBitsGroup = "; bits may differ";
constexpr std::string_view kBitsText = "; bits may differ: ";

CaseRows diffRow(std::int64_t index, const Case& c, const properties::CaseDiff& d, PolicyKind a,
                 PolicyKind b) {
  CaseRecord rec;
  rec.index = index;
  rec.model = c.model.name;
  rec.pattern = c.model.pattern.text();
  rec.config = c.config.describe();
  rec.flags = c.flags.describe();
  rec.batch = c.batch.describe();
  rec.policy = std::string(policyName(a)) + " vs " + std::string(policyName(b));
  // Planned pairs whose bits may differ are a group of their own.
  const bool may_differ = properties::equalValues(d.cls) && !d.bit_identical;
  rec.group = std::string(properties::diffClassName(d.cls)) +
              (may_differ ? std::string(kBitsGroup) : std::string());
  rec.outcome =
      d.cls == properties::DiffClass::kValuesDiffer ? CaseOutcome::kViolated
      : d.cls == properties::DiffClass::kBothRefuse || d.cls == properties::DiffClass::kOneRefuses
          ? CaseOutcome::kRefused
          : CaseOutcome::kHolds;
  rec.refusal = may_differ ? d.detail + std::string(kBitsText) + d.rounding : d.detail;
  rec.reproduce = properties::diffCommand(c, a, b);
  return {std::move(rec), {}};
}

}  // namespace

DiffRecorder::DiffRecorder(Store& store, std::int64_t run_id, const properties::DiffSpec& spec)
    : a_(spec.a), b_(spec.b), writer_(store, run_id) {}

DiffRecorder::~DiffRecorder() { (void)finish(); }

void DiffRecorder::onCase(std::int64_t index, const Case& c, const properties::CaseDiff& d) {
  CaseRows row = diffRow(index, c, d, a_, b_);
  std::vector<CaseRows> full;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back(std::move(row));
    if (static_cast<int>(pending_.size()) < SweepRecorder::kBatchCases) return;
    full.swap(pending_);
  }
  writer_.push(std::move(full));
}

Status DiffRecorder::finish() {
  std::vector<CaseRows> last;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last.swap(pending_);
  }
  if (!last.empty()) writer_.push(std::move(last));
  return writer_.close();
}

std::string diffArgs(const properties::DiffSpec& spec, const std::string& worlds) {
  std::string models;
  for (const auto& m : spec.models) models += (models.empty() ? "" : ",") + m.name;
  return "policy=" + std::string(policyName(spec.a)) +
         " against=" + std::string(policyName(spec.b)) + " worlds=" + worlds + " models=" + models;
}

Expected<StoredRun> openDiffRun(const std::string& db, properties::DiffSpec* spec,
                                const std::string& worlds, const std::string& version,
                                bool resume) {
  return openCaseRun(db, "diff", diffArgs(*spec, worlds), version, resume, &spec->skip);
}

Expected<properties::CaseDiff> diffFromRow(const CaseRecord& row) {
  std::string_view group = row.group;
  const bool may_differ = group.size() > kBitsGroup.size() &&
                          group.substr(group.size() - kBitsGroup.size()) == kBitsGroup;
  if (may_differ) group.remove_suffix(kBitsGroup.size());
  for (int k = 0; k < properties::kDiffClassCount; ++k) {
    const auto cls = static_cast<properties::DiffClass>(k);
    if (properties::diffClassName(cls) != group) continue;
    if (may_differ && !properties::equalValues(cls)) break;
    properties::CaseDiff d;
    d.cls = cls;
    d.bit_identical = properties::equalValues(cls) && !may_differ;
    d.detail = row.refusal;
    if (may_differ) {
      const auto at = row.refusal.rfind(kBitsText);
      if (at == std::string::npos) break;
      d.detail = row.refusal.substr(0, at);
      d.rounding = row.refusal.substr(at + kBitsText.size());
    }
    return d;
  }
  return Status::internal("case " + std::to_string(row.index) + " of a stored diff has group \"" +
                          row.group + "\", not a diff class");
}

Expected<properties::DiffResult> diffResultFromStore(Store& store, std::int64_t run_id,
                                                     const properties::DiffSpec& spec,
                                                     const properties::DiffResult& live) {
  auto cases = properties::diffCases(spec);
  if (!cases) return cases.status();
  properties::DiffResult r;
  const Status read = store.eachCase(run_id, [&](CaseRecord&& row) -> Status {
    if (row.index < 0 || row.index >= static_cast<std::int64_t>(cases->size())) {
      return Status::internal("case " + std::to_string(row.index) +
                              " of a stored diff is outside its space of " +
                              std::to_string(cases->size()) + " cases");
    }
    auto d = diffFromRow(row);
    if (!d) return d.status();
    properties::foldDiff(r, *cases, row.index, *d, spec.a, spec.b);
    return Status::ok();
  });
  if (!read) return read;
  r.run_here = live.run_here;
  r.seconds = live.seconds;
  return r;
}

}  // namespace seam::reports
