// Console output of seam: aligned text tables and the JSON views of the
// model presets and configuration spaces. The simulator returns values; this
// is where they become text (STYLE 5).
#pragma once

#include <string>
#include <vector>

#include "seam/sim/model/config_space.h"
#include "seam/sim/model/model.h"

namespace seam::reports {

/// Output format shared by the listing commands (`--format text|json`).
enum class Format { kText, kJson, kJsonl };
/// Parses "text", "json" or "jsonl"; the error names the bad value.
Expected<Format> parseFormat(const std::string& text);

/// A text table: a header row and rows of cells, columns padded to the
/// widest cell. Numbers are right-aligned when the column is marked numeric.
class Table {
 public:
  explicit Table(std::vector<std::string> header, std::vector<bool> numeric = {});
  void addRow(std::vector<std::string> cells);
  std::string render() const;

 private:
  std::vector<std::string> header_;
  std::vector<bool> numeric_;
  std::vector<std::vector<std::string>> rows_;
};

/// `seam models`: one row per preset (name, family, layers, pattern, shapes).
std::string renderModels(Format format);

/// `seam configs`: one row per configuration of `indices`, then the count.
std::string renderConfigs(const ConfigSpace& space, const std::vector<int>& indices, Format format);

}  // namespace seam::reports
