#include "kube/client/client_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#include "kube/codec/documents.h"

namespace tidepool::kube {
namespace {

namespace fs = std::filesystem;

constexpr uintmax_t kMaxCredentialFileBytes = 1 << 20;

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// What a YAML node is, for "expected ..., got ..." messages.
std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar: {
      std::string text = node.Scalar();
      if (text.size() > 40) text = text.substr(0, 40) + "...";
      return fmt::format("\"{}\"", text);
    }
    default:
      return "nothing";
  }
}

bool IsAbsent(const YAML::Node& node) { return !node.IsDefined() || node.IsNull(); }

// The scalar text of map member `key`, or "" (also for a missing member: yaml-cpp's zombie
// nodes throw on Type()).
std::string ScalarMember(const YAML::Node& map, const char* key) {
  if (!map.IsMap()) return "";
  const YAML::Node& value = map[key];
  return value.IsDefined() && value.IsScalar() ? value.Scalar() : std::string();
}

// Reads one kubeconfig document. Every error starts with "kubeconfig <source>: " and names the
// entry ("context \"dev\": ") and the key; the methods never throw by themselves, but yaml-cpp
// may, so the caller wraps them.
class KubeconfigReader {
 public:
  explicit KubeconfigReader(std::string_view source) : source_(source) {
    fs::path p(source_);
    dir_ = p.has_parent_path() ? p.parent_path() : fs::path(".");
  }

  Result<ClientConfig> Read(const YAML::Node& root, const std::string& context_flag) {
    if (!root.IsMap()) return Err("", "expected a map (a kubeconfig), got {}", Describe(root));
    TIDEPOOL_ASSIGN_OR_RETURN(auto kind, String(root, "kind", ""));
    if (kind && !kind->empty() && *kind != "Config") {
      return Err("", "kind: expected \"Config\", got \"{}\"", *kind);
    }
    std::string context_name = context_flag;
    if (context_name.empty()) {
      TIDEPOOL_ASSIGN_OR_RETURN(auto current, String(root, "current-context", ""));
      if (!current || current->empty()) {
        return Err("", "current-context: not set and no context was given (--context)");
      }
      context_name = *current;
    }
    std::string context_where = fmt::format("context \"{}\": ", context_name);
    TIDEPOOL_ASSIGN_OR_RETURN(YAML::Node context,
                              FindNamed(root, "contexts", "context", context_name, ""));
    TIDEPOOL_ASSIGN_OR_RETURN(auto cluster_name, String(context, "cluster", context_where));
    if (!cluster_name || cluster_name->empty()) {
      return Err(context_where, "cluster: expected the name of a cluster, got nothing");
    }
    TIDEPOOL_ASSIGN_OR_RETURN(auto user_name, String(context, "user", context_where));
    TIDEPOOL_ASSIGN_OR_RETURN(auto ns, String(context, "namespace", context_where));

    ClientConfig config;
    config.context = context_name;
    config.source = source_;
    config.namespace_ = ns.value_or("");
    TIDEPOOL_ASSIGN_OR_RETURN(YAML::Node cluster,
                              FindNamed(root, "clusters", "cluster", *cluster_name, context_where));
    TIDEPOOL_RETURN_IF_ERROR(
        ReadCluster(cluster, fmt::format("cluster \"{}\": ", *cluster_name), config));
    if (user_name && !user_name->empty()) {
      TIDEPOOL_ASSIGN_OR_RETURN(YAML::Node user,
                                FindNamed(root, "users", "user", *user_name, context_where));
      TIDEPOOL_RETURN_IF_ERROR(ReadUser(user, fmt::format("user \"{}\": ", *user_name), config));
    }
    return config;
  }

 private:
  template <typename... Args>
  std::unexpected<Error> Err(std::string_view where, fmt::format_string<Args...> f,
                             Args&&... args) {
    return InvalidArgument("kubeconfig {}: {}{}", source_, where,
                           fmt::format(f, std::forward<Args>(args)...));
  }

  // The string at `key` of the map `node`; nullopt when absent or null.
  Result<std::optional<std::string>> String(const YAML::Node& node, const char* key,
                                            std::string_view where) {
    const YAML::Node& value = node[key];
    if (IsAbsent(value)) return std::optional<std::string>();
    if (!value.IsScalar()) return Err(where, "{}: expected a string, got {}", key, Describe(value));
    return std::optional<std::string>(value.Scalar());
  }

