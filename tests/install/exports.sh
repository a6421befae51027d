#!/usr/bin/env bash
# System test: libbroker.so exports the public API and nothing of broker::internal (or of
# Boost, a private header-only dependency).
#   exports.sh <path to libbroker.so>
set -euo pipefail
lib="$1"
symbols="$(nm -D --defined-only "$lib" | c++filt)"
leaked="$(grep -E 'broker::internal|boost::' <<<"$symbols" || true)"
if [ -n "$leaked" ]; then
  echo "FAIL: $(wc -l <<<"$leaked") private symbols are exported, e.g.:"
  head -5 <<<"$leaked" | cut -c1-200
  exit 1
fi
# A sample of the API a program needs: if these are missing, BROKER_API is missing somewhere.
for api in 'broker::endpoint::endpoint(broker::configuration)' \
           'broker::endpoint::publish(broker::topic, broker::data)' \
           'broker::subscriber::get()' \
           'broker::configuration::load(int, char const* const*' \
           'broker::to_string[abi:cxx11](broker::data const&)' \
           'broker::operator<(broker::data const&, broker::data const&)' \
           'broker::from_json(std::basic_string_view' \
           'broker::version()'; do
  if ! grep -qF -- "$api" <<<"$symbols"; then
    echo "FAIL: $api is not exported"
    exit 1
  fi
done
echo "PASS: $(wc -l <<<"$symbols") exported symbols, none of them internal"
