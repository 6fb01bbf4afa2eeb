#include "cloud/azure/sku.h"

#include <array>
#include <cmath>

#include "cloud/azure/url.h"

namespace tidepool::cloud::azure {
namespace {

// Figures: vCPUs and memory (GiB) as the Azure VM size pages list them
// (learn.microsoft.com/azure/virtual-machines/sizes/..., one page per series: Dv2, Dsv3, Dsv5,
// Esv3, Fsv2, NC, NCv2, NCv3, NCasT4_v3, NC_A100_v4, NCads_H100_v5, ND, NDv2, ND_A100_v4,
// NDm_A100_v4, ND_H100_v5, NV, NVv3, NVadsA10_v5), cross-checked against the static SKU list of
// the Kubernetes Cluster Autoscaler's Azure provider for the sizes both have. GPUs are whole
// devices as the NVIDIA device plugin counts them: an NC6 is half a K80 board, which the VM sees
// as one GPU. Fractional-GPU sizes (NVadsA10_v5 below 36 vCPUs, NVv4) are left out: their GPU
// is not an nvidia.com/gpu the scheduler can count.
constexpr std::array kSizes = {
    // General purpose.
    VmSize{"Standard_DS1_v2", 1, 3.5},
    VmSize{"Standard_D1_v2", 1, 3.5},
    VmSize{"Standard_D2_v2", 2, 7},
    VmSize{"Standard_DS2_v2", 2, 7},
    VmSize{"Standard_D3_v2", 4, 14},
    VmSize{"Standard_DS3_v2", 4, 14},
    VmSize{"Standard_D4_v2", 8, 28},
    VmSize{"Standard_DS4_v2", 8, 28},
    VmSize{"Standard_D5_v2", 16, 56},
    VmSize{"Standard_DS5_v2", 16, 56},
    VmSize{"Standard_D2_v3", 2, 8},
    VmSize{"Standard_D4_v3", 4, 16},
    VmSize{"Standard_D8_v3", 8, 32},
    VmSize{"Standard_D16_v3", 16, 64},
    VmSize{"Standard_D2s_v3", 2, 8},
    VmSize{"Standard_D4s_v3", 4, 16},
    VmSize{"Standard_D8s_v3", 8, 32},
    VmSize{"Standard_D16s_v3", 16, 64},
    VmSize{"Standard_D32s_v3", 32, 128},
    VmSize{"Standard_D64s_v3", 64, 256},
    VmSize{"Standard_D2s_v5", 2, 8},
    VmSize{"Standard_D4s_v5", 4, 16},
    VmSize{"Standard_D8s_v5", 8, 32},
    VmSize{"Standard_D16s_v5", 16, 64},
    VmSize{"Standard_D32s_v5", 32, 128},
    VmSize{"Standard_D2ds_v5", 2, 8},
    VmSize{"Standard_D4ds_v5", 4, 16},
    VmSize{"Standard_D8ds_v5", 8, 32},
    VmSize{"Standard_D16ds_v5", 16, 64},
    // Memory optimised.
    VmSize{"Standard_E2s_v3", 2, 16},
    VmSize{"Standard_E4s_v3", 4, 32},
    VmSize{"Standard_E8s_v3", 8, 64},
    VmSize{"Standard_E16s_v3", 16, 128},
    VmSize{"Standard_E32s_v3", 32, 256},
    // Compute optimised.
    VmSize{"Standard_F2s_v2", 2, 4},
    VmSize{"Standard_F4s_v2", 4, 8},
    VmSize{"Standard_F8s_v2", 8, 16},
    VmSize{"Standard_F16s_v2", 16, 32},
    VmSize{"Standard_F32s_v2", 32, 64},
    // NC: K80 (retired by Azure in 2023, still what the source documents ran on).
    VmSize{"Standard_NC6", 6, 56, 1, "K80"},
    VmSize{"Standard_NC12", 12, 112, 2, "K80"},
    VmSize{"Standard_NC24", 24, 224, 4, "K80"},
    VmSize{"Standard_NC24r", 24, 224, 4, "K80"},
    // NCv2: P100.
    VmSize{"Standard_NC6s_v2", 6, 112, 1, "P100"},
    VmSize{"Standard_NC12s_v2", 12, 224, 2, "P100"},
    VmSize{"Standard_NC24s_v2", 24, 448, 4, "P100"},
    // NCv3: V100 16 GB.
    VmSize{"Standard_NC6s_v3", 6, 112, 1, "V100"},
    VmSize{"Standard_NC12s_v3", 12, 224, 2, "V100"},
    VmSize{"Standard_NC24s_v3", 24, 448, 4, "V100"},
    VmSize{"Standard_NC24rs_v3", 24, 448, 4, "V100"},
    // NCasT4_v3: T4.
    VmSize{"Standard_NC4as_T4_v3", 4, 28, 1, "T4"},
    VmSize{"Standard_NC8as_T4_v3", 8, 56, 1, "T4"},
    VmSize{"Standard_NC16as_T4_v3", 16, 110, 1, "T4"},
    VmSize{"Standard_NC64as_T4_v3", 64, 440, 4, "T4"},
    // NC_A100_v4: A100 80 GB PCIe.
    VmSize{"Standard_NC24ads_A100_v4", 24, 220, 1, "A100-80GB"},
    VmSize{"Standard_NC48ads_A100_v4", 48, 440, 2, "A100-80GB"},
    VmSize{"Standard_NC96ads_A100_v4", 96, 880, 4, "A100-80GB"},
    // NCads_H100_v5: H100 NVL.
    VmSize{"Standard_NC40ads_H100_v5", 40, 320, 1, "H100"},
    VmSize{"Standard_NC80adis_H100_v5", 80, 640, 2, "H100"},
    // ND: P40.
    VmSize{"Standard_ND6s", 6, 112, 1, "P40"},
    VmSize{"Standard_ND12s", 12, 224, 2, "P40"},
    VmSize{"Standard_ND24s", 24, 448, 4, "P40"},
    VmSize{"Standard_ND24rs", 24, 448, 4, "P40"},
    // NDv2: 8x V100 32 GB, NVLink.
    VmSize{"Standard_ND40rs_v2", 40, 672, 8, "V100-32GB"},
    // ND A100 v4 (40 GB) and NDm A100 v4 (80 GB): 8x A100, InfiniBand.
    VmSize{"Standard_ND96asr_v4", 96, 900, 8, "A100"},
    VmSize{"Standard_ND96amsr_A100_v4", 96, 1900, 8, "A100-80GB"},
    // ND H100 v5: 8x H100, InfiniBand.
    VmSize{"Standard_ND96isr_H100_v5", 96, 1900, 8, "H100"},
    // NV: M60 (half a board per GPU).
    VmSize{"Standard_NV6", 6, 56, 1, "M60"},
    VmSize{"Standard_NV12", 12, 112, 2, "M60"},
    VmSize{"Standard_NV24", 24, 224, 4, "M60"},
    VmSize{"Standard_NV12s_v3", 12, 112, 1, "M60"},
    VmSize{"Standard_NV24s_v3", 24, 224, 2, "M60"},
    VmSize{"Standard_NV48s_v3", 48, 448, 4, "M60"},
    // NVadsA10_v5: the sizes with whole A10s.
    VmSize{"Standard_NV36ads_A10_v5", 36, 440, 1, "A10"},
    VmSize{"Standard_NV72ads_A10_v5", 72, 880, 2, "A10"},
};

}  // namespace

const VmSize* FindVmSize(std::string_view name) {
  for (const VmSize& s : kSizes) {
    if (EqualsIgnoreCase(s.name, name)) return &s;
  }
  return nullptr;
}

std::span<const VmSize> AllVmSizes() { return kSizes; }

model::Resources CapacityOf(const VmSize& size, int max_pods) {
  model::Resources r;
  r.Set(model::kCpu, static_cast<int64_t>(size.vcpus) * 1000);
  r.Set(model::kMemory, static_cast<int64_t>(std::llround(size.memory_gib * 1024.0)) * 1024 * 1024);
  r.Set(model::kPods, max_pods);
  if (size.gpus > 0) r.Set(model::InternResource(model::kNvidiaGpu), size.gpus);
  return r;
}

}  // namespace tidepool::cloud::azure
