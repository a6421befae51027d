#include "broker/internal/store/backend.test.hh"

#include <limits>

using namespace broker;
using namespace broker::internal;
using namespace broker::internal::store_test;
using namespace std::chrono_literals;

// Every test case below runs once per backend kind.
#define BACKEND_KINDS GENERATE(as<std::string>{}, "memory", "sqlite")

// -- basic operations -------------------------------------------------------------------------

TEST_CASE("a new store backend is empty", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  CHECK(*b->size() == 0);
  CHECK(*b->keys() == data{broker::set{}});
  CHECK(b->snapshot()->empty());
  CHECK(b->expiries()->empty());
  CHECK(*b->exists("x") == false);
  CHECK(code_of(b->get("x")) == "no_such_key");
}

TEST_CASE("put stores a value and a second put replaces it", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  CHECK(code_of(b->put("k", 1, std::nullopt)) == "none");
  CHECK(b.value("k") == data{1});
  CHECK(*b->exists("k"));
  CHECK(code_of(b->put("k", "two", std::nullopt)) == "none");
  CHECK(b.value("k") == data{"two"});
  CHECK(*b->size() == 1);
}

TEST_CASE("a put without an expiry clears the key's previous expiry", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  REQUIRE(!b->put("k", 1, at(100)));
  CHECK(b.expiry("k") == at(100));
  REQUIRE(!b->put("k", 2, std::nullopt));
  CHECK(b.expiry("k") == std::nullopt);
}

TEST_CASE("put_unique inserts an absent key and leaves a present one untouched",
          "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  auto first = b->put_unique("k", "first", at(10));
  REQUIRE(first);
  CHECK(*first == true);
  auto second = b->put_unique("k", "second", std::nullopt);
  REQUIRE(second);
  CHECK(*second == false);
  CHECK(b.value("k") == data{"first"});
  CHECK(b.expiry("k") == at(10));
}

TEST_CASE("erase removes a key with its expiry and erasing a missing key succeeds",
          "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  REQUIRE(!b->put("k", 1, at(10)));
  REQUIRE(!b->put("other", 2, std::nullopt));
  CHECK(code_of(b->erase("k")) == "none");
  CHECK(*b->exists("k") == false);
  CHECK(b->expiries()->empty());
  CHECK(code_of(b->erase("k")) == "none");
  CHECK(code_of(b->erase("never-there")) == "none");
  CHECK(*b->size() == 1);
}

TEST_CASE("clear removes every key and expiry", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  for (int i = 0; i < 10; ++i)
    REQUIRE(!b->put(i, i, at(i)));
  CHECK(code_of(b->clear()) == "none");
  CHECK(*b->size() == 0);
  CHECK(b->expiries()->empty());
  CHECK(code_of(b->clear()) == "none");
}

// -- expiry -----------------------------------------------------------------------------------

TEST_CASE("expire erases a key only once its expiry is reached", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  REQUIRE(!b->put("k", 1, at(100)));
  SECTION("before the deadline the key stays") {
    CHECK(*b->expire("k", at(99)) == false);
    CHECK(*b->exists("k"));
  }
  SECTION("exactly at the deadline the key goes") {
    CHECK(*b->expire("k", at(100)) == true);
    CHECK(*b->exists("k") == false);
    CHECK(b->expiries()->empty());
  }
  SECTION("after the deadline the key goes, and a second expire finds nothing") {
    CHECK(*b->expire("k", at(1000)) == true);
    CHECK(*b->expire("k", at(1000)) == false);
  }
}

