// Robust statistics for fleet figures: the median and the median absolute
// deviation, which one broken node cannot move.
#pragma once

#include <vector>

namespace onramp {
namespace fleet {

// The median of v (NaN when empty). Values need not be sorted.
double median(std::vector<double> v);
// The median absolute deviation around the median, unscaled (NaN when
// empty). 1.4826 * MAD estimates the standard deviation of normal data.
double mad(const std::vector<double> &v);

} // namespace fleet
} // namespace onramp
