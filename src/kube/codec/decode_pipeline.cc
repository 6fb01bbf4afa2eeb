#include "kube/codec/decode_pipeline.h"

#include <utility>

namespace tidepool::kube::codec {

DecodePipeline::DecodePipeline(Decode decode) : decode_(std::move(decode)) {
  batch_.reserve(kBatch);
  worker_ = std::thread([this] { Run(); });
}

DecodePipeline::~DecodePipeline() { (void)Finish(); }

Result<void> DecodePipeline::Push(SourcedDocument&& doc) {
  batch_.push_back(std::move(doc));
  if (batch_.size() < kBatch || Hand()) return {};
  std::lock_guard lock(mu_);
  return std::unexpected(*failed_);
}

bool DecodePipeline::Hand() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return queue_.size() < kMaxQueued || failed_; });
  if (failed_) {
    batch_.clear();
    return false;
  }
  queue_.push_back(std::move(batch_));
  std::deque<Batch> done;
  done.swap(done_);
  batch_ = Batch();
  batch_.reserve(kBatch);
  cv_.notify_all();
  lock.unlock();
  done.clear();  // the trees were built on this thread: freed here too
  return true;
}

Result<void> DecodePipeline::Finish() {
  if (!finished_) {
    finished_ = true;
    if (!batch_.empty()) (void)Hand();
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  std::lock_guard lock(mu_);
  if (failed_) return std::unexpected(*failed_);
  return {};
}

Result<void> DecodePipeline::DecodeOne(SourcedDocument&& doc) {
  // On this thread an escaping exception would end the process: it becomes the error the
  // caller's guard would have made of it.
  try {
    return decode_(std::move(doc));
  } catch (const std::exception& e) {
    return Fail(Error::Code::kInternal, "{}: unexpected error: {}", doc.origin, e.what());
  }
}

void DecodePipeline::Run() {
  for (;;) {
    Batch batch;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return !queue_.empty() || closed_; });
      if (queue_.empty()) return;
      batch = std::move(queue_.front());
      queue_.pop_front();
    }
    cv_.notify_all();  // room for the parser
    for (SourcedDocument& doc : batch) {
      Result<void> done = DecodeOne(std::move(doc));
      if (done) continue;
      std::lock_guard lock(mu_);
      failed_ = done.error();
      queue_.clear();
      cv_.notify_all();
      return;
    }
    std::lock_guard lock(mu_);
    done_.push_back(std::move(batch));
  }
}

}  // namespace tidepool::kube::codec