TEST_CASE("expire never erases a key without expiry or a missing key", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  REQUIRE(!b->put("k", 1, std::nullopt));
  CHECK(*b->expire("k", at(1'000'000'000)) == false);
  CHECK(*b->exists("k"));
  CHECK(*b->expire("missing", at(0)) == false);
}

TEST_CASE("expiries lists exactly the keys with an expiry, in key order", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  REQUIRE(!b->put("c", 1, at(3)));
  REQUIRE(!b->put("a", 1, at(1)));
  REQUIRE(!b->put("b", 1, std::nullopt));
  REQUIRE(!b->put(42, 1, timestamp{-1ns})); // before the epoch is a valid deadline too
  auto xs = b->expiries();
  REQUIRE(xs);
  std::vector<std::pair<data, timestamp>> want{
    {data{42}, timestamp{-1ns}}, {data{"a"}, at(1)}, {data{"c"}, at(3)}};
  CHECK(*xs == want);
}

TEST_CASE("add and subtract set the key's expiry to the one given or clear it",
          "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  REQUIRE(!b->add("n", count{1}, data::type::count, at(5)));
  CHECK(b.expiry("n") == at(5));
  REQUIRE(!b->add("n", count{1}, data::type::count, at(7)));
  CHECK(b.expiry("n") == at(7));
  REQUIRE(!b->subtract("n", count{1}, std::nullopt));
  CHECK(b.expiry("n") == std::nullopt);
  REQUIRE(!b->subtract("n", count{1}, at(9)));
  CHECK(b.expiry("n") == at(9));
  REQUIRE(!b->add("n", count{1}, data::type::count, std::nullopt));
  CHECK(b.expiry("n") == std::nullopt);
}

// -- add --------------------------------------------------------------------------------------

TEST_CASE("add on a missing key starts from the default value of init_type",
          "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  struct row {
    data::type init;
    data value;
    data result;
  };
  const row rows[] = {
    {data::type::count, count{5}, count{5}},
    {data::type::integer, integer{-5}, integer{-5}},
    {data::type::real, 1.5, 1.5},
    {data::type::string, "abc", "abc"},
    {data::type::timespan, timespan{3s}, timespan{3s}},
    {data::type::timestamp, timespan{3s}, at(3)},
    {data::type::set, "x", set_of({"x"})},
    {data::type::table, vec({"k", "v"}), table_of({{"k", "v"}})},
    {data::type::vector, 7, vec({7})},
  };
  for (const auto& r : rows) {
    auto key = data{std::string{to_string(r.init)}};
    CAPTURE(key);
    CHECK(code_of(b->add(key, r.value, r.init, std::nullopt)) == "none");
    CHECK(b.value(key) == r.result);
  }
}

TEST_CASE("add follows Broker's arithmetic for every addable type", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  struct row {
    data initial;
    data operand;
    data result;
  };
  const row rows[] = {
    {count{40}, count{2}, count{42}},
    {integer{-40}, integer{-2}, integer{-42}},
    {1.25, 0.5, 1.75},
    {timespan{1s}, timespan{500ms}, timespan{1500ms}},
    {at(10), timespan{-3s}, at(7)},
    {"foo", "bar", "foobar"},
    {set_of({1, 2}), 3, set_of({1, 2, 3})},
    {set_of({1, 2}), 2, set_of({1, 2})},
    {table_of({{"a", 1}}), vec({"b", 2}), table_of({{"a", 1}, {"b", 2}})},
    {table_of({{"a", 1}}), vec({"a", 9}), table_of({{"a", 9}})},
    {vec({1}), vec({2}), vec({1, vec({2})})},
  };
  for (const auto& r : rows) {
    CAPTURE(r.initial, r.operand);
    REQUIRE(!b->put("k", r.initial, std::nullopt));
    CHECK(code_of(b->add("k", r.operand, data::type::none, std::nullopt)) == "none");
    CHECK(b.value("k") == r.result);
  }
}

TEST_CASE("add with a value of the wrong type is a type_clash and changes nothing",
          "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  const std::pair<data, data> rows[] = {
    {count{1}, integer{1}},
    {count{1}, 1.0},
    {integer{1}, count{1}},
    {1.0, integer{1}},
    {timespan{1s}, count{1}},
    {timespan{1s}, at(1)},
    {at(1), at(1)},
    {at(1), integer{1}},
    {"s", count{1}},
    {"s", enum_value{"s"}},
    {table_of({}), "not a vector"},
    {data{}, count{1}},
    {true, true},
    {address{}, count{1}},
    {subnet{}, count{1}},
    {port{80, port::protocol::tcp}, count{1}},
    {enum_value{"e"}, enum_value{"f"}},
  };
  for (const auto& [initial, operand] : rows) {
    CAPTURE(initial, operand);
    REQUIRE(!b->put("k", initial, at(1)));
    auto err = b->add("k", operand, initial.get_type(), at(2));
    CHECK(code_of(err) == "type_clash");
    CHECK(b.value("k") == initial);
    CHECK(b.expiry("k") == at(1));
  }
}

TEST_CASE("add to a table needs a vector of exactly two elements", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  REQUIRE(!b->put("t", table_of({{"a", 1}}), std::nullopt));
  CHECK(code_of(b->add("t", vec({"b"}), data::type::table, std::nullopt)) == "invalid_data");
  CHECK(code_of(b->add("t", vec({"b", 2, 3}), data::type::table, std::nullopt))
        == "invalid_data");
  CHECK(code_of(b->add("t", vec({}), data::type::table, std::nullopt)) == "invalid_data");
  CHECK(b.value("t") == table_of({{"a", 1}}));
}

TEST_CASE("a failed add on a missing key creates no key", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  const std::pair<data::type, data> rows[] = {
    {data::type::none, count{1}},
    {data::type::boolean, true},
    {data::type::address, count{1}},
    {data::type::subnet, count{1}},
    {data::type::port, count{1}},
    {data::type::enum_value, "e"},
    {data::type::count, "wrong"},
    {data::type::timestamp, at(1)},
  };
  for (const auto& [init, operand] : rows) {
    CAPTURE(to_string(init), operand);
    CHECK(code_of(b->add("k", operand, init, std::nullopt)) == "type_clash");
    CHECK(*b->exists("k") == false);
  }
  CHECK(code_of(b->add("k", vec({1}), data::type::table, std::nullopt)) == "invalid_data");
  CHECK(*b->exists("k") == false);
}

TEST_CASE("add with an init_type outside the data types is invalid_data", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  auto bogus = static_cast<data::type>(15);
  CHECK(code_of(b->add("k", count{1}, bogus, std::nullopt)) == "invalid_data");
  CHECK(*b->exists("k") == false);
}

// -- subtract ---------------------------------------------------------------------------------

TEST_CASE("subtract follows Broker's arithmetic for every subtractable type",
          "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  struct row {
    data initial;
    data operand;
    data result;
  };
  const row rows[] = {
    {count{44}, count{2}, count{42}},
    {integer{2}, integer{5}, integer{-3}},
    {1.75, 0.5, 1.25},
    {timespan{1s}, timespan{1500ms}, timespan{-500ms}},
    {at(10), timespan{3s}, at(7)},
    {set_of({1, 2}), 2, set_of({1})},
    {set_of({1, 2}), 3, set_of({1, 2})},
    {table_of({{"a", 1}, {"b", 2}}), "a", table_of({{"b", 2}})},
    {table_of({{"a", 1}}), "zz", table_of({{"a", 1}})},
    {vec({1, 2, 3}), "ignored", vec({1, 2})},
    {vec({}), 1, vec({})},
  };
  for (const auto& r : rows) {
    CAPTURE(r.initial, r.operand);
    REQUIRE(!b->put("k", r.initial, std::nullopt));
    CHECK(code_of(b->subtract("k", r.operand, std::nullopt)) == "none");
    CHECK(b.value("k") == r.result);
  }
}

