// FakeArm: an in-process Azure Resource Manager + Azure AD + IMDS on 127.0.0.1 for the Azure
// provider tests, answering with the official example payloads (../shared/azure-arm-examples).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/time.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace tidepool::testing::azure {

// A VM that came up in (or went from) a scale set or agent pool. What a kubelet on it would
// register: Node `node_name` with spec.providerID `provider_id`, labels from the scale set's
// tags / agent pool profile.
struct InstanceEvent {
  std::string scale_set;    // the VMSS (for AKS: aks-<agentpool>-12345678-vmss)
  std::string instance_id;  // "3"
  std::string provider_id;  // azure:///subscriptions/.../virtualMachines/3
  std::string node_name;    // the computer name: <computerNamePrefix>00000<base36> / AKS machine
  std::string vm_size;
  bool spot = false;
  std::string agent_pool;                     // AKS only
  std::map<std::string, std::string> labels;  // poolName / node-template tags, nodeLabels
};

struct FakeArmOptions {
  std::string shared_dir;  // the folder holding azure-arm-examples/
  std::string subscription = "00000000-0000-0000-0000-000000000000";
  std::string resource_group = "rg1";
  std::string location = "westus";
  std::string tenant = "tenant-1";
  std::string client_id = "client-1";
  std::string client_secret = "s3cr3t-value-never-logged";
  std::string federated_token = "federated-jwt-assertion";
  Duration token_lifetime = std::chrono::hours(1);
  Duration retry_after = std::chrono::seconds(2);  // on 202s and in-progress operation status
  size_t page_size = 50;                           // list items per page (nextLink beyond)
  const Clock* clock = nullptr;                    // token expiry; required, thread-safe
  int port = 0;  // the port to listen on (127.0.0.1); 0: any free one
};

// One request as received (for counting and for checking that secrets stay out of URLs).
struct RecordedRequest {
  std::string method;
  std::string path;
  std::string query;  // raw, without '?'
  std::string body;
  std::map<std::string, std::string> headers;  // as received
  bool blob = false;  // sent to the blob endpoint (blob_endpoint()), not to ARM
};

struct ScaleSetSpec {
  std::string name;
  std::string sku = "Standard_D2_v2";
  int capacity = 0;
  bool spot = false;
  std::map<std::string, std::string> tags;
};

// A standalone VM of an availability-set pool (azure-vms), seeded with its NIC and managed OS
// disk, as acs-engine / aks-engine create them.
struct VmSpec {
  std::string name;  // k8s-agentpool1-12345678-0
  std::string vm_size = "Standard_D2_v2";
  std::map<std::string, std::string> tags;  // poolName, orchestrator, resourceNameSuffix; also
                                            // put on the NIC and the disk
  std::string availability_set;             // its name ("" none); created when missing
  std::string subnet = "agent-subnet";      // of virtual network k8s-vnet
  std::string nic;        // default: k8s-<pool>-<id>-nic-<n> for a k8s-<pool>-<id>-<n> VM
  std::string os_disk;    // default: <name>_OsDisk_1_<id>, Azure's name for an unnamed OS disk
  std::string user_data;  // base64, "" none
  std::string provisioning = "Succeeded";
  // An unmanaged OS disk: storageProfile.osDisk.vhd.uri instead of a managed disk (no disk
  // resource is made). Use AddBlob to make the blob it names exist.
  std::string vhd_uri;
};

// A NIC or managed disk on its own (leftovers and unrelated resources).
struct NicSpec {
  std::string name;
  std::map<std::string, std::string> tags;
  std::string attached_vm;  // the VM name in properties.virtualMachine ("" none)
  std::string subnet = "agent-subnet";
};
struct DiskSpec {
  std::string name;
  std::map<std::string, std::string> tags;
  std::string attached_vm;  // managedBy and diskState Attached ("" Unattached)
};

struct AgentPoolSpec {
  std::string name;
  std::string vm_size = "Standard_D2_v2";
  int count = 0;
  bool spot = false;
  bool enable_autoscaling = false;
  std::map<std::string, std::string> node_labels;
  std::vector<std::string> node_taints;  // "key=value:Effect"
  std::string scale_down_mode;           // properties.scaleDownMode; "" unset (AKS: Delete)
};

