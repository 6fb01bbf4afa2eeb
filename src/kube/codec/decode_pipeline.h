// DecodePipeline: decoding a List's items on a second thread while the first parses the next
// ones (`tidepool plan --threads 2`). Items are decoded one at a time, in the order they were
// pushed, so what they decode to is the same as on one thread. The decoded items go back to the
// parser's thread to be freed there: their trees were allocated there, and freeing them on the
// worker cost more than decoding on it saved (the allocator locks the other thread's arena).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/error.h"
#include "kube/codec/documents.h"

namespace tidepool::kube::codec {

class DecodePipeline {
 public:
  using Decode = std::function<Result<void>(SourcedDocument&&)>;

  // Starts the worker that calls `decode` for every item pushed.
  explicit DecodePipeline(Decode decode);
  // Finishes (waits for the worker) if Finish was not called.
  ~DecodePipeline();
  DecodePipeline(const DecodePipeline&) = delete;
  DecodePipeline& operator=(const DecodePipeline&) = delete;

  // Queues an item (items go to the worker in batches). Once `decode` has failed, the error, so
  // that the parser can stop early. Blocks while the worker is far behind, so that parsed items
  // do not pile up.
  Result<void> Push(SourcedDocument&& doc);
  // Hands on the last batch and waits until every item is decoded: the first error of `decode`,
  // if any. Idempotent.
  Result<void> Finish();

 private:
  using Batch = std::vector<SourcedDocument>;
  void Run();
  Result<void> DecodeOne(SourcedDocument&& doc);
  // Queues `batch_` (with mu_ not held); false once the worker has failed.
  bool Hand();

  static constexpr size_t kBatch = 128;     // items per hand-over
  static constexpr size_t kMaxQueued = 16;  // batches parsed ahead of the worker

  Decode decode_;
  Batch batch_;  // the parser's side: filled until handed on
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> queue_;      // guarded by mu_
  std::deque<Batch> done_;       // guarded by mu_: decoded, to be freed by the parser
  bool closed_ = false;          // guarded by mu_: no more batches come
  std::optional<Error> failed_;  // guarded by mu_: the first error of decode_
  bool finished_ = false;        // the parser's side: Finish ran
  std::thread worker_;
};

}  // namespace tidepool::kube::codec
