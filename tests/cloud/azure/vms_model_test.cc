// azure-vms bodies (vms_model.h): what a new VM and NIC are made from, copied from a VM of the
// pool or built from the config's model, and what a VM's removal deletes. Pure; no FakeArm.
#include "cloud/azure/vms_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tidepool::cloud::azure {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const std::string kSub = "/subscriptions/s/resourceGroups/rg/providers/";

TEST(VmsModelTest, Base64PadsLikeRfc4648) {
  EXPECT_EQ(EncodeBase64(""), "");
  EXPECT_EQ(EncodeBase64("f"), "Zg==");
  EXPECT_EQ(EncodeBase64("fo"), "Zm8=");
  EXPECT_EQ(EncodeBase64("foo"), "Zm9v");
  EXPECT_EQ(EncodeBase64("foob"), "Zm9vYg==");
  EXPECT_EQ(EncodeBase64(std::string("\xff\x00", 2)), "/wA=");
}

TEST(VmsModelTest, PoolTagsAddThePoolsOwnToTheGivenOnes) {
  json tags = PoolTags({{"orchestrator", "Kubernetes:1.30"}, {"poolName", "old"}}, "gpu",
                       "agentpool2", "12345678");
  EXPECT_EQ(tags, json({{"orchestrator", "Kubernetes:1.30"},
                        {"poolName", "agentpool2"},
                        {"resourceNameSuffix", "12345678"},
                        {"tidepool.dev/pool", "gpu"}}));
}

TEST(VmsModelTest, PrimaryNicIsTheOneMarkedPrimaryElseTheFirst) {
  json two = json::parse(R"({"properties": {"networkProfile": {"networkInterfaces": [
      {"id": "nic-a"}, {"id": "nic-b", "properties": {"primary": true}}]}}})");
  EXPECT_EQ(PrimaryNicId(two), "nic-b");
  json unmarked = {
      {"properties",
       {{"networkProfile", {{"networkInterfaces", {{{"id", "nic-a"}}, {{"id", "nic-b"}}}}}}}}};
  EXPECT_EQ(PrimaryNicId(unmarked), "nic-a");
  EXPECT_EQ(PrimaryNicId(json::object()), "");
  EXPECT_EQ(PrimaryNicId({{"properties", {{"networkProfile", "oops"}}}}), "");
}

json SourceVm() {
  return {{"name", "k8s-agentpool1-12345678-2"},
          {"location", "westus"},
          {"zones", {"2"}},
          {"tags", {{"poolName", "agentpool1"}}},
          {"properties",
           {{"vmId", "0000"},
            {"provisioningState", "Succeeded"},
            {"hardwareProfile", {{"vmSize", "Standard_D2_v2"}}},
            {"storageProfile",
             {{"imageReference",
               {{"publisher", "Canonical"},
                {"offer", "ubuntu"},
                {"sku", "22_04"},
                {"exactVersion", "1.2.3"}}},
              {"osDisk",
               {{"name", "k8s-agentpool1-12345678-2_OsDisk_1_ab"},
                {"diskSizeGB", 64},
                {"managedDisk", {{"id", kSub + "Microsoft.Compute/disks/d2"}}}}}}},
            {"osProfile",
             {{"computerName", "k8s-agentpool1-12345678-2"}, {"adminUsername", "azureuser"}}},
            {"availabilitySet",
             {{"id", kSub + "Microsoft.Compute/availabilitySets/as1"}, {"extra", 1}}},
            {"userData", "Ym9vdA=="}}}};
}

json SourceNic() {
  return {{"name", "k8s-agentpool1-12345678-nic-2"},
          {"properties",
           {{"enableIPForwarding", true},
            {"macAddress", "00-11"},
            {"ipConfigurations",
             {{{"name", "ipconfig1"},
               {"properties",
                {{"primary", true},
                 {"privateIPAddress", "10.0.0.5"},
                 {"privateIPAllocationMethod", "Static"},
                 {"subnet", {{"id", kSub + "Microsoft.Network/virtualNetworks/v/subnets/a"}}},
                 {"loadBalancerBackendAddressPools", {{{"id", "lb-pool"}, {"name", "x"}}}}}}}}}}}};
}