  Result<bool> Bool(const YAML::Node& node, const char* key, std::string_view where) {
    const YAML::Node& value = node[key];
    if (IsAbsent(value)) return false;
    if (value.IsScalar()) {
      const std::string& s = value.Scalar();
      if (s == "true" || s == "True" || s == "TRUE") return true;
      if (s == "false" || s == "False" || s == "FALSE") return false;
    }
    return Err(where, "{}: expected true or false, got {}", key, Describe(value));
  }

  // Finds `{name: <name>, <inner>: {...}}` in the list root[list] and returns the inner map.
  Result<YAML::Node> FindNamed(const YAML::Node& root, const char* list, const char* inner,
                               const std::string& name, std::string_view where) {
    const YAML::Node& entries = root[list];
    std::vector<std::string> names;
    if (!IsAbsent(entries)) {
      if (!entries.IsSequence()) {
        return Err("", "{}: expected a list, got {}", list, Describe(entries));
      }
      for (size_t i = 0; i < entries.size(); ++i) {
        const YAML::Node& entry = entries[i];
        if (!entry.IsMap()) {
          return Err("", "{}[{}]: expected a map with name and {}, got {}", list, i, inner,
                     Describe(entry));
        }
        TIDEPOOL_ASSIGN_OR_RETURN(auto entry_name,
                                  String(entry, "name", fmt::format("{}[{}]: ", list, i)));
        if (!entry_name) continue;
        if (*entry_name == name) {
          const YAML::Node& value = entry[inner];
          if (IsAbsent(value)) return YAML::Node(YAML::NodeType::Map);
          if (!value.IsMap()) {
            return Err("", "{}[{}] ({}): {}: expected a map, got {}", list, i, name, inner,
                       Describe(value));
          }
          return value;
        }
        names.push_back(*entry_name);
      }
    }
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    return Err(where, "{} \"{}\" not found in {} ({})", inner, name, list,
               known.empty() ? std::string("none defined") : "defined: " + known);
  }

  std::string Resolve(const std::string& path) const {
    fs::path p(path);
    if (p.is_absolute()) return path;
    return (dir_ / p).lexically_normal().string();
  }

  // A PEM from `<key>` (a file) or `<key>-data` (base64); both set is an error, as in kubectl.
  Result<std::string> Pem(const YAML::Node& node, const std::string& key, std::string_view where) {
    std::string data_key = key + "-data";
    TIDEPOOL_ASSIGN_OR_RETURN(auto file, String(node, key.c_str(), where));
    TIDEPOOL_ASSIGN_OR_RETURN(auto data, String(node, data_key.c_str(), where));
    if (file && !file->empty() && data && !data->empty()) {
      return Err(where, "{} and {} are both set; expected one of them", key, data_key);
    }
    if (data && !data->empty()) {
      auto decoded = DecodeBase64(*data);
      if (!decoded) return Err(where, "{}: expected base64, got invalid data", data_key);
      if (decoded->empty())
        return Err(where, "{}: expected base64 of a PEM, got nothing", data_key);
      return *decoded;
    }
    if (file && !file->empty()) {
      auto text = ReadCredentialFile(Resolve(*file));
      if (!text)
        return std::unexpected(
            text.error().Wrap(fmt::format("kubeconfig {}: {}{}", source_, where, key)));
      return *text;
    }
    return std::string();
  }

  Result<void> ReadCluster(const YAML::Node& cluster, const std::string& where,
                           ClientConfig& config) {
    TIDEPOOL_ASSIGN_OR_RETURN(auto server, String(cluster, "server", where));
    if (!server || server->empty()) {
      return Err(where, "server: expected the API server's URL (https://host:port), got nothing");
    }
    std::string url = *server;
    if (!url.starts_with("https://") && !url.starts_with("http://")) {
      return Err(where, "server: expected a URL starting with https://, got \"{}\"", url);
    }
    while (url.ends_with("/")) url.pop_back();
    config.server = url;
    for (const char* unsupported : {"proxy-url", "tls-server-name"}) {
      TIDEPOOL_ASSIGN_OR_RETURN(auto value, String(cluster, unsupported, where));
      if (value && !value->empty()) return Err(where, "{} is not supported yet", unsupported);
    }
    TIDEPOOL_ASSIGN_OR_RETURN(bool insecure, Bool(cluster, "insecure-skip-tls-verify", where));
    TIDEPOOL_ASSIGN_OR_RETURN(config.tls.ca_pem, Pem(cluster, "certificate-authority", where));
    if (insecure && !config.tls.ca_pem.empty()) {
      return Err(where,
                 "insecure-skip-tls-verify is set together with a certificate authority; "
                 "expected one of them");
    }
    config.tls.insecure_skip_verify = insecure;
    return {};
  }

