// Reading a JSON List item by item: each item's tree is built, handed on and freed before the
// next, so a state file of 50,000 pods never exists as one JSON tree (docs/performance.md,
// "tidepool plan as a whole process").
#pragma once

#include <functional>
#include <string_view>

#include "base/error.h"
#include "kube/codec/documents.h"
#include "kube/codec/read_progress.h"

namespace tidepool::kube::codec {

// When `text` is one JSON object that is a List, calls f for every object ParseSourcedDocuments
// would list, with the same origins, and returns true. Items that carry kind and apiVersion go
// to f as soon as they are parsed; those of a typed list that lack them wait for the end, where
// the list's kind is known. Returns false for anything else: YAML, an array, an object that is
// not a List, invalid JSON, or an error from f or from the List itself. f may then have been
// called for some items: the caller discards what it built and reads the text the ordinary way,
// which gives the same objects or words the error. `progress`, when set, is called after each
// item is parsed; `expect`, when set, with the number of items before the first is handed on
// (a hint, to reserve room for what they decode to).
bool StreamJsonList(std::string_view text, std::string_view source,
                    const std::function<Result<void>(SourcedDocument&&)>& f,
                    const OnListProgress& progress = {},
                    const std::function<void(size_t)>& expect = {});

}  // namespace tidepool::kube::codec
