#include "broker/json.hh"

#include "broker/internal/codec/json.hh"

namespace broker {

namespace codec = internal::json;

std::string to_json(const data& x) {
  return codec::encode(x);
}

expected<data> from_json(std::string_view text) {
  data result;
  auto res = codec::decode(text, result);
  switch (res.status) {
    case codec::decode_status::ok:
      return result;
    case codec::decode_status::malformed_json:
      return error{ec::invalid_json, "malformed JSON at line " + std::to_string(res.line)
                                       + ", column " + std::to_string(res.column) + " ("
                                       + std::string{to_string(res.code)} + ")"};
    case codec::decode_status::not_an_object:
      return error{ec::invalid_data, "expected a JSON object {\"@data-type\": T, \"data\": V}"};
    case codec::decode_status::invalid_data:
      return error{ec::invalid_data,
                   "not a typed Broker value {\"@data-type\": T, \"data\": V}"};
    case codec::decode_status::internal_error:
      return error{ec::invalid_data, "a set element or table key appears twice"};
  }
  return error{ec::invalid_data, "cannot decode the value"};
}

std::string to_json_string(std::string_view text) {
  std::string result;
  codec::append_string(text, result);
  return result;
}

std::optional<timespan> parse_timespan(std::string_view text) {
  return codec::parse_timespan(text);
}

} // namespace broker
