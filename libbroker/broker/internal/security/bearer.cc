#include "broker/internal/security/bearer.hh"

namespace broker::internal::security {

namespace {

constexpr std::string_view token_param = "token";

char lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool equal_ignoring_case(std::string_view x, std::string_view y) noexcept {
  if (x.size() != y.size())
    return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (lower(x[i]) != lower(y[i]))
      return false;
  return true;
}

/// RFC 6750's b64token (token68): 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" )
/// followed by any number of "=".
bool is_token68(std::string_view text) noexcept {
  size_t i = 0;
  while (i < text.size()) {
    auto c = text[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
              || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
    if (!ok)
      break;
    ++i;
  }
  if (i == 0)
    return false;
  while (i < text.size() && text[i] == '=')
    ++i;
  return i == text.size();
}

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9')
    return c - '0';
  c = lower(c);
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

/// Percent-decodes `text` (RFC 3986; '+' stays '+'); false on a malformed escape.
bool percent_decode(std::string_view text, std::string& out) {
  out.clear();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size())
      return false;
    auto hi = hex_value(text[i + 1]);
    auto lo = hex_value(text[i + 2]);
    if (hi < 0 || lo < 0)
      return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

/// Calls f(key, value) for each `&`-separated parameter of the query of `target`.
template <class F>
void for_each_param(std::string_view target, F f) {
  auto q = target.find('?');
  if (q == std::string_view::npos)
    return;
  auto query = target.substr(q + 1);
  if (auto hash = query.find('#'); hash != std::string_view::npos)
    query = query.substr(0, hash);
  while (!query.empty()) {
    auto amp = query.find('&');
    auto param = query.substr(0, amp);
    auto eq = param.find('=');
    f(param.substr(0, eq), eq == std::string_view::npos ? std::string_view{} : param.substr(eq + 1),
      eq != std::string_view::npos);
    if (amp == std::string_view::npos)
      break;
    query.remove_prefix(amp + 1);
  }
}

bearer_result failure(std::string what) {
  bearer_result result;
  result.error = std::move(what);
  return result;
}

} // namespace

bearer_result find_bearer_token(std::string_view authorization, std::string_view target) {
  bearer_result result;
  if (!authorization.empty()) {
    auto space = authorization.find(' ');
    auto scheme = authorization.substr(0, space);
    if (!equal_ignoring_case(scheme, "bearer"))
      return failure("Authorization: only the Bearer scheme is supported");
    auto rest = space == std::string_view::npos ? std::string_view{}
                                                : authorization.substr(space);
    while (!rest.empty() && rest.front() == ' ')
      rest.remove_prefix(1);
    while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t'))
      rest.remove_suffix(1);
    if (rest.empty())
      return failure("Authorization: Bearer without a token");
    if (rest.size() > max_bearer_token)
      return failure("Authorization: the token is longer than "
                     + std::to_string(max_bearer_token) + " bytes");
    if (!is_token68(rest))
      return failure("Authorization: the token has characters RFC 6750 does not allow "
                     "(A-Z a-z 0-9 - . _ ~ + / and trailing =)");
    result.source = token_source::header;
    result.token = std::string{rest};
  }
  std::string error;
  for_each_param(target, [&](std::string_view key, std::string_view value, bool has_value) {
    if (key != token_param || !error.empty())
      return;
    if (result.source != token_source::none) {
      error = result.source == token_source::header
                ? "a token in both the Authorization header and the query"
                : "the token parameter is given twice";
      return;
    }
    if (!has_value || value.empty()) {
      error = "the token parameter is empty";
      return;
    }
    if (value.size() > 3 * max_bearer_token) {
      error = "the token parameter is too long";
      return;
    }
    std::string decoded;
    if (!percent_decode(value, decoded)) {
      error = "the token parameter has a malformed %-escape";
      return;
    }
    if (decoded.empty() || decoded.size() > max_bearer_token) {
      error = "the token parameter is empty or longer than "
              + std::to_string(max_bearer_token) + " bytes";
      return;
    }
    result.source = token_source::query;
    result.token = std::move(decoded);
  });
  if (!error.empty())
    return failure(std::move(error));
  return result;
}

std::string redact_target(std::string_view target) {
  auto q = target.find('?');
  if (q == std::string_view::npos)
    return std::string{target};
  std::string result{target.substr(0, q + 1)};
  bool first = true;
  for_each_param(target, [&](std::string_view key, std::string_view value, bool has_value) {
    if (!first)
      result += '&';
    first = false;
    result += key;
    if (has_value) {
      result += '=';
      result += key == token_param ? std::string_view{"<hidden>"} : value;
    }
  });
  if (auto hash = target.find('#', q); hash != std::string_view::npos)
    result += target.substr(hash);
  return result;
}

} // namespace broker::internal::security