TEST(VmsModelTest, ACloneKeepsTheWritablePartsAndDropsTheRest) {
  json tags = {{"tidepool.dev/pool", "cpu"}};
  NewVmBodies b = BodiesFromClone(SourceVm(), SourceNic(), tags, nullptr);
  // NIC: a dynamic address in the same subnet and backend pool; the location falls back to the
  // VM's when the NIC has none.
  EXPECT_EQ(b.nic,
            json({{"location", "westus"},
                  {"tags", tags},
                  {"properties",
                   {{"enableIPForwarding", true},
                    {"ipConfigurations",
                     {{{"name", "ipconfig1"},
                       {"properties",
                        {{"primary", true},
                         {"privateIPAllocationMethod", "Dynamic"},
                         {"subnet",
                          {{"id", kSub + "Microsoft.Network/virtualNetworks/v/"
                                         "subnets/a"}}},
                         {"loadBalancerBackendAddressPools", {{{"id", "lb-pool"}}}}}}}}}}}}));
  // VM: no ids, names, state or disk id; a managed OS disk from the same image.
  const json& p = b.vm["properties"];
  EXPECT_EQ(b.vm["location"], "westus");
  EXPECT_EQ(b.vm["zones"], json({"2"}));
  EXPECT_EQ(b.vm["tags"], tags);
  EXPECT_FALSE(p.contains("vmId"));
  EXPECT_FALSE(p.contains("provisioningState"));
  EXPECT_EQ(p["hardwareProfile"], json({{"vmSize", "Standard_D2_v2"}}));
  EXPECT_EQ(p["storageProfile"]["imageReference"],
            json({{"publisher", "Canonical"}, {"offer", "ubuntu"}, {"sku", "22_04"}}));
  EXPECT_EQ(p["storageProfile"]["osDisk"],
            json({{"createOption", "FromImage"},
                  {"caching", "ReadWrite"},
                  {"diskSizeGB", 64},
                  {"managedDisk", {{"storageAccountType", "Standard_LRS"}}}}));
  EXPECT_EQ(p["osProfile"], json({{"adminUsername", "azureuser"}}));
  EXPECT_EQ(p["availabilitySet"], json({{"id", kSub + "Microsoft.Compute/availabilitySets/as1"}}));
  EXPECT_EQ(p["userData"], "Ym9vdA==");
}

TEST(VmsModelTest, ConfigOverridesReplaceSizeSubnetAndAvailabilitySet) {
  VmModel m;
  m.vm_size = "Standard_NC6s_v3";
  m.subnet_id = kSub + "Microsoft.Network/virtualNetworks/v/subnets/gpu";
  m.availability_set_id = kSub + "Microsoft.Compute/availabilitySets/as-gpu";
  json nic = SourceNic();
  nic["location"] = "eastus";
  NewVmBodies b = BodiesFromClone(SourceVm(), nic, json::object(), &m);
  EXPECT_EQ(b.nic["location"], "eastus");
  EXPECT_EQ(b.nic["properties"]["ipConfigurations"][0]["properties"]["subnet"]["id"], m.subnet_id);
  EXPECT_EQ(b.vm["properties"]["hardwareProfile"]["vmSize"], "Standard_NC6s_v3");
  EXPECT_EQ(b.vm["properties"]["availabilitySet"], json({{"id", m.availability_set_id}}));
}

VmModel CompleteModel() {
  VmModel m;
  m.image_publisher = "Canonical";
  m.image_offer = "ubuntu";
  m.image_sku = "22_04";
  m.subnet_id = kSub + "Microsoft.Network/virtualNetworks/v/subnets/a";
  m.admin_username = "azureuser";
  m.ssh_public_key_file = "key.pub";
  m.custom_data_file = "boot.sh";
  return m;
}

TEST(VmsModelTest, CheckConfigModelNamesTheFirstMissingField) {
  const std::string key = "provider.models.cpu";
  EXPECT_TRUE(CheckConfigModel(CompleteModel(), "Standard_D2_v2", key, "cpu").has_value());
  struct Case {
    void (*clear)(VmModel&);
    std::string_view size;
    std::string message;
  };
  const Case cases[] = {
      {[](VmModel&) {}, "",
       "provider.models.cpu.vmSize: required to create pool cpu's first VM (or the pool's "
       "instanceType)"},
      {[](VmModel& m) { m.image_publisher.clear(); }, "D2",
       "provider.models.cpu.imageReference: required to create pool cpu's first VM "
       "(publisher/offer/sku or id)"},
      {[](VmModel& m) { m.subnet_id.clear(); }, "D2",
       "provider.models.cpu.subnetId: required to create pool cpu's first VM (the subnet's "
       "resource id)"},
      {[](VmModel& m) { m.admin_username.clear(); }, "D2",
       "provider.models.cpu.adminUsername: required to create pool cpu's first VM (the VM's "
       "admin user)"},
      {[](VmModel& m) { m.ssh_public_key_file.clear(); }, "D2",
       "provider.models.cpu.sshPublicKeyFile: required to create pool cpu's first VM (an "
       "OpenSSH public key)"},
      {[](VmModel& m) { m.custom_data_file.clear(); }, "D2",
       "provider.models.cpu.customDataFile: required to create pool cpu's first VM (the "
       "bootstrap that joins the VM to the cluster)"},
  };
  for (const Case& c : cases) {
    VmModel m = CompleteModel();
    c.clear(m);
    auto r = CheckConfigModel(m, c.size, key, "cpu");
    ASSERT_FALSE(r.has_value()) << c.message;
    EXPECT_EQ(r.error().code(), Error::Code::kInvalidArgument);
    EXPECT_EQ(r.error().message(), c.message);
  }
}

