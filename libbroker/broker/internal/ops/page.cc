#include "broker/internal/ops/page.hh"

namespace broker::internal {

const page_file* find_page_file(std::string_view path) noexcept {
  if (path == "/")
    path = "/index.html";
  for (size_t i = 0; i < num_page_files; ++i)
    if (page_files[i].path == path)
      return &page_files[i];
  return nullptr;
}

} // namespace broker::internal