// Behaviour, in short:
//  - Auth: POST /{tenant}/oauth2/v2.0/token (client secret or federated assertion) and
//    GET /metadata/identity/oauth2/token (IMDS, needs "Metadata: true") issue opaque tokens
//    valid for token_lifetime on the injected clock. ARM calls need a live token: unknown -> 401
//    InvalidAuthenticationToken, expired -> 401 ExpiredAuthenticationToken.
//  - Scale sets: GET (with an etag), PATCH sku.capacity (If-Match checked: 412 on mismatch),
//    list, VM list with instance view, POST /delete with instanceIds. POST /deallocate and
//    /start with instanceIds (VirtualMachineScaleSets_Deallocate / _Start: 202 + Location) move
//    instances to power state deallocating -> deallocated (OnInstanceDeleted fires: the kubelet
//    is gone) and starting -> running (OnInstanceCreated fires again); the capacity keeps them.
//    Instances come up at once as Succeeded unless a scale-up was scripted to fail; writes answer
//    200 + Azure-AsyncOperation (PATCH) or 202 + Location (delete) whose status resources report
//    InProgress `operation_polls` times, then the outcome.
//  - AKS: agent pool GET / list / PUT (count, If-Match on eTag), machines list, deleteMachines.
//    The agent pool's VMs live in a scale set aks-<pool>-12345678-vmss (machines' resourceId),
//    reachable through the scale set routes too. scaleDownMode (docs/azure.md, "Stopped
//    machines", the reading tidepool documents): count is the machines AKS keeps running; a PUT
//    brings them to count: with Deallocate by starting deallocated instances first (newest
//    first; FailNextStart applies) then creating, or by deallocating the highest ids; with Delete
//    (or unset) by deleting every deallocated instance and resizing. Deallocating an instance
//    through the scale set API leaves count as it is; deleteMachines lowers it by the machines
//    deleted that were not deallocated.
//  - Standalone VMs (azure-vms): virtualMachines list / GET ($expand=instanceView, userData) /
//    PUT (the NIC must exist and be free; creates the managed OS disk and attaches both) /
//    DELETE (detaches the NIC and disk when done); networkInterfaces list / GET / PUT / DELETE
//    (400 NicInUse while attached); disks list / GET / DELETE (409 while attached);
//    availabilitySets GET. Writes answer 201 + Azure-AsyncOperation (PUT) or 202 + Location
//    (DELETE), as the VM and NIC examples of the REST specs; a missing resource's DELETE is 404.
//    GET never returns osProfile.customData (ARM does not). POST .../deallocate and .../start
//    (VirtualMachines_Deallocate / _Start: 202 + Location) move a VM to power state
//    deallocating -> deallocated (its OS disk Reserved, its NIC still attached; OnInstanceDeleted
//    fires) and starting -> running (OnInstanceCreated fires again); the instance view shows
//    PowerState/<power>.
//  - Blob storage (VHDs of unmanaged OS disks), on its own origin blob_endpoint():
//    DELETE /<container>/<blob> needs a live token issued for https://storage.azure.com/ (an ARM
//    token gets 401 InvalidAuthenticationInfo, as ARM refuses storage tokens with 401
//    InvalidAuthenticationTokenAudience), x-ms-version >= 2017-11-09 and x-ms-date (else 400).
//    202 deletes it; 404 BlobNotFound when absent; 409 LeaseIdMissing while a VM's
//    osDisk.vhd.uri names it, or once after LeaseBlobOnce. Errors are XML with x-ms-error-code.
//  - Faults are scripted with the methods below; each applies to the next matching request(s).
// Thread-safety: all methods may be called from any thread while the server runs. Hooks are
// called on a server thread after the state changed, with no FakeArm lock held, so they may call
// FakeArm's methods; the HTTP answer waits for them.
class FakeArm {
 public:
  static Result<std::unique_ptr<FakeArm>> Start(FakeArmOptions options);
  ~FakeArm();

  std::string endpoint() const;       // "http://127.0.0.1:<port>"
  std::string imds_endpoint() const;  // endpoint() + "/metadata/identity/oauth2/token"
  std::string blob_endpoint() const;  // "http://127.0.0.1:<another port>": the storage account
  const FakeArmOptions& options() const { return options_; }

