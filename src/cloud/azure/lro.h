// Following ARM long-running operations: the Operation an accepted write starts
// (Azure-AsyncOperation / Location), what a poll's answer means, and one polling step, shared by
// every provider.
#pragma once

#include <optional>
#include <string_view>

#include "base/error.h"
#include "base/time.h"
#include "cloud/azure/arm.h"

namespace tidepool::cloud::azure {

// How an accepted write asks to be followed: its headers and when to poll first.
struct AcceptedWrite {
  std::string_view what;          // "PUT /subscriptions/.../x", for messages
  int status = 0;                 // the write's HTTP status (2xx)
  std::string_view async_url;     // the Azure-AsyncOperation header ("" none)
  std::string_view location_url;  // the Location header ("" none)
  Time now;
  Duration first_poll{};  // from now to the first poll (Retry-After, capped by the caller)
  Duration timeout{};     // from now to the operation's deadline
};

// The operation to follow: when there is an Azure-AsyncOperation URL, or a Location URL on a
// 201 or 202; nullopt when the write finished synchronously.
std::optional<Operation> OperationOf(const AcceptedWrite& write);

// What an answer to a poll of `op` says. Status style (Azure-AsyncOperation): the body's
// "status" (Succeeded, Failed, Canceled/Cancelled; anything else is in progress), a non-2xx
// answer is a failure with its ARM error. Location style: 202 is in progress, other 2xx
// succeeded, other statuses failed. A 5xx answer is an error ("polling <op.what>: ..."): the
// operation stays pending.
Result<OperationResult> OperationResultOf(const ArmResponse& answer, const Operation& op);

// One step of following an operation without waiting.
struct LroStep {
  enum class Kind {
    kWaiting,     // not due (before op.next_poll) or still in progress
    kPollFailed,  // the poll itself failed (transport, 5xx, throttled): still pending
    kDone,        // `result` holds the terminal state with ARM's code and message
    kTimedOut,    // op.deadline passed: nothing sent, no longer worth following
  };
  Kind kind = Kind::kWaiting;
  OperationResult result;      // kDone
  std::optional<Error> error;  // kPollFailed
};

// Polls `op` once when it is due at `now` (ArmClient::Poll moves op.next_poll), else sends
// nothing. The deadline is checked first.
LroStep FollowOperation(ArmClient& arm, Operation& op, Time now);

}  // namespace tidepool::cloud::azure