TEST_CASE("subtract from a missing key is no_such_key", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  CHECK(code_of(b->subtract("k", count{1}, std::nullopt)) == "no_such_key");
  CHECK(*b->exists("k") == false);
}

TEST_CASE("subtract with a value of the wrong type is a type_clash and changes nothing",
          "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  const std::pair<data, data> rows[] = {
    {count{1}, integer{1}},
    {integer{1}, 1.0},
    {1.0, count{1}},
    {timespan{1s}, integer{1}},
    {at(1), at(1)},
    {"string", "s"},
    {data{}, count{1}},
    {false, true},
    {address{}, count{1}},
    {subnet{}, count{1}},
    {port{}, count{1}},
    {enum_value{"e"}, enum_value{"e"}},
  };
  for (const auto& [initial, operand] : rows) {
    CAPTURE(initial, operand);
    REQUIRE(!b->put("k", initial, at(1)));
    CHECK(code_of(b->subtract("k", operand, at(2))) == "type_clash");
    CHECK(b.value("k") == initial);
    CHECK(b.expiry("k") == at(1));
  }
}

TEST_CASE("integer arithmetic wraps around instead of overflowing", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  constexpr auto max_count = std::numeric_limits<count>::max();
  constexpr auto max_int = std::numeric_limits<integer>::max();
  constexpr auto min_int = std::numeric_limits<integer>::min();
  REQUIRE(!b->put("c", count{max_count}, std::nullopt));
  REQUIRE(!b->add("c", count{1}, data::type::count, std::nullopt));
  CHECK(b.value("c") == data{count{0}});
  REQUIRE(!b->subtract("c", count{1}, std::nullopt));
  CHECK(b.value("c") == data{count{max_count}});
  REQUIRE(!b->put("i", integer{max_int}, std::nullopt));
  REQUIRE(!b->add("i", integer{1}, data::type::integer, std::nullopt));
  CHECK(b.value("i") == data{integer{min_int}});
  REQUIRE(!b->subtract("i", integer{1}, std::nullopt));
  CHECK(b.value("i") == data{integer{max_int}});
  REQUIRE(!b->put("t", timespan{max_int}, std::nullopt));
  REQUIRE(!b->add("t", timespan{1}, data::type::timespan, std::nullopt));
  CHECK(b.value("t") == data{timespan{min_int}});
}

