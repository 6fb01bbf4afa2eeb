#include "sim/sim_config.h"

#include <array>
#include <fstream>
#include <limits>
#include <sstream>

#include "kube/config/yaml_reader.h"

namespace tidepool::sim {
namespace {

using kube::config::YamlMap;
using kube::config::YamlValue;

Result<DurationRange> ReadRange(const YamlValue& v) {
  TIDEPOOL_ASSIGN_OR_RETURN(std::vector<YamlValue> items, v.ReadList());
  if (items.size() != 2) return std::unexpected(v.Expected("a range [min, max] of two durations"));
  DurationRange r;
  TIDEPOOL_ASSIGN_OR_RETURN(r.lo, items[0].ReadDuration(true));
  TIDEPOOL_ASSIGN_OR_RETURN(r.hi, items[1].ReadDuration(true));
  if (r.hi < r.lo) return std::unexpected(v.MakeError("expected min <= max"));
  return r;
}

Result<PoolSimConfig> ReadPool(const YamlValue& v) {
  TIDEPOOL_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Read(v, "a map of pool simulation settings"));
  static constexpr std::array<std::string_view, 5> kKeys = {
      "bootDelay", "stockouts", "evictionsPerNodeHour", "restartDelay", "stoppedPricePerHour"};
  TIDEPOOL_RETURN_IF_ERROR(m.CheckKeys(kKeys));
  PoolSimConfig p;
  if (const YamlValue* b = m.Find("bootDelay")) {
    TIDEPOOL_ASSIGN_OR_RETURN(p.boot_delay, ReadRange(*b));
  }
  if (const YamlValue* s = m.Find("stockouts")) {
    TIDEPOOL_ASSIGN_OR_RETURN(std::vector<YamlValue> windows, s->ReadList());
    for (const YamlValue& w : windows) {
      TIDEPOOL_ASSIGN_OR_RETURN(DurationRange r, ReadRange(w));
      p.stockouts.emplace_back(r.lo, r.hi);
    }
  }
  if (const YamlValue* e = m.Find("evictionsPerNodeHour")) {
    TIDEPOOL_ASSIGN_OR_RETURN(p.evictions_per_node_hour,
                              e->ReadNumber(0, 1000, "a non-negative rate per node-hour"));
  }
  if (const YamlValue* r = m.Find("restartDelay")) {
    TIDEPOOL_ASSIGN_OR_RETURN(p.restart_delay, ReadRange(*r));
  }
  if (const YamlValue* c = m.Find("stoppedPricePerHour")) {
    TIDEPOOL_ASSIGN_OR_RETURN(
        p.stopped_price_per_hour,
        c->ReadNumber(0, std::numeric_limits<double>::max(), "a non-negative price per hour"));
  }
  return p;
}

}  // namespace

Result<SimConfig> ParseSimSection(const kube::config::YamlValue& section) {
  SimConfig c;
  const std::string_view source = section.source();
  try {
    TIDEPOOL_ASSIGN_OR_RETURN(YamlMap m, YamlMap::Read(section, "a map of simulation settings"));
    static constexpr std::array<std::string_view, 7> kKeys = {
        "seed", "bootDelay", "pools", "scheduler", "checkpointEvery", "gpuSharing", "queueGangs"};
    TIDEPOOL_RETURN_IF_ERROR(m.CheckKeys(kKeys));
    if (const YamlValue* s = m.Find("seed")) {
      TIDEPOOL_ASSIGN_OR_RETURN(int64_t seed,
                                s->ReadInt(0, INT64_MAX, "a non-negative integer seed"));
      c.seed = static_cast<uint64_t>(seed);
    }
    if (const YamlValue* b = m.Find("bootDelay")) {
      TIDEPOOL_ASSIGN_OR_RETURN(YamlMap bm, YamlMap::Read(*b, "a map {cpu: [a, b], gpu: [a, b]}"));
      static constexpr std::array<std::string_view, 2> kBootKeys = {"cpu", "gpu"};
      TIDEPOOL_RETURN_IF_ERROR(bm.CheckKeys(kBootKeys));
      if (const YamlValue* v = bm.Find("cpu")) {
        TIDEPOOL_ASSIGN_OR_RETURN(c.cpu_boot_delay, ReadRange(*v));
      }
      if (const YamlValue* v = bm.Find("gpu")) {
        TIDEPOOL_ASSIGN_OR_RETURN(c.gpu_boot_delay, ReadRange(*v));
      }
    }
    if (const YamlValue* p = m.Find("pools")) {
      TIDEPOOL_ASSIGN_OR_RETURN(YamlMap pm, YamlMap::Read(*p, "a map of pool name to settings"));
      for (const YamlMap::Entry& e : pm.entries()) {
        TIDEPOOL_ASSIGN_OR_RETURN(c.pools[e.key], ReadPool(e.value));
      }
    }
    if (const YamlValue* s = m.Find("scheduler")) {
      static constexpr std::array<std::string_view, 2> kNames = {"least-allocated",
                                                                 "most-allocated"};
      TIDEPOOL_ASSIGN_OR_RETURN(size_t i, s->ReadEnum(kNames));
      c.scheduler = i == 0 ? ScoringPolicy::kLeastAllocated : ScoringPolicy::kMostAllocated;
    }
    if (const YamlValue* s = m.Find("checkpointEvery")) {
      TIDEPOOL_ASSIGN_OR_RETURN(c.checkpoint_every, s->ReadDuration(false));
    }
    if (const YamlValue* s = m.Find("gpuSharing")) {
      TIDEPOOL_ASSIGN_OR_RETURN(c.gpu_sharing, s->ReadBool());
    }
    if (const YamlValue* s = m.Find("queueGangs")) {
      TIDEPOOL_ASSIGN_OR_RETURN(c.queue_gangs, s->ReadBool());
    }
  } catch (const std::exception& e) {
    return InvalidArgument("{}: {}", source, e.what());
  }
  return c;
}

Result<SimConfig> ParseSimConfig(std::string_view yaml, std::string_view source) {
  try {
    TIDEPOOL_ASSIGN_OR_RETURN(YAML::Node doc,
                              kube::config::LoadYamlDocument(yaml, source, "a simulation config"));
    return ParseSimSection(YamlValue::Root(doc, source));
  } catch (const std::exception& e) {
    return InvalidArgument("{}: {}", source, e.what());
  }
}

Result<SimConfig> LoadSimConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument("{}: cannot read the simulation config", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseSimConfig(ss.str(), path);
}

}  // namespace tidepool::sim
