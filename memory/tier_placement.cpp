#include "memory/tier_placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "base/error.hpp"
#include "base/size.hpp"

namespace tessera::memory {

namespace {
constexpr PlacementPolicy kPolicies[] = {
    PlacementPolicy::fast_only, PlacementPolicy::slow_only,       PlacementPolicy::first_touch,
    PlacementPolicy::static_,   PlacementPolicy::static_prefetch, PlacementPolicy::dynamic};

void put(PlacementPlan& plan, std::size_t i, std::size_t bytes, std::size_t fast) {
  auto& o = plan.objects[i];
  o.fast_bytes = fast;
  o.slow_bytes = bytes - fast;
  o.tier = o.slow_bytes == 0 ? Tier::fast : Tier::slow;
  plan.fast_used += fast;
  plan.slow_used += bytes - fast;
}

// Static placement into `budget` fast bytes: classes in priority order, first fit; a
// field object that does not fit whole is split (its head fast, as much as is left): the
// study places fields allocation by allocation until the fast tier is full, and Tessera's
// fields are one arena of many blocks, whose first slots are then fast.
void place_static(const std::vector<TierObject>& objs, std::size_t budget, PlacementPlan& plan) {
  std::size_t left = budget;
  for (int c = 0; c < kObjectClasses; ++c)
    for (std::size_t i = 0; i < objs.size(); ++i) {
      if (int(objs[i].cls) != c) continue;
      std::size_t fast = objs[i].bytes <= left ? objs[i].bytes : 0;
      if (objs[i].bytes > left && objs[i].cls == ObjectClass::field) fast = left;
      left -= fast;
      put(plan, i, objs[i].bytes, fast);
    }
}
}  // namespace

PlacementPolicy parse_placement(const std::string& text) {
  for (PlacementPolicy p : kPolicies)
    if (text == to_string(p)) return p;
  throw Error(fmt::format(
      "unknown tier placement '{}' (choices: fast_only, slow_only, first_touch, static, "
      "static_prefetch, dynamic)",
      text));
}

const char* to_string(PlacementPolicy p) {
  switch (p) {
    case PlacementPolicy::fast_only:
      return "fast_only";
    case PlacementPolicy::slow_only:
      return "slow_only";
    case PlacementPolicy::first_touch:
      return "first_touch";
    case PlacementPolicy::static_:
      return "static";
    case PlacementPolicy::static_prefetch:
      return "static_prefetch";
    case PlacementPolicy::dynamic:
      return "dynamic";
  }
  return "?";
}

PlacementPlan plan_placement(const std::vector<TierObject>& objs, PlacementPolicy policy,
                             std::size_t fast_bytes, std::size_t batch_bytes) {
  PlacementPlan plan;
  plan.objects.resize(objs.size());
  const std::size_t total =
      std::accumulate(objs.begin(), objs.end(), std::size_t(0),
                      [](std::size_t s, const TierObject& o) { return s + o.bytes; });
  switch (policy) {
    case PlacementPolicy::fast_only:
      for (std::size_t i = 0; i < objs.size(); ++i) put(plan, i, objs[i].bytes, objs[i].bytes);
      if (total > fast_bytes)
        plan.note = fmt::format("fast_only: {} placed in {} of fast memory (over by {})",
                                format_bytes(double(total)), format_bytes(double(fast_bytes)),
                                format_bytes(double(total - fast_bytes)));
      break;
    case PlacementPolicy::slow_only:
      for (std::size_t i = 0; i < objs.size(); ++i) put(plan, i, objs[i].bytes, 0);
      break;
    case PlacementPolicy::first_touch: {
      // The kernel fills the local node page by page in the order pages are first written,
      // which for pre-faulted arenas is the allocation order.
      std::size_t left = fast_bytes;
      for (std::size_t i = 0; i < objs.size(); ++i) {
        const std::size_t fast = std::min(objs[i].bytes, left);
        left -= fast;
        put(plan, i, objs[i].bytes, fast);
      }
      break;
    }
    case PlacementPolicy::static_:
    case PlacementPolicy::static_prefetch:
      place_static(objs, fast_bytes, plan);
      plan.prefetch = policy == PlacementPolicy::static_prefetch;
      break;
    case PlacementPolicy::dynamic: {
      std::size_t batch = batch_bytes;
      if (batch == 0)
        for (const auto& o : objs)
          if (o.cls == ObjectClass::particle) batch = std::max(batch, o.bytes);
      // Batches i-1 (written back), i (computed on) and i+1 (fetched) are in fast memory
      // at once: three batches, not the paper's one.
      plan.migration_bytes = 3 * batch;
      plan.prefetch = true;
      if (plan.migration_bytes > fast_bytes) {
        plan.note = fmt::format(
            "dynamic: the migration space (3 batches of {}) exceeds the fast tier ({}): "
            "static placement without streaming",
            format_bytes(double(batch)), format_bytes(double(fast_bytes)));
        plan.migration_bytes = 0;
        place_static(objs, fast_bytes, plan);
        break;
      }
      // Particles live in slow memory and are streamed through the migration space.
      std::vector<TierObject> rest = objs;
      for (auto& o : rest)
        if (o.cls == ObjectClass::particle) o.bytes = 0;
      place_static(rest, fast_bytes - plan.migration_bytes, plan);
      for (std::size_t i = 0; i < objs.size(); ++i)
        if (objs[i].cls == ObjectClass::particle) put(plan, i, objs[i].bytes, 0);
      break;
    }
  }
  return plan;
}

}  // namespace tessera::memory
