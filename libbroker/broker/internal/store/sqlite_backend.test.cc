// SQLite-only behaviour: persistence, batches as transactions, option validation and the
// files it must refuse without crashing. The shared suite is in store_backend.test.cc.

#include "broker/internal/store/backend.test.hh"

#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>

#include <unistd.h>

using namespace broker;
using namespace broker::internal;
using namespace broker::internal::store_test;
using namespace std::chrono_literals;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  REQUIRE(in);
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  REQUIRE(out);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out);
}

// Rewrites every occurrence of `from` in the file by `to` (same length, so the SQLite page
// layout stays valid) and returns how many it replaced.
size_t patch_file(const std::string& path, const std::string& from, const std::string& to) {
  REQUIRE(from.size() == to.size());
  auto bytes = read_file(path);
  size_t n = 0;
  for (auto pos = bytes.find(from); pos != std::string::npos; pos = bytes.find(from, pos)) {
    bytes.replace(pos, from.size(), to);
    ++n;
  }
  write_file(path, bytes);
  return n;
}

// A database file in rollback-journal mode, so that after closing everything is in the one
// file that the tests then patch.
backend_options single_file(const std::string& path) {
  return {{"path", path}, {"journal_mode", "DELETE"}};
}

void require_open_error(const backend_options& options, const std::string& needle) {
  auto result = make_sqlite_backend(options);
  REQUIRE_FALSE(result);
  auto msg = result.error_value().message();
  CAPTURE(msg);
  CHECK(code_of(result) == "cannot_open_file");
  CHECK_THAT(msg, Catch::Contains(options.at("path")));
  CHECK_THAT(msg, Catch::Contains(needle));
}

} // namespace

// -- persistence and batches ------------------------------------------------------------------

TEST_CASE("the SQLite backend keeps values and expiries across reopening",
          "[store_backend][sqlite]") {
  temp_dir dir;
  backend_options options{{"path", dir.file("persist.db")}};
  {
    auto b = open_sqlite(options);
    REQUIRE(!b->put("a", set_of({1, 2}), at(50)));
    REQUIRE(!b->put(vec({1, "x"}), table_of({{"k", -1.5}}), std::nullopt));
    REQUIRE(!b->add("n", count{3}, data::type::count, at(60)));
  }
  auto b = open_sqlite(options);
  CHECK(*b->size() == 3);
  CHECK(*b->get("a") == set_of({1, 2}));
  CHECK(*b->get(vec({1, "x"})) == table_of({{"k", -1.5}}));
  CHECK(*b->get("n") == data{count{3}});
  std::vector<std::pair<data, timestamp>> want{{data{"a"}, at(50)}, {data{"n"}, at(60)}};
  CHECK(*b->expiries() == want);
}

TEST_CASE("a SQLite batch becomes durable on commit and vanishes if never committed",
          "[store_backend][sqlite]") {
  temp_dir dir;
  backend_options options{{"path", dir.file("batch.db")}};
  {
    auto b = open_sqlite(options);
    REQUIRE(!b->put("before", 0, std::nullopt));
    REQUIRE(!b->begin_batch());
    for (int i = 0; i < 100; ++i)
      REQUIRE(!b->put(i, i, at(i)));
    REQUIRE(!b->erase("before"));
    CHECK(*b->size() == 100);
  } // Destroyed with the batch open: as if the process had died before the commit.
  {
    auto b = open_sqlite(options);
    CHECK(*b->size() == 1);
    CHECK(*b->exists("before"));
    REQUIRE(!b->begin_batch());
    for (int i = 0; i < 100; ++i)
      REQUIRE(!b->put(i, i, at(i)));
    REQUIRE(!b->commit_batch());
  }
  auto b = open_sqlite(options);
  CHECK(*b->size() == 101);
  CHECK(b->expiries()->size() == 100);
}

TEST_CASE("a write to a database that another connection is batching fails, reads do not",
          "[store_backend][sqlite]") {
  temp_dir dir;
  backend_options options{{"path", dir.file("shared.db")}};
  auto writer = open_sqlite(options);
  auto other = open_sqlite(options);
  REQUIRE(!writer->put("committed", 1, std::nullopt));
  REQUIRE(!writer->begin_batch());
  REQUIRE(!writer->put("pending", 2, std::nullopt));
  require_open_error(options, "database is locked");
  auto err = other->put("x", 3, std::nullopt);
  CHECK(code_of(err) == "backend_failure");
  CHECK_THAT(err.message(), Catch::Contains(options["path"]));
  CHECK(code_of(other->begin_batch()) == "backend_failure");
  CHECK(*other->get("committed") == data{1});
  CHECK(*other->exists("pending") == false);
  REQUIRE(!writer->commit_batch());
  CHECK(code_of(other->put("x", 3, std::nullopt)) == "none");
  CHECK(*other->get("pending") == data{2});
}

