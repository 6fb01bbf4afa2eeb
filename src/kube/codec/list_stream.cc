#include "kube/codec/list_stream.h"

#include <fmt/format.h>

#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace tidepool::kube::codec {
namespace {

// nlohmann's SAX events, building the top-level object without its `items` and one item at a
// time. An item is handed to `deliver` when its last token is read.
class ListSax {
 public:
  using Deliver = std::function<bool(Json&&, size_t)>;
  explicit ListSax(Deliver deliver) : deliver_(std::move(deliver)) {}

  bool null() { return Value(Json(nullptr)); }
  bool boolean(bool v) { return Value(Json(v)); }
  bool number_integer(int64_t v) { return Value(Json(v)); }
  bool number_unsigned(uint64_t v) { return Value(Json(v)); }
  bool number_float(double v, const std::string&) { return Value(Json(v)); }
  bool string(std::string& v) { return Value(Json(std::move(v))); }
  bool binary(Json::binary_t&) { return true; }  // JSON text has none
  bool key(std::string& k) {
    key_ = std::move(k);
    return true;
  }
  bool start_object(size_t) { return Open(Json::object()); }
  bool start_array(size_t) {
    if (stack_.size() == 1 && key_ == "items" && !items_open_) {
      items_open_ = true;
      root_["items"] = Json::array();  // a List's items member, kept empty
      return true;
    }
    return Open(Json::array());
  }
  bool end_object() { return Close(); }
  bool end_array() {
    if (items_open_ && stack_.size() == 1) {
      items_open_ = false;
      return true;
    }
    return Close();
  }
  // Invalid JSON: the ordinary reader words the error.
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  // The top-level value, without the items handed on; null when the text held no object.
  Json& root() { return root_; }

 private:
  // An item starts when only the root is open and its items array is.
  bool AtItem() const { return items_open_ && stack_.size() == 1; }

  bool Value(Json v) {
    if (stack_.empty()) {
      return false;  // a scalar at the top
    }
    if (AtItem()) return deliver_(std::move(v), index_++);
    Put(std::move(v));
    return true;
  }
  bool Open(Json container) {
    if (stack_.empty()) {
      if (!container.is_object()) {
        return false;  // a top-level array: read the ordinary way
      }
      root_ = std::move(container);
      stack_.push_back(&root_);
      return true;
    }
    if (AtItem()) {
      item_ = std::move(container);
      stack_.push_back(&item_);
      return true;
    }
    stack_.push_back(Put(std::move(container)));
    return true;
  }
  bool Close() {
    stack_.pop_back();
    if (AtItem()) return deliver_(std::move(item_), index_++);
    return true;
  }
  Json* Put(Json v) {
    Json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    Json& slot = parent[key_];
    slot = std::move(v);
    return &slot;
  }

  Deliver deliver_;
  Json root_;
  Json item_;
  std::vector<Json*> stack_;
  std::string key_;
  bool items_open_ = false;
  size_t index_ = 0;
};

// A character iterator over the text that leaves where the parser is in `at`: nlohmann's parser
// keeps its own copy of the iterator, and reading the position is all a progress line needs.
class Tracked {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  Tracked(const char* p, const char** at) : p_(p), at_(at) {}
  reference operator*() const { return *p_; }
  Tracked& operator++() {
    *at_ = ++p_;
    return *this;
  }
  bool operator==(const Tracked& o) const { return p_ == o.p_; }
  bool operator!=(const Tracked& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  const char** at_;
};

bool HasKindAndVersion(const Json& item) {
  return item.is_object() && Find(item, "kind") != nullptr && Find(item, "apiVersion") != nullptr;
}

}  // namespace

bool StreamJsonList(std::string_view text, std::string_view source,
                    const std::function<Result<void>(SourcedDocument&&)>& f,
                    const OnListProgress& progress) {
  if (!LooksLikeJson(text)) return false;
  const char* at = text.data();
  size_t items = 0;
  auto report = [&] {
    if (progress) progress({source, static_cast<size_t>(at - text.data()), text.size(), ++items});
  };
  auto hand_on = [&](std::vector<SourcedDocument>& docs) {
    for (SourcedDocument& d : docs)
      if (!f(std::move(d))) return false;
    return true;
  };
  std::vector<std::pair<Json, size_t>> waiting;  // typed list items without kind or apiVersion
  auto deliver = [&](Json&& item, size_t i) {
    report();
    if (!HasKindAndVersion(item)) {
      waiting.emplace_back(std::move(item), i);
      return true;
    }
    std::vector<SourcedDocument> docs;
    // Items that carry their own kind and apiVersion take nothing from the list.
    return ExpandListItem(std::move(item), fmt::format("document 1, items[{}]", i), 1, "List",
                          nullptr, source, docs) &&
           hand_on(docs);
  };
  ListSax sax(deliver);
  try {
    const char* end = text.data() + text.size();
    bool parsed = progress ? Json::sax_parse(Tracked(text.data(), &at), Tracked(end, &at), &sax)
                           : Json::sax_parse(text.begin(), text.end(), &sax);
    if (!parsed) return false;
  } catch (const std::exception&) {
    return false;  // the ordinary reader reports it
  }
  std::string list_kind;
  if (!IsListKind(sax.root(), list_kind)) return false;
  Json api_version;
  if (const Json* v = Find(sax.root(), "apiVersion")) api_version = *v;
  // The List itself (its items member emptied): an error of its own stops here.
  std::vector<SourcedDocument> docs;
  if (!ExpandDocument(std::move(sax.root()), "document 1", 0, source, docs)) return false;
  for (auto& [item, i] : waiting) {
    if (!ExpandListItem(std::move(item), fmt::format("document 1, items[{}]", i), 1, list_kind,
                        api_version.is_null() ? nullptr : &api_version, source, docs))
      return false;
  }
  return hand_on(docs);
}

}  // namespace tidepool::kube::codec