  Result<void> ReadUser(const YAML::Node& user, const std::string& where, ClientConfig& config) {
    const YAML::Node& exec = user["exec"];
    if (!IsAbsent(exec)) {
      std::string command = ScalarMember(exec, "command");
      return Err(where,
                 "exec credential plugins{} are not supported yet; expected token, tokenFile or "
                 "client-certificate/client-key",
                 command.empty() ? "" : fmt::format(" (command \"{}\")", command));
    }
    const YAML::Node& provider = user["auth-provider"];
    if (!IsAbsent(provider)) {
      std::string name = ScalarMember(provider, "name");
      return Err(where,
                 "auth-provider{} is not supported yet; expected token, tokenFile or "
                 "client-certificate/client-key",
                 name.empty() ? "" : fmt::format(" \"{}\"", name));
    }
    for (const char* unsupported : {"username", "password", "as", "as-uid"}) {
      TIDEPOOL_ASSIGN_OR_RETURN(auto value, String(user, unsupported, where));
      if (value && !value->empty()) return Err(where, "{} is not supported yet", unsupported);
    }
    for (const char* unsupported : {"as-groups", "as-user-extra"}) {
      const YAML::Node& value = user[unsupported];
      if (!IsAbsent(value) && !(value.IsSequence() && value.size() == 0) &&
          !(value.IsMap() && value.size() == 0)) {
        return Err(where, "{} is not supported yet", unsupported);
      }
    }
    TIDEPOOL_ASSIGN_OR_RETURN(config.tls.client_cert_pem, Pem(user, "client-certificate", where));
    TIDEPOOL_ASSIGN_OR_RETURN(config.tls.client_key_pem, Pem(user, "client-key", where));
    if (config.tls.client_cert_pem.empty() != config.tls.client_key_pem.empty()) {
      return Err(where, "{} is set without {}; expected both",
                 config.tls.client_key_pem.empty() ? "client-certificate" : "client-key",
                 config.tls.client_key_pem.empty() ? "client-key" : "client-certificate");
    }
    TIDEPOOL_ASSIGN_OR_RETURN(auto token, String(user, "token", where));
    TIDEPOOL_ASSIGN_OR_RETURN(auto token_file, String(user, "tokenFile", where));
    if (token && !token->empty()) {
      config.token = std::string(TrimSpace(*token));  // kubectl: token wins over tokenFile
    } else if (token_file && !token_file->empty()) {
      config.token_file = Resolve(*token_file);
      auto text = ReadCredentialFile(config.token_file);
      if (!text) {
        return std::unexpected(
            text.error().Wrap(fmt::format("kubeconfig {}: {}tokenFile", source_, where)));
      }
    }
    return {};
  }

  std::string source_;
  fs::path dir_;
};

bool FileExists(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

}  // namespace

std::optional<std::string> DecodeBase64(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  int group = 0;    // characters of the current 4-character group
  int padding = 0;  // '=' seen
  for (char ch : text) {
    if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t') continue;
    int v;
    if (ch >= 'A' && ch <= 'Z') {
      v = ch - 'A';
    } else if (ch >= 'a' && ch <= 'z') {
      v = ch - 'a' + 26;
    } else if (ch >= '0' && ch <= '9') {
      v = ch - '0' + 52;
    } else if (ch == '+') {
      v = 62;
    } else if (ch == '/') {
      v = 63;
    } else if (ch == '=') {
      // Padding only at the end of a group's third or fourth position.
      if (group < 2) return std::nullopt;
      ++padding;
      ++group;
      if (group == 4) group = 0;
      continue;
    } else {
      return std::nullopt;
    }
    if (padding > 0) return std::nullopt;  // data after padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
    group = (group + 1) % 4;
  }
  if (padding == 0 && group == 1) return std::nullopt;  // 6 bits cannot make a byte
  if (padding > 0 && group != 0) return std::nullopt;   // "ab=" without the last '='
  return out;
}

