// Observations versioned by what they hold, for the autoscaler tests' worlds and the controller
// tests' fake reader: with TIDEPOOL_LOOP_VERSIONS=1 (ctest's `autoscaler.versioned.` and
// `controller.versioned.` entries) a world gives each observation the version of its contents, so
// the loop skips the Steps that cannot decide anything new (LoopOptions::skip_unchanged) in every
// test, and a skip that would change a decision fails the test it changes.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autoscaler/loop.h"
#include "autoscaler/observation.h"
#include "base/time.h"
#include "model/capacity_buffer.h"
#include "model/node.h"
#include "model/pod.h"
#include "model/provisioning_request.h"

namespace tidepool::autoscaler::testing {

// Whether the worlds version their observations by what they hold (TIDEPOOL_LOOP_VERSIONS=1).
inline bool VersionsFromContents() {
  static const bool on = [] {
    const char* v = std::getenv("TIDEPOOL_LOOP_VERSIONS");
    return v != nullptr && std::string_view(v) == "1";
  }();
  return on;
}

namespace spell_detail {

inline std::string TimeText(const std::optional<Time>& t) {
  return t ? std::to_string(t->time_since_epoch().count()) : std::string("-");
}

inline void Meta(std::string& out, const model::ObjectMeta& m) {
  out += fmt::format("{}/{} {} {} {} {} [{}] [{}]", m.namespace_, m.name, m.uid, m.generation,
                     TimeText(m.creation_timestamp), TimeText(m.deletion_timestamp),
                     fmt::join(m.labels, ","), fmt::join(m.annotations, ","));
  for (const model::OwnerReference& o : m.owner_references)
    out += fmt::format(" {}:{}:{}:{}", o.kind, o.name, o.uid, o.controller);
}

inline void PodText(std::string& out, const model::Pod& p) {
  Meta(out, p.meta);
  out += fmt::format(" {} {} [{}] {} {} {} {} {} {} {} {}", p.node_name, p.scheduler_name,
                     fmt::join(p.node_selector, ","), p.PriorityOrZero(), static_cast<int>(p.phase),
                     p.unschedulable_condition, p.SchedulingGated(), TimeText(p.start_time),
                     p.requests.ToString(), p.nominated_node_name(), p.priority_class_name());
  for (const model::Toleration& t : p.tolerations) {
    out += fmt::format(" {}{}{}:{}", t.key, static_cast<int>(t.op), t.value,
                       t.effect ? static_cast<int>(*t.effect) : -1);
  }
  out += fmt::format(" {} {} {} {}", p.affinity().node_required.has_value(),
                     p.topology_spread_constraints().size(), p.resource_claims().size(),
                     p.resource_claim_statuses().size());
}

}  // namespace spell_detail

// What an observation holds, spelled out: two observations spelled alike are the same to the
// loop. Every field the autoscaler tests change between Steps is in it; DRA objects are not
// spelled out, so an observation with any is spelled anew at every call (never taken for the one
// before).
inline std::string Spell(const Observation& obs) {
  using spell_detail::Meta;
  using spell_detail::PodText;
  using spell_detail::TimeText;
  std::string out;
  for (const model::Node* n : obs.nodes) {
    out += "\nnode ";
    Meta(out, n->meta);
    out += fmt::format(" {} {} {} {} {}", n->unschedulable, n->ready, n->provider_id,
                       n->capacity.ToString(), n->allocatable.ToString());
    for (const model::Taint& t : n->taints)
      out += fmt::format(" {}={}:{}", t.key, t.value, static_cast<int>(t.effect));
  }
  for (const model::Pod* p : obs.pods) {
    out += "\npod ";
    PodText(out, *p);
  }
  for (const model::PodTemplate* t : obs.pod_templates) {
    out += fmt::format("\ntemplate {} ", t->error);
    Meta(out, t->meta);
    PodText(out, t->pod);
  }
  for (const model::ProvisioningRequest* r : obs.provisioning_requests) {
    out += fmt::format("\nrequest {} {} [{}] ", r->class_name,
                       static_cast<int>(r->provisioning_class), fmt::join(r->parameters, ","));
    Meta(out, r->meta);
    for (const model::PodSet& s : r->pod_sets)
      out += fmt::format(" {}x{}", s.template_name, s.count);
    for (const model::Condition& c : r->conditions) {
      out += fmt::format(" {}:{}:{}:{}:{}", static_cast<int>(c.type), static_cast<int>(c.status),
                         c.reason, c.message, TimeText(c.last_transition));
    }
  }
  for (const model::CapacityBuffer* b : obs.capacity_buffers) {
    out += fmt::format("\nbuffer {} {} {} {} {} {} ", b->strategy, b->pod_template,
                       b->replicas.value_or(-1), b->percentage.value_or(-1),
                       b->limits ? b->limits->ToString() : std::string("-"), b->limited.size());
    if (b->scalable_ref) {
      out += fmt::format("{}/{}/{} ", b->scalable_ref->api_group, b->scalable_ref->kind,
                         b->scalable_ref->name);
    }
    Meta(out, b->meta);
    const model::BufferStatus& s = b->status;
    out += fmt::format(" status {} {} {}", s.pod_template, s.replicas.value_or(-1),
                       s.pod_template_generation.value_or(-1));
    for (const model::BufferCondition& c : s.conditions) {
      out += fmt::format(" {}:{}:{}:{}", static_cast<int>(c.type), static_cast<int>(c.status),
                         c.reason, c.message);
    }
  }
  for (const model::Deployment* d : obs.deployments) {
    out += fmt::format("\ndeployment {} {} ", d->replicas, d->error);
    Meta(out, d->meta);
    PodText(out, d->pod);
  }
  for (const PoolObservation& po : obs.pools) {
    out += fmt::format("\npool {} {} {} {} {} {}", po.pool, po.target, po.registered, po.stopped,
                       po.stockout, po.stockout_reason);
  }
  if (obs.dra != nullptr) {
    static uint64_t calls = 0;
    out += fmt::format("\ndra {}", ++calls);
  }
  return out;
}

// A world's versions: 0 (unversioned) unless `on`; then the same number for observations spelled
// alike one after the other, a new one (from 1) whenever the spelling changes.
class ContentVersions {
 public:
  bool on = VersionsFromContents();

  uint64_t Of(const Observation& obs) {
    if (!on) return 0;
    std::string spelled = Spell(obs);
    if (spelled != last_) {
      last_ = std::move(spelled);
      ++version_;
    }
    return version_;
  }

 private:
  std::string last_;
  uint64_t version_ = 0;
};

// loop.Step(obs, now), after asking loop.Unchanged whether the Step would return at once (the
// live controller then leaves the observation unbuilt): the answer must be what the Step did.
inline std::vector<Action> CheckedStep(Autoscaler& loop, const Observation& obs, Time now) {
  const bool unchanged = loop.Unchanged(obs.version, now);
  const uint64_t skipped = loop.skipped_steps();
  std::vector<Action> actions = loop.Step(obs, now);
  EXPECT_EQ(loop.skipped_steps() != skipped, unchanged)
      << "Autoscaler::Unchanged said " << unchanged << " for a Step that "
      << (unchanged ? "planned" : "was skipped");
  return actions;
}

}  // namespace tidepool::autoscaler::testing
