#include "cloud/azure/lro.h"

#include <string>

#include "cloud/azure/url.h"

namespace tidepool::cloud::azure {
namespace {

using nlohmann::json;

// A failure as the answer states it (its ARM error code and message).
OperationResult Failed(const ArmResponse& answer) {
  return {.state = OperationResult::State::kFailed,
          .code = answer.error_code,
          .message = answer.error_message};
}

// The "status" of an Azure-AsyncOperation answer.
OperationResult FromStatusBody(const json& body) {
  OperationResult result;
  std::string status = body.is_object() && body.contains("status") && body["status"].is_string()
                           ? body["status"].get<std::string>()
                           : "";
  if (EqualsIgnoreCase(status, "Succeeded")) {
    result.state = OperationResult::State::kSucceeded;
  } else if (EqualsIgnoreCase(status, "Failed")) {
    result.state = OperationResult::State::kFailed;
    ParseArmError(body, result.code, result.message);
  } else if (EqualsIgnoreCase(status, "Canceled") || EqualsIgnoreCase(status, "Cancelled")) {
    result.state = OperationResult::State::kCanceled;
    ParseArmError(body, result.code, result.message);
  }
  return result;
}

}  // namespace

std::optional<Operation> OperationOf(const AcceptedWrite& write) {
  const bool location_style =
      (write.status == 201 || write.status == 202) && !write.location_url.empty();
  if (write.async_url.empty() && !location_style) return std::nullopt;
  Operation op;
  op.what = std::string(write.what);
  op.status_url = std::string(write.async_url);
  op.location_url = std::string(write.location_url);
  op.started = write.now;
  op.next_poll = write.now + write.first_poll;
  op.deadline = write.now + write.timeout;
  return op;
}

Result<OperationResult> OperationResultOf(const ArmResponse& answer, const Operation& op) {
  if (answer.status >= 500) {
    return std::unexpected(answer.AsError().Wrap(fmt::format("polling {}", op.what)));
  }
  if (!op.status_url.empty()) {
    if (!answer.ok()) return Failed(answer);
    return FromStatusBody(answer.body);
  }
  // Location polling: 202 while running; 200/201/204 done; an error status is the outcome.
  if (answer.status == 202) return OperationResult{};
  if (answer.ok()) return OperationResult{.state = OperationResult::State::kSucceeded};
  return Failed(answer);
}

LroStep FollowOperation(ArmClient& arm, Operation& op, Time now) {
  if (now >= op.deadline) return {.kind = LroStep::Kind::kTimedOut};
  if (now < op.next_poll) return {.kind = LroStep::Kind::kWaiting};
  auto polled = arm.Poll(op);
  if (!polled) return {.kind = LroStep::Kind::kPollFailed, .error = polled.error()};
  if (!polled->done()) return {.kind = LroStep::Kind::kWaiting};
  return {.kind = LroStep::Kind::kDone, .result = std::move(*polled)};
}

}  // namespace tidepool::cloud::azure
