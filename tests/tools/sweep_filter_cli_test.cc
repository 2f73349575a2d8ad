// `seam sweep --a2a --fusion --dp-padding --reduction --mode`: each narrows
// the space to the cases whose flags hold the values given, spelled as
// `seam check` spells them; a value check refuses is one line and exit 2.
// The expected cases are read from the stored rows of the unfiltered sweep
// (their flags column), not from the filter's code.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "run_seam.h"
#include "seam/reports/store.h"

namespace {

using seam::testing::CliRun;
using seam::testing::runSeam;

/// A space with MoE (both a2a backends), attention DP (both paddings, every
/// reduction) and extend batches, swept in seconds.
const std::string kSpace = "sweep --world 4 --pattern 'M-*E' --jobs 2";

using CaseKey = std::tuple<std::string, std::string, std::string>;  // config, flags, batch

std::string tempDb(const std::string& name) {
  const std::string path = ::testing::TempDir() + "seam_sweep_filter_" + name + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

/// The cases the latest run of `db` stored.
std::vector<seam::reports::CaseRecord> storedCases(const std::string& db) {
  auto store = seam::reports::Store::open(db);
  EXPECT_TRUE(store.hasValue()) << (store ? "" : store.status().message());
  if (!store) return {};
  auto runs = store->runs();
  if (!runs || runs->empty()) return {};
  auto cases = store->cases(runs->back().id);
  return cases ? *cases : std::vector<seam::reports::CaseRecord>{};
}

/// Whether the stored flags text ("a2a=none fusion=on padding=max_len
/// reduction=ar mode=decode ...") holds `field` (e.g. "fusion=off") as one of its words.
bool holds(const std::string& flags, const std::string& field) {
  return (" " + flags + " ").find(" " + field + " ") != std::string::npos;
}

class SweepFilterCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string db = tempDb("whole");
    CliRun whole = runSeam(kSpace + " --db " + db);
    ASSERT_NE(whole.code, 2) << whole.err;
    all_ = storedCases(db);
    ASSERT_GT(all_.size(), 100u);
  }

  /// The whole space's cases that `keep` keeps.
  template <class Keep>
  static std::set<CaseKey> expected(Keep keep) {
    std::set<CaseKey> out;
    for (const auto& c : all_)
      if (keep(c.flags)) out.insert({c.config, c.flags, c.batch});
    return out;
  }

  /// The cases a sweep of the space with `filter` stores.
  static std::set<CaseKey> swept(const std::string& name, const std::string& filter) {
    const std::string db = tempDb(name);
    CliRun r = runSeam(kSpace + " " + filter + " --db " + db);
    EXPECT_NE(r.code, 2) << filter << ": " << r.err;
    std::set<CaseKey> out;
    for (const auto& c : storedCases(db)) out.insert({c.config, c.flags, c.batch});
    return out;
  }

  static inline std::vector<seam::reports::CaseRecord> all_;
};

TEST_F(SweepFilterCli, EachFlagFilterKeepsExactlyTheCasesWhoseFlagsHoldItsValue) {
  const std::pair<std::string, std::string> filters[] = {
      {"--a2a deepep", "a2a=deepep"},     {"--a2a none", "a2a=none"},
      {"--fusion off", "fusion=off"},     {"--dp-padding sum_len", "padding=sum_len"},
      {"--mode extend", "mode=extend"},   {"--reduction rsv", "reduction=rsv"},
      {"--reduction ar", "reduction=ar"},
  };
  for (const auto& entry : filters) {
    // Not a structured binding: clang 14 refuses a lambda capturing one.
    const std::string& filter = entry.first;
    const std::string& field = entry.second;
    const std::set<CaseKey> want = expected([&](const std::string& f) { return holds(f, field); });
    ASSERT_FALSE(want.empty()) << field;
    ASSERT_LT(want.size(), all_.size()) << field << " narrows nothing in this space";
    EXPECT_EQ(swept(field, filter), want) << filter;
  }
}

TEST_F(SweepFilterCli, AListKeepsEachOfItsValuesAndSeveralFiltersKeepWhatAllOfThemKeep) {
  const std::set<CaseKey> rs = expected([](const std::string& f) {
    return holds(f, "reduction=rs") || holds(f, "reduction=rs+rsv");
  });
  EXPECT_EQ(swept("rs_list", "--reduction rs,rs+rsv"), rs);
  const std::set<CaseKey> both = expected([](const std::string& f) {
    return holds(f, "fusion=off") && holds(f, "mode=decode") && holds(f, "a2a=none");
  });
  ASSERT_FALSE(both.empty());
  EXPECT_EQ(swept("three", "--fusion off --mode decode --a2a none"), both);
  EXPECT_EQ(swept("every", "--fusion on,off --mode decode,extend").size(), all_.size());
}

TEST_F(SweepFilterCli, AutoKeepsTheReductionSglangDefaultsToForTheModel) {
  // A bare single-stage pattern takes Nemotron-H's architecture, for which
  // SGLang's model_boundary_reduction picks rs+rsv.
  const std::set<CaseKey> want =
      expected([](const std::string& f) { return holds(f, "reduction=rs+rsv"); });
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(swept("auto", "--reduction auto"), want);
}

TEST(SweepFilterValues, AValueCheckRefusesIsOneLineNamingItExitTwoAndNoStore) {
  const std::pair<std::string, std::string> bad[] = {
      {"--fusion maybe", "--fusion \"maybe\" is not one of on, off"},
      {"--reduction rsvv", "--reduction \"rsvv\" is not one of auto, ar, rs, rsv, rs+rsv"},
      {"--reduction rs,", "--reduction \"\" is not one of auto, ar, rs, rsv, rs+rsv"},
      {"--a2a none,mooncake", "--a2a \"mooncake\" is not one of none, deepep"},
      {"--dp-padding MAX_LEN", "--dp-padding \"MAX_LEN\" is not one of max_len, sum_len"},
      {"--mode prefill", "--mode \"prefill\" is not one of decode, extend"},
  };
  for (const auto& [option, message] : bad) {
    const std::string db = tempDb("refused");
    for (const std::string& engine : {std::string(), std::string(" --engine sglang")}) {
      CliRun r = runSeam(kSpace + engine + " " + option + " --db " + db);
      EXPECT_EQ(r.code, 2) << option << engine << "\n" << r.out << r.err;
      EXPECT_EQ(r.err, "seam: " + message + "\n") << option << engine;
      EXPECT_FALSE(std::filesystem::exists(db)) << option << engine;
    }
  }
}

TEST(SweepFilterValues, ATrainingSweepRefusesThemAsServingOptions) {
  CliRun r = runSeam("sweep --family training --world 2 --fusion off");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err, "seam: --fusion applies to --family serving\n");
}

}  // namespace
