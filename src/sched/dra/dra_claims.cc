// Resolving a pod's spec.resourceClaims: the claim it names, the claim generated for it from a
// template, or the template itself (a claim of its own to come), and compiling the claim specs'
// requests with their classes' selectors, once per spec.
#include <fmt/format.h>

#include "sched/dra/dra_detail.h"

namespace tidepool::sched {

const cel::Program* DraState::Impl::CompileSelector(const std::string& expr, std::string& error) {
  if (auto it = programs.find(expr); it != programs.end()) return it->second.get();
  if (auto it = program_errors.find(expr); it != program_errors.end()) {
    error = it->second;
    return nullptr;
  }
  auto p = cel::Program::Compile(expr);
  if (!p) {
    error = p.error().ToString();
    program_errors.emplace(expr, error);
    return nullptr;
  }
  auto owned = std::make_unique<cel::Program>(std::move(*p));
  const cel::Program* raw = owned.get();
  programs.emplace(expr, std::move(owned));
  return raw;
}

const CompiledSpec* DraState::Impl::Compile(const model::ResourceClaimSpec& spec) {
  if (auto it = specs.find(&spec); it != specs.end()) return it->second.get();
  auto out = std::make_unique<CompiledSpec>();
  out->constraints = &spec.constraints;
  auto compile_sub = [&](const model::DeviceSubRequest& sub, std::string name) {
    CompiledSubRequest c;
    c.sub = &sub;
    c.request_name = std::move(name);
    c.id = next_sub_id++;
    auto cls = classes.find(sub.device_class_name);
    if (cls == classes.end()) {
      if (out->error.empty()) {
        out->error = fmt::format("request \"{}\": device class \"{}\" not found", c.request_name,
                                 sub.device_class_name);
      }
      return c;
    }
    for (const auto* list : {&cls->second->selectors, &sub.selectors}) {
      for (const std::string& expr : *list) {
        std::string error;
        const cel::Program* p = CompileSelector(expr, error);
        if (p == nullptr) {
          if (out->error.empty()) {
            out->error = fmt::format("request \"{}\"{}: {}", c.request_name,
                                     list == &sub.selectors ? ""
                                                            : fmt::format(" (device class \"{}\")",
                                                                          sub.device_class_name),
                                     error);
          }
          continue;
        }
        c.selectors.push_back(p);
      }
      if (list == &cls->second->selectors) c.class_selectors = c.selectors.size();
    }
    return c;
  };
  for (const auto& r : spec.requests) {
    CompiledRequest& cr = out->requests.emplace_back();
    cr.name = r.name;
    if (r.exactly) {
      cr.alternatives.push_back(compile_sub(*r.exactly, r.name));
    } else {
      for (const auto& sub : r.first_available) {
        cr.alternatives.push_back(compile_sub(sub, r.name + "/" + sub.name));
      }
    }
  }
  const CompiledSpec* raw = out.get();
  specs.emplace(&spec, std::move(out));
  return raw;
}

const PodClaims& DraState::Impl::ClaimsOf(const model::Pod& pod) {
  if (auto it = pod_claims.find(&pod); it != pod_claims.end()) return *it->second;
  auto out = std::make_unique<PodClaims>();
  const std::string& ns = pod.meta.namespace_;
  for (const auto& rc : pod.resource_claims()) {
    PodClaim& c = out->claims.emplace_back();
    const model::ResourceClaimSpec* spec = nullptr;
    if (!rc.claim_name.empty()) {
      c.label = fmt::format("claim {}/{}", ns, rc.claim_name);
      auto it = claims.find(ns + "/" + rc.claim_name);
      if (it == claims.end()) {
        if (out->error.empty())
          out->error = fmt::format("resourceclaim \"{}/{}\" not found", ns, rc.claim_name);
        continue;
      }
      c.claim = it->second;
      spec = &it->second->spec;
    } else {
      // The claim the control plane generated for this pod, if it exists already.
      for (const auto& st : pod.resource_claim_statuses()) {
        if (st.name != rc.name || st.claim_name.empty()) continue;
        if (auto it = claims.find(ns + "/" + st.claim_name); it != claims.end())
          c.claim = it->second;
      }
      c.label = fmt::format("claim {} (template {})", rc.name, rc.template_name);
      c.per_pod = true;
      if (c.claim != nullptr) {
        spec = &c.claim->spec;
      } else {
        auto it = claim_templates.find(ns + "/" + rc.template_name);
        if (it == claim_templates.end()) {
          if (out->error.empty()) {
            out->error =
                fmt::format("resourceclaimtemplate \"{}/{}\" not found", ns, rc.template_name);
          }
          continue;
        }
        spec = &it->second->spec;
      }
    }
    c.spec = Compile(*spec);
    if (!c.spec->error.empty() && out->error.empty()) {
      out->error = fmt::format("{}: {}", c.label, c.spec->error);
    }
  }
  return *pod_claims.emplace(&pod, std::move(out)).first->second;
}

}  // namespace tidepool::sched
