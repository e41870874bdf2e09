// GPU measurements of the real backend (CUDA runtime and NCCL through
// gpu_dl.hpp). Each allocates what it needs, frees it, and returns an error
// naming the CUDA/NCCL call that failed.
#pragma once

#include <cstdint>
#include <vector>

#include "admit/backend.hpp"
#include "admit/gpu_dl.hpp"
#include "status.hpp"

namespace onramp {
namespace admit {
namespace gpu {

// Device-to-device copy bandwidth of each of ngpus GPUs, GB/s counting
// bytes read plus written: iterations cudaMemcpyAsync on a stream timed by
// CUDA events (gbs), then the same copies as plain cudaMemcpy calls, each
// followed by cudaDeviceSynchronize, timed by the wall clock
// (plain_copy_gbs), as an independent check of the timing and the units.
Result<MemBwObs> measure_mem_bw(const Cudart &cuda, int ngpus, uint64_t bytes, int iterations);
// Host-to-device and device-to-host copy bandwidth of each GPU (GB/s,
// bytes moved once over PCIe), pinned host memory, event-timed.
struct HostCopyBw {
	double h2d_gbs = 0, d2h_gbs = 0;
};
Result<std::vector<HostCopyBw>> measure_host_copy_bw(const Cudart &cuda, int ngpus, uint64_t bytes,
                                                     int iterations);

// All-reduce (sum of uint32, out of place) over GPUs 0..ngpus-1 of this
// process: warmup rounds, then best_of samples of iterations each. Rank r
// sends (r+1) in every byte; results are checked on strided slices.
Result<NcclRun> measure_allreduce_local(const Cudart &cuda, const Nccl &nccl, int ngpus,
                                        uint64_t bytes, int warmup, int iterations, int best_of);

// One node's side of a 2-node all-reduce (comm from id): this process
// drives devices, NCCL ranks node_rank * devices.size() + i of
// 2 * devices.size() (one device: the per-rail run; every GPU: the
// all-GPU run). busbw per sample; wrong counts elements with a wrong result.
Result<PairObs> measure_allreduce_pair(const Cudart &cuda, const Nccl &nccl, int node_rank,
                                       const std::vector<int> &devices, const ncclUniqueIdT &id,
                                       uint64_t bytes, int warmup, int iterations, int best_of);

} // namespace gpu
} // namespace admit
} // namespace onramp
