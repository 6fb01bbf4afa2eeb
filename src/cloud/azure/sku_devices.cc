#include "cloud/azure/sku_devices.h"

#include <array>
#include <string>

#include "base/check.h"

namespace tidepool::cloud::azure {
namespace {

struct Row {
  std::string_view gpu_model;  // VmSize::gpu_model
  bool nd = false;             // the ND-series variant (SXM), else NC/NV (PCIe)
  GpuSpec spec;
};

// Product names as nvidia-smi reports them on these sizes; architecture, compute capability and
// memory per GPU from NVIDIA's data sheets.
constexpr std::array kGpus = {
    Row{"K80", false, {"Tesla K80", "Kepler", "3.7.0", 12}},
    Row{"M60", false, {"Tesla M60", "Maxwell", "5.2.0", 8}},
    Row{"P100", false, {"Tesla P100-PCIE-16GB", "Pascal", "6.0.0", 16}},
    Row{"P40", true, {"Tesla P40", "Pascal", "6.1.0", 24}},
    Row{"V100", false, {"Tesla V100-PCIE-16GB", "Volta", "7.0.0", 16}},
    Row{"V100-32GB", true, {"Tesla V100-SXM2-32GB", "Volta", "7.0.0", 32}},
    Row{"T4", false, {"Tesla T4", "Turing", "7.5.0", 16}},
    Row{"A10", false, {"NVIDIA A10", "Ampere", "8.6.0", 24}},
    Row{"A100", true, {"NVIDIA A100-SXM4-40GB", "Ampere", "8.0.0", 40}},
    Row{"A100-80GB", false, {"NVIDIA A100 80GB PCIe", "Ampere", "8.0.0", 80}},
    Row{"A100-80GB", true, {"NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", 80}},
    Row{"H100", false, {"NVIDIA H100 NVL", "Hopper", "9.0.0", 94}},
    Row{"H100", true, {"NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 80}},
};

model::DeviceAttribute Text(std::string_view v, model::DeviceAttribute::Kind kind) {
  model::DeviceAttribute a;
  a.kind = kind;
  a.text = std::string(v);
  return a;
}

}  // namespace

const GpuSpec* GpuSpecOf(const VmSize& size) {
  if (size.gpus <= 0) return nullptr;
  const bool nd = size.name.starts_with("Standard_ND");  // the table's spelling
  for (const Row& r : kGpus) {
    if (r.gpu_model == size.gpu_model && r.nd == nd) return &r.spec;
  }
  for (const Row& r : kGpus) {  // a model only one series has (P40 is ND only, A10 NV only)
    if (r.gpu_model == size.gpu_model) return &r.spec;
  }
  return nullptr;
}

model::TemplateDevices GpuDevicesOf(const VmSize& size, std::string_view driver) {
  const GpuSpec* spec = GpuSpecOf(size);
  TIDEPOOL_CHECK(spec != nullptr);
  using Kind = model::DeviceAttribute::Kind;
  const std::string d(driver);
  model::TemplateDevices out;
  out.driver = d;
  out.count = size.gpus;
  out.attributes[d + "/type"] = Text("gpu", Kind::kString);
  out.attributes[d + "/brand"] = Text("Nvidia", Kind::kString);
  out.attributes[d + "/productName"] = Text(spec->product_name, Kind::kString);
  out.attributes[d + "/architecture"] = Text(spec->architecture, Kind::kString);
  out.attributes[d + "/cudaComputeCapability"] = Text(spec->compute, Kind::kVersion);
  out.capacity[d + "/memory"] = model::Quantity::FromUnits(int64_t{spec->memory_gib} << 30,
                                                           model::Quantity::Format::kBinarySI);
  return out;
}

}  // namespace tidepool::cloud::azure