TEST_CASE("the journal_mode option decides whether SQLite writes a write-ahead log",
          "[store_backend][sqlite]") {
  temp_dir dir;
  auto wal = open_sqlite({{"path", dir.file("wal.db")}});
  REQUIRE(!wal->put("k", 1, std::nullopt));
  CHECK(std::filesystem::exists(dir.file("wal.db-wal")));
  auto rollback = open_sqlite(single_file(dir.file("rollback.db")));
  REQUIRE(!rollback->put("k", 1, std::nullopt));
  CHECK_FALSE(std::filesystem::exists(dir.file("rollback.db-wal")));
}

// -- options ----------------------------------------------------------------------------------

TEST_CASE("each invalid SQLite option is rejected naming the option and its value",
          "[store_backend][sqlite]") {
  temp_dir dir;
  auto path = dir.file("never.db");
  struct row {
    backend_options options;
    std::string name;
    std::string value;
  };
  const row rows[] = {
    {{{"path", path}, {"synchronous", "SOMETIMES"}}, "'synchronous'", "'SOMETIMES'"},
    {{{"path", path}, {"journal_mode", "WAL2"}}, "'journal_mode'", "'WAL2'"},
    {{{"path", path}, {"integrity_check", "yes"}}, "'integrity_check'", "'yes'"},
    {{{"path", path}, {"failure_mode", "DELETE"}}, "'failure_mode'", "'DELETE'"},
    {{{"path", ""}}, "'path'", "empty"},
    {{{"synchronous", "FULL"}}, "'path'", "required"},
  };
  for (const auto& r : rows) {
    auto result = make_sqlite_backend(r.options);
    REQUIRE_FALSE(result);
    auto msg = result.error_value().message();
    CAPTURE(msg);
    CHECK(code_of(result) == "invalid_config");
    CHECK_THAT(msg, Catch::Contains(r.name));
    CHECK_THAT(msg, Catch::Contains(r.value));
  }
  // Validation happens before the file system is touched.
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("the SQLite backend accepts every documented option value in any letter case",
          "[store_backend][sqlite]") {
  temp_dir dir;
  int n = 0;
  auto try_open = [&](const std::string& name, const std::string& value) {
    CAPTURE(name, value);
    auto result = make_sqlite_backend(
      {{"path", dir.file("db" + std::to_string(++n))}, {name, value}});
    INFO((result ? "" : to_string(result.error_value())));
    CHECK(result);
    if (result)
      CHECK(code_of((*result)->put("k", 1, std::nullopt)) == "none");
  };
  for (auto value : {"OFF", "NORMAL", "FULL", "EXTRA", "full"})
    try_open("synchronous", value);
  for (auto value : {"DELETE", "TRUNCATE", "PERSIST", "MEMORY", "WAL", "OFF", "wal"})
    try_open("journal_mode", value);
  for (auto value : {"true", "false", "TRUE"})
    try_open("integrity_check", value);
}

// -- files it must refuse ---------------------------------------------------------------------

TEST_CASE("a file of random bytes is refused with cannot_open_file and left unchanged",
          "[store_backend][sqlite]") {
  temp_dir dir;
  auto path = dir.file("garbage.db");
  auto size = GENERATE(size_t{7}, size_t{100}, size_t{4096}, size_t{65536});
  CAPTURE(size);
  std::mt19937 rng{static_cast<unsigned>(size)};
  std::string bytes(size, '\0');
  for (auto& c : bytes)
    c = static_cast<char>(rng());
  write_file(path, bytes);
  auto journal_mode = GENERATE(as<std::string>{}, "WAL", "DELETE");
  CAPTURE(journal_mode);
  require_open_error({{"path", path}, {"journal_mode", journal_mode}}, "not a database");
  CHECK(read_file(path) == bytes);
  CHECK_FALSE(std::filesystem::exists(path + "-wal"));
  CHECK_FALSE(std::filesystem::exists(path + "-journal"));
}

TEST_CASE("a directory given as the path is refused with cannot_open_file",
          "[store_backend][sqlite]") {
  temp_dir dir;
  require_open_error({{"path", dir.path.string()}}, "unable to open database file");
}

TEST_CASE("a path in a read-only location is refused with cannot_open_file",
          "[store_backend][sqlite]") {
  SECTION("a file in /proc, which not even root may create") {
    require_open_error({{"path", "/proc/broker-store-test.db"}}, "unable to open database file");
  }
  SECTION("a directory without write permission") {
    if (::geteuid() == 0) {
      WARN("skipped: root ignores directory permissions");
      return;
    }
    temp_dir dir;
    std::filesystem::permissions(dir.path, std::filesystem::perms::owner_read
                                             | std::filesystem::perms::owner_exec);
    auto result = make_sqlite_backend({{"path", dir.file("ro.db")}});
    CHECK(code_of(result) == "cannot_open_file");
  }
}

TEST_CASE("a path below a regular file is refused with cannot_open_file",
          "[store_backend][sqlite]") {
  temp_dir dir;
  write_file(dir.file("plain"), "not a directory");
  auto path = dir.file("plain") + "/sub/store.db";
  require_open_error({{"path", path}}, "cannot create directory");
}

TEST_CASE("the SQLite backend creates the missing parent directories of its path",
          "[store_backend][sqlite]") {
  temp_dir dir;
  auto path = dir.file("a/b/c/store.db");
  auto b = open_sqlite({{"path", path}});
  CHECK(std::filesystem::exists(path));
}

TEST_CASE("a SQLite database with other tables and no meta table is refused",
          "[store_backend][sqlite]") {
  temp_dir dir;
  auto path = dir.file("foreign.db");
  open_sqlite(single_file(path));
  // Renames meta everywhere it is named (table, its index, the schema text).
  REQUIRE(patch_file(path, "meta", "mate") >= 2);
  auto before = read_file(path);
  require_open_error({{"path", path}}, "no 'meta' table");
  CHECK(read_file(path) == before); // not even switched to WAL
}

TEST_CASE("a SQLite database without a format_version, like Broker's, is refused",
          "[store_backend][sqlite]") {
  temp_dir dir;
  auto path = dir.file("broker.db");
  open_sqlite(single_file(path));
  // Broker's meta table holds 'broker_version' (patched in the row and in its index).
  REQUIRE(patch_file(path, "format_version", "broker_version") >= 2);
  require_open_error({{"path", path}}, "no format_version");
}

TEST_CASE("an empty file is opened as a new database", "[store_backend][sqlite]") {
  temp_dir dir;
  auto path = dir.file("empty.db");
  write_file(path, "");
  auto b = open_sqlite({{"path", path}});
  REQUIRE(!b->put("k", 1, std::nullopt));
  CHECK(*b->size() == 1);
}

TEST_CASE("a SQLite database of another format version is refused",
          "[store_backend][sqlite]") {
  temp_dir dir;
  auto path = dir.file("future.db");
  open_sqlite(single_file(path));
  REQUIRE(patch_file(path, "format_version1", "format_version7") == 1);
  auto before = read_file(path);
  require_open_error({{"path", path}}, "format_version is 7");
  CHECK(read_file(path) == before);
}

TEST_CASE("a SQLite database whose store table has other columns is refused",
          "[store_backend][sqlite]") {
  temp_dir dir;
  auto path = dir.file("columns.db");
  open_sqlite(single_file(path));
  REQUIRE(patch_file(path, "expiry INTEGER", "expirx INTEGER") == 1);
  require_open_error(single_file(path), "expirx");
}

TEST_CASE("integrity_check passes on a sound database", "[store_backend][sqlite]") {
  temp_dir dir;
  auto path = dir.file("sound.db");
  {
    auto b = open_sqlite({{"path", path}});
    for (int i = 0; i < 100; ++i)
      REQUIRE(!b->put(i, std::string(100, 'x'), std::nullopt));
  }
  auto b = open_sqlite({{"path", path}, {"integrity_check", "true"}});
  CHECK(*b->size() == 100);
}

TEST_CASE("a damaged page fails integrity_check and makes reads fail without a crash",
          "[store_backend][sqlite]") {
  temp_dir dir;
  auto path = dir.file("damaged.db");
  {
    auto b = open_sqlite(single_file(path));
    for (int i = 0; i < 500; ++i)
      REQUIRE(!b->put(i, std::string(200, 'x'), std::nullopt));
  }
  // Page 1 holds the schema; clobbering the b-tree header of the last page (a leaf of
  // `store`) leaves the file openable but makes its records unreachable.
  auto bytes = read_file(path);
  constexpr size_t page_size = 4096; // SQLite's default
  REQUIRE(bytes.size() > 4 * page_size);
  auto last_page = bytes.size() - page_size;
  for (size_t i = 0; i < 16; ++i)
    bytes[last_page + i] = '\xff';
  write_file(path, bytes);
  auto checked = single_file(path);
  checked["integrity_check"] = "true";
  require_open_error(checked, "integrity check failed");
  auto b = open_sqlite(single_file(path));
  CHECK(code_of(b->snapshot()) == "backend_failure");
}

// -- values ------------------------------------------------------------------------------------

TEST_CASE("the SQLite backend refuses a value that the binary codec cannot encode",
          "[store_backend][sqlite]") {
  temp_dir dir;
  auto b = open_sqlite({{"path", dir.file("nan.db")}});
  auto nan = std::numeric_limits<real>::quiet_NaN();
  auto err = b->put("k", set_of({1.0, nan}), std::nullopt);
  CHECK(code_of(err) == "serialization_failed");
  CHECK_THAT(err.message(), Catch::Contains("'k'"));
  CHECK(code_of(b->put(set_of({1.0, nan}), 1, std::nullopt)) == "serialization_failed");
  CHECK(*b->size() == 0);
  // A lone NaN is fine, and all NaNs are one key.
  REQUIRE(!b->put(nan, "nan", std::nullopt));
  CHECK(*b->get(-nan) == data{"nan"});
}
