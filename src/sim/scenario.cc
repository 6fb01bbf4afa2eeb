#include "sim/scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "model/quantity.h"

namespace tidepool::sim {
namespace {

model::Resources Req(std::string_view cpu, std::string_view memory, int64_t gpus) {
  model::Resources r;
  r.SetQuantity(model::kCpu, *model::Quantity::Parse(cpu));
  r.SetQuantity(model::kMemory, *model::Quantity::Parse(memory));
  if (gpus > 0) r.Set(model::InternResource(model::kNvidiaGpu), gpus);
  return r;
}

}  // namespace

std::vector<JobSpec> BuiltinScenario(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  constexpr std::string_view kTenants[] = {"personas-a", "personas-b", "personas-c"};
  constexpr int64_t kHorizonS = 48 * 3600;
  std::vector<JobSpec> jobs;
  int seq = 0;
  for (std::string_view tenant : kTenants) {
    // Each tenant works in 4-6 bursts over two days; a burst mixes the three kinds of jobs.
    int bursts = static_cast<int>(uniform(4, 6));
    for (int b = 0; b < bursts; ++b) {
      int64_t burst_start = uniform(0, kHorizonS - 3 * 3600);
      int cpu_jobs = static_cast<int>(uniform(0, 3));
      int retrain_jobs = static_cast<int>(uniform(1, 6));
      int heavy_jobs = static_cast<int>(uniform(0, 1));
      auto add = [&](std::string_view kind, int64_t submit_s, int64_t duration_s, int replicas,
                     model::Resources req, bool gang, bool spot) {
        JobSpec j;
        j.id = fmt::format("{}-{}-{:04d}", tenant, kind, seq++);
        j.submit = std::chrono::seconds(submit_s);
        j.duration = std::chrono::seconds(duration_s);
        j.replicas = replicas;
        j.requests = std::move(req);
        j.gang = gang;
        j.namespace_ = std::string(tenant);
        j.spot = spot;
        jobs.push_back(std::move(j));
      };
      for (int k = 0; k < cpu_jobs; ++k) {
        add("spark", burst_start + uniform(0, 1800), uniform(20, 60) * 60,
            static_cast<int>(uniform(4, 8)), Req("1500m", "4Gi", 0), false, false);
      }
      for (int k = 0; k < retrain_jobs; ++k) {
        add("retrain", burst_start + uniform(0, 3600), uniform(3, 15) * 60, 1, Req("4", "16Gi", 1),
            false, true);
      }
      for (int k = 0; k < heavy_jobs; ++k) {
        add("train", burst_start + uniform(0, 1800), uniform(2, 8) * 3600, 2, Req("20", "200Gi", 4),
            true, uniform(0, 1) == 1);
      }
    }
  }
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const JobSpec& a, const JobSpec& b) { return a.submit < b.submit; });
  return jobs;
}

std::vector<JobSpec> PeriodicGpuScenario(uint64_t seed, int days) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::vector<JobSpec> jobs;
  int seq = 0;
  auto add = [&](std::string_view kind, int64_t submit_s, int64_t duration_s, int replicas,
                 model::Resources req) {
    JobSpec j;
    j.id = fmt::format("periodic-{}-{:04d}", kind, seq++);
    j.submit = std::chrono::seconds(submit_s);
    j.duration = std::chrono::seconds(duration_s);
    j.replicas = replicas;
    j.requests = std::move(req);
    j.namespace_ = "team-periodic";
    jobs.push_back(std::move(j));
  };
  for (int d = 0; d < days; ++d) {
    const int64_t day = int64_t{d} * 24 * 3600;
    auto burst = [&](int64_t hour, int lo, int hi) {
      int64_t start = day + hour * 3600 + uniform(0, 600);
      int n = static_cast<int>(uniform(lo, hi));
      for (int k = 0; k < n; ++k) {
        add("gpu", start + uniform(0, 300), uniform(30, 90) * 60, 1, Req("4", "16Gi", 1));
      }
    };
    burst(9, 6, 10);
    burst(14, 3, 5);
    for (int k = 0, n = static_cast<int>(uniform(2, 4)); k < n; ++k) {
      add("gpu-adhoc", day + uniform(0, 24 * 3600 - 1), uniform(20, 60) * 60, 1,
          Req("4", "16Gi", 1));
      jobs.back().namespace_ = "team-adhoc";
    }
    for (int k = 0, n = static_cast<int>(uniform(1, 3)); k < n; ++k) {
      add("spark", day + uniform(8 * 3600, 18 * 3600), uniform(20, 60) * 60,
          static_cast<int>(uniform(4, 8)), Req("1500m", "4Gi", 0));
    }
  }
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const JobSpec& a, const JobSpec& b) { return a.submit < b.submit; });
  return jobs;
}

}  // namespace tidepool::sim
