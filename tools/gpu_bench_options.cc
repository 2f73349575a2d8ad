#include "gpu_bench_options.h"

#include "gpu_command.h"

namespace seam::tools {

namespace {

Status parseSections(const std::string& text, BenchPlan* out) {
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string name =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (name == "collectives") {
      out->collectives = true;
    } else if (name == "fused") {
      out->fused = true;
    } else if (name == "graph") {
      out->graph = true;
    } else {
      return Status::invalid("--sections \"" + text.substr(0, 64) +
                             "\" is not a list of collectives, fused, graph");
    }
    if (comma == std::string::npos) return Status::ok();
    start = comma + 1;
  }
}

Status allPositive(const std::vector<int>& values, const char* option) {
  for (int v : values) {
    if (v < 1)
      return Status::invalid(std::string(option) + " " + std::to_string(v) + " is not positive");
  }
  return Status::ok();
}

}  // namespace

Expected<BenchPlan> benchPlan(const BenchOptions& o) {
  BenchPlan p;
  if (Status st = parseSections(o.sections, &p); !st) return st;
  auto hidden = parseIntList(o.fused_hidden, "--fused-hidden");
  if (!hidden) return hidden.status();
  auto tokens = parseIntList(o.fused_tokens, "--fused-tokens");
  if (!tokens) return tokens.status();
  if (Status st = allPositive(*hidden, "--fused-hidden"); !st) return st;
  if (Status st = allPositive(*tokens, "--fused-tokens"); !st) return st;
  p.fused_hidden = std::move(*hidden);
  p.fused_tokens = std::move(*tokens);
  if (o.fused_iters < 1)
    return Status::invalid("--fused-iters " + std::to_string(o.fused_iters) + " is not positive");
  auto protocol = parseProtocol(o.fused_protocol);
  if (!protocol) return protocol.status();
  p.protocol = *protocol;
  if (o.graph_replays < 1)
    return Status::invalid("--graph-replays " + std::to_string(o.graph_replays) +
                           " is not positive");
  return p;
}

void addBenchOptions(CLI::App* cmd, BenchOptions& o) {
  addCaseOptions(cmd, o.c);
  cmd->add_option("--numeric", o.numeric, "numeric mode of the plan run: exact|real")
      ->capture_default_str();
  cmd->add_option("--hidden", o.hidden, "row width of the numeric model")->capture_default_str();
  cmd->add_option("--inner", o.inner, "inner width of every stage")->capture_default_str();
  cmd->add_option("--iters", o.iters, "timed runs of the plan; bare calls per collective")
      ->capture_default_str();
  cmd->add_option("--graph-replays", o.graph_replays, "eager steps and graph replays timed")
      ->capture_default_str();
  cmd->add_option("--fused-iters", o.fused_iters, "timed calls per fused-kernel size")
      ->capture_default_str();
  cmd->add_option("--fused-hidden", o.fused_hidden, "hidden sizes of the fused-kernel table")
      ->capture_default_str();
  cmd->add_option("--fused-tokens", o.fused_tokens, "token counts of the fused-kernel table")
      ->capture_default_str();
  cmd->add_option("--fused-protocol", o.fused_protocol, protocolHelp())->capture_default_str();
  cmd->add_option("--sections", o.sections, "which of collectives,fused,graph to run")
      ->capture_default_str();
  cmd->add_option("--json", o.json, "write everything as one JSON object to this file");
}

}  // namespace seam::tools
