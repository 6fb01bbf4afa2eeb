// ProvisioningRequests as the loop reads them: where each stands (from its conditions), the pods
// it stands for (copies of its PodTemplates' pods) and the pods that consume its booking.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/time.h"
#include "model/pod.h"
#include "model/provisioning_request.h"

namespace tidepool::autoscaler {

// Where a request of a class tidepool serves stands, read from its conditions.
enum class ProvisioningStage {
  kNew,          // no Accepted condition yet
  kPending,      // accepted; the capacity is not there yet (or was not found)
  kBooked,       // Provisioned=True and the booking time has not run out
  kBookingOver,  // Provisioned=True, the booking time ran out: BookingExpired is due
  kDone,         // Failed, BookingExpired or CapacityRevoked: nothing more to do
};
ProvisioningStage StageOf(const model::ProvisioningRequest& request, Time now, Duration booking);
// When the booking ends: the Provisioned condition's transition time plus `booking`; nullopt
// when the request is not Provisioned (or the time is unknown).
std::optional<Time> BookingEnd(const model::ProvisioningRequest& request, Duration booking);

// The Cluster Autoscaler fails a request that is not Provisioned a week after its creation
// (reason Expired), whatever its class.
inline constexpr Duration kRequestExpiry = std::chrono::hours(24 * 7);
// The ValidUntilSeconds parameter when it applies (the request is best-effort-atomic and sets
// it; check-capacity ignores it, as the Cluster Autoscaler does), else nullptr.
const std::string* ValidUntilSeconds(const model::ProvisioningRequest& request);
// How long after its creation a request that is not Provisioned is still retried: its
// ValidUntilSeconds when that applies, kRequestExpiry otherwise. Error (kInvalidArgument): a
// ValidUntilSeconds that is not a whole number of seconds.
Result<Duration> RetryWindow(const model::ProvisioningRequest& request);

// The annotation on the pods a request stands for: the request's "namespace/name".
inline constexpr std::string_view kProvisioningRequestAnnotation =
    "tidepool.dev/provisioning-request";

using PodTemplates = std::map<std::string, const model::PodTemplate*, std::less<>>;  // by key
PodTemplates IndexTemplates(const std::vector<const model::PodTemplate*>& templates);

// The pods `request` stands for: `count` copies of each pod set's template pod, pending, named
// "<request>:<set>-<i>" (no real pod can be named so), in the request's namespace, created when
// the request was, one gang per request (label scheduling.x-k8s.io/pod-group set to
// "provisioning-request:<request>", which no real pod's label can be), annotated with
// kProvisioningRequestAnnotation and not safe to evict. Errors: a template not found (kNotFound)
// or malformed (kInvalidArgument), with a message naming it.
Result<std::vector<model::Pod>> ExpandPods(const model::ProvisioningRequest& request,
                                           const PodTemplates& templates);

// How status and logs name a request whose stand-in pods are pending: "provreq/<namespace/name>",
// what `tidepool explain` takes.
inline std::string ShownRequest(std::string_view request_key) {
  return "provreq/" + std::string(request_key);
}

// Whether `pod_key` ("namespace/name") names one of the pods ExpandPods makes for `request`.
bool IsPodOf(std::string_view pod_key, const model::ProvisioningRequest& request);

// The pods that consume a booking (the consume annotation), not being deleted, by the key
// ("namespace/name") of the request they name.
using Consumers = std::map<std::string, std::vector<const model::Pod*>, std::less<>>;
Consumers IndexConsumers(const std::vector<const model::Pod*>& pods);

}  // namespace tidepool::autoscaler
