#include "broker/status.hh"

namespace broker {

namespace {

constexpr std::string_view sc_names[] = {
  "unspecified", "peer_added",          "peer_removed",
  "peer_lost",   "endpoint_discovered", "endpoint_unreachable",
};

data context_to_data(const endpoint_info& ctx) {
  vector result;
  result.emplace_back(to_string(ctx.node));
  if (ctx.network) {
    result.emplace_back(ctx.network->address);
    result.emplace_back(port{ctx.network->port, port::protocol::tcp});
    result.emplace_back(count{ctx.network->retry});
  } else {
    result.emplace_back(nil);
    result.emplace_back(nil);
    result.emplace_back(nil);
  }
  return data{std::move(result)};
}

std::optional<endpoint_info> context_from_data(const data& x) {
  auto* xs = get_if<vector>(x);
  if (xs == nullptr || xs->size() != 4)
    return std::nullopt;
  auto* id_str = get_if<std::string>((*xs)[0]);
  if (id_str == nullptr)
    return std::nullopt;
  auto id = endpoint_id::parse(*id_str);
  if (!id)
    return std::nullopt;
  endpoint_info result{*id, std::nullopt};
  auto* addr = get_if<std::string>((*xs)[1]);
  auto* p = get_if<port>((*xs)[2]);
  auto* retry = get_if<count>((*xs)[3]);
  if (addr && p)
    result.network = network_info{*addr, p->number(), retry ? *retry : 0};
  return result;
}

} // namespace

std::string_view to_string(sc code) noexcept {
  auto i = static_cast<size_t>(code);
  return i < std::size(sc_names) ? sc_names[i] : "unspecified";
}

bool from_string(std::string_view name, sc& code) noexcept {
  for (size_t i = 0; i < std::size(sc_names); ++i) {
    if (sc_names[i] == name) {
      code = static_cast<sc>(i);
      return true;
    }
  }
  return false;
}

std::string to_string(const status& x) {
  std::string result{to_string(x.code())};
  if (!x.message().empty()) {
    result += ": ";
    result += x.message();
  }
  return result;
}

data to_data(const status& x) {
  vector result;
  result.emplace_back("status");
  result.emplace_back(enum_value{std::string{to_string(x.code())}});
  result.emplace_back(x.context().node.is_nil() ? data{} : context_to_data(x.context()));
  result.emplace_back(x.message());
  return data{std::move(result)};
}

data to_data(const error& x, const endpoint_info* context) {
  vector ctx;
  ctx.emplace_back(context ? context_to_data(*context) : data{});
  ctx.emplace_back(x.message());
  vector result;
  result.emplace_back("error");
  result.emplace_back(enum_value{std::string{to_string(x.code())}});
  result.emplace_back(std::move(ctx));
  return data{std::move(result)};
}

std::optional<status> to_status(const data& x) {
  auto* xs = get_if<vector>(x);
  if (xs == nullptr || xs->size() != 4)
    return std::nullopt;
  auto* tag = get_if<std::string>((*xs)[0]);
  auto* code_name = get_if<enum_value>((*xs)[1]);
  auto* msg = get_if<std::string>((*xs)[3]);
  sc code;
  if (!tag || *tag != "status" || !code_name || !from_string(code_name->name, code) || !msg)
    return std::nullopt;
  endpoint_info ctx;
  if (auto parsed = context_from_data((*xs)[2]))
    ctx = std::move(*parsed);
  return status{code, std::move(ctx), *msg};
}

std::optional<error> to_error(const data& x) {
  auto* xs = get_if<vector>(x);
  if (xs == nullptr || xs->size() != 3)
    return std::nullopt;
  auto* tag = get_if<std::string>((*xs)[0]);
  auto* code_name = get_if<enum_value>((*xs)[1]);
  ec code;
  if (!tag || *tag != "error" || !code_name || !from_string(code_name->name, code))
    return std::nullopt;
  std::string msg;
  if (auto* ctx = get_if<vector>((*xs)[2]); ctx && ctx->size() == 2)
    if (auto* str = get_if<std::string>((*ctx)[1]))
      msg = *str;
  return error{code, std::move(msg)};
}

} // namespace broker
