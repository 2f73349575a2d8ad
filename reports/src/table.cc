#include "seam/reports/table.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace seam::reports {

Expected<Format> parseFormat(const std::string& text) {
  if (text == "text") return Format::kText;
  if (text == "json") return Format::kJson;
  if (text == "jsonl") return Format::kJsonl;
  return Status::invalid("--format \"" + text.substr(0, 32) + "\" is not one of text, json, jsonl");
}

Table::Table(std::vector<std::string> header, std::vector<bool> numeric)
    : header_(std::move(header)), numeric_(std::move(numeric)) {
  numeric_.resize(header_.size(), false);
}

void Table::addRow(std::vector<std::string> cells) {
  cells.resize(header_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::render() const {
  std::vector<size_t> width(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      const bool last = c + 1 == cells.size();
      if (numeric_[c]) {
        l += pad + cells[c];
      } else {
        l += cells[c] + (last ? "" : pad);
      }
      if (!last) l += "  ";
    }
    out += l + "\n";
  };
  line(header_);
  for (const auto& row : rows_) line(row);
  return out;
}

namespace {

std::string shapeValue(int v) {
  if (v == kUnknown) return "?";
  if (v == kNotApplicable) return "-";
  return std::to_string(v);
}

nlohmann::json jsonShape(int v) {
  if (v == kUnknown || v == kNotApplicable) return nullptr;
  return v;
}

nlohmann::json configJson(const ParallelConfig& c) {
  return {{"world", c.world()},    {"pp", c.pp},           {"tp", c.tp},
          {"attn_tp", c.attnTp()}, {"attn_dp", c.attn_dp}, {"attn_cp", c.attn_cp},
          {"moe_ep", c.moe_ep},    {"moe_tp", c.moeTp()},  {"moe_dp", c.moe_dp}};
}

}  // namespace

std::string renderModels(Format format) {
  if (format != Format::kText) {
    nlohmann::json all = nlohmann::json::array();
    for (const ModelPreset& p : presets()) {
      const ModelShape& s = p.shape;
      nlohmann::json j = {
          {"name", p.name},
          {"display_name", p.display_name},
          {"family", familyName(p.family)},
          {"layers", p.layers},
          {"pattern", p.pattern.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.pattern)},
          {"mtp_pattern",
           p.mtp_pattern.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.mtp_pattern)},
          {"hidden", jsonShape(s.hidden)},
          {"heads", jsonShape(s.heads)},
          {"kv_heads", jsonShape(s.kv_heads)},
          {"head_dim", jsonShape(s.head_dim)},
          {"mamba_heads", jsonShape(s.mamba_heads)},
          {"mamba_head_dim", jsonShape(s.mamba_head_dim)},
          {"mamba_groups", jsonShape(s.mamba_groups)},
          {"ssm_state", jsonShape(s.ssm_state)},
          {"ffn_intermediate", jsonShape(s.ffn_intermediate)},
          {"moe_experts", jsonShape(s.moe_experts)},
          {"moe_top_k", jsonShape(s.moe_top_k)},
          {"moe_shared_intermediate", jsonShape(s.moe_shared_intermediate)},
          {"source", p.source}};
      all.push_back(std::move(j));
    }
    if (format == Format::kJsonl) {
      std::string out;
      for (const auto& j : all) out += j.dump() + "\n";
      return out;
    }
    return all.dump(2) + "\n";
  }
  Table t({"name", "family", "layers", "hidden", "heads/kv", "hd", "mamba", "groups", "ffn", "moe",
           "shared", "mtp", "pattern"},
          {false, false, true, true, false, true, false, true, true, false, true, false, false});
  for (const ModelPreset& p : presets()) {
    const ModelShape& s = p.shape;
    std::string mamba = s.mamba_heads > 0
                            ? std::to_string(s.mamba_heads) + "x" + shapeValue(s.mamba_head_dim)
                            : shapeValue(s.mamba_heads);
    std::string moe = s.moe_experts > 0
                          ? std::to_string(s.moe_experts) + "/" + shapeValue(s.moe_top_k)
                          : shapeValue(s.moe_experts);
    t.addRow({std::string(p.name), std::string(familyName(p.family)), std::to_string(p.layers),
              shapeValue(s.hidden), shapeValue(s.heads) + "/" + shapeValue(s.kv_heads),
              shapeValue(s.head_dim), mamba, shapeValue(s.mamba_groups),
              shapeValue(s.ffn_intermediate), moe, shapeValue(s.moe_shared_intermediate),
              p.mtp_pattern.empty() ? "-" : std::string(p.mtp_pattern),
              // Two-stage stacks stage by stage (mixer, FFN per layer; P = attention || Mamba-2).
              p.stages.empty() ? std::string(p.pattern) : std::string(p.stages)});
  }
  return t.render() + std::to_string(presets().size()) + " models\n";
}

std::string renderConfigs(const ConfigSpace& space, const std::vector<int>& indices,
                          Format format) {
  if (format == Format::kJsonl) {
    std::string out;
    for (int i : indices) {
      nlohmann::json j = configJson(space[i]);
      j["index"] = i;
      out += j.dump() + "\n";
    }
    return out;
  }
  if (format == Format::kJson) {
    nlohmann::json list = nlohmann::json::array();
    for (int i : indices) {
      nlohmann::json j = configJson(space[i]);
      j["index"] = i;
      list.push_back(std::move(j));
    }
    nlohmann::json doc = {
        {"world", space.world()}, {"count", indices.size()}, {"configs", std::move(list)}};
    return doc.dump(2) + "\n";
  }
  Table t({"#", "pp", "tp", "attn_tp", "attn_dp", "attn_cp", "moe_ep", "moe_tp", "moe_dp"},
          std::vector<bool>(9, true));
  for (int i : indices) {
    const ParallelConfig& c = space[i];
    t.addRow({std::to_string(i), std::to_string(c.pp), std::to_string(c.tp),
              std::to_string(c.attnTp()), std::to_string(c.attn_dp), std::to_string(c.attn_cp),
              std::to_string(c.moe_ep), std::to_string(c.moeTp()), std::to_string(c.moe_dp)});
  }
  return t.render() + std::to_string(indices.size()) + " configs\n";
}

}  // namespace seam::reports
