#include "fleet/robust.hpp"

#include <algorithm>
#include <cmath>

namespace onramp {
namespace fleet {

double median(std::vector<double> v)
{
	if (v.empty())
		return NAN;
	size_t mid = v.size() / 2;
	std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
	double hi = v[mid];
	if (v.size() % 2)
		return hi;
	double lo = *std::max_element(v.begin(), v.begin() + static_cast<long>(mid));
	return (lo + hi) / 2;
}

double mad(const std::vector<double> &v)
{
	double m = median(v);
	std::vector<double> dev;
	dev.reserve(v.size());
	for (double x : v)
		dev.push_back(std::fabs(x - m));
	return median(dev);
}

} // namespace fleet
} // namespace onramp
