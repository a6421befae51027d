#pragma once

// BROKER_API marks the public API: libbroker is built with -fvisibility=hidden and
// -fvisibility-inlines-hidden, so only declarations carrying this macro are exported from
// the shared library. Everything under broker/internal/ stays hidden: programs link
// against the API in this directory and nothing else.
//
// Put it on classes (`class BROKER_API endpoint`), on free functions defined in a .cc file,
// and on friend functions defined out of line (`friend BROKER_API bool operator<(...)`).
// Templates and inline functions need no mark.

#if defined(__GNUC__) || defined(__clang__)
#  define BROKER_API __attribute__((visibility("default")))
#else
#  define BROKER_API
#endif
