#include "engine_sweep.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>

#include "command.h"
#include "seam/properties/sweep.h"
#include "seam/recordings/conformance.h"
#include "seam/recordings/recorder.h"

namespace seam::tools {

namespace {

constexpr PolicyKind kPolicies[] = {PolicyKind::kDeclared, PolicyKind::kLegacy};
constexpr int kExamples = 3;

struct Tally {
  int cases = 0;
  int counts[2][recordings::kAgreementCount] = {};
};

}  // namespace

int sweepEngine(const EngineSweepOptions& o) {
  if (Status s = engineOptionsValid(o.engine); !s) return fail(s);
  auto models = properties::sweepModels(o.model, o.pattern);
  if (!models) return fail(models.status());
  std::string dir = o.keep;
  if (dir.empty()) {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "seam-engine-sweep-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr)
      return fail(Status::invalid("cannot make a scratch folder"));
    dir = tmpl;
  } else if (std::error_code ec; !std::filesystem::create_directories(dir, ec) && ec) {
    return fail(Status::invalid("--keep-recordings " + dir + ": " + ec.message()));
  }
  recordings::RecorderRun run = recordings::defaultRecorderRun(SEAM_CHECKOUT);
  run.engine_src = o.engine.engine_src;
  run.timeout_s = o.engine.timeout_s;
  bool all_agree = true;
  for (const properties::SweepModel& m : *models) {
    if (!m.model) {
      std::cout << m.name << ": not modelled (" << m.why_not << ")\n";
      continue;
    }
    const auto space =
        recordings::engineSpace(properties::enumerateCases(*m.model, o.world, o.fixed.filter()),
                                recordings::recorderCaseJson);
    std::cout << "sweep --engine: " << m.name << " world " << o.world << ": " << space.cases.size()
              << " cases in " << space.runs.size() << " engine runs";
    for (const auto& [why, n] : space.left_out)
      std::cout << "; " << n << " left out (" << why << ")";
    std::cout << "\n" << std::flush;
    const std::string model_dir = dir + "/" + m.name;
    std::filesystem::create_directories(model_dir);
    const auto start = std::chrono::steady_clock::now();
    if (Status s = recordings::runRecorderBatch(run, space.runs, model_dir); !s) return fail(s);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::map<std::string, Tally> tally;
    std::map<std::string, std::pair<int, std::string>> divergences[2];
    for (std::size_t i = 0; i < space.cases.size(); ++i) {
      const Case& c = space.cases[i];
      auto rec = recordings::readRecording(
          model_dir + "/" + recordings::recordingName(run, space.runs[space.run_of[i]]));
      if (!rec) return fail(rec.status());
      Tally& t = tally[recordings::configFamily(c.config)];
      ++t.cases;
      for (int p = 0; p < 2; ++p) {
        const auto a = recordings::agreementOf(c, kPolicies[p], *rec);
        ++t.counts[p][static_cast<int>(a.agreement)];
        const bool counted = a.agreement != recordings::Agreement::kEngineRefused &&
                             a.agreement != recordings::Agreement::kOtherPadding;
        if (p == 0 && counted && a.agreement != recordings::Agreement::kAgrees) all_agree = false;
        if (!a.divergence.empty() && counted) {
          auto& d = divergences[p][std::string(recordings::agreementName(a.agreement)) + ": " +
                                   a.divergence];
          if (d.first++ == 0)
            d.second = reproduceCommand(c, policyName(kPolicies[p])) + " --engine sglang";
        }
      }
    }
    std::cout << "  recorded in " << static_cast<int>(seconds) << " s (" << space.runs.size()
              << " runs); per configuration family, cases: declared | legacy\n";
    for (const auto& [family, t] : tally) {
      std::cout << "  " << family << ": " << t.cases;
      for (int p = 0; p < 2; ++p) {
        std::cout << (p == 0 ? " |" : " ||");
        for (int a = 0; a < recordings::kAgreementCount; ++a)
          if (t.counts[p][a] > 0)
            std::cout << " " << recordings::agreementName(static_cast<recordings::Agreement>(a))
                      << " " << t.counts[p][a];
      }
      std::cout << "\n";
    }
    for (int p = 0; p < 2; ++p) {
      int shown = 0;
      for (const auto& [what, d] : divergences[p]) {
        if (shown++ == kExamples) {
          std::cout << "  (" << divergences[p].size() - kExamples << " more classes)\n";
          break;
        }
        std::cout << "  " << policyName(kPolicies[p]) << " " << what.substr(0, 200) << " ("
                  << d.first << " cases), e.g. " << d.second << "\n";
      }
    }
  }
  if (o.keep.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return all_agree ? kExitOk : kExitPropertyFailed;
}

}  // namespace seam::tools
