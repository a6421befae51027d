#include "broker/topic.hh"

#include <algorithm>
#include <iterator>

namespace broker {

void minimize(filter_type& xs) {
  std::sort(xs.begin(), xs.end());
  // After sorting, every string between a prefix p and a string it covers also starts with p.
  // So if any kept entry covers `x`, the last kept entry does, and one comparison suffices.
  // The same test drops duplicates, since a string covers itself.
  auto kept = xs.begin();
  for (auto i = xs.begin(); i != xs.end(); ++i) {
    if (kept != xs.begin() && i->matches(std::prev(kept)->view()))
      continue;
    if (kept != i)
      *kept = std::move(*i);
    ++kept;
  }
  xs.erase(kept, xs.end());
}

} // namespace broker