Result<std::string> ReadCredentialFile(const std::string& path) {
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    return Fail(Error::Code::kNotFound, "file \"{}\" does not exist", path);
  }
  if (!fs::is_regular_file(status)) {
    return InvalidArgument("\"{}\": expected a regular file", path);
  }
  auto size = fs::file_size(path, ec);
  if (ec) return Fail(Error::Code::kUnavailable, "cannot read \"{}\": {}", path, ec.message());
  if (size > kMaxCredentialFileBytes) {
    return InvalidArgument("\"{}\": expected at most {} bytes, got {}", path,
                           kMaxCredentialFileBytes, size);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail(Error::Code::kUnavailable, "cannot read \"{}\"", path);
  std::string text;
  text.resize(static_cast<size_t>(size));
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) return Fail(Error::Code::kUnavailable, "cannot read \"{}\"", path);
  return text;
}

Result<ClientConfig> ParseKubeconfig(std::string_view yaml, std::string_view source,
                                     const std::string& context) {
  try {
    std::vector<YAML::Node> docs = codec::LoadAllYaml(std::string(yaml));
    std::vector<YAML::Node> content;
    for (const auto& d : docs) {
      if (!IsAbsent(d)) content.push_back(d);
    }
    if (content.empty())
      return InvalidArgument("kubeconfig {}: expected a kubeconfig, got an empty file", source);
    if (content.size() > 1) {
      return InvalidArgument("kubeconfig {}: expected one YAML document, got {}", source,
                             content.size());
    }
    KubeconfigReader reader(source);
    return reader.Read(content[0], context);
  } catch (const YAML::Exception& e) {
    return InvalidArgument("kubeconfig {}: line {}: invalid YAML: {}", source, e.mark.line + 1,
                           e.msg);
  } catch (const std::exception& e) {
    return InvalidArgument("kubeconfig {}: cannot read: {}", source, e.what());
  }
}

Result<ClientConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto text = ReadCredentialFile(path);
  if (!text) return std::unexpected(text.error().Wrap("kubeconfig"));
  return ParseKubeconfig(*text, path, context);
}

Result<ClientConfig> InClusterConfig(const std::string& sa_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') {
    return Fail(Error::Code::kNotFound,
                "in-cluster config: expected KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
                "to be set (not running in a pod?)");
  }
  std::string h = host;
  if (h.find(':') != std::string::npos && !h.starts_with("[")) h = "[" + h + "]";  // IPv6
  ClientConfig config;
  config.server = fmt::format("https://{}:{}", h, port);
  config.source = "in-cluster config";
  config.token_file = (fs::path(sa_dir) / "token").string();
  auto token = ReadCredentialFile(config.token_file);
  if (!token)
    return std::unexpected(token.error().Wrap("in-cluster config: service-account token"));
  if (TrimSpace(*token).empty()) {
    return InvalidArgument("in-cluster config: service-account token \"{}\" is empty",
                           config.token_file);
  }
  auto ca = ReadCredentialFile((fs::path(sa_dir) / "ca.crt").string());
  if (!ca) return std::unexpected(ca.error().Wrap("in-cluster config: service-account CA"));
  config.tls.ca_pem = *ca;
  if (auto ns = ReadCredentialFile((fs::path(sa_dir) / "namespace").string())) {
    config.namespace_ = std::string(TrimSpace(*ns));
  }
  return config;
}

Result<ClientConfig> ResolveClientConfig(const std::string& kubeconfig_flag,
                                         const std::string& context_flag) {
  if (!kubeconfig_flag.empty()) return LoadKubeconfig(kubeconfig_flag, context_flag);
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::stringstream list(env);
    std::string path;
    while (std::getline(list, path, ':')) {
      if (!path.empty() && FileExists(path)) return LoadKubeconfig(path, context_flag);
    }
    return Fail(Error::Code::kNotFound, "KUBECONFIG=\"{}\": expected an existing file, none exists",
                env);
  }
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
      host != nullptr && *host != '\0' && context_flag.empty()) {
    return InClusterConfig();
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    std::string path = (fs::path(home) / ".kube" / "config").string();
    if (FileExists(path)) return LoadKubeconfig(path, context_flag);
  }
  return Fail(Error::Code::kNotFound,
              "no Kubernetes client config: expected --kubeconfig, $KUBECONFIG, the in-cluster "
              "service account or ~/.kube/config");
}

}  // namespace tidepool::kube
