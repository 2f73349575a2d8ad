#include "seam/properties/prop.h"

#include <rapidcheck.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <exception>
#include <optional>
#include <unordered_map>

#include "seam/properties/check.h"
#include "seam/properties/engine_finding.h"

namespace seam::properties {

namespace {

// One name per planted decision: `--decision NAME` and the mutant id
// `decision.NAME` (mutants/src/registry.cc) are the same words.
constexpr std::array<std::string_view, kDecisionCount> kDecisionNames = {
    "mixer-keeps-fused-sum",         "residual-not-sliced",
    "ffn-keeps-sum-from-mixer",      "snapshot-not-completed",
    "stack-start-ffn-with-residual", "stack-never-entered",
    "ffn-reduces-over-attn-tp",      "terminal-defers",
    "mtp-not-marked-last",           "dp-gather-sum-residual-every-rank",
    "fusion-token-bound-moved",      "fusion-ignores-dp-attention",
    "mixer-weights-over-tp",         "post-experts-not-merged"};

constexpr std::string_view kMutantPrefix = "decision.";

// The tag a refused case carries, so the listener can count refusals.
constexpr const char* kRefusedTag = "refused";

// rapidcheck's default listener logs to stderr and prints its own RC_PARAMS
// line; seam's listener only counts, so that the library prints nothing.
class CountingListener final : public rc::detail::TestListener {
 public:
  explicit CountingListener(const std::function<void(int, int)>& progress) : progress_(progress) {}
  void onTestCaseFinished(const rc::detail::CaseDescription& d) override {
    ++cases;
    if (!d.tags.empty()) ++refused;
    if (progress_) progress_(cases, shrinks);
  }
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {
    ++shrinks;
    if (progress_) progress_(cases, shrinks);
  }
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}

  int cases = 0;
  int refused = 0;
  int shrinks = 0;

 private:
  const std::function<void(int, int)>& progress_;
};

// The failure of the latest evaluation. rapidcheck runs the minimal case once
// more after shrinking, so when it reports a failure this is the shrunk case.
struct LastFailure {
  std::optional<Case> c;
  std::string words;
  std::optional<Violation> violation;
};

}  // namespace

std::string_view decisionName(Decision d) { return kDecisionNames[static_cast<int>(d)]; }

Expected<Decision> parseDecision(std::string_view name) {
  // Scripts written before the names were unified spell them in snake case,
  // and a mutant id names the same decision: both are accepted.
  std::string words(name.substr(name.rfind(kMutantPrefix, 0) == 0 ? kMutantPrefix.size() : 0));
  std::replace(words.begin(), words.end(), '_', '-');
  for (int i = 0; i < kDecisionCount; ++i) {
    if (kDecisionNames[i] == words) return static_cast<Decision>(i);
  }
  std::string known;
  for (std::string_view n : kDecisionNames) known += (known.empty() ? "" : ", ") + std::string(n);
  return Status::invalid("--decision \"" + std::string(name.substr(0, 64)) +
                         "\" is not a planner decision (" + known + ")");
}

std::string decisionList(const Schema& schema) {
  std::string out;
  for (int i = 0; i < kDecisionCount; ++i) {
    if ((schema.flipped >> i) & 1u)
      out += (out.empty() ? "" : ",") + std::string(kDecisionNames[i]);
  }
  return out.empty() ? "none" : out;
}

std::string decisionFlags(const Schema& schema) {
  std::string out;
  for (int i = 0; i < kDecisionCount; ++i) {
    if ((schema.flipped >> i) & 1u) out += " --decision " + std::string(kDecisionNames[i]);
  }
  return out;
}

std::string rcParams(const PropSpec& spec) {
  std::string out = "seed=" + std::to_string(spec.seed) +
                    " max_success=" + std::to_string(spec.cases) +
                    " max_size=" + std::to_string(spec.max_size);
  if (!spec.shrink) out += " noshrink=1";
  return out;
}

Status applyRcParams(std::string_view text, PropSpec& spec) {
  rc::detail::Configuration base;
  base.testParams.seed = spec.seed;
  base.testParams.maxSuccess = spec.cases;
  base.testParams.maxSize = spec.max_size;
  base.testParams.disableShrinking = !spec.shrink;
  rc::detail::Configuration config;
  try {
    config = rc::detail::configFromString(std::string(text), base);
  } catch (const std::exception& e) {
    return Status::invalid("RC_PARAMS \"" + std::string(text.substr(0, 128)) + "\": " + e.what());
  }
  if (!config.reproduce.empty()) {
    return Status::invalid(
        "RC_PARAMS \"" + std::string(text.substr(0, 128)) +
        "\": reproduce= is not supported by seam prop; give the seed= it printed");
  }
  if (config.testParams.maxSuccess < 1) {
    return Status::invalid("RC_PARAMS max_success=" + std::to_string(config.testParams.maxSuccess) +
                           " must be >= 1");
  }
  spec.seed = config.testParams.seed;
  spec.cases = config.testParams.maxSuccess;
  spec.max_size = config.testParams.maxSize;
  spec.shrink = !config.testParams.disableShrinking;
  return Status::ok();
}