// -- get_index_from_value ---------------------------------------------------------------------

TEST_CASE("get_index_from_value indexes a vector by count or non-negative integer",
          "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  REQUIRE(!b->put("v", vec({"a", "b"}), std::nullopt));
  CHECK(*b->get_index_from_value("v", count{0}) == data{"a"});
  CHECK(*b->get_index_from_value("v", integer{1}) == data{"b"});
  CHECK(code_of(b->get_index_from_value("v", count{2})) == "no_such_key");
  CHECK(code_of(b->get_index_from_value("v", integer{-1})) == "type_clash");
  CHECK(code_of(b->get_index_from_value("v", "0")) == "type_clash");
  CHECK(code_of(b->get_index_from_value("v", 0.0)) == "type_clash");
}

TEST_CASE("get_index_from_value reports set membership as a boolean", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  REQUIRE(!b->put("s", set_of({1, "x"}), std::nullopt));
  CHECK(*b->get_index_from_value("s", "x") == data{true});
  CHECK(*b->get_index_from_value("s", 1) == data{true});
  CHECK(*b->get_index_from_value("s", count{1}) == data{false});
  CHECK(*b->get_index_from_value("s", "y") == data{false});
}

TEST_CASE("get_index_from_value looks up a table key or reports no_such_key",
          "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  REQUIRE(!b->put("t", table_of({{"a", 1}, {vec({1, 2}), "pair"}}), std::nullopt));
  CHECK(*b->get_index_from_value("t", "a") == data{1});
  CHECK(*b->get_index_from_value("t", vec({1, 2})) == data{"pair"});
  CHECK(code_of(b->get_index_from_value("t", "b")) == "no_such_key");
}

TEST_CASE("get_index_from_value on a scalar is a type_clash and on a missing key no_such_key",
          "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  REQUIRE(!b->put("n", count{5}, std::nullopt));
  REQUIRE(!b->put("s", "text", std::nullopt));
  CHECK(code_of(b->get_index_from_value("n", count{0})) == "type_clash");
  CHECK(code_of(b->get_index_from_value("s", count{0})) == "type_clash");
  CHECK(code_of(b->get_index_from_value("missing", count{0})) == "no_such_key");
}

// -- keys, size, snapshot ---------------------------------------------------------------------