  // --- State.
  void AddScaleSet(const ScaleSetSpec& spec);
  int Capacity(const std::string& scale_set) const;
  std::vector<std::string> InstanceIds(const std::string& scale_set) const;
  std::string InstanceState(const std::string& scale_set, const std::string& id) const;
  void AddManagedCluster(const std::string& name);
  void AddAgentPool(const std::string& cluster, const AgentPoolSpec& spec);
  int AgentPoolCount(const std::string& cluster, const std::string& agent_pool) const;
  std::vector<std::string> MachineNames(const std::string& cluster,
                                        const std::string& agent_pool) const;
  // Standalone VMs, NICs, disks (azure-vms).
  void AddVm(const VmSpec& spec);
  void AddNic(const NicSpec& spec);
  void AddDisk(const DiskSpec& spec);
  void AddAvailabilitySet(const std::string& name);
  std::vector<std::string> VmNames() const;  // sorted
  std::vector<std::string> NicNames() const;
  std::vector<std::string> DiskNames() const;
  std::string VmState(const std::string& name) const;  // provisioningState, "" when absent
  std::string VmPower(const std::string& name) const;  // running, deallocated, ...; "" absent
  // Blobs ("<container>/<name>"). AddBlob returns its URI (blob_endpoint()/<container>/<name>).
  std::string AddBlob(const std::string& container, const std::string& name);
  std::vector<std::string> BlobNames() const;  // sorted "<container>/<name>"
  // The next DELETE of this blob answers 409 LeaseIdMissing (a lease not released yet).
  void LeaseBlobOnce(const std::string& container, const std::string& name);
  // Removes the NIC or disk of this name without an API call (someone else deleted it).
  void ForgetNicOrDisk(const std::string& name);
  // The body of the last PUT of this VM / NIC (what the provider sent); null when none.
  nlohmann::json VmPutBody(const std::string& name) const;
  nlohmann::json NicPutBody(const std::string& name) const;
  // The resource id of a subnet of virtual network k8s-vnet in the resource group.
  std::string SubnetId(const std::string& subnet) const;
  std::string AvailabilitySetId(const std::string& name) const;
  // Sets an agent pool's provisioning state and status.provisioningError (AKS's view of a
  // failed scale).
  void FailAgentPool(const std::string& cluster, const std::string& agent_pool,
                     const std::string& code, const std::string& message);

  // --- Faults.
  void ThrottleNext(int requests, int retry_after_seconds);  // next ARM requests: 429
  void ConflictNextWrite(const std::string& code, const std::string& message);  // 409
  void EtagMismatchNextWrite();  // the resource changes under the next If-Match write: 412
  // The next capacity increase (VMSS PATCH or agent pool PUT) provisions Failed instances with
  // this code and its operation ends Failed with it. `instances` > 0: only that many of the new
  // instances fail (the first ones); the others are created as usual (a partial scale-up).
  void FailNextScaleUp(const std::string& code, const std::string& message, int instances = 0);
  // The next VM PUT is accepted (201) but its operation ends Failed with this code, and the VM
  // is left provisioningState Failed with a ProvisioningState/failed/<code> status.
  void FailNextVmCreate(const std::string& code, const std::string& message);
  // The next start's operation (of a scale set's instances or of a standalone VM) ends Failed
  // with this code; its instances / VM are left provisioningState Failed
  // (ProvisioningState/failed/<code>) and deallocated.
  void FailNextStart(const std::string& code, const std::string& message);
  // An instance's power state ("running", "deallocated", ...; "" when absent).
  std::string InstancePower(const std::string& scale_set, const std::string& id) const;
  // The next DELETE whose path contains `path_part` answers `status` (500: InternalServerError).
  void FailNextDelete(const std::string& path_part, int status = 500);
  void SetOperationPolls(int polls);  // status answers InProgress this many times first
  void ExpireAllTokens();             // every token issued so far is now expired
  // A spot VM evicted with evictionPolicy Delete: the instance disappears and the capacity
  // drops by one, without any API call.
  void EvictSpotInstance(const std::string& scale_set, const std::string& instance_id);

  // --- Hooks (one each; setting again replaces).
  void OnInstanceCreated(std::function<void(const InstanceEvent&)> hook);
  void OnInstanceDeleted(std::function<void(const InstanceEvent&)> hook);

  // --- Extra routes (for the standalone fake, fake_arm_main.cc): a request whose path starts
  // with `prefix` goes to `handler` instead of ARM; it needs no token and is not recorded. The
  // handler runs on a server thread with no FakeArm lock held, so it may call FakeArm's methods.
  using RawHandler = std::function<void(const httplib::Request&, httplib::Response&)>;
  void AddRoute(std::string prefix, RawHandler handler);