Expected<PropResult> runProp(const PropSpec& spec) {
  if (spec.cases < 1)
    return Status::invalid("--cases " + std::to_string(spec.cases) + " must be >= 1");
  if (spec.world != 0 && (spec.world < 1 || spec.world > kMaxWorld)) {
    return Status::invalid("--world " + std::to_string(spec.world) +
                           " is not 0 (generated) or in 1.." + std::to_string(kMaxWorld));
  }
  if (spec.max_layers < 1)
    return Status::invalid("--max-layers " + std::to_string(spec.max_layers) + " must be >= 1");
  if (spec.max_size < 0)
    return Status::invalid("max_size " + std::to_string(spec.max_size) + " must be >= 0");
  const auto start = std::chrono::steady_clock::now();

  const rc::Gen<Case> cases = genCase(spec.world, spec.max_layers);
  Ledger ledger;  // the property runs on this thread only: one scratch for every case
  LastFailure last;
  const Schema schema = spec.schema;
  auto property = [&]() {
    last = {};  // the final evaluation rapidcheck runs is the one it reports
    const Case c = *cases;
    auto plan = buildPlan(c, PolicyKind::kDeclared, schema);
    if (!plan) {
      if (plan.status().code() == StatusCode::kRefused) {
        RC_TAG(kRefusedTag);  // the engine refuses it: the property holds vacuously
        return;
      }
      last = {c, "the policy could not plan a generated case: " + plan.status().message(),
              std::nullopt};
      RC_FAIL(last.words);
    }
    const PlanVerdict verdict = checkPlan(*plan, ledger, Depth::kFirst);
    if (std::optional<Violation> v = verdict.firstViolation()) {
      // With no decision planted the declared plan is the engine as it runs:
      // the words name the SGLang call behind an engine finding.
      const std::string site =
          modelsEngineAsRun(PolicyKind::kDeclared, schema) ? engineFindingSite(*plan, *v) : "";
      last = {c, failureText(*v, site), *v};
      RC_FAIL(last.words);
    }
  };

  rc::detail::TestParams params;
  params.seed = spec.seed;
  params.maxSuccess = spec.cases;
  params.maxSize = spec.max_size;
  params.disableShrinking = !spec.shrink;
  rc::detail::TestMetadata metadata;
  metadata.id = "seam prop";
  metadata.description = "every generated case's declared plan satisfies properties 1-6, 8 and 9";
  CountingListener listener(spec.on_progress);
  // An empty reproduce map: rapidcheck searches from the seed and never reads
  // its global configuration (RC_PARAMS), which would print to stderr.
  const std::unordered_map<std::string, rc::detail::Reproduce> no_reproduce;
  std::optional<rc::detail::TestResult> checked;
  try {
    checked = rc::detail::checkProperty(rc::detail::toProperty(property), metadata, params,
                                        listener, no_reproduce);
  } catch (const std::exception& e) {
    return Status::internal(std::string("rapidcheck: ") + e.what());
  }
  const rc::detail::TestResult& outcome = *checked;

  PropResult result;
  result.rc_params = rcParams(spec);
  result.cases_run = listener.cases;
  result.refused = listener.refused;
  rc::detail::SuccessResult success;
  rc::detail::FailureResult failure;
  rc::detail::GaveUpResult gave_up;
  rc::detail::Error error;
  if (outcome.match(success)) {
    result.passed = true;
  } else if (outcome.match(failure)) {
    result.passed = false;
    result.shrinks = static_cast<int>(failure.reproduce.shrinkPath.size());
    if (last.c) {
      result.failure = last.words;
      result.violation = last.violation;
      // The decision planted, so that `seam check` replays the failure as found.
      result.reproduce =
          reproduceCommand(*last.c, policyName(PolicyKind::kDeclared)) + decisionFlags(spec.schema);
      result.shrunk = std::move(last.c);
    } else {
      // Not one of ours: an exception escaped while generating or planning.
      result.failure = failure.description;
    }
  } else if (outcome.match(gave_up)) {
    return Status::internal("rapidcheck gave up after " + std::to_string(gave_up.numSuccess) +
                            " cases: " + gave_up.description);
  } else if (outcome.match(error)) {
    return Status::internal("rapidcheck: " + error.description);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace seam::properties
