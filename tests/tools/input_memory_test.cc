// Peak memory of seam on endless and oversized inputs: each is refused at
// its cap (docs/cli.md, "Every command") having read little more than the
// cap, so that no input file can make seam grow without bound. The peak is
// the child's own maximum resident set (wait4), measured per run.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Peak {
  int code = -1;
  long max_rss_kib = 0;
};

/// Runs seam with `args` (stdout and stderr to /dev/null) and returns its
/// exit code and its peak resident set.
Peak runMeasured(std::vector<std::string> args) {
  args.insert(args.begin(), SEAM_BIN);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  struct rusage usage {};
  ::wait4(pid, &status, 0, &usage);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, usage.ru_maxrss};
}

/// The budget of a refused input: seam's own footprint plus the caps it
/// reads up to (1 MiB a line) and a generous margin, far below the input.
constexpr long kRefusedInputBudgetKib = 64 * 1024;

TEST(InputMemory, AnEndlessTraceIsRefusedAtItsLineCapWithinTheBudget) {
  const Peak p = runMeasured({"check", "--pattern", "M-", "--trace", "/dev/zero"});
  EXPECT_EQ(p.code, 2);
  EXPECT_LT(p.max_rss_kib, kRefusedInputBudgetKib);
}

TEST(InputMemory, AOneLineTraceOf200MibIsRefusedAtItsFirstMibWithinTheBudget) {
  const std::string path =
      (fs::path(::testing::TempDir()) / ("seam_one_line_" + std::to_string(getpid()))).string();
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fclose(f);
  }
  ASSERT_EQ(::truncate(path.c_str(), std::int64_t{200} << 20), 0);  // sparse: no disk used
  const Peak p = runMeasured({"import", "--pattern", "M-", "--trace", path});
  EXPECT_EQ(p.code, 2);
  EXPECT_LT(p.max_rss_kib, kRefusedInputBudgetKib);
  ASSERT_EQ(::truncate(path.c_str(), std::int64_t{1} << 30), 0);  // 1 GiB: over the file cap
  const Peak big = runMeasured({"check", "--pattern", "M-", "--trace", path});
  EXPECT_EQ(big.code, 2);
  EXPECT_LT(big.max_rss_kib, kRefusedInputBudgetKib);
  std::remove(path.c_str());
}

TEST(InputMemory, AGpuResultOverItsCapIsRefusedBeforeItIsRead) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("seam_big_json_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string json = (dir / "big.json").string();
  {
    std::FILE* f = std::fopen(json.c_str(), "w");
    std::fclose(f);
  }
  ASSERT_EQ(::truncate(json.c_str(), std::int64_t{1} << 30), 0);
  const std::string db = (dir / "s.db").string();
  const Peak p = runMeasured({"db", "import", json, "--db", db});
  EXPECT_EQ(p.code, 2);
  EXPECT_LT(p.max_rss_kib, kRefusedInputBudgetKib);
  EXPECT_FALSE(fs::exists(db));
  const Peak zero = runMeasured({"db", "import", "/dev/zero", "--db", db});
  EXPECT_EQ(zero.code, 2);
  EXPECT_LT(zero.max_rss_kib, kRefusedInputBudgetKib + (64 << 10));  // reads up to its 64 MiB cap
  fs::remove_all(dir);
}

}  // namespace
