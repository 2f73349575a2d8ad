#include "seam/sim/model/config_space.h"

#include <limits>
#include <optional>
#include <string>

#include "seam/sim/base/decimal.h"

namespace seam {

namespace {

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

bool parseInt(std::string_view text, int* value) {
  const std::optional<std::int64_t> v =
      parseDecimal(text, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
  if (v) *value = static_cast<int>(*v);
  return v.has_value();
}

}  // namespace

Expected<Shard> parseShard(std::string_view text) {
  const auto slash = text.find('/');
  Shard s;
  if (slash == std::string_view::npos || !parseInt(text.substr(0, slash), &s.index) ||
      !parseInt(text.substr(slash + 1), &s.count) || s.count < 1 || s.index < 0 ||
      s.index >= s.count) {
    return Status::invalid("--shard \"" + std::string(text.substr(0, 32)) +
                           "\" is not i/n with 0 <= i < n (e.g. 0/4)");
  }
  return s;
}

Expected<ConfigSpace> ConfigSpace::build(int world, const ModelPreset* model,
                                         const ConfigFilter& f) {
  if (world < 1 || world > kMaxWorld) {
    return Status::invalid("world=" + std::to_string(world) + " is not in 1.." +
                           std::to_string(kMaxWorld));
  }
  const std::pair<const char*, const std::optional<int>*> fixed[] = {
      {"pp", &f.pp},           {"tp", &f.tp},         {"attn_dp", &f.attn_dp},
      {"attn_cp", &f.attn_cp}, {"moe_ep", &f.moe_ep}, {"moe_dp", &f.moe_dp}};
  for (const auto& [name, value] : fixed) {
    if (*value && (**value < 1 || world % **value != 0)) {
      // Built with += : GCC 12 warns falsely (-Wrestrict, PR105651) on a + chain here.
      std::string message = name;
      message += '=';
      message += std::to_string(**value);
      message += " does not divide world=";
      message += std::to_string(world);
      return Status::invalid(message);
    }
  }
  if (f.pp && f.tp && *f.pp * *f.tp != world) {
    return Status::invalid("pp*tp=" + std::to_string(*f.pp * *f.tp) +
                           " is not world=" + std::to_string(world));
  }
  // A partially fixed config that can never be valid is a usage error, not an
  // empty answer: report it the way validate() words it.
  if (f.tp) {
    ParallelConfig probe{.pp = world / *f.tp,
                         .tp = *f.tp,
                         .attn_dp = f.attn_dp.value_or(1),
                         .attn_cp = f.attn_cp.value_or(1),
                         .moe_ep = f.moe_ep.value_or(1),
                         .moe_dp = f.moe_dp.value_or(1)};
    if (Status st = validate(probe); !st) return st;
  }
  ConfigSpace space;
  space.world_ = world;
  for (int pp : divisors(world)) {
    if (f.pp && *f.pp != pp) continue;
    const int tp = world / pp;
    if (f.tp && *f.tp != tp) continue;
    for (int adp : divisors(tp)) {
      if (f.attn_dp && *f.attn_dp != adp) continue;
      for (int acp : divisors(tp / adp)) {
        if (f.attn_cp && *f.attn_cp != acp) continue;
        for (int mep : divisors(tp)) {
          if (f.moe_ep && *f.moe_ep != mep) continue;
          for (int mdp : divisors(tp / mep)) {
            if (f.moe_dp && *f.moe_dp != mdp) continue;
            ParallelConfig c{
                .pp = pp, .tp = tp, .attn_dp = adp, .attn_cp = acp, .moe_ep = mep, .moe_dp = mdp};
            if (!validate(c)) continue;
            if (model && !fitsModel(*model, c)) continue;
            space.configs_.push_back(c);
          }
        }
      }
    }
  }
  return space;
}

std::vector<int> ConfigSpace::shardIndices(Shard shard) const {
  std::vector<int> out;
  for (int i = shard.index; i < size(); i += shard.count) out.push_back(i);
  return out;
}

}  // namespace seam
