// From text to JSON trees: JSON-or-YAML detection, YAML (yaml-cpp) to JSON with the YAML 1.2
// core schema, and List expansion, keeping where each object came from for error messages.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "kube/codec/fields.h"

namespace YAML {
class Node;
}  // namespace YAML

namespace tidepool::kube::codec {

// One object of an input and where it came from: "document 2" (YAML stream position, 1-based),
// "document 1, items[3]" (an item of a List), "document 1, [0]" (an element of a top-level
// array).
struct SourcedDocument {
  Json value;
  std::string origin;
};

// What ParseDocuments (objects.h) does, with origins. Empty YAML documents are skipped; a
// document that is a List (kind "List", or kind "<Kind>List" with an `items` member) is replaced
// by its items, recursively, and items of a "<Kind>List" that lack kind/apiVersion get the
// list's (as the API server's typed lists leave them out). Errors start with `source: `.
Result<std::vector<SourcedDocument>> ParseSourcedDocuments(std::string_view text,
                                                           std::string_view source);

// The pieces of ParseSourcedDocuments that the streaming List reader (list_stream.h) shares.
// A document is a List: kind "List", or "<Kind>List" with an `items` member; sets its kind.
bool IsListKind(const Json& doc, std::string& kind_out);
// One object, a List replaced by its items (recursively, `depth` Lists deep so far).
Result<void> ExpandDocument(Json doc, std::string origin, int depth, std::string_view source,
                            std::vector<SourcedDocument>& out);
// One item of a List of kind `list_kind`: an item of a typed list gets the list's kind (without
// "List") and apiVersion when it lacks them; then expanded as above.
Result<void> ExpandListItem(Json item, std::string origin, int depth, const std::string& list_kind,
                            const Json* api_version, std::string_view source,
                            std::vector<SourcedDocument>& out);
// Whether a text is JSON rather than YAML (decided up front, see the definition).
bool LooksLikeJson(std::string_view text);

// Resolves a plain (unquoted, untagged) YAML scalar per the YAML 1.2 core schema: null, bool,
// int (decimal, 0o octal, 0x hex; beyond 64 bits a double), float (incl. .inf, .nan), else the
// string itself.
Json ResolvePlainScalar(const std::string& text);

// YAML::LoadAll, guarded against yaml-cpp 0.7's endless loop on a ',' outside any flow
// collection ("[a],", "- a\n,"): its parser then returns an empty document at the same position
// forever and LoadAll allocates until memory runs out (jbeder/yaml-cpp#1040, fixed upstream after
// 0.8.0). A first pass with a no-op event handler detects the lack of progress. Throws
// YAML::Exception (with the mark) for malformed input, as LoadAll does.
std::vector<YAML::Node> LoadAllYaml(const std::string& text);

}  // namespace tidepool::kube::codec
