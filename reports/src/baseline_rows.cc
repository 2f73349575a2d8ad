#include "seam/reports/baseline_rows.h"

#include <bit>

namespace seam::reports {

namespace {

constexpr std::uint64_t kFnvOffset = 1469598103934665603ULL;
constexpr std::uint64_t kFnvPrime = 1099511628211ULL;

void mixBytes(std::uint64_t& h, const void* data, std::size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) h = (h ^ bytes[i]) * kFnvPrime;
}

/// An integer as its 8 bytes, lowest first (the same on every platform).
void mixInt(std::uint64_t& h, std::int64_t v) {
  for (int i = 0; i < 8; ++i) {
    const auto byte = static_cast<unsigned char>(static_cast<std::uint64_t>(v) >> (8 * i));
    mixBytes(h, &byte, 1);
  }
}

void mixText(std::uint64_t& h, const std::string& text) {
  mixInt(h, static_cast<std::int64_t>(text.size()));
  mixBytes(h, text.data(), text.size());
}

Status notTaken(const std::string& why) { return Status::invalid(why); }

/// A stored name as the one-line message shows it: cut short, control
/// characters as '?'.
std::string shown(const std::string& text) {
  std::string out = text.empty() ? "unknown" : text.substr(0, 64);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

/// Why a row whose checksum holds still cannot be a baseline, "" if it can.
std::string inconsistency(const BaselineRecord& row) {
  if (row.cases < 0 || row.kept < 0 || row.refused < 0 || row.engine_findings < 0)
    return "a negative count";
  if (row.kept + row.refused + row.engine_findings != row.cases)
    return "its counts do not add up to its cases";
  if (static_cast<std::int64_t>(row.kept_cases.size()) != (row.cases + 7) / 8)
    return "its bitmap is not one bit per case";
  std::int64_t set = 0;
  for (unsigned char byte : row.kept_cases) set += std::popcount(byte);
  if (set != row.kept) return "its bitmap does not hold its kept cases";
  if (row.cases % 8 != 0 && (static_cast<unsigned char>(row.kept_cases.back()) >> (row.cases % 8)))
    return "its bitmap keeps a case past its cases";
  return "";
}

}  // namespace

std::uint64_t baselineChecksum(const BaselineRecord& row) {
  std::uint64_t h = kFnvOffset;
  for (const std::string* text : {&row.space, &row.version, &row.seam_commit}) mixText(h, *text);
  for (std::int64_t n : {row.cases, row.kept, row.refused, row.engine_findings}) mixInt(h, n);
  mixText(h, row.kept_cases);
  return h;
}

BaselineRecord baselineRow(const std::string& space, const SeamBuild& build,
                           const mutants::BaselineSummary& baseline) {
  BaselineRecord row;
  row.space = space;
  row.version = build.version;
  row.seam_commit = build.commit;
  row.cases = baseline.space;
  row.kept = static_cast<std::int64_t>(baseline.kept.size());
  row.refused = baseline.refused;
  row.engine_findings = baseline.engine_findings;
  row.kept_cases.assign(static_cast<std::size_t>((baseline.space + 7) / 8), '\0');
  for (std::int64_t i : baseline.kept) {
    row.kept_cases[static_cast<std::size_t>(i / 8)] |= static_cast<char>(1u << (i % 8));
  }
  row.checksum = baselineChecksum(row);
  return row;
}

Expected<mutants::BaselineSummary> baselineFromRow(const BaselineRecord& row,
                                                   const std::string& space,
                                                   const SeamBuild& build) {
  // A damaged row's other fields cannot be trusted either: checked first.
  if (baselineChecksum(row) != row.checksum)
    return notTaken("it is damaged: its checksum does not match its fields");
  if (const std::string why = inconsistency(row); !why.empty())
    return notTaken("it is damaged: " + why);
  if (row.space != space) return notTaken("it was made over another case space");
  if (build.commit.empty())
    return notTaken("this seam's commit is unknown (not built from a git checkout)");
  if (row.version != build.version || row.seam_commit != build.commit) {
    return notTaken("it was made by " + shown(row.version) + " at commit " +
                    shown(row.seam_commit) + ", this is " + shown(build.version) + " at commit " +
                    shown(build.commit));
  }
  mutants::BaselineSummary baseline;
  baseline.space = row.cases;
  baseline.refused = row.refused;
  baseline.engine_findings = row.engine_findings;
  baseline.kept.reserve(static_cast<std::size_t>(row.kept));
  for (std::int64_t i = 0; i < row.cases; ++i) {
    if ((static_cast<unsigned char>(row.kept_cases[static_cast<std::size_t>(i / 8)]) >> (i % 8)) &
        1)
      baseline.kept.push_back(i);
  }
  return baseline;
}

}  // namespace seam::reports
