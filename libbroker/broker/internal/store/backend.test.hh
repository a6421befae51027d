#pragma once

// Helpers shared by the store backend tests: error-code shorthands, value builders, a temp
// directory and a fixture that opens a backend of either kind. Test-only.

#include "broker/internal/store/backend.hh"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>

namespace broker::internal::store_test {

inline std::string code_of(const error& err) {
  return std::string{to_string(err.code())};
}

template <class T>
inline std::string code_of(const expected<T>& x) {
  return x ? std::string{"none"} : code_of(x.error_value());
}

inline timestamp at(int64_t seconds) {
  return timestamp{std::chrono::seconds{seconds}};
}

inline data vec(std::initializer_list<data> xs) {
  return data{broker::vector(xs)};
}

inline data set_of(std::initializer_list<data> xs) {
  return data{broker::set(xs)};
}

inline data table_of(std::initializer_list<std::pair<const data, data>> xs) {
  return data{broker::table(xs)};
}

/// A fresh directory under the system's temp directory, removed with everything in it.
struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    auto pattern = (std::filesystem::temp_directory_path() / "broker-store-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all, ignored);
    std::filesystem::remove_all(path, ignored);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline std::unique_ptr<store_backend> open_sqlite(backend_options options) {
  auto result = make_sqlite_backend(options);
  INFO("opening " << options["path"] << ": "
                  << (result ? std::string{"ok"} : to_string(result.error_value())));
  REQUIRE(code_of(result) == "none");
  return std::move(*result);
}

/// A backend of the kind under test; SQLite lives in a temp dir and can be reopened.
struct backend_fixture {
  std::string kind;
  temp_dir dir;
  std::unique_ptr<store_backend> backend;

  explicit backend_fixture(std::string kind_name) : kind(std::move(kind_name)) {
    if (kind == "memory")
      backend = make_memory_backend();
    else
      backend = open_sqlite({{"path", dir.file("store.db")}});
  }

  store_backend& operator*() { return *backend; }
  store_backend* operator->() { return backend.get(); }

  data value(const data& key) {
    auto result = backend->get(key);
    INFO("get(" << key << ") failed: " << (result ? "" : to_string(result.error_value())));
    REQUIRE(result);
    return *result;
  }

  std::optional<timestamp> expiry(const data& key) {
    auto xs = backend->expiries();
    REQUIRE(xs);
    for (auto& [k, t] : *xs)
      if (k == key)
        return t;
    return std::nullopt;
  }
};

} // namespace broker::internal::store_test
