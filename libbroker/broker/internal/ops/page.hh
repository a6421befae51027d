#pragma once

// The live web view at / of the metrics server: static files (HTML, JavaScript, CSS) from
// the folder page/ beside this header, embedded into the library at build time by
// cmake/embed_files.cmake (no external tool, no build step for the page itself, no CDN).
// The page polls GET /v1/status once a second while it is visible and draws the mesh, the
// queues and the rates itself.

#include <cstddef>
#include <string_view>

namespace broker::internal {

/// One embedded file.
struct page_file {
  std::string_view path;         ///< E.g. "/index.html".
  std::string_view content_type; ///< E.g. "text/html; charset=utf-8".
  std::string_view body;
};

/// The file served at `path` ("/" is "/index.html"), or nullptr.
const page_file* find_page_file(std::string_view path) noexcept;

/// Every embedded file (defined in the generated page_files.cc).
extern const page_file page_files[];
extern const size_t num_page_files;

} // namespace broker::internal