TEST_CASE("keys, size and snapshot cover every key in ascending order", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  // One key of every type, inserted in reverse of the total order.
  const std::vector<data> keys{
    data{},
    true,
    count{7},
    integer{-7},
    -2.5,
    "str",
    address{},
    subnet{},
    port{443, port::protocol::tcp},
    at(123),
    timespan{5ms},
    enum_value{"Foo::BAR"},
    set_of({1, 2}),
    table_of({{"x", vec({})}}),
    vec({1, "two", set_of({})}),
  };
  for (auto i = keys.rbegin(); i != keys.rend(); ++i)
    REQUIRE(!b->put(*i, vec({*i}), std::nullopt));
  CHECK(*b->size() == keys.size());
  broker::set key_set(keys.begin(), keys.end());
  CHECK(*b->keys() == data{key_set});
  auto snap = b->snapshot();
  REQUIRE(snap);
  REQUIRE(snap->size() == keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    CAPTURE(i);
    CHECK((*snap)[i].first == keys[i]);
    CHECK((*snap)[i].second == vec({keys[i]}));
  }
  for (const auto& key : keys)
    CHECK(b.value(key) == vec({key}));
}

TEST_CASE("negative and positive zero are the same key", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  REQUIRE(!b->put(-0.0, "negative", std::nullopt));
  REQUIRE(!b->put(0.0, "positive", std::nullopt));
  REQUIRE(!b->put(set_of({-0.0}), "set", std::nullopt));
  CHECK(*b->size() == 2);
  CHECK(b.value(-0.0) == data{"positive"});
  CHECK(b.value(set_of({0.0})) == data{"set"});
  CHECK(*b->exists(table_of({})) == false);
}

TEST_CASE("a missing key's error message names the key", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  auto result = b->get("some-key");
  REQUIRE_FALSE(result);
  CHECK_THAT(result.error_value().message(), Catch::Contains("'some-key'"));
}

// -- batches ----------------------------------------------------------------------------------

TEST_CASE("reads inside a batch see its writes", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  REQUIRE(code_of(b->begin_batch()) == "none");
  REQUIRE(!b->put("a", 1, std::nullopt));
  REQUIRE(!b->add("n", count{2}, data::type::count, std::nullopt));
  REQUIRE(!b->add("n", count{3}, data::type::count, std::nullopt));
  CHECK(b.value("a") == data{1});
  CHECK(b.value("n") == data{count{5}});
  CHECK(*b->size() == 2);
  REQUIRE(code_of(b->commit_batch()) == "none");
  CHECK(*b->size() == 2);
}

TEST_CASE("a failed operation inside a batch leaves the batch usable", "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  REQUIRE(!b->begin_batch());
  REQUIRE(!b->put("s", "text", std::nullopt));
  CHECK(code_of(b->add("s", count{1}, data::type::count, std::nullopt)) == "type_clash");
  CHECK(code_of(b->subtract("missing", count{1}, std::nullopt)) == "no_such_key");
  REQUIRE(!b->put("t", "more", std::nullopt));
  CHECK(code_of(b->commit_batch()) == "none");
  CHECK(*b->size() == 2);
}

TEST_CASE("nested begin_batch and commit_batch without a batch are logic errors",
          "[store_backend]") {
  backend_fixture b{BACKEND_KINDS};
  CAPTURE(b.kind);
  CHECK(code_of(b->commit_batch()) == "logic_error");
  REQUIRE(!b->begin_batch());
  CHECK(code_of(b->begin_batch()) == "logic_error");
  CHECK(code_of(b->commit_batch()) == "none");
  CHECK(code_of(b->commit_batch()) == "logic_error");
}

// -- factory ----------------------------------------------------------------------------------

TEST_CASE("make_backend builds both kinds and rejects options for the memory backend",
          "[store_backend]") {
  temp_dir dir;
  CHECK(code_of(make_backend(backend_kind::memory, {})) == "none");
  auto bad = make_backend(backend_kind::memory, {{"path", "x"}});
  CHECK(code_of(bad) == "invalid_config");
  auto sqlite = make_backend(backend_kind::sqlite, {{"path", dir.file("s.db")}});
  CHECK(code_of(sqlite) == "none");
}
