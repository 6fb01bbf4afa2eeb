// Key order without building keys, against ObjectMeta::Key compared as strings: namespaces that
// are prefixes of others ("a/x" sorts after "a-b/x": '/' after '-'), the empty namespace of a
// cluster-scoped object, names that are prefixes or hold a '/', and keys given as strings.
#include "model/key_order.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace tidepool::model {
namespace {

int Sign(int c) { return (c > 0) - (c < 0); }

TEST(KeyOrder, AgreesWithTheBuiltKeys) {
  const std::vector<std::string> namespaces = {"", "a", "a-b", "a.b", "ab", "a0", "b"};
  const std::vector<std::string> names = {"", "x", "x-1", "x1", "x/", "/x", "a", "a-b/x", "y"};
  std::vector<ObjectMeta> metas;
  for (const std::string& ns : namespaces) {
    for (const std::string& name : names) {
      ObjectMeta m;
      m.namespace_ = ns;
      m.name = name;
      metas.push_back(m);
    }
  }
  std::vector<std::string> strings = {"", "a", "a/", "a-", "a/x0", "b/", "zz"};
  for (const ObjectMeta& m : metas) strings.push_back(m.Key());
  for (const ObjectMeta& a : metas) {
    for (const ObjectMeta& b : metas) {
      ASSERT_EQ(Sign(CompareKeys(a, b)), Sign(a.Key().compare(b.Key())))
          << a.Key() << " against " << b.Key();
    }
    for (const std::string& key : strings) {
      ASSERT_EQ(Sign(CompareKey(a, key)), Sign(a.Key().compare(key)))
          << a.Key() << " against " << key;
    }
  }
}

}  // namespace
}  // namespace tidepool::model
