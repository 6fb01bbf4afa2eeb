// DaemonSet: only what the planner needs, i.e. the pod it would place on a new node.
// A new node from a pool gets the DaemonSet pods whose selectors and tolerations match it.
#pragma once

#include "model/meta.h"
#include "model/pod.h"

namespace tidepool::model {

struct DaemonSet {
  ObjectMeta meta;
  Pod pod_template;  // spec.template, finalized; meta.namespace_ is the DaemonSet's
  friend bool operator==(const DaemonSet&, const DaemonSet&) = default;
};

}  // namespace tidepool::model