  // --- What was asked.
  std::vector<RecordedRequest> requests() const;
  // Requests whose method equals `method` ("" any) and whose path contains `path_part`.
  int CountRequests(std::string_view method, std::string_view path_part) const;
  int token_requests() const;

 private:
  struct Instance {
    std::string id;
    std::string provisioning;  // Creating, Succeeded, Failed, Deleting
    std::string error_code;
    std::string error_message;
    bool announced = false;         // OnInstanceCreated fired
    std::string power = "running";  // PowerState/<power> once Succeeded
  };
  struct ScaleSet {
    ScaleSetSpec spec;
    int capacity = 0;
    int next_id = 0;
    int etag = 1;
    std::vector<Instance> instances;
    std::string agent_pool;  // AKS-owned
    std::string cluster;
  };
  struct AgentPool {
    AgentPoolSpec spec;
    int count = 0;  // properties.count
    int etag = 1;
    std::string scale_set;
    std::string provisioning = "Succeeded";
    std::string error_code;
    std::string error_message;
  };
  struct Vm {
    nlohmann::json body;  // as GET returns it, without instanceView
    std::string error_code;
    std::string error_message;
    nlohmann::json put_body;
    bool announced = false;
    std::string power = "running";  // PowerState/<power> once Succeeded
  };
  struct Op {
    int polls_left = 0;
    bool failed = false;
    std::string code;
    std::string message;
    std::string scale_set;
    std::vector<std::string> creating;  // instance ids to finish when the op ends
    std::vector<std::string> deleting;
    std::vector<std::string> deallocating;  // instance ids: deallocated when the op ends
    std::vector<std::string> starting;      // instance ids: running (or Failed) when it ends
    std::string vm_create;  // azure-vms: lower-case names of what finishes with the op
    std::string vm_delete;
    std::string nic_create;
    std::string nic_delete;
    std::string disk_delete;
    std::string vm_deallocate;  // azure-vms: lower-case VM name: deallocated when the op ends
    std::string vm_start;       // running (or Failed) when it ends
  };
  using Events = std::vector<std::pair<bool, InstanceEvent>>;  // (created?, event)

  explicit FakeArm(FakeArmOptions options);
  void Handle(const httplib::Request& req, httplib::Response& res);
  void HandleToken(const httplib::Request& req, httplib::Response& res);
  void HandleImds(const httplib::Request& req, httplib::Response& res);
  void HandleBlob(const httplib::Request& req, httplib::Response& res);
  // ARM routes; called with mu_ held. Events to announce are appended to `events`.
  void Route(const httplib::Request& req, httplib::Response& res, Events& events);
  void RouteCompute(const std::vector<std::string>& seg, const httplib::Request& req,
                    httplib::Response& res, Events& events);
  void RouteAks(const std::vector<std::string>& seg, const httplib::Request& req,
                httplib::Response& res, Events& events);
  void RouteOperation(const std::string& id, bool location_style, httplib::Response& res,
                      Events& events);
  void RouteVms(const std::vector<std::string>& seg, const httplib::Request& req,
                httplib::Response& res, Events& events);
  void RouteNics(const std::vector<std::string>& seg, const httplib::Request& req,
                 httplib::Response& res, Events& events);
  void RouteDisks(const std::vector<std::string>& seg, const httplib::Request& req,
                  httplib::Response& res, Events& events);
  // POST .../virtualMachines/<vm>/deallocate or /start (fake_arm_vms.cc).
  void VmPowerAction(Vm& vm, bool start, httplib::Response& res, Events& events);
  void FinishVmPower(Op& op, Events& events);
  nlohmann::json StandaloneVmJson(const Vm& vm, bool instance_view, bool user_data) const;
  nlohmann::json NicJson(const std::string& name, const std::map<std::string, std::string>& tags,
                         const std::string& subnet, const std::string& attached_vm) const;
  InstanceEvent VmEventFor(const Vm& vm) const;
  // The headers of a 201/202 answer pointing at this server's operation resources, with the
  // provider's api-version: Azure-AsyncOperation, Location, or both (AKS agent pools).
  enum class AsyncStyle { kAsyncOperation, kLocation, kBoth };
  void AsyncHeaders(httplib::Response& res, const std::string& op, const std::string& provider,
                    AsyncStyle style) const;
  std::string Id(const std::string& provider_type, const std::string& name) const;

