#include "cloud/azure/azure_provider.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "cloud/azure/aks_provider.h"
#include "cloud/azure/blob.h"
#include "cloud/azure/lro.h"
#include "cloud/azure/vms_provider.h"
#include "cloud/azure/vmss_provider.h"

namespace tidepool::cloud::azure {

AzureProvider::AzureProvider(AzureSettings settings, std::vector<model::Pool> pools, Deps deps)
    : settings_(std::move(settings)),
      clock_(deps.clock),
      node_joined_(deps.node_joined),
      arm_(deps.arm.get()),
      pools_(std::move(pools)),
      deps_(std::make_unique<Deps>(std::move(deps))) {}

AzureProvider::~AzureProvider() = default;

Result<void> AzureProvider::BeforeRefresh(Time) { return {}; }

Result<TokenSource*> AzureProvider::StorageTokens() {
  if (!deps_->storage_tokens) {
    AuthConfig auth = settings_.auth;
    auth.resource = std::string(kStorageResource);
    TIDEPOOL_ASSIGN_OR_RETURN(deps_->storage_tokens,
                              MakeTokenSource(auth, deps_->http.get(), clock_, deps_->env));
  }
  return deps_->storage_tokens.get();
}

const model::Pool* AzureProvider::FindPool(std::string_view name) const {
  for (const auto& p : pools_)
    if (p.name == name) return &p;
  return nullptr;
}

Result<const model::Pool*> AzureProvider::RequirePool(std::string_view name) const {
  const model::Pool* p = FindPool(name);
  if (p == nullptr) {
    return Fail(Error::Code::kNotFound, "{}: no pool named \"{}\"", Name(), name);
  }
  return p;
}

void AzureProvider::AddPool(model::Pool pool) {
  if (FindPool(pool.name) != nullptr) return;
  pools_.push_back(std::move(pool));
}

size_t AzureProvider::pending_operations(const std::string& pool) const {
  auto it = state_.find(pool);
  return it == state_.end() ? 0 : it->second.ops.size();
}

size_t AzureProvider::pending_operations(const std::string& pool, std::string_view kind) const {
  auto it = state_.find(pool);
  if (it == state_.end()) return 0;
  return std::count_if(it->second.ops.begin(), it->second.ops.end(),
                       [&](const PendingOp& op) { return op.kind == kind; });
}

void AzureProvider::Track(const std::string& pool, Operation op, std::string kind) {
  spdlog::info("azure: pool {}: {} accepted as a long-running operation", pool, op.what);
  state_[pool].ops.push_back(PendingOp{std::move(op), std::move(kind)});
}

void AzureProvider::NoteStockout(const std::string& pool, std::string reason, Time now) {
  PoolState& ps = state_[pool];
  spdlog::warn("azure: pool {}: no capacity: {}", pool, reason);
  ps.stockout_reason = std::move(reason);
  ps.stockout_until = now + settings_.stockout_hold;
}

std::optional<std::string> AzureProvider::Stockout(const std::string& pool, Time now) {
  PoolState& ps = state_[pool];
  if (ps.stockout_until && now < *ps.stockout_until) return ps.stockout_reason;
  return std::nullopt;
}

Result<void> AzureProvider::CheckNotStockedOut(const std::string& pool, Time now) {
  if (auto reason = Stockout(pool, now)) {
    return Fail(Error::Code::kUnavailable, "pool {}: no capacity (stockout): {}", pool, *reason);
  }
  return {};
}

Error AzureProvider::WriteFailed(const std::string& pool, const ArmResponse& r, Time now) {
  if (IsStockoutError(r.error_code, r.error_message)) {
    NoteStockout(pool, fmt::format("{}: {}", r.error_code, r.error_message), now);
    return Error(Error::Code::kUnavailable,
                 fmt::format("pool {}: no capacity (stockout): {}", pool, r.AsError().message()));
  }
  return r.AsError().Wrap(fmt::format("pool {}", pool));
}

void AzureProvider::PollOperations(const std::string& pool, Time now) {
  PoolState& ps = state_[pool];
  std::vector<PendingOp> keep;
  for (auto& pending : ps.ops) {
    LroStep step = FollowOperation(*arm_, pending.op, now);
    switch (step.kind) {
      case LroStep::Kind::kTimedOut:
        spdlog::warn("azure: pool {}: {} did not finish within {}; no longer followed", pool,
                     pending.op.what, FormatDuration(settings_.operation_timeout));
        break;
      case LroStep::Kind::kPollFailed:
        spdlog::warn("azure: pool {}: {}", pool, step.error->message());
        keep.push_back(std::move(pending));
        break;
      case LroStep::Kind::kWaiting:
        keep.push_back(std::move(pending));
        break;
      case LroStep::Kind::kDone:
        OperationDone(pool, pending.op, step.result, now);
        break;
    }
  }
  ps.ops = std::move(keep);
}

void AzureProvider::OperationDone(const std::string& pool, const Operation& op,
                                  const OperationResult& r, Time now) {
  if (r.state == OperationResult::State::kSucceeded) {
    spdlog::info("azure: pool {}: {} succeeded", pool, op.what);
    return;
  }
  spdlog::warn("azure: pool {}: {} {}: {}: {}", pool, op.what,
               r.state == OperationResult::State::kFailed ? "failed" : "was canceled", r.code,
               r.message);
  if (IsStockoutError(r.code, r.message)) {
    NoteStockout(pool, fmt::format("{}: {}", r.code, r.message), now);
  }
}

Result<std::vector<PoolSize>> AzureProvider::Refresh(Time now) {
  if (auto r = BeforeRefresh(now); !r) {
    // Discovery failing must not hide the pools already known; log and go on.
    spdlog::warn("azure: {}", r.error().message());
  }
  std::vector<PoolSize> out;
  out.reserve(pools_.size());
  for (const model::Pool& pool : pools_) {
    PollOperations(pool.name, now);
    auto read = RefreshPool(pool, now);
    PoolState& ps = state_[pool.name];
    std::optional<PoolSize> size;
    if (read) {
      if (!*read) continue;  // not bound to anything in the cloud (yet)
      size = std::move(**read);
    } else {
      Error::Code c = read.error().code();
      bool transient = c == Error::Code::kThrottled || c == Error::Code::kUnavailable;
      if (!transient || !ps.last) {
        return std::unexpected(read.error().Wrap(fmt::format("{}: pool {}", Name(), pool.name)));
      }
      spdlog::warn("azure: pool {}: {}; reporting the last read", pool.name,
                   read.error().message());
      size = *ps.last;
    }
    size->pool = pool.name;
    if (auto reason = Stockout(pool.name, now)) {
      size->stockout = true;
      size->stockout_reason = *reason;
    } else {
      size->stockout = false;
      size->stockout_reason.clear();
    }
    ps.last = *size;
    out.push_back(std::move(*size));
  }
  return out;
}

Result<void> AzureProvider::IncreaseSize(const std::string& pool, int delta, Time now) {
  TIDEPOOL_ASSIGN_OR_RETURN(const model::Pool* p, RequirePool(pool));
  if (delta <= 0) {
    return InvalidArgument("{}: pool {}: increase by {} (expected a positive delta)", Name(), pool,
                           delta);
  }
  TIDEPOOL_RETURN_IF_ERROR(CheckNotStockedOut(pool, now));
  return Grow(*p, delta, now);
}

Result<void> AzureProvider::DecreaseTargetSize(const std::string& pool, int delta, Time now) {
  TIDEPOOL_ASSIGN_OR_RETURN(const model::Pool* p, RequirePool(pool));
  if (delta <= 0) {
    return InvalidArgument("{}: pool {}: decrease by {} (expected a positive delta)", Name(), pool,
                           delta);
  }
  return Shrink(*p, delta, now);
}

Result<int> AzureProvider::WithinMax(const model::Pool& pool, int current, int delta) const {
  if (current + delta > pool.max) {
    return InvalidArgument(
        "{}: pool {}: {} + {} would pass the pool's max {} (expected at most {} more)", Name(),
        pool.name, current, delta, pool.max, std::max(0, pool.max - current));
  }
  return current + delta;
}

Result<std::unique_ptr<AzureProvider>> NewAzureProvider(const model::AutoscalerConfig& config,
                                                        Options options) {
  EnvLookup env = options.env ? options.env : ProcessEnv();
  TIDEPOOL_ASSIGN_OR_RETURN(AzureSettings settings,
                            ParseAzureSettings(config.provider, config.pools, env));
  AzureProvider::Deps deps;
  if (options.clock == nullptr) {
    deps.owned_clock = std::make_unique<RealClock>();
    deps.clock = deps.owned_clock.get();
  } else {
    deps.clock = options.clock;
  }
  deps.http = options.http ? options.http : std::make_shared<net::HttpClient>();
  TIDEPOOL_ASSIGN_OR_RETURN(deps.tokens,
                            MakeTokenSource(settings.auth, deps.http.get(), deps.clock, env));
  ArmOptions arm;
  arm.endpoint = settings.arm_endpoint;
  arm.request_timeout = settings.request_timeout;
  arm.operation_timeout = settings.operation_timeout;
  deps.arm = std::make_unique<ArmClient>(deps.http.get(), deps.tokens.get(), deps.clock,
                                         options.sleep ? options.sleep : RealSleeper(), arm);
  if (options.arm_observer) deps.arm->SetObserver(std::move(options.arm_observer));
  deps.node_joined = options.node_joined;
  deps.env = env;
  if (settings.type == "azure-vmss") {
    return std::unique_ptr<AzureProvider>(
        std::make_unique<VmssProvider>(std::move(settings), config.pools, std::move(deps)));
  }
  if (settings.type == "azure-vms") {
    return std::unique_ptr<AzureProvider>(
        std::make_unique<VmsProvider>(std::move(settings), config.pools, std::move(deps)));
  }
  return std::unique_ptr<AzureProvider>(
      std::make_unique<AksProvider>(std::move(settings), config.pools, std::move(deps)));
}

Result<std::unique_ptr<CloudProvider>> MakeAzureProvider(const model::AutoscalerConfig& config,
                                                         Options options) {
  TIDEPOOL_ASSIGN_OR_RETURN(auto p, NewAzureProvider(config, std::move(options)));
  return std::unique_ptr<CloudProvider>(std::move(p));
}

}  // namespace tidepool::cloud::azure