TEST(VmsModelTest, BodiesFromConfigBuildAMarketplaceVmWithSshOnlyLogin) {
  VmModel m = CompleteModel();
  m.availability_set_id = kSub + "Microsoft.Compute/availabilitySets/as1";
  ConfigModelInputs in{.vm_size = "Standard_D2_v2",
                       .location = "westus",
                       .tags = {{"tidepool.dev/pool", "cpu"}},
                       .ssh_key = "ssh-ed25519 AAAA me\r\n",
                       .custom_data = "foo"};
  NewVmBodies b = BodiesFromConfig(m, in);
  EXPECT_EQ(b.nic["location"], "westus");
  EXPECT_EQ(b.nic["properties"]["enableIPForwarding"], false);
  EXPECT_EQ(b.nic["properties"]["ipConfigurations"],
            json::parse(R"([{"name": "ipconfig1", "properties": {"primary": true,
                "privateIPAllocationMethod": "Dynamic", "subnet": {"id": ")" +
                        m.subnet_id + R"("}}}])"));
  const json& p = b.vm["properties"];
  EXPECT_EQ(p["storageProfile"]["imageReference"], json({{"publisher", "Canonical"},
                                                         {"offer", "ubuntu"},
                                                         {"sku", "22_04"},
                                                         {"version", "latest"}}));
  EXPECT_EQ(p["storageProfile"]["osDisk"]["managedDisk"]["storageAccountType"], "Standard_LRS");
  EXPECT_EQ(p["osProfile"]["customData"], "Zm9v");
  const json& linux_config = p["osProfile"]["linuxConfiguration"];
  EXPECT_EQ(linux_config["disablePasswordAuthentication"], true);
  EXPECT_EQ(
      linux_config["ssh"]["publicKeys"][0],
      json({{"path", "/home/azureuser/.ssh/authorized_keys"}, {"keyData", "ssh-ed25519 AAAA me"}}));
  EXPECT_EQ(p["availabilitySet"], json({{"id", m.availability_set_id}}));
}

TEST(VmsModelTest, BodiesFromConfigUseAnImageIdAsIs) {
  VmModel m = CompleteModel();
  m.image_publisher.clear();
  m.image_id = kSub + "Microsoft.Compute/galleries/g/images/i";
  NewVmBodies b = BodiesFromConfig(m, {.vm_size = "D2", .location = "westus"});
  EXPECT_EQ(b.vm["properties"]["storageProfile"]["imageReference"], json({{"id", m.image_id}}));
  EXPECT_FALSE(b.vm["properties"].contains("availabilitySet"));
}

TEST(VmsModelTest, NameNewVmSetsTheNamesAndTheOneNic) {
  json vm = {{"properties", {{"storageProfile", {{"osDisk", {{"caching", "ReadWrite"}}}}}}}};
  NameNewVm(vm, "k8s-a-1-4", "k8s-a-1-4-osdisk", "nic-id");
  EXPECT_EQ(vm["properties"]["osProfile"]["computerName"], "k8s-a-1-4");
  EXPECT_EQ(vm["properties"]["storageProfile"]["osDisk"],
            json({{"caching", "ReadWrite"}, {"name", "k8s-a-1-4-osdisk"}}));
  EXPECT_EQ(vm["properties"]["networkProfile"],
            json::parse(R"({"networkInterfaces": [{"id": "nic-id",
                "properties": {"primary": true}}]})"));
}

TEST(VmsModelTest, ResourcesOfAVmListItsNicsAndDisk) {
  json vm = SourceVm();
  vm["properties"]["networkProfile"] = {
      {"networkInterfaces",
       {{{"id", "nic-a"}}, {{"properties", json::object()}}, {{"id", "nic-b"}}}}};
  VmResources r = ResourcesOf(vm);
  EXPECT_EQ(r.name, "k8s-agentpool1-12345678-2");
  EXPECT_EQ(r.nics, (std::vector<std::string>{"nic-a", "nic-b"}));  // the one without id skipped
  EXPECT_EQ(r.disk, kSub + "Microsoft.Compute/disks/d2");
  EXPECT_EQ(r.vhd_uri, "");
}

TEST(VmsModelTest, ResourcesOfAVmWithAVhdOrNothing) {
  json vm = {{"name", "v"},
             {"properties",
              {{"storageProfile", {{"osDisk", {{"vhd", {{"uri", "https://a/c/v.vhd"}}}}}}}}}};
  VmResources r = ResourcesOf(vm);
  EXPECT_EQ(r.disk, "");
  EXPECT_EQ(r.vhd_uri, "https://a/c/v.vhd");
  VmResources none = ResourcesOf(json::object());
  EXPECT_EQ(none.name, "");
  EXPECT_TRUE(none.nics.empty());
}

}  // namespace
}  // namespace tidepool::cloud::azure
