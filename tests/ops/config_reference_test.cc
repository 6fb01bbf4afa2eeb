// docs/configuration.md against the config loader: every key in the doc's tables is accepted
// with its example value, and every key the loader (and the Azure and Cluster API settings
// parsers) knows is in a table. The loader's key lists are read from its source, so a new key
// without docs fails here.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cloud/clusterapi/settings.h"
#include "kube/config/autoscaler_config.h"

namespace tidepool::ops {
namespace {

std::string Read(const std::string& relative) {
  std::ifstream in(std::string(TIDEPOOL_SOURCE_DIR) + "/" + relative);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct DocKey {
  std::string path;         // "scaleUp.backoff.initial", "pools[].template.capacity.<resource>"
  std::string example;      // YAML text of an example value; may be empty
  bool azure = false;       // in the "Azure providers" section
  bool clusterapi = false;  // in the "Cluster API provider" section
};

std::vector<std::string> Cells(const std::string& row) {
  std::vector<std::string> cells;
  std::string cell;
  bool in_code = false;
  for (size_t i = 1; i < row.size(); ++i) {
    char c = row[i];
    if (c == '`') in_code = !in_code;
    if (c == '|' && !in_code) {
      auto b = cell.find_first_not_of(' ');
      auto e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
      cell.clear();
    } else {
      cell += c;
    }
  }
  return cells;
}

std::string StripTicks(const std::string& s) {
  if (s.size() >= 2 && s.front() == '`' && s.back() == '`') return s.substr(1, s.size() - 2);
  return s;
}

std::vector<DocKey> DocKeys(const std::string& doc) {
  std::vector<DocKey> keys;
  std::istringstream in(doc);
  std::string line;
  bool azure = false;
  bool clusterapi = false;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.starts_with("#")) {
      azure = line.find("Azure providers") != std::string::npos;
      clusterapi = line.find("Cluster API provider") != std::string::npos;
    }
    if (line.starts_with("| Key | Type | Default | Example | Meaning |")) {
      in_table = true;
      continue;
    }
    if (!line.starts_with("|")) {
      in_table = false;
      continue;
    }
    if (!in_table || line.starts_with("|---")) continue;
    auto cells = Cells(line);
    EXPECT_EQ(cells.size(), 5u) << line;
    if (cells.size() < 4) continue;
    keys.push_back({StripTicks(cells[0]), StripTicks(cells[3]), azure, clusterapi});
  }
  return keys;
}

// The string literals of `constexpr std::string_view NAME[] = {...};` arrays in `source`.
std::map<std::string, std::vector<std::string>> LiteralArrays(const std::string& source) {
  std::map<std::string, std::vector<std::string>> out;
  std::regex array(R"(constexpr std::string_view (k\w+)\[\] = \{([^}]*)\})");
  std::regex literal("\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(source.begin(), source.end(), array);
       it != std::sregex_iterator(); ++it) {
    std::string body = (*it)[2];
    auto& v = out[(*it)[1]];
    for (auto l = std::sregex_iterator(body.begin(), body.end(), literal);
         l != std::sregex_iterator(); ++l) {
      v.push_back((*l)[1]);
    }
  }
  return out;
}

bool Documented(const std::vector<DocKey>& keys, const std::string& path) {
  for (const DocKey& k : keys) {
    if (k.path == path || k.path.starts_with(path + ".") || k.path.starts_with(path + "[]")) {
      return true;
    }
  }
  return false;
}

constexpr const char* kMinimalConfig =
    "apiVersion: tidepool.dev/v1alpha1\n"
    "kind: AutoscalerConfig\n"
    "pools:\n"
    "  - name: cpu\n"
    "    max: 3\n"
    "    template:\n"
    "      capacity: {cpu: \"4\", memory: 8Gi, nvidia.com/gpu: \"4\"}\n";

// A minimal valid config (or `base`) with `path` set to the YAML `example`.
std::string ConfigWith(const std::string& path, const std::string& example,
                       const std::string& base = kMinimalConfig) {
  YAML::Node root = YAML::Load(base);
  std::vector<std::string> segments;
  std::string seg;
  for (char c : path) {
    if (c == '.') {
      segments.push_back(seg);
      seg.clear();
    } else {
      seg += c;
    }
  }
  segments.push_back(seg);
  // yaml-cpp: `node = other` would overwrite what `node` refers to; reset() rebinds it.
  YAML::Node node;
  node.reset(root);
  for (size_t i = 0; i < segments.size(); ++i) {
    std::string s = segments[i];
    if (s == "<resource>") s = "nvidia.com/gpu";
    if (s == "<pool>") s = "cpu";
    if (s == "<name>") s = "productName";
    bool last = i + 1 == segments.size();
    if (s.ends_with("[]")) {
      s.resize(s.size() - 2);
      if (!node[s] || node[s].size() == 0) {
        YAML::Node item = YAML::Load(s == "taints"    ? "{key: example.com/k, effect: NoSchedule}"
                                     : s == "devices" ? "{driver: gpu.example.com}"
                                                      : "{}");
        YAML::Node list(YAML::NodeType::Sequence);
        list.push_back(item);
        node[s] = list;
      }
      node.reset(node[s][0]);
      continue;
    }
    if (last) {
      if (!example.empty()) node[s] = YAML::Load(example);
    } else {
      if (!node[s]) node[s] = YAML::Node(YAML::NodeType::Map);
      node.reset(node[s]);
    }
  }
  YAML::Emitter out;
  out << root;
  return out.c_str();
}

TEST(ConfigReferenceTest, EveryDocumentedKeyIsAcceptedWithItsExample) {
  auto keys = DocKeys(Read("docs/configuration.md"));
  ASSERT_GT(keys.size(), 40u);
  int checked = 0;
  for (const DocKey& k : keys) {
    if (k.azure || k.clusterapi) continue;  // validated by the providers; see the tests below
    // Keys that apply only beside another are tried with it.
    const bool needs_deallocate = k.path == "pools[].scaleDown.maxStopped" ||
                                  k.path == "pools[].restartDelay" ||
                                  k.path == "pools[].warm.stoppedNodes";
    std::string yaml =
        needs_deallocate
            ? ConfigWith(k.path, k.example, ConfigWith("pools[].scaleDown.mode", "deallocate"))
            : ConfigWith(k.path, k.example);
    auto parsed = kube::config::ParseAutoscalerConfig(yaml, "configuration.md");
    EXPECT_TRUE(parsed.has_value())
        << k.path << " = " << k.example << ": " << (parsed ? "" : parsed.error().message()) << "\n"
        << yaml;
    ++checked;
  }
  EXPECT_GT(checked, 35);
}

TEST(ConfigReferenceTest, TheHarnessCatchesUnknownKeysAndBadValues) {
  // The check above would prove nothing if any key were accepted.
  for (auto [path, example] :
       std::vector<std::pair<std::string, std::string>>{{"scaleUp.provisionTimout", "10m"},
                                                        {"pools[].tempalte", "{}"},
                                                        {"scaleDown.utilizationThreshold", "1.5"},
                                                        {"provider.bootdelay", "5s"},
                                                        {"limits.gpu", "\"4\""}}) {
    auto parsed = kube::config::ParseAutoscalerConfig(ConfigWith(path, example), "t");
    EXPECT_FALSE(parsed.has_value()) << path;
  }
}

TEST(ConfigReferenceTest, EveryKeyTheLoaderKnowsIsDocumented) {
  std::string doc = Read("docs/configuration.md");
  auto keys = DocKeys(doc);
  std::string source = Read("src/kube/config/autoscaler_config.cc");
  auto arrays = LiteralArrays(source);
  // Which section each of the loader's key lists belongs to. A new list must be added here (and
  // its keys to the doc), or this test fails.
  const std::map<std::string, std::string> key_lists = {
      {"kTopKeys", ""},
      {"kProviderKeys", "provider."},
      {"kScaleUpKeys", "scaleUp."},
      {"kBackoffKeys", "scaleUp.backoff."},
      {"kProvisioningRequestKeys", "scaleUp.provisioningRequests."},
      {"kScaleDownKeys", "scaleDown."},
      {"kConsolidationKeys", "scaleDown.consolidation."},
      {"kPoolKeys", "pools[]."},
      {"kTemplateKeys", "pools[].template."},
      {"kTaintKeys", "pools[].template.taints[]."},
      {"kDeviceKeys", "pools[].template.devices[]."},
      {"kWarmKeys", "pools[].warm."},
      {"kPredictiveKeys", "pools[].warm.predictive."},
      {"kPoolScaleDownKeys", "pools[].scaleDown."},
      {"kOtherKeys", "limits."},  // the non-resource keys of limits (typo hints)
  };
  // Lists of values rather than keys: each value must appear in the doc.
  const std::set<std::string> value_lists = {"kProviderTypes",  "kExpanders",
                                             "kCapacityTypes",  "kTaintEffects",
                                             "kScaleDownModes", "kStoppingProviders"};
  ASSERT_FALSE(arrays.empty()) << "no key lists found in the loader source";
  int found = 0;
  for (const auto& [name, literals] : arrays) {
    if (value_lists.contains(name)) {
      for (const auto& v : literals) {
        EXPECT_NE(doc.find("`" + v + "`"), std::string::npos) << name << " value " << v;
      }
      continue;
    }
    auto it = key_lists.find(name);
    if (it == key_lists.end()) {
      ADD_FAILURE() << "the loader has a key list " << name
                    << " this test does not know; map it to its section";
      continue;
    }
    for (const auto& key : literals) {
      EXPECT_TRUE(Documented(keys, it->second + key)) << it->second + key << " is not documented";
      ++found;
    }
  }
  EXPECT_GT(found, 30);
  // Keys compared directly rather than listed.
  std::regex direct(R"re(if \(e\.key == "(\w+)"\) \{)re");
  int direct_keys = 0;
  for (auto m = std::sregex_iterator(source.begin(), source.end(), direct);
       m != std::sregex_iterator(); ++m, ++direct_keys) {
    EXPECT_TRUE(Documented(keys, "limits." + std::string((*m)[1])))
        << "limits." << (*m)[1] << " is not documented";
  }
  EXPECT_GE(direct_keys, 1) << "limits.maxNodes is no longer found in the loader source";
}

TEST(ConfigReferenceTest, AzureKeysMatchTheAzureSettingsParser) {
  const char* kSettings = "src/cloud/azure/settings.cc";
  if (!std::filesystem::exists(std::string(TIDEPOOL_SOURCE_DIR) + "/" + kSettings)) {
    GTEST_SKIP() << kSettings << " is not in this tree";
  }
  std::string doc = Read("docs/configuration.md");
  auto keys = DocKeys(doc);
  auto arrays = LiteralArrays(Read(kSettings));
  std::set<std::string> known = {"provider.type", "provider.bootDelay",
                                 "provider.unavailablePools"};
  std::vector<std::string> prefixes;
  for (const char* list : {"kCommonKeys", "kVmssKeys", "kAksKeys", "kVmsKeys"}) {
    ASSERT_TRUE(arrays.contains(list)) << list;
    for (const auto& k : arrays[list]) {
      known.insert("provider." + k);
      EXPECT_TRUE(Documented(keys, "provider." + k)) << "provider." << k << " is not documented";
    }
  }
  for (const char* list : {"kVmssPrefixes", "kAksPrefixes", "kVmsPrefixes"}) {
    ASSERT_TRUE(arrays.contains(list)) << list;
    for (const auto& p : arrays[list]) {
      prefixes.push_back("provider." + p);
      EXPECT_TRUE(Documented(keys, "provider." + p + "<pool>")) << p << " is not documented";
    }
  }
  for (const auto& t : arrays["kAuthTypes"]) {
    EXPECT_NE(doc.find("`" + t + "`"), std::string::npos) << "auth type " << t;
  }
  // And the other way: no documented provider key the parser would refuse.
  for (const DocKey& k : keys) {
    if (!k.path.starts_with("provider.") || k.clusterapi) continue;
    bool ok = known.contains(k.path);
    for (const auto& p : prefixes) ok = ok || k.path.starts_with(p);
    EXPECT_TRUE(ok) << k.path << " is documented but the Azure settings parser does not know it";
  }
}

TEST(ConfigReferenceTest, ClusterApiKeysMatchItsSettingsParser) {
  const char* kSettings = "src/cloud/clusterapi/settings.cc";
  auto keys = DocKeys(Read("docs/configuration.md"));
  auto arrays = LiteralArrays(Read(kSettings));
  ASSERT_TRUE(arrays.contains("kKeys")) << kSettings;
  int documented = 0;
  for (const DocKey& k : keys) {
    if (!k.clusterapi) continue;
    ++documented;
    ASSERT_TRUE(k.path.starts_with("provider.")) << k.path;
    std::string key = k.path.substr(std::string("provider.").size());
    std::map<std::string, std::string> settings = {{key, k.example}};
    if (key == "managementContext") settings["managementKubeconfig"] = "/k";
    auto parsed = cloud::clusterapi::ParseSettings(settings);
    EXPECT_TRUE(parsed.has_value())
        << k.path << " = " << k.example << ": " << (parsed ? "" : parsed.error().message());
  }
  EXPECT_EQ(documented, static_cast<int>(arrays["kKeys"].size()));
  for (const auto& key : arrays["kKeys"]) {
    EXPECT_TRUE(Documented(keys, "provider." + key)) << "provider." << key << " is not documented";
  }
}

}  // namespace
}  // namespace tidepool::ops
