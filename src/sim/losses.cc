#include "sim/losses.h"

#include <fmt/format.h>

#include "base/text_file.h"

namespace tidepool::sim {

std::string LossesCsv(const std::vector<PolicyRun>& runs) {
  std::string csv = "policy,pod,at,ran_hours,lost_hours,gpus,work_lost_gpu_hours,cause\n";
  for (const PolicyRun& run : runs) {
    for (const Loss& l : run.summary.losses) {
      csv += fmt::format("{},{},{},{:.4f},{:.4f},{:g},{:.4f},{}\n", run.name, l.pod,
                         FormatRfc3339(l.at), Hours(l.ran), Hours(l.lost), l.gpus, l.GpuHours(),
                         l.spot ? "spot" : "drain");
    }
  }
  return csv;
}

Result<void> WriteLossesCsv(const std::vector<PolicyRun>& runs, const std::string& path) {
  return WriteTextFile(path, LossesCsv(runs), "losses");
}

}  // namespace tidepool::sim
