#include "option_rows.hh"

#include <utility>

namespace broker_tools {

using broker::option_info;
using broker::option_type;

option_info option_row(std::string key, option_type type, std::string default_value,
                       std::string help, char short_flag) {
  option_info info;
  info.key = std::move(key);
  info.type = type;
  info.default_value = std::move(default_value);
  info.help = std::move(help);
  info.short_flag = short_flag;
  return info;
}

option_info count_row(std::string key, uint64_t default_value, uint64_t min, uint64_t max,
                      std::string help, char short_flag) {
  auto info = option_row(std::move(key), option_type::count, std::to_string(default_value),
                         std::move(help), short_flag);
  info.min = min;
  info.max = max;
  return info;
}

option_info flag_row(std::string key, std::string help, char short_flag) {
  return option_row(std::move(key), option_type::boolean, "false", std::move(help),
                    short_flag);
}

option_info list_row(std::string key, std::string help, char short_flag) {
  return option_row(std::move(key), option_type::string_list, "[]", std::move(help),
                    short_flag);
}

option_info string_row(std::string key, std::string default_value, std::string help) {
  return option_row(std::move(key), option_type::string, std::move(default_value),
                    std::move(help));
}

option_info choice_row(std::string key, std::string default_value,
                       std::vector<std::string> choices, std::string help, char short_flag) {
  auto info = option_row(std::move(key), option_type::choice, std::move(default_value),
                         std::move(help), short_flag);
  info.choices = std::move(choices);
  return info;
}

broker::error add_rows(broker::configuration& cfg, std::vector<option_info> rows) {
  for (auto& info : rows)
    if (auto err = cfg.add_option(std::move(info)))
      return err;
  return {};
}

broker::error option_error(std::string_view key, std::string what) {
  return broker::error{broker::ec::invalid_config, std::string{key} + ": " + std::move(what)};
}

std::string in_quotes(std::string_view text) {
  return "\"" + std::string{text} + "\"";
}

} // namespace broker_tools
