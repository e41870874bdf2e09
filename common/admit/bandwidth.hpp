// nccl-tests bandwidth definitions (see health-check-facts.md):
//   algbw = bytes / time, in GB/s with GB = 1e9 bytes;
//   all-reduce busbw = algbw * 2(n-1)/n for n ranks.
// Judging uses one large message size and the best of N samples, with
// every sample kept so a "fluttering" node can be told from a slow one.
#pragma once

#include <cstdint>
#include <vector>

namespace onramp {
namespace admit {

// 2(n-1)/n; 0 for n < 1. n = 8 gives 1.75, n = 2 gives 1.
double allreduce_bus_factor(int nranks);
// bytes / seconds / 1e9; 0 when seconds <= 0.
double algbw_gbs(uint64_t bytes, double seconds);
// algbw * allreduce_bus_factor(nranks).
double allreduce_busbw_gbs(uint64_t bytes, double seconds, int nranks);
// The time an all-reduce of bytes over nranks takes at busbw GB/s (the
// inverse of allreduce_busbw_gbs; used by the simulated backend).
double allreduce_seconds_for(uint64_t bytes, double busbw_gbs, int nranks);
// Device-to-device copy bandwidth counting bytes read plus written:
// 2 * bytes * copies / seconds / 1e9.
double copy_bw_gbs(uint64_t bytes, int copies, double seconds);
// measured / reference (a fraction of a peak or of a reference run); NaN
// when either is not a finite number or the reference is not > 0.
double bandwidth_fraction(double measured, double reference);

// Best of N: the largest sample; NaN samples are ignored. Every sample
// stays in samples. Returns false when there is no finite sample.
struct BestOf {
	std::vector<double> samples;
	double best = 0;
	bool valid = false;
};
BestOf best_of(const std::vector<double> &samples);

} // namespace admit
} // namespace onramp
