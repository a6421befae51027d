#pragma once

// read_file_bounded: the whole of a small text file (a config file, a rules file) into a
// string, with C stdio rather than ifstream: libstdc++'s filebuf throws when a read fails
// (e.g. when the path is a directory), and the callers report errors as values.

#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>

namespace broker::internal {

/// What read_file_bounded() found; errno says why for cannot_open and cannot_read.
enum class file_read { ok, cannot_open, cannot_read, too_large };

/// Reads the file at `path` into `out`; stops with too_large once it exceeds `max_size`.
inline file_read read_file_bounded(const std::string& path, size_t max_size,
                                   std::string& out) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file{std::fopen(path.c_str(), "rb"),
                                                        &std::fclose};
  if (!file)
    return file_read::cannot_open;
  out.clear();
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), file.get())) > 0) {
    out.append(buf, n);
    if (out.size() > max_size)
      return file_read::too_large;
  }
  return std::ferror(file.get()) ? file_read::cannot_read : file_read::ok;
}

} // namespace broker::internal
