// Cluster state files: the objects of one text, one file or a folder of files, by kind.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <utility>

#include "kube/codec/capacity_buffer.h"
#include "kube/codec/decode_common.h"
#include "kube/codec/decode_pipeline.h"
#include "kube/codec/documents.h"
#include "kube/codec/dra.h"
#include "kube/codec/list_stream.h"
#include "kube/codec/provisioning.h"

namespace tidepool::kube::codec {
namespace {

using decode_detail::HasName;

void Append(ClusterState& into, ClusterState&& from) {
  auto move_all = [](auto& dst, auto& src) {
    dst.insert(dst.end(), std::make_move_iterator(src.begin()), std::make_move_iterator(src.end()));
  };
  move_all(into.nodes, from.nodes);
  move_all(into.pods, from.pods);
  move_all(into.pdbs, from.pdbs);
  move_all(into.daemon_sets, from.daemon_sets);
  move_all(into.provisioning_requests, from.provisioning_requests);
  move_all(into.pod_templates, from.pod_templates);
  move_all(into.capacity_buffers, from.capacity_buffers);
  move_all(into.deployments, from.deployments);
  move_all(into.dra.device_classes, from.dra.device_classes);
  move_all(into.dra.claims, from.dra.claims);
  move_all(into.dra.claim_templates, from.dra.claim_templates);
  move_all(into.dra.slices, from.dra.slices);
  for (const auto& [kind, n] : from.ignored) into.ignored[kind] += n;
}

constexpr std::string_view kDraApiVersion = "resource.k8s.io/v1";

bool IsDraKind(std::string_view kind) {
  return kind == "DeviceClass" || kind == "ResourceClaim" || kind == "ResourceClaimTemplate" ||
         kind == "ResourceSlice";
}

// Decodes one resource.k8s.io/v1 object into its list.
Result<void> DecodeDraObject(std::string_view kind, const Json& obj, model::DraObjects& dra) {
  auto into = [](auto result, auto& list) -> Result<void> {
    if (!result) return std::unexpected(result.error());
    list.push_back(std::move(*result));
    return {};
  };
  if (kind == "DeviceClass") return into(DecodeDeviceClass(obj), dra.device_classes);
  if (kind == "ResourceClaim") return into(DecodeResourceClaim(obj), dra.claims);
  if (kind == "ResourceClaimTemplate") {
    return into(DecodeResourceClaimTemplate(obj), dra.claim_templates);
  }
  return into(DecodeResourceSlice(obj), dra.slices);
}

// Decodes an object of a known kind and API version into its list; other kinds are counted.
Result<void> DecodeKind(const SourcedDocument& doc, const std::string& kind,
                        const std::string& api_version, std::string_view source,
                        ClusterState& state) {
  const Json& obj = doc.value;
  std::string_view group = api_version.find('/') == std::string::npos
                               ? std::string_view()
                               : std::string_view(api_version).substr(0, api_version.find('/'));
  bool core = api_version.empty() || api_version == "v1";

  // Errors of named objects name the object; unnamed ones are found by their position.
  auto fail = [&](const Error& e) {
    if (!HasName(obj)) return std::unexpected(e.Wrap(doc.origin).Wrap(source));
    return std::unexpected(e.Wrap(source));
  };
  if (kind == "Pod" && core) {
    auto pod = DecodePod(obj);
    if (!pod) return fail(pod.error());
    state.pods.push_back(std::move(*pod));
  } else if (kind == "Node" && core) {
    auto node = DecodeNode(obj);
    if (!node) return fail(node.error());
    state.nodes.push_back(std::move(*node));
  } else if (kind == "PodDisruptionBudget" &&
             (api_version == "policy/v1" || api_version == "policy/v1beta1")) {
    auto pdb = DecodePdb(obj);
    if (!pdb) return fail(pdb.error());
    state.pdbs.push_back(std::move(*pdb));
  } else if (kind == "DaemonSet" && (group == "apps" || group == "extensions")) {
    auto ds = DecodeDaemonSet(obj);
    if (!ds) return fail(ds.error());
    state.daemon_sets.push_back(std::move(*ds));
  } else if (kind == "ProvisioningRequest" && api_version == "autoscaling.x-k8s.io/v1") {
    auto pr = DecodeProvisioningRequest(obj);
    if (!pr) return fail(pr.error());
    state.provisioning_requests.push_back(std::move(*pr));
  } else if (kind == "PodTemplate" && core) {
    auto pt = DecodePodTemplate(obj);
    if (!pt) return fail(pt.error());
    state.pod_templates.push_back(std::move(*pt));
  } else if (kind == "CapacityBuffer" && api_version == "autoscaling.x-k8s.io/v1beta1") {
    auto b = DecodeCapacityBuffer(obj);
    if (!b) return fail(b.error());
    state.capacity_buffers.push_back(std::move(*b));
  } else if (kind == "Deployment" && api_version == "apps/v1") {
    auto d = DecodeDeploymentOrInvalid(obj);
    if (!d) return fail(d.error());
    state.deployments.push_back(std::move(*d));
  } else if (api_version == kDraApiVersion && IsDraKind(kind)) {
    if (auto r = DecodeDraObject(kind, obj, state.dra); !r) return fail(r.error());
  } else if (kind == "Pod" || kind == "Node" || kind == "PodDisruptionBudget" ||
             kind == "DaemonSet" || kind == "ProvisioningRequest" || kind == "PodTemplate" ||
             kind == "CapacityBuffer" || IsDraKind(kind)) {
    // A known kind of an API version tidepool does not read (e.g. a CRD named "Node").
    ++state.ignored[fmt::format("{} ({})", kind, api_version)];
  } else {
    ++state.ignored[kind];
  }
  return {};
}

// Decodes one object of a state text into its list (or counts it as ignored).
Result<void> DecodeDocument(const SourcedDocument& doc, std::string_view source,
                            ClusterState& state) {
  const Json& obj = doc.value;
  auto at_doc = [&](Error e) { return std::unexpected(e.Wrap(doc.origin).Wrap(source)); };
  if (!obj.is_object()) return at_doc(TypeError(FieldPath(), "an object", &obj));
  const Json* kind_json = Find(obj, "kind");
  if (kind_json == nullptr) {
    return at_doc(
        FieldError(FieldPath(), "missing \"kind\" (each object needs apiVersion and kind)"));
  }
  if (!kind_json->is_string() || kind_json->get_ref<const std::string&>().empty()) {
    return at_doc(TypeError(FieldPath().Key("kind"), "a non-empty string", kind_json));
  }
  const std::string& kind = kind_json->get_ref<const std::string&>();
  std::string api_version;
  if (auto r = ReadString(obj, "apiVersion", FieldPath(), api_version); !r) {
    return at_doc(r.error());
  }
  return DecodeKind(doc, kind, api_version, source, state);
}

Result<ClusterState> DecodeStateUnguarded(std::string_view text, std::string_view source,
                                          const OnListProgress& progress, int threads) {
  // A JSON List (what kubectl -o json prints) is decoded item by item as it is parsed.
  ClusterState state;
  auto decode = [&](SourcedDocument&& doc) { return DecodeDocument(doc, source, state); };
  // Most items of a large List are pods: room for them at once, not a copy of every decoded pod
  // each time the vector doubles (a sixth of a 50,000-pod plan).
  auto expect = [&](size_t items) { state.pods.reserve(items); };
  // With two threads: parsing here, decoding on the pipeline's thread, in the List's order.
  std::optional<DecodePipeline> pipeline;
  if (threads >= 2) pipeline.emplace(decode);
  auto hand_on = [&](SourcedDocument&& doc) {
    return pipeline ? pipeline->Push(std::move(doc)) : decode(std::move(doc));
  };
  bool streamed = StreamJsonList(text, source, hand_on, progress, expect);
  if (pipeline && !pipeline->Finish()) streamed = false;
  if (streamed) return state;
  state = ClusterState();
  TIDEPOOL_ASSIGN_OR_RETURN(auto docs, ParseSourcedDocuments(text, source));
  for (const auto& doc : docs) TIDEPOOL_RETURN_IF_ERROR(DecodeDocument(doc, source, state));
  return state;
}

Result<ClusterState> LoadStateFileUnguarded(const std::string& path, const OnListProgress& progress,
                                            int threads) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return Fail(Error::Code::kNotFound, "{}: no such file", path);
  if (fs::is_directory(st)) {
    return InvalidArgument("{}: is a directory (expected a state file)", path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument("{}: cannot open: {}", path, std::strerror(errno));
  std::string text;
  if (fs::is_regular_file(st)) {
    // At once, into a string of the file's size: a stream copy went run by run and then copied
    // the whole text again, a tenth of a 50,000-pod plan.
    const auto size = fs::file_size(path, ec);
    if (ec) return InvalidArgument("{}: cannot read: {}", path, ec.message());
    text.resize(static_cast<size_t>(size));
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (static_cast<size_t>(in.gcount()) != text.size()) {
      return InvalidArgument("{}: cannot read: the file changed while it was read", path);
    }
  } else {
    // A pipe (`--state <(kubectl get pods -o json)`) has no size to read up to.
    std::ostringstream buf;
    buf << in.rdbuf();
    text = std::move(buf).str();
  }
  if (in.bad()) return InvalidArgument("{}: cannot read: {}", path, std::strerror(errno));
  return DecodeState(text, path, progress, threads);
}

Result<ClusterState> LoadStatePathUnguarded(const std::string& path, const OnListProgress& progress,
                                            int threads) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return LoadStateFileUnguarded(path, progress, threads);
  std::vector<fs::path> files;
  fs::directory_iterator it(path, ec);
  if (ec) return InvalidArgument("{}: cannot list directory: {}", path, ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return InvalidArgument("{}: cannot list directory: {}", path, ec.message());
    std::error_code file_ec;
    if (!it->is_regular_file(file_ec)) continue;
    std::string ext = it->path().extension().string();
    if (ext == ".yaml" || ext == ".yml" || ext == ".json") files.push_back(it->path());
  }
  if (ec) return InvalidArgument("{}: cannot list directory: {}", path, ec.message());
  if (files.empty()) {
    return InvalidArgument("{}: no state files (*.yaml, *.yml, *.json) in the directory", path);
  }
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
  ClusterState state;
  for (const auto& f : files) {
    TIDEPOOL_ASSIGN_OR_RETURN(ClusterState part,
                              LoadStateFileUnguarded(f.string(), progress, threads));
    Append(state, std::move(part));
  }
  return state;
}

// Runs f, turning an escaping exception (allocation failure, a library surprise) into an error.
template <typename F>
Result<ClusterState> Guard(std::string_view what, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Fail(Error::Code::kInternal, "{}: unexpected error: {}", what, e.what());
  }
}

}  // namespace

Result<ClusterState> DecodeState(std::string_view text, std::string_view source,
                                 const OnListProgress& progress, int threads) {
  return Guard(source, [&] { return DecodeStateUnguarded(text, source, progress, threads); });
}

Result<ClusterState> LoadStateFile(const std::string& path, const OnListProgress& progress,
                                   int threads) {
  return Guard(path, [&] { return LoadStateFileUnguarded(path, progress, threads); });
}

Result<ClusterState> LoadStatePath(const std::string& path, const OnListProgress& progress,
                                   int threads) {
  return Guard(path, [&] { return LoadStatePathUnguarded(path, progress, threads); });
}

}  // namespace tidepool::kube::codec
