#include "broker/overflow_policy.hh"

#include <array>
#include <cstddef>

namespace broker {

namespace {

// Indexed by the enum's underlying value; the names are the config-file and JSON spelling.
constexpr std::array<std::string_view, 4> policy_names = {
  "block",
  "drop_oldest",
  "drop_newest",
  "disconnect",
};

// Config files and CLIs are written by people who type `drop-oldest` as often as
// `drop_oldest`: compare with '-' and '_' treated as the same character.
bool same_name(std::string_view text, std::string_view name) noexcept {
  if (text.size() != name.size())
    return false;
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = text[i] == '-' ? '_' : text[i];
    if (c != name[i])
      return false;
  }
  return true;
}

} // namespace

std::string_view to_string(overflow_policy x) noexcept {
  auto index = static_cast<size_t>(x);
  return index < policy_names.size() ? policy_names[index] : std::string_view{"invalid"};
}

std::optional<overflow_policy> parse_overflow_policy(std::string_view text) noexcept {
  for (size_t i = 0; i < policy_names.size(); ++i)
    if (same_name(text, policy_names[i]))
      return static_cast<overflow_policy>(i);
  return std::nullopt;
}

} // namespace broker
