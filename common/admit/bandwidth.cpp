#include "admit/bandwidth.hpp"

#include <cmath>

namespace onramp {
namespace admit {

double allreduce_bus_factor(int nranks)
{
	if (nranks < 1)
		return 0;
	return 2.0 * (nranks - 1) / nranks;
}

double algbw_gbs(uint64_t bytes, double seconds)
{
	if (!(seconds > 0))
		return 0;
	return static_cast<double>(bytes) / seconds / 1e9;
}

double allreduce_busbw_gbs(uint64_t bytes, double seconds, int nranks)
{
	return algbw_gbs(bytes, seconds) * allreduce_bus_factor(nranks);
}

double allreduce_seconds_for(uint64_t bytes, double busbw_gbs, int nranks)
{
	double f = allreduce_bus_factor(nranks);
	if (!(busbw_gbs > 0) || f <= 0)
		return INFINITY;
	return static_cast<double>(bytes) * f / (busbw_gbs * 1e9);
}

double copy_bw_gbs(uint64_t bytes, int copies, double seconds)
{
	if (!(seconds > 0) || copies <= 0)
		return 0;
	return 2.0 * static_cast<double>(bytes) * copies / seconds / 1e9;
}

double bandwidth_fraction(double measured, double reference)
{
	if (!std::isfinite(measured) || !std::isfinite(reference) || !(reference > 0))
		return NAN;
	return measured / reference;
}

BestOf best_of(const std::vector<double> &samples)
{
	BestOf b;
	b.samples = samples;
	for (double s : samples) {
		if (!std::isfinite(s))
			continue;
		if (!b.valid || s > b.best)
			b.best = s;
		b.valid = true;
	}
	return b;
}

} // namespace admit
} // namespace onramp
