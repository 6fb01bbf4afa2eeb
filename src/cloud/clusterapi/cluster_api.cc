#include "cloud/clusterapi/cluster_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "net/http.h"

namespace tidepool::cloud::clusterapi {

using nlohmann::json;

namespace {

// The API version a server prefers for `group`, from GET /apis/<group>.
Result<std::string> PreferredVersion(kube::ApiClient& api, std::string_view group) {
  auto doc = api.Get(fmt::format("/apis/{}", group));
  if (!doc) return std::unexpected(doc.error());
  auto pv = doc->find("preferredVersion");
  if (pv == doc->end() || !pv->is_object() || !pv->contains("version")) {
    return Fail(Error::Code::kInvalidArgument,
                "/apis/{}: no preferredVersion in the API group document", group);
  }
  return (*pv)["version"].get<std::string>();
}

// The REST resource of a kind, by the Cluster API contract: lowercase plural.
std::string Plural(std::string_view kind) {
  std::string r(kind);
  std::transform(r.begin(), r.end(), r.begin(), [](unsigned char c) { return std::tolower(c); });
  return r + "s";
}

}  // namespace

Result<ClusterApi> ClusterApi::Connect(kube::ApiClient& api, const Settings& settings) {
  std::string version = settings.api_version;
  if (version.empty()) {
    auto v = PreferredVersion(api, kGroup);
    if (!v) {
      if (v.error().code() == Error::Code::kNotFound) {
        return Fail(Error::Code::kInvalidArgument,
                    "provider clusterapi: {} serves no {} API (expected the management cluster, "
                    "with Cluster API installed; set provider.managementKubeconfig when it is "
                    "another cluster)",
                    api.config().server, kGroup);
      }
      return std::unexpected(v.error().Wrap("provider clusterapi: reading the API versions"));
    }
    version = *v;
  }
  if (version != "v1beta2" && version != "v1beta1") {
    return Fail(Error::Code::kInvalidArgument,
                "provider clusterapi: {} prefers {}/{} (expected v1beta2 or v1beta1; set "
                "provider.apiVersion to one it also serves)",
                api.config().server, kGroup, version);
  }
  return ClusterApi(api, settings, version);
}

std::string ClusterApi::GroupVersion() const { return fmt::format("{}/{}", kGroup, version_); }

std::string ClusterApi::Collection(std::string_view resource) const {
  std::string path = kube::CollectionPath(GroupVersion(), resource, settings_.namespace_);
  if (!settings_.label_selector.empty() && resource != "machines") {
    path += "?labelSelector=" + net::UrlEncode(settings_.label_selector);
  }
  return path;
}

std::string ClusterApi::GroupPath(const NodeGroup& group) const {
  return kube::ObjectPath(GroupVersion(), ResourceName(group.kind), group.namespace_, group.name);
}

Result<std::vector<json>> ClusterApi::ListGroups(GroupKind kind) {
  auto page = api_->ListAll(Collection(ResourceName(kind)));
  if (!page) {
    if (kind == GroupKind::kMachinePool && page.error().code() == Error::Code::kNotFound) {
      return std::vector<json>();
    }
    return std::unexpected(page.error().Wrap(fmt::format("listing {}", ResourceName(kind))));
  }
  std::vector<json> out;
  for (json& item : page->items) {
    if (!settings_.cluster_name.empty()) {
      const json* spec = item.contains("spec") ? &item["spec"] : nullptr;
      if (spec == nullptr || spec->value("clusterName", "") != settings_.cluster_name) continue;
    }
    out.push_back(std::move(item));
  }
  return out;
}

Result<std::vector<json>> ClusterApi::ListMachines() {
  auto page = api_->ListAll(Collection("machines"));
  if (!page) return std::unexpected(page.error().Wrap("listing machines"));
  return std::move(page->items);
}

Result<std::optional<InfraStatus>> ClusterApi::InfraStatusOf(const NodeGroup& group) {
  if (!group.infrastructure) return std::optional<InfraStatus>();
  const InfraRef& ref = *group.infrastructure;
  std::string gv = ref.api_version;
  if (gv.empty()) {
    auto v = PreferredVersion(*api_, ref.api_group);
    if (!v) {
      return std::unexpected(v.error().Wrap(
          fmt::format("{}: infrastructure template {} {}", group.Describe(), ref.kind, ref.name)));
    }
    gv = fmt::format("{}/{}", ref.api_group, *v);
  }
  auto tmpl = api_->Get(kube::ObjectPath(gv, Plural(ref.kind), group.namespace_, ref.name));
  if (!tmpl) {
    if (tmpl.error().code() == Error::Code::kNotFound) return std::optional<InfraStatus>();
    return std::unexpected(tmpl.error().Wrap(
        fmt::format("{}: infrastructure template {} {}", group.Describe(), ref.kind, ref.name)));
  }
  return ParseInfraStatus(*tmpl);
}

Result<Scale> ClusterApi::GetScale(const NodeGroup& group) {
  auto s = api_->Get(GroupPath(group) + "/scale");
  if (!s) return std::unexpected(s.error().Wrap(group.Describe() + ": reading its scale"));
  Scale out;
  if (auto spec = s->find("spec"); spec != s->end() && spec->is_object()) {
    out.replicas = spec->value("replicas", 0);
  }
  if (auto meta = s->find("metadata"); meta != s->end() && meta->is_object()) {
    out.resource_version = meta->value("resourceVersion", "");
  }
  return out;
}

Result<void> ClusterApi::SetScale(const NodeGroup& group, const Scale& read, int32_t replicas) {
  json scale = {{"apiVersion", "autoscaling/v1"},
                {"kind", "Scale"},
                {"metadata",
                 {{"name", group.name},
                  {"namespace", group.namespace_},
                  {"resourceVersion", read.resource_version}}},
                {"spec", {{"replicas", replicas}}}};
  auto r = api_->Update(GroupPath(group) + "/scale", scale);
  if (!r) {
    return std::unexpected(r.error().Wrap(
        fmt::format("{}: setting replicas {} -> {}", group.Describe(), read.replicas, replicas)));
  }
  return {};
}

Result<void> ClusterApi::Mark(const Machine& machine, Time now) {
  const std::string stamp = FormatRfc3339(now);
  json patch = {{"metadata",
                 {{"uid", machine.uid},
                  {"annotations",
                   {{std::string(kDeleteMachineAnnotation), stamp},
                    {std::string(kMarkedByTidepoolAnnotation), stamp}}}}}};
  auto r = api_->Patch(
      kube::ObjectPath(GroupVersion(), "machines", machine.namespace_, machine.name), patch);
  if (!r) {
    return std::unexpected(r.error().Wrap(
        fmt::format("Machine {}/{}: marking it for deletion", machine.namespace_, machine.name)));
  }
  return {};
}

Result<void> ClusterApi::Unmark(const Machine& machine) {
  json patch = {{"metadata",
                 {{"annotations",
                   {{std::string(kDeleteMachineAnnotation), nullptr},
                    {std::string(kMarkedByTidepoolAnnotation), nullptr}}}}}};
  auto r = api_->Patch(
      kube::ObjectPath(GroupVersion(), "machines", machine.namespace_, machine.name), patch);
  if (!r && r.error().code() != Error::Code::kNotFound) {
    return std::unexpected(r.error().Wrap(fmt::format("Machine {}/{}: removing the deletion mark",
                                                      machine.namespace_, machine.name)));
  }
  return {};
}

}  // namespace tidepool::cloud::clusterapi
