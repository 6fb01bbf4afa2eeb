// The built-in scenario of the source documents (../shared/seeds/): several tenants training
// different models at different times on one Azure cluster — bursty, seeded, deterministic.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/trace.h"

namespace tidepool::sim {

// About two days of jobs from three tenants, each arriving in bursts: Spark-ML style CPU jobs
// (4–8 replicas of 1.5 CPU / 4Gi, 20–60 min), short single-GPU retraining of one layer (3–15
// min, tolerates spot) and whole-network training as a gang of two 4-GPU workers (2–8 h; half
// of them tolerate spot). Fits the pools of examples/seed/config.yaml. Same seed, same jobs.
std::vector<JobSpec> BuiltinScenario(uint64_t seed);

// `simulate --scenario periodic`: `days` days of a team that starts its GPU work at the same
// times every day (the case predictive pre-warming is for): at 09:00 (jittered by up to 10 min)
// a burst of 6-10 single-GPU jobs (1 GPU, 4 CPU, 16Gi, 30-90 min, on-demand only), at 14:00 a
// second burst of 3-5 such jobs (namespace team-periodic), and 2-4 such jobs at random hours
// (namespace team-adhoc); plus Spark-style CPU jobs in working hours. Same seed, same jobs.
std::vector<JobSpec> PeriodicGpuScenario(uint64_t seed, int days = 28);

}  // namespace tidepool::sim