  nlohmann::json Example(const std::string& relative) const;  // responses.*.body of a file
  nlohmann::json ScaleSetJson(const ScaleSet& ss) const;
  nlohmann::json VmJson(const ScaleSet& ss, const Instance& in) const;
  nlohmann::json AgentPoolJson(const std::string& cluster, const AgentPool& ap) const;
  nlohmann::json MachineJson(const ScaleSet& ss, const Instance& in) const;
  void SendList(const httplib::Request& req, httplib::Response& res,
                const std::vector<nlohmann::json>& items) const;
  static void SendError(httplib::Response& res, int status, const std::string& code,
                        const std::string& message);

  // Capacity changes; events collected for the hooks.
  // Returns an op id; the op also carries what `op` already holds (starts, deallocations).
  std::string Resize(ScaleSet& ss, int capacity, Events& events);
  std::string Resize(ScaleSet& ss, int capacity, Events& events, Op op);
  // An agent pool PUT's count under its scaleDownMode (fake_arm_aks.cc); returns an op id.
  std::string ScaleAgentPool(AgentPool& ap, ScaleSet& ss, int count, Events& events);
  std::string StartOp(Op op, Events& events);
  // When a fault (code, message) is scripted: `op` ends Failed with it, and the fault is used up.
  static void TakeFault(std::optional<std::pair<std::string, std::string>>& fault, Op& op);
  void FinishOp(Op& op, Events& events);
  void RemoveInstances(ScaleSet& ss, const std::vector<std::string>& ids, Events& events);
  // The instances a POST body {"instanceIds": [...]} names (a Deleting one only when
  // `deleting_ok`), or nullopt after answering 400 / 404 (fake_arm_vmss.cc).
  std::optional<std::vector<Instance*>> RequestedInstances(ScaleSet& ss,
                                                           const httplib::Request& req,
                                                           httplib::Response& res,
                                                           bool deleting_ok);
  // POST /deallocate or /start of a scale set's instances (fake_arm_vmss.cc).
  void PowerAction(ScaleSet& ss, bool start, const httplib::Request& req, httplib::Response& res,
                   Events& events);
  void FinishPower(ScaleSet& ss, Op& op, Events& events);
  InstanceEvent EventFor(const ScaleSet& ss, const Instance& in) const;
  void Announce(const Events& events);
  std::string ResourceGroupPath() const;

  FakeArmOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::unique_ptr<httplib::Server> blob_server_;
  std::thread blob_thread_;
  int blob_port_ = 0;

  mutable std::mutex mu_;
  std::map<std::string, ScaleSet> scale_sets_;                   // by lower-case name
  std::map<std::string, std::map<std::string, AgentPool>> aks_;  // cluster -> pools
  std::map<std::string, Vm> vms_;                                // by lower-case name
  std::map<std::string, nlohmann::json> nics_;                   // by lower-case name
  std::map<std::string, nlohmann::json> nic_puts_;
  std::map<std::string, nlohmann::json> disks_;  // by lower-case name
  std::map<std::string, nlohmann::json> availability_sets_;
  std::optional<std::pair<std::string, std::string>> fail_next_vm_create_;
  std::optional<std::pair<std::string, std::string>> fail_next_start_;
  std::optional<std::pair<std::string, int>> fail_next_delete_;
  int next_vm_id_ = 1;
  std::map<std::string, Op> ops_;
  int next_op_ = 1;
  std::map<std::string, Time> tokens_;                 // token -> expiry
  std::map<std::string, std::string> token_audience_;  // token -> resource it was issued for
  std::set<std::string> blobs_;                        // "<container>/<name>"
  std::set<std::string> leased_once_;                  // blobs whose next DELETE answers 409
  int next_token_ = 1;
  int token_requests_ = 0;
  std::vector<RecordedRequest> requests_;
  int throttle_left_ = 0;
  int throttle_retry_after_ = 0;
  std::optional<std::pair<std::string, std::string>> conflict_next_;
  bool etag_mismatch_next_ = false;
  std::optional<std::pair<std::string, std::string>> fail_next_scale_up_;
  int fail_next_scale_up_instances_ = 0;  // 0: all
  int operation_polls_ = 0;
  std::function<void(const InstanceEvent&)> on_created_;
  std::function<void(const InstanceEvent&)> on_deleted_;
  std::vector<std::pair<std::string, RawHandler>> routes_;
  std::map<std::string, nlohmann::json> examples_;
};

}  // namespace tidepool::testing::azure
