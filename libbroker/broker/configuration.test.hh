#pragma once

// Helpers shared by the configuration's unit tests (configuration.test.cc,
// configuration_compat.test.cc): argv as a program gets it, a fake environment, scratch
// files.

#include "broker/configuration.hh"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

namespace broker::test {

// argv as a program receives it: argv[0] is the program name, argv[argc] is null.
struct args {
  explicit args(std::vector<std::string> xs) : strings(std::move(xs)) {
    strings.insert(strings.begin(), "prog");
    for (auto& str : strings)
      pointers.push_back(str.c_str());
    pointers.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(strings.size()); }
  const char* const* argv() const { return pointers.data(); }
  std::vector<std::string> strings;
  std::vector<const char*> pointers;
};

inline error parse(configuration& cfg, std::vector<std::string> xs,
                   std::vector<std::string>* remainder = nullptr) {
  args a{std::move(xs)};
  return cfg.parse_args(a.argc(), a.argv(), remainder);
}

inline getenv_function fake_env(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto i = shared->find(name);
    return i == shared->end() ? nullptr : i->second.c_str();
  };
}

// A scratch file removed at the end of the test.
struct temp_file {
  explicit temp_file(const std::string& content) {
    char name[] = "/tmp/broker-config-test-XXXXXX";
    auto fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    path = name;
    std::ofstream{path, std::ios::binary} << content;
  }
  ~temp_file() { std::remove(path.c_str()); }
  std::string path;
};

} // namespace broker::test
