#include "broker/internal/config/config_file.hh"

#include <cstdio>
#include <utility>

#include "broker/internal/config/options_table.hh"

namespace broker::internal {

namespace {

bool is_blank(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

bool is_key_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'
         || c == '-' || c == '.';
}

// Characters that end a bare (unquoted) value. '=' and ':' are not among them: passphrases
// in base64 and IPv6 addresses are written bare.
bool ends_bare_value(char c) noexcept {
  switch (c) {
    case ' ': case '\t': case '\r': case '\n': case '\v': case '\f':
    case '#': case ',': case '{': case '}': case '[': case ']': case '"': case '\'':
      return true;
    default:
      return false;
  }
}

// A character as an error message shows it: 'x' if printable, otherwise its code.
std::string describe(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f)
    return std::string{"'"} + c + "'";
  char buf[16];
  std::snprintf(buf, sizeof(buf), "byte 0x%02x", u);
  return buf;
}

std::string join_key(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

class parser {
public:
  parser(std::string_view text, std::string_view origin) : in_(text), origin_(origin) {}

  expected<std::vector<config_entry>> parse_file() {
    constexpr std::string_view utf8_bom = "\xEF\xBB\xBF";
    if (in_.substr(0, utf8_bom.size()) == utf8_bom)
      pos_ = utf8_bom.size();
    std::vector<config_entry> entries;
    if (!parse_statements(entries))
      return err_;
    return entries;
  }

  std::optional<std::vector<std::string>> parse_whole_list() {
    std::vector<std::string> items;
    skip_blank(true);
    if (peek() != '[' || !read_list(items))
      return std::nullopt;
    skip_blank(true);
    if (!at_end())
      return std::nullopt;
    return items;
  }

private:
  struct open_block {
    std::string prefix;
    size_t line;
    size_t column;
  };

  bool at_end() const noexcept { return pos_ >= in_.size(); }

  char peek() const noexcept { return at_end() ? '\0' : in_[pos_]; }

  void next() noexcept {
    if (in_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }

  bool fail(size_t line, size_t column, const std::string& what) {
    err_ = error{ec::invalid_config, std::string{origin_} + ":" + std::to_string(line) + ":"
                                       + std::to_string(column) + ": " + what};
    return false;
  }

  bool fail_here(const std::string& what) { return fail(line_, column_, what); }

  std::string describe_next() const {
    return at_end() ? std::string{"end of file"} : describe(peek());
  }

  // Skips blanks and comments; newlines only if `newlines`.
  void skip_blank(bool newlines) noexcept {
    while (!at_end()) {
      auto c = peek();
      if (c == '#') {
        while (!at_end() && peek() != '\n')
          next();
      } else if (is_blank(c) || (newlines && c == '\n')) {
        next();
      } else {
        return;
      }
    }
  }

  bool read_key(std::string& out) {
    auto line = line_;
    auto column = column_;
    out.clear();
    while (!at_end() && is_key_char(peek())) {
      out += peek();
      next();
    }
    if (!is_valid_key(out))
      return fail(line, column, "invalid key \"" + out + "\"");
    return check_key_size(out, line, column);
  }

  // `key` is a full key: the section prefixes joined with the key as written.
  bool check_key_size(const std::string& key, size_t line, size_t column) {
    if (key.size() <= max_key_size)
      return true;
    return fail(line, column, "key longer than " + std::to_string(max_key_size) + " bytes");
  }

  // A key in quotes, as JSON writes it: the same words as a bare key.
  bool read_quoted_key(std::string& out) {
    auto line = line_;
    auto column = column_;
    if (!read_quoted(out))
      return false;
    if (!is_valid_key(out))
      return fail(line, column, "invalid key \"" + out + "\"");
    return true;
  }

  bool read_quoted(std::string& out) {
    auto line = line_;
    auto column = column_;
    auto quote = peek();
    next();
    out.clear();
    for (;;) {
      if (at_end() || peek() == '\n')
        return fail(line, column, "unterminated string");
      auto c = peek();
      next();
      if (c == quote)
        return true;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end())
        return fail(line, column, "unterminated string");
      auto escaped = peek();
      switch (escaped) {
        case '"': case '\'': case '\\':
          out += escaped;
          break;
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        default:
          return fail_here("invalid escape sequence \\" + describe(escaped));
      }
      next();
    }
  }

  bool read_scalar(std::string& out) {
    auto c = peek();
    if (c == '"' || c == '\'')
      return read_quoted(out);
    out.clear();
    while (!at_end() && !ends_bare_value(peek())) {
      out += peek();
      next();
    }
    if (out.empty())
      return fail_here("expected a value, got " + describe_next());
    return true;
  }

  // Pre: peek() == '['. Lists hold scalars only, so no recursion is needed.
  bool read_list(std::vector<std::string>& out) {
    auto line = line_;
    auto column = column_;
    next();
    out.clear();
    for (;;) {
      skip_blank(true);
      if (at_end())
        return fail(line, column, "unterminated list (missing ']')");
      auto c = peek();
      if (c == ']') {
        next();
        return true;
      }
      if (c == '[' || c == '{')
        return fail_here("a list may only hold strings, got " + describe(c));
      std::string item;
      if (!read_scalar(item))
        return false;
      out.emplace_back(std::move(item));
      skip_blank(true);
      if (peek() == ',') {
        next();
      } else if (at_end()) {
        return fail(line, column, "unterminated list (missing ']')");
      } else if (peek() != ']') {
        return fail_here("expected ',' or ']' in a list, got " + describe_next());
      }
    }
  }

  bool read_section_header(const std::vector<open_block>& blocks, std::string& section) {
    if (!blocks.empty())
      return fail_here("a [section] header cannot appear inside braces");
    next();
    skip_blank(false);
    if (!read_key(section))
      return false;
    skip_blank(false);
    if (peek() != ']')
      return fail_here("expected ']' after the section name, got " + describe_next());
    next();
    return true;
  }

  // After a value: only a separator may follow, so `a = 1 2` or `a = "x"y` is an error.
  bool check_after_value(const std::string& key) {
    auto c = peek();
    if (at_end() || is_blank(c) || c == '\n' || c == ',' || c == '}' || c == '#')
      return true;
    return fail_here("unexpected " + describe(c) + " after the value of \"" + key + "\"");
  }

  bool parse_statements(std::vector<config_entry>& entries) {
    std::vector<open_block> blocks;
    std::string section; // from the last [section] header; applies outside braces
    for (;;) {
      skip_blank(true);
      if (at_end())
        break;
      auto c = peek();
      if (c == ',') {
        next();
      } else if (c == '}') {
        if (blocks.empty())
          return fail_here("unexpected '}' without an open section");
        blocks.pop_back();
        next();
      } else if (c == '[') {
        if (!read_section_header(blocks, section))
          return false;
      } else if (c == '{' && blocks.empty() && !opened_document_) {
        // A whole file in braces: the JSON form CAF reads (and Broker's tests write).
        opened_document_ = true;
        blocks.push_back(open_block{section, line_, column_});
        next();
      } else if (is_key_char(c) || c == '"' || c == '\'') {
        auto line = line_;
        auto column = column_;
        std::string key;
        if (!(is_key_char(c) ? read_key(key) : read_quoted_key(key)))
          return false;
        auto full_key = join_key(blocks.empty() ? section : blocks.back().prefix, key);
        if (!check_key_size(full_key, line, column))
          return false;
        skip_blank(false);
        if (peek() == '=' || peek() == ':') {
          next();
          skip_blank(false);
        } else if (peek() != '{') {
          return fail_here("expected '=' or '{' after \"" + key + "\", got " + describe_next());
        }
        if (peek() == '{') {
          next();
          blocks.push_back(open_block{std::move(full_key), line, column});
          continue;
        }
        config_entry entry{std::move(full_key), std::string{}, line, column};
        if (peek() == '[') {
          std::vector<std::string> items;
          if (!read_list(items))
            return false;
          entry.value = std::move(items);
        } else if (!read_scalar(std::get<std::string>(entry.value))) {
          return false;
        }
        if (!check_after_value(key))
          return false;
        entries.emplace_back(std::move(entry));
      } else {
        return fail_here("unexpected " + describe(c));
      }
    }
    if (!blocks.empty()) {
      const auto& open = blocks.back();
      return fail(open.line, open.column,
                  "section \"" + open.prefix + "\" is missing its closing '}'");
    }
    return true;
  }

  std::string_view in_;
  std::string_view origin_;
  size_t pos_ = 0;
  size_t line_ = 1;
  size_t column_ = 1;
  bool opened_document_ = false;
  error err_;
};

} // namespace

expected<std::vector<config_entry>> parse_config_text(std::string_view text,
                                                      std::string_view origin) {
  return parser{text, origin}.parse_file();
}

std::optional<std::vector<std::string>> parse_list_literal(std::string_view text) {
  return parser{text, "<list>"}.parse_whole_list();
}

} // namespace broker::internal
