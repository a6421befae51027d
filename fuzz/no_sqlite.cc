// The fuzz build leaves out the SQLite backend (it would double the build time, and no target
// stores on disk), but backend.cc's make_backend() refers to it. This definition satisfies
// the linker and says so if anything ever calls it.

#include "broker/internal/store/backend.hh"

namespace broker::internal {

expected<std::unique_ptr<store_backend>> make_sqlite_backend(const backend_options&) {
  return error{ec::unspecified, "the SQLite backend is not part of the fuzz build"};
}

} // namespace broker::internal
