// The GPUs of an Azure VM size as DRA devices: what NVIDIA's DRA driver publishes for each whole
// GPU, so a pool discovered in Azure whose nodes run that driver (instead of the device plugin)
// can grow from zero for pods that ask for GPUs with ResourceClaims (docs/dra.md).
#pragma once

#include <string_view>

#include "cloud/azure/sku.h"
#include "model/pool.h"

namespace tidepool::cloud::azure {

// One GPU model as the driver describes it.
struct GpuSpec {
  std::string_view product_name;  // attribute productName, as nvidia-smi names the model
  std::string_view architecture;  // attribute architecture ("Ampere")
  std::string_view compute;       // attribute cudaComputeCapability, a version ("8.0.0")
  int memory_gib = 0;             // capacity memory
};

// The GPU of `size`, or nullptr when it has none. ND sizes carry the SXM variant of a model,
// NC sizes the PCIe one.
const GpuSpec* GpuSpecOf(const VmSize& size);

// `size`'s GPUs (size.gpus of them, which must be > 0) as devices of `driver`: attributes
// productName, architecture, brand ("Nvidia"), type ("gpu") and cudaComputeCapability, capacity
// memory; names qualified with the driver's name, as the API server stores them.
model::TemplateDevices GpuDevicesOf(const VmSize& size, std::string_view driver);

}  // namespace tidepool::cloud::azure
