#include "broker/topic.hh"

#include <catch2/catch.hpp>

using namespace broker;

namespace {

filter_type minimized(filter_type xs) {
  minimize(xs);
  return xs;
}

} // namespace

TEST_CASE("minimize sorts and removes duplicates", "[topic][minimize]") {
  CHECK(minimized({"/b", "/a", "/b", "/a"}) == filter_type{"/a", "/b"});
  CHECK(minimized({}) == filter_type{});
  CHECK(minimized({"/x"}) == filter_type{"/x"});
}

TEST_CASE("minimize drops entries that a shorter prefix covers", "[topic][minimize]") {
  CHECK(minimized({"/a/b", "/a"}) == filter_type{"/a"});
  CHECK(minimized({"/a/b/c", "/a/b", "/a/c", "/a"}) == filter_type{"/a"});
  CHECK(minimized({"/a/b", "/a/c", "/b"}) == filter_type{"/a/b", "/a/c", "/b"});
}

TEST_CASE("minimize treats /foo as covering /foobar (raw byte prefix)", "[topic][minimize]") {
  CHECK(minimized({"/foobar", "/foo"}) == filter_type{"/foo"});
  CHECK(minimized({"/foo", "/foo/bar", "/foobar", "/fo"}) == filter_type{"/fo"});
  CHECK(minimized({"/foo/", "/foobar"}) == filter_type{"/foo/", "/foobar"});
  CHECK(minimized({"/foo1", "/foo"}) == filter_type{"/foo"});
}

TEST_CASE("minimize keeps only the empty prefix when present", "[topic][minimize]") {
  CHECK(minimized({"/a", "", "/b", "<$>/local"}) == filter_type{""});
  CHECK(minimized({"", ""}) == filter_type{""});
}

TEST_CASE("minimize keeps a covered entry's unrelated successors", "[topic][minimize]") {
  // "/a" covers "/a/x" but not "/b", which sorts after both.
  CHECK(minimized({"/b", "/a/x", "/a", "/a/y", "/c/d", "/c"})
        == filter_type{"/a", "/b", "/c"});
}

TEST_CASE("minimize compares bytes unsigned", "[topic][minimize]") {
  CHECK(minimized({"\xff", "a", "\xff\x01"}) == filter_type{"a", "\xff"});
}
