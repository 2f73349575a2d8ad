// A run's findings read back from the store, their identities, and the
// verdict of a run against a baseline (the JSON file is read and written in
// known_findings_json.cc).
#include "seam/reports/known_findings.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "seam/properties/engine_finding.h"
#include "seam/reports/engine_view.h"

namespace seam::reports {

namespace {

/// Joins the fields of an identity; no field holds it (they are one-line
/// texts seam wrote).
constexpr char kKeySeparator = '\x1f';

/// `text` without " (op #N)", whose number moves when an op is added earlier
/// in the plan.
std::string withoutOpNumber(std::string text) {
  const std::size_t at = text.find(" (op #");
  if (at == std::string::npos) return text;
  const std::size_t end = text.find(')', at);
  if (end != std::string::npos) text.erase(at, end - at + 1);
  return text;
}

}  // namespace

std::string Finding::key() const {
  std::string out;
  for (const std::string* field : {&model, &pattern, &config, &flags, &batch, &policy, &what}) {
    out += *field;
    out += kKeySeparator;
  }
  return out;
}

std::string sweepFindingWhat(std::string_view violation_text) {
  // "P violated (C) at layer L stage S PHASE OP (op #N), rank R, token T: the
  // sentence; engine finding: SGLang calls ...": the part before ": ".
  const auto [violation, call] = properties::splitFailureText(violation_text);
  return withoutOpNumber(std::string(violation.substr(0, violation.find(": "))));
}

std::string engineFindingWhat(std::string_view agreement, std::string_view divergence) {
  // A frame is "path.py:LINE:function"; the line moves with every edit above it.
  std::string out = std::string(agreement) + ": ";
  constexpr std::string_view kPy = ".py:";
  std::size_t at = 0;
  while (at < divergence.size()) {
    const std::size_t py = divergence.find(kPy, at);
    if (py == std::string_view::npos) {
      out += divergence.substr(at);
      break;
    }
    out += divergence.substr(at, py + 3 - at);  // up to ".py"
    std::size_t digits = py + kPy.size();
    while (digits < divergence.size() &&
           std::isdigit(static_cast<unsigned char>(divergence[digits])))
      ++digits;
    // ".py:123:" drops ":123"; ".py:" without a number keeps its colon.
    at = digits > py + kPy.size() ? digits : py + 3;
  }
  return out;
}

Expected<std::vector<Finding>> runFindings(Store& store, std::int64_t run_id,
                                           std::string_view command) {
  std::vector<Finding> out;
  if (command == kEngineSweepRun) {
    auto rows = store.engineCases(run_id);
    if (!rows) return rows.status();
    for (EngineCaseRecord& r : *rows) {
      if (r.policy != "declared" || !countsAgainstPlan(r.agreement)) continue;
      out.push_back({std::move(r.model), "", std::move(r.config), std::move(r.flags),
                     std::move(r.batch), std::move(r.policy),
                     engineFindingWhat(r.agreement, r.divergence), std::move(r.reproduce)});
    }
    return out;
  }
  auto failures = store.firstFailures(run_id);
  if (!failures) return failures.status();
  std::map<std::int64_t, std::string> what;
  for (const auto& [index, verdict] : *failures) what[index] = sweepFindingWhat(verdict.text);
  const Status read = store.eachCase(run_id, [&](CaseRecord&& c) {
    if (c.outcome != CaseOutcome::kViolated) return Status::ok();
    out.push_back({std::move(c.model), std::move(c.pattern), std::move(c.config),
                   std::move(c.flags), std::move(c.batch), std::move(c.policy), what[c.index],
                   std::move(c.reproduce)});
    return Status::ok();
  });
  if (!read) return read;
  return out;
}

BaselineVerdict judgeFindings(const Baseline& baseline, const std::vector<Finding>& findings) {
  BaselineVerdict v;
  v.path = baseline.path;
  v.findings = static_cast<std::int64_t>(findings.size());
  std::set<std::string> met;
  for (const Finding& f : findings) {
    std::string key = f.key();
    if (baseline.keys.count(key) > 0) {
      ++v.known;
      met.insert(std::move(key));
    } else {
      v.fresh.push_back(f);
    }
  }
  v.unmet = static_cast<std::int64_t>(baseline.keys.size() - met.size());
  return v;
}

std::string renderBaselineVerdict(const BaselineVerdict& v, std::size_t listed) {
  std::string out;
  for (std::size_t i = 0; i < v.fresh.size() && i < listed; ++i)
    out += "NEW FINDING: " + v.fresh[i].what + "\n  " + v.fresh[i].reproduce + "\n";
  if (v.fresh.size() > listed)
    out += "(and " + std::to_string(v.fresh.size() - listed) + " more new findings)\n";
  auto findings = [](std::int64_t n) {
    return std::to_string(n) + (n == 1 ? " finding" : " findings");
  };
  out += "baseline \"" + v.path + "\": " + findings(v.findings) + ", " + std::to_string(v.known) +
         " baselined, " + std::to_string(v.fresh.size()) + " new";
  if (v.unmet > 0) out += "; " + findings(v.unmet) + " of the baseline not found by this run";
  return out + "\n";
}

}  // namespace seam::reports
