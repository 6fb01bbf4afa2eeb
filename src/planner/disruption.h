// Consolidation's economics (docs/consolidation.md): what evicting a running training pod throws
// away, and whether removing its node saves enough to pay for it. Pure: time comes in as `now`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "base/time.h"
#include "model/node.h"
#include "model/pod.h"
#include "model/pool.h"
#include "planner/consolidation_verdict.h"

namespace tidepool::planner {

// Annotations a training pod may carry (docs/annotations.md).
inline constexpr std::string_view kCheckpointIntervalAnnotation =
    "tidepool.dev/checkpoint-interval";
inline constexpr std::string_view kLastCheckpointAnnotation = "tidepool.dev/last-checkpoint";
inline constexpr std::string_view kExpectedRuntimeAnnotation = "tidepool.dev/expected-runtime";
inline constexpr std::string_view kRestartableAnnotation = "tidepool.dev/restartable";

// Consolidation weighs a node at `now` rounded down to the minute, so its decisions change only
// on minute boundaries and a loop that saw nothing change may sleep until the next one.
Time WeighTime(Time now);
Time NextWeighTime(Time now);  // WeighTime(now) + one minute

// What the loop has observed: mean runtime of finished pods per owner (RuntimeOwnerKey).
// version() names the contents: every Set changes it to a number no hints object in the process
// had before, so what a pass derived from one version (ScaleDownMemo) is never taken for another.
class RuntimeHints {
 public:
  void Set(const std::string& owner, Duration runtime);
  // The runtime learned for `owner`, or nullptr.
  const Duration* Find(const std::string& owner) const;
  size_t size() const { return by_owner_.size(); }
  bool empty() const { return by_owner_.empty(); }
  // 0 while empty (as every hints object starts: all empty hints say the same).
  uint64_t version() const { return version_; }

 private:
  std::unordered_map<std::string, Duration> by_owner_;
  uint64_t version_ = 0;
};

// "namespace/Kind/name" of the pod's controller, or "" for a pod without one. The runs of a
// CronJob are one owner, "namespace/CronJob/name" (CronJobOf): each run is a new Job, and a
// nightly retrain learns from the nights before.
std::string RuntimeOwnerKey(const model::Pod& pod);

// The CronJob that made the pod's Job `job`, by the name the CronJob controller gives its Jobs,
// "<cronjob>-<scheduled time in Unix minutes>": the name before the last dash, when the number
// after it is a minute at most kCronJobRunSpread before the pod was created. "" otherwise (a
// Job named so by hand is very unlikely to carry a minute of the month before its pods).
std::string_view CronJobOf(const model::Pod& pod, const model::OwnerReference& job);
inline constexpr Duration kCronJobRunSpread = std::chrono::hours(24 * 30);

// A training pod that declares itself restartable (kRestartableAnnotation "true") loses nothing
// worth weighing when evicted.
bool DeclaresRestartable(const model::Pod& pod);

// A running training pod (IsTrainingPod) that does not declare itself restartable: consolidation
// weighs the work its eviction loses, where other pods move freely.
bool ConsolidationWeighs(const model::Pod& pod);

// How the progress an eviction throws away is known.
enum class ProgressBasis {
  kLastCheckpoint,      // now - tidepool.dev/last-checkpoint
  kCheckpointInterval,  // (now - start) mod tidepool.dev/checkpoint-interval
  kElapsed,             // no checkpoint information: everything since the start
};
std::string_view ProgressBasisName(ProgressBasis b);

// Where a pod's expected remaining runtime comes from.
enum class HorizonBasis {
  kAnnotated,  // tidepool.dev/expected-runtime minus the elapsed time
  kLearned,    // the mean runtime observed for its owner minus the elapsed time
  kElapsed,    // nothing known (or overdue): as long again as it has run so far
};
std::string_view HorizonBasisName(HorizonBasis b);

// A pod's expected remaining runtime, and where the estimate comes from.
struct RemainingRuntime {
  HorizonBasis basis = HorizonBasis::kElapsed;
  Duration remaining{};
};

// The expected remaining runtime of `pod` after it has run `elapsed`: its
// tidepool.dev/expected-runtime, else the runtime learned for its owner (`hints`, may be null),
// minus `elapsed`; when neither is known or the pod is overdue, as long again as it has run.
// Uncapped (consolidation caps it at its max horizon). Errors: a malformed annotation, named.
Result<RemainingRuntime> ExpectedRemaining(const model::Pod& pod, Duration elapsed,
                                           const RuntimeHints* hints);

// One running training pod, as an eviction now would cost it.
struct PodDisruption {
  const model::Pod* pod = nullptr;
  ProgressBasis progress = ProgressBasis::kElapsed;
  Duration unsaved{};                       // progress an eviction now throws away
  std::optional<Duration> next_checkpoint;  // until its next checkpoint, when known
  HorizonBasis horizon_basis = HorizonBasis::kElapsed;
  Duration remaining{};       // expected remaining runtime, at most max_horizon
  int gang_size = 1;          // a gang restarts as a whole
  double holds_per_hour = 0;  // price of what it holds: node price x share x gang
  double gpus = 0;            // GPUs it holds, x gang size
};

// The disruption of `pod` (running on `node`, priced `node_price` per hour). An error names the
// annotation or field that is malformed or missing (e.g. no status.startTime); callers name the
// pod.
Result<PodDisruption> DisruptionOf(const model::Pod& pod, const model::Node& node,
                                   double node_price, const model::ConsolidationConfig& config,
                                   const RuntimeHints* hints, Time now);

// A new node that takes (some of) the pods of the node weighed: consolidation's replace move.
struct ReplacementPrice {
  std::string pool;
  double price_per_hour = 0;
};

// Weighs removing a node priced `node_price` per hour whose running training pods are `pods`.
// `other_pods`: it also runs pods that are not training (services keep a node for good, so the
// horizon is max_horizon). With `replacement`, the node is replaced by one of that price: what
// runs on saves only the difference (its savings and a checkpoint wait count the price
// difference).
ConsolidationVerdict Weigh(const std::vector<PodDisruption>& pods, bool other_pods,
                           double node_price, const model::ConsolidationConfig& config,
                           const ReplacementPrice* replacement = nullptr);

// Whether the savings, less the extension, exceed the work lost x the safety factor; for a
// verdict that waits for a checkpoint, when evicting right after it (the node's price until then
// counted against the savings).
bool Pays(const ConsolidationVerdict& v);

// "consolidation pays: saves $4.10 over 2h (expected remaining runtime) against $0.62 of work
// lost (0.25 GPU-h unsaved, 1 training pod) x safety 2" and the like.
std::string DescribeVerdict(const ConsolidationVerdict& v);

}  // namespace tidepool::planner
