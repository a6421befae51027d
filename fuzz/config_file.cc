// Fuzz target: the configuration sources an operator or a script hands to a node
// (config/config_file, configuration.cc): config-file text, list literals and command lines.
// Input: [mode][text...]. Mode bit 0 clear: the text is parsed as a config file and as a
// list literal; set: the text, split at NUL bytes, is an argument vector. The configurations
// carry one program option of each kind a tool adds (a list and a bounded count, as
// broker-node does).
//
// Checks: parse entries have valid keys and positions inside the text; errors are
// invalid_config naming "origin:line:column"; load_string() fails whenever the syntax does,
// changes nothing on error, and loading the same text twice gives the same configuration;
// parse_args() changes no option on error; a parsed list literal re-rendered with quotes
// parses to the same list.

#include "fuzz_common.hh"

#include "broker/configuration.hh"
#include "broker/internal/config/config_file.hh"
#include "broker/internal/config/options_table.hh"

#include <algorithm>

using namespace broker;

namespace {

constexpr std::string_view origin = "fuzz.conf";

configuration make_config() {
  configuration cfg;
  option_info topics;
  topics.key = "node.topics";
  topics.type = option_type::string_list;
  topics.env = "NODE_TOPICS";
  topics.short_flag = 't';
  option_info rate;
  rate.key = "rate";
  rate.type = option_type::count;
  rate.default_value = "100";
  rate.short_flag = 'r';
  rate.min = 1;
  rate.max = 1'000'000;
  FUZZ_CHECK(!cfg.add_option(topics));
  FUZZ_CHECK(!cfg.add_option(rate));
  return cfg;
}

// A list literal the parser must read back as `items`.
std::string render_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const auto& item : items) {
    out += '"';
    for (char c : item) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default: out += c;
      }
    }
    out += "\",";
  }
  out += ']';
  return out;
}

void check_entries(std::string_view text) {
  auto entries = internal::parse_config_text(text, origin);
  if (!entries) {
    FUZZ_CHECK(entries.error_value() == ec::invalid_config);
    FUZZ_CHECK(entries.error_value().message().rfind(std::string{origin} + ":", 0) == 0);
    return;
  }
  auto lines = 1 + static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  for (const auto& e : *entries) {
    FUZZ_CHECK_MSG(internal::is_valid_key(e.key), e.key);
    FUZZ_CHECK(e.line >= 1 && e.line <= lines);
    FUZZ_CHECK(e.column >= 1 && e.column <= text.size());
  }
}

void check_load(std::string_view text) {
  const auto initial = make_config();
  auto cfg = initial;
  auto err = cfg.load_string(text, origin);
  auto syntax_ok = internal::parse_config_text(text, origin).has_value();
  if (err) {
    FUZZ_CHECK(err == ec::invalid_config);
    FUZZ_CHECK(cfg == initial);
    return;
  }
  FUZZ_CHECK(syntax_ok);
  auto again = cfg;
  FUZZ_CHECK(!again.load_string(text, origin));
  FUZZ_CHECK(again == cfg);
}

void check_list(std::string_view text) {
  auto items = internal::parse_list_literal(text);
  if (!items)
    return;
  auto rendered = render_list(*items);
  auto again = internal::parse_list_literal(rendered);
  FUZZ_CHECK_MSG(again && *again == *items, rendered);
}

void check_args(std::string_view text) {
  std::vector<std::string> args{"broker-fuzz"};
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\0') {
      args.emplace_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  std::vector<const char*> argv;
  for (auto& arg : args)
    argv.push_back(arg.c_str());
  const auto initial = make_config();
  auto cfg = initial;
  std::vector<std::string> remainder;
  auto err = cfg.parse_args(static_cast<int>(argv.size()), argv.data(), &remainder);
  if (err) {
    FUZZ_CHECK(err == ec::invalid_config);
    FUZZ_CHECK(cfg == initial);
  }
  // Without a remainder argument, the same arguments mean the same.
  if (!err && remainder.empty()) {
    auto strict = initial;
    FUZZ_CHECK(!strict.parse_args(static_cast<int>(argv.size()), argv.data(), nullptr));
    FUZZ_CHECK(strict == cfg);
  }
}

} // namespace

std::vector<fuzz::seed> fuzz::seeds() {
  // Arguments as the target splits them: separated by NUL bytes, after mode 1.
  auto argv = [](std::initializer_list<std::string_view> xs) {
    std::string out{"\x01"};
    for (auto x : xs) {
      if (out.size() > 1)
        out += '\0';
      out += x;
    }
    return out;
  };
  std::vector<seed> result{
    {"nested", "broker { disable-ssl = true  web-socket { port = 9997 } }\n"
               "broker {\n  ttl = 4\n  ssl {\n    certificate = \"/etc/broker/cert.pem\"\n"
               "  }\n}\n"},
    {"ini-and-flat", "broker.ttl = 8\n"
                     "broker = { disable-forwarding = true, peer-overflow-policy = drop-newest }\n"
                     "[broker]\npeer-buffer-size = 100\nmetrics.port = 9100/tcp\n"
                     "[broker.ssl]\nkey = /etc/key.pem   # a bare path\n"
                     "[broker.web-socket]\naddress = ::1\n"},
    {"escapes", "broker.ssl.passphrase = \"a \\\"b\\\" # c\\\\\"\nbroker.ssl.cafile = 'it\\'s'\n"},
    {"bare-base64", "broker.ssl.passphrase = abc==  # base64 padding is bare text\n"
                    "broker.ssl.capath = 'x y'"},
    {"bom-crlf", "\xEF\xBB\xBF" "broker {\r\n  ttl = 3 # three\r\n}\r\n"},
    {"program-options", "node { topics = [\"/a\", '/b', /c/d] }\nrate = 7\n"},
    {"list-literal", "[\"/a\", '/b', /c]"},
    {"unterminated", "broker {\n  ssl.key = \"open\n}"},
    {"unknown-key", "caf { scheduler { max-threads = 4 } }"},
    {"bad-value", "broker.ttl = 4\nbroker.port = 1\nbroker.disable-ssl = maybe\n"},
    {"args", argv({"--broker.ttl=4", "-p", "9999", "--node.topics=[\"/z\"]", "-r7", "--",
                   "rest"})},
    {"args-help", argv({"--disable-ssl", "-h", "--config-file=x.conf", "--ttl", "3"})},
  };
  // Config texts run in mode 0.
  for (auto& s : result)
    if (s.name.rfind("args", 0) != 0)
      s.bytes.insert(0, 1, '\0');
  return result;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1)
    return 0;
  auto text = fuzz::as_text(data + 1, size - 1);
  if (data[0] & 1) {
    check_args(text);
  } else {
    check_entries(text);
    check_load(text);
    check_list(text);
  }
  return 0;
}
