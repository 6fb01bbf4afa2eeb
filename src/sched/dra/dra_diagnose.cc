// Why a pod's claims cannot be allocated on a node, in words that name the claim, the request
// and the selector no device satisfies. Only on the failure path: nothing here is cached.
#include <fmt/format.h>

#include "sched/dra/dra_detail.h"

namespace tidepool::sched {
namespace {

std::string Devices(int64_t n) { return n == 1 ? "1 device" : fmt::format("{} devices", n); }

}  // namespace

std::string DraState::Impl::Diagnose(const PodClaims& claims, const model::Node& node) {
  if (!claims.error.empty()) return claims.error;
  for (const PodClaim& c : claims.claims) {
    const ClaimState* st = StateOf(ClaimKey(c));
    if (st != nullptr && st->allocated && (!c.per_pod || st->in_cluster) && !st->UsableOn(node)) {
      return fmt::format("{}: allocated on another node", c.label);
    }
  }
  const std::vector<DeviceId>& inventory = Inventory(node);
  if (inventory.empty()) return "the node has no devices";
  auto pending = Pending(claims, node);
  // Each request on its own: the first whose selectors or free devices fall short.
  for (const PodClaim* c : *pending) {
    for (const CompiledRequest& request : c->spec->requests) {
      std::string first_reason;
      bool alone_ok = false;
      for (const CompiledSubRequest& alt : request.alternatives) {
        std::string why;
        // Devices left after each selector in turn, so the one that leaves none is named.
        std::vector<DeviceId> left(inventory.begin(), inventory.end());
        for (size_t k = 0; k < alt.selectors.size() && why.empty(); ++k) {
          std::vector<DeviceId> next;
          std::string eval_error;
          for (DeviceId id : left) {
            cel::EvalResult r =
                alt.selectors[k]->Eval({devices[id].slice->driver, devices[id].device});
            if (r.matches) next.push_back(id);
            if (!r.error.empty() && eval_error.empty()) eval_error = r.error;
          }
          if (next.empty()) {
            why = fmt::format("no device matches {}selector {}{}",
                              k < alt.class_selectors
                                  ? fmt::format("device class \"{}\" ", alt.sub->device_class_name)
                                  : "",
                              alt.selectors[k]->expression(),
                              eval_error.empty() ? "" : fmt::format(" ({})", eval_error));
          }
          left = std::move(next);
        }
        if (why.empty()) {
          int64_t free = 0;
          for (DeviceId id : left) free += in_use[id] == 0 && !devices[id].broken;
          int64_t want = alt.sub->mode == model::AllocationMode::kAll
                             ? static_cast<int64_t>(left.size())
                             : alt.sub->count;
          if (free < want) {
            why = fmt::format("needs {}, {} match{}, {} free",
                              alt.sub->mode == model::AllocationMode::kAll
                                  ? fmt::format("all {} matching", Devices(want))
                                  : Devices(want),
                              left.size(), left.size() == 1 ? "es" : "", free);
          }
        }
        if (why.empty()) {
          alone_ok = true;
          break;
        }
        if (first_reason.empty()) {
          first_reason = fmt::format("request \"{}\": {}", alt.request_name, why);
        }
      }
      if (!alone_ok) return fmt::format("{}: {}", c->label, first_reason);
    }
  }
  // Every request could be met alone: the constraints or the requests together fail.
  for (const PodClaim* c : *pending) {
    for (const auto& con : *c->spec->constraints) {
      if (con.match_attribute.empty()) continue;
      if (!Search({c}, inventory, nullptr)) {
        return fmt::format("{}: no free devices that share the attribute {} satisfy the requests",
                           c->label, con.match_attribute);
      }
    }
  }
  return "the node's free devices cannot satisfy all the claims at once (or their shared counters "
         "are used up)";
}

}  // namespace tidepool::sched
