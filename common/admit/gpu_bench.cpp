#include "admit/gpu_bench.hpp"

#include <algorithm>
#include <chrono>
#include <functional>

#include "admit/bandwidth.hpp"
#include "log.hpp"

namespace onramp {
namespace admit {
namespace gpu {

namespace {

// Runs its function at scope exit (frees device resources on every path).
class Cleanup {
public:
	explicit Cleanup(std::function<void()> f) : f_(std::move(f)) {}
	~Cleanup() { f_(); }
	Cleanup(const Cleanup &) = delete;
	Cleanup &operator=(const Cleanup &) = delete;

private:
	std::function<void()> f_;
};

#define CUDA_TRY(call)                                                                             \
	do {                                                                                       \
		cudaError e_ = (call);                                                             \
		if (e_ != kCudaSuccess)                                                            \
			return Status::Error(strprintf("%s: %s", #call, cuda.err(e_).c_str()));    \
	} while (0)
#define NCCL_TRY(call)                                                                             \
	do {                                                                                       \
		ncclResult r_ = (call);                                                            \
		if (r_ != kNcclSuccess)                                                            \
			return Status::Error(strprintf("%s: %s", #call, nccl.err(r_).c_str()));    \
	} while (0)

struct Rank {
	int device = 0;
	void *send = nullptr, *recv = nullptr;
	cudaStream stream = nullptr;
	ncclCommT comm = nullptr;
};

void release(const Cudart &cuda, const Nccl &nccl, std::vector<Rank> &ranks)
{
	for (auto &r : ranks) {
		cuda.SetDevice(r.device);
		if (r.stream)
			cuda.StreamSynchronize(r.stream);
		if (r.comm)
			nccl.CommDestroy(r.comm);
		if (r.send)
			cuda.Free(r.send);
		if (r.recv)
			cuda.Free(r.recv);
		if (r.stream)
			cuda.StreamDestroy(r.stream);
		r = Rank();
	}
}

// Allocate buffers; rank i's send buffer holds (value_of(i)) in every byte.
Status setup(const Cudart &cuda, std::vector<Rank> &ranks, uint64_t bytes,
             const std::function<int(size_t)> &value_of)
{
	for (size_t i = 0; i < ranks.size(); i++) {
		Rank &r = ranks[i];
		CUDA_TRY(cuda.SetDevice(r.device));
		CUDA_TRY(cuda.Malloc(&r.send, bytes));
		CUDA_TRY(cuda.Malloc(&r.recv, bytes));
		CUDA_TRY(cuda.Memset(r.send, value_of(i), bytes));
		CUDA_TRY(cuda.Memset(r.recv, 0, bytes));
		CUDA_TRY(cuda.StreamCreate(&r.stream));
	}
	return Status::Ok();
}

Status round(const Cudart &cuda, const Nccl &nccl, std::vector<Rank> &ranks, uint64_t bytes)
{
	(void)cuda;
	size_t count = bytes / 4;
	NCCL_TRY(nccl.GroupStart());
	for (auto &r : ranks) {
		ncclResult rc =
		    nccl.AllReduce(r.send, r.recv, count, kNcclUint32, kNcclSum, r.comm, r.stream);
		if (rc != kNcclSuccess) {
			nccl.GroupEnd();
			return Status::Error("ncclAllReduce: " + nccl.err(rc));
		}
	}
	NCCL_TRY(nccl.GroupEnd());
	return Status::Ok();
}

Status sync_all(const Cudart &cuda, std::vector<Rank> &ranks)
{
	for (auto &r : ranks) {
		CUDA_TRY(cuda.SetDevice(r.device));
		CUDA_TRY(cuda.StreamSynchronize(r.stream));
	}
	return Status::Ok();
}

// Count wrong uint32 elements in 16 strided slices of every recv buffer.
Result<uint64_t> verify(const Cudart &cuda, std::vector<Rank> &ranks, uint64_t bytes,
                        uint32_t expect)
{
	const uint64_t slices = 16;
	uint64_t slice = std::min<uint64_t>(1u << 20, bytes / slices) & ~uint64_t(3);
	if (slice == 0)
		slice = bytes & ~uint64_t(3);
	std::vector<uint32_t> host(slice / 4);
	uint64_t wrong = 0;
	for (auto &r : ranks) {
		CUDA_TRY(cuda.SetDevice(r.device));
		for (uint64_t k = 0; k < slices; k++) {
			uint64_t off = (bytes - slice) * k / (slices - 1);
			off &= ~uint64_t(3);
			CUDA_TRY(cuda.Memcpy(host.data(), static_cast<char *>(r.recv) + off, slice,
			                     kCudaMemcpyDeviceToHost));
			for (uint32_t v : host)
				wrong += v != expect;
		}
	}
	return wrong;
}

// best_of samples of iterations rounds each, after warmup rounds.
Result<std::vector<NcclSample>> timed(const Cudart &cuda, const Nccl &nccl,
                                      std::vector<Rank> &ranks, uint64_t bytes, int warmup,
                                      int iterations, int best_of, uint32_t expect)
{
	for (int w = 0; w < warmup; w++) {
		Status st = round(cuda, nccl, ranks, bytes);
		if (!st.ok())
			return st;
	}
	Status st = sync_all(cuda, ranks);
	if (!st.ok())
		return st;
	std::vector<NcclSample> out;
	for (int s = 0; s < best_of; s++) {
		auto t0 = std::chrono::steady_clock::now();
		for (int i = 0; i < iterations; i++) {
			st = round(cuda, nccl, ranks, bytes);
			if (!st.ok())
				return st;
		}
		st = sync_all(cuda, ranks);
		if (!st.ok())
			return st;
		auto t1 = std::chrono::steady_clock::now();
		NcclSample sample;
		sample.seconds = std::chrono::duration<double>(t1 - t0).count() / iterations;
		auto wrong = verify(cuda, ranks, bytes, expect);
		if (!wrong.ok())
			return wrong.status();
		sample.wrong = wrong.value();
		out.push_back(sample);
	}
	return out;
}

uint32_t byte_pattern(uint32_t b)
{
	return b * 0x01010101u;
}

} // namespace

// One GPU's two buffers (a on the device; b on the device or pinned in
// the host), a stream and two events, all freed when it goes.
class CopyRig {
public:
	CopyRig(const Cudart &cuda, int dev) : cuda(cuda), dev_(dev) {}
	~CopyRig()
	{
		cuda.SetDevice(dev_);
		if (e0_)
			cuda.EventDestroy(e0_);
		if (e1_)
			cuda.EventDestroy(e1_);
		if (s_)
			cuda.StreamDestroy(s_);
		if (a)
			cuda.Free(a);
		if (b)
			b_host_ ? cuda.FreeHost(b) : cuda.Free(b);
	}
	CopyRig(const CopyRig &) = delete;
	CopyRig &operator=(const CopyRig &) = delete;

	Status open(uint64_t bytes, bool b_host)
	{
		b_host_ = b_host;
		CUDA_TRY(cuda.SetDevice(dev_));
		CUDA_TRY(cuda.Malloc(&a, bytes));
		CUDA_TRY(b_host ? cuda.MallocHost(&b, bytes) : cuda.Malloc(&b, bytes));
		CUDA_TRY(cuda.Memset(a, 1, bytes));
		CUDA_TRY(cuda.StreamCreate(&s_));
		CUDA_TRY(cuda.EventCreate(&e0_));
		CUDA_TRY(cuda.EventCreate(&e1_));
		return Status::Ok();
	}
	// Event-timed seconds of iterations copies of bytes (after one
	// unmeasured warm-up copy).
	Result<double> time(void *dst, const void *src, uint64_t bytes, int kind, int iterations)
	{
		CUDA_TRY(cuda.MemcpyAsync(dst, src, bytes, kind, s_));
		CUDA_TRY(cuda.EventRecord(e0_, s_));
		for (int i = 0; i < iterations; i++)
			CUDA_TRY(cuda.MemcpyAsync(dst, src, bytes, kind, s_));
		CUDA_TRY(cuda.EventRecord(e1_, s_));
		CUDA_TRY(cuda.EventSynchronize(e1_));
		float ms = 0;
		CUDA_TRY(cuda.EventElapsedTime(&ms, e0_, e1_));
		return ms / 1e3;
	}

	const Cudart &cuda;
	void *a = nullptr, *b = nullptr;

private:
	int dev_;
	bool b_host_ = false;
	cudaStream s_ = nullptr;
	cudaEvent e0_ = nullptr, e1_ = nullptr;
};

Result<MemBwObs> measure_mem_bw(const Cudart &cuda, int ngpus, uint64_t bytes, int iterations)
{
	MemBwObs out;
	for (int g = 0; g < ngpus; g++) {
		CopyRig rig(cuda, g);
		Status st = rig.open(bytes, false);
		if (!st.ok())
			return st;
		auto secs = rig.time(rig.b, rig.a, bytes, kCudaMemcpyDeviceToDevice, iterations);
		if (!secs.ok())
			return secs.status();
		out.gbs.push_back(copy_bw_gbs(bytes, iterations, secs.value()));
		// The reference: no stream, no events, the host's clock.
		CUDA_TRY(cuda.DeviceSynchronize());
		auto t0 = std::chrono::steady_clock::now();
		for (int i = 0; i < iterations; i++) {
			CUDA_TRY(cuda.Memcpy(rig.b, rig.a, bytes, kCudaMemcpyDeviceToDevice));
			CUDA_TRY(cuda.DeviceSynchronize()); // a D2D cudaMemcpy may return early
		}
		auto t1 = std::chrono::steady_clock::now();
		out.plain_copy_gbs.push_back(
		    copy_bw_gbs(bytes, iterations, std::chrono::duration<double>(t1 - t0).count()));
	}
	return out;
}

Result<std::vector<HostCopyBw>> measure_host_copy_bw(const Cudart &cuda, int ngpus, uint64_t bytes,
                                                     int iterations)
{
	std::vector<HostCopyBw> out;
	for (int g = 0; g < ngpus; g++) {
		CopyRig rig(cuda, g);
		Status st = rig.open(bytes, true);
		if (!st.ok())
			return st;
		auto up = rig.time(rig.a, rig.b, bytes, kCudaMemcpyHostToDevice, iterations);
		if (!up.ok())
			return up.status();
		auto down = rig.time(rig.b, rig.a, bytes, kCudaMemcpyDeviceToHost, iterations);
		if (!down.ok())
			return down.status();
		// Bytes cross PCIe once: half of copy_bw_gbs's read + write.
		HostCopyBw bw;
		bw.h2d_gbs = up.value() > 0 ? copy_bw_gbs(bytes, iterations, up.value()) / 2 : 0;
		bw.d2h_gbs =
		    down.value() > 0 ? copy_bw_gbs(bytes, iterations, down.value()) / 2 : 0;
		out.push_back(bw);
	}
	return out;
}

Result<NcclRun> measure_allreduce_local(const Cudart &cuda, const Nccl &nccl, int ngpus,
                                        uint64_t bytes, int warmup, int iterations, int best_of)
{
	std::vector<Rank> ranks(static_cast<size_t>(ngpus));
	for (int i = 0; i < ngpus; i++)
		ranks[static_cast<size_t>(i)].device = i;
	Cleanup done([&] { release(cuda, nccl, ranks); });
	Status st = setup(cuda, ranks, bytes, [](size_t i) { return static_cast<int>(i + 1); });
	if (!st.ok())
		return st;
	std::vector<ncclCommT> comms(static_cast<size_t>(ngpus));
	std::vector<int> devs(static_cast<size_t>(ngpus));
	for (int i = 0; i < ngpus; i++)
		devs[static_cast<size_t>(i)] = i;
	NCCL_TRY(nccl.CommInitAll(comms.data(), ngpus, devs.data()));
	for (int i = 0; i < ngpus; i++)
		ranks[static_cast<size_t>(i)].comm = comms[static_cast<size_t>(i)];
	uint32_t sum = static_cast<uint32_t>(ngpus) * static_cast<uint32_t>(ngpus + 1) / 2;
	auto samples =
	    timed(cuda, nccl, ranks, bytes, warmup, iterations, best_of, byte_pattern(sum));
	if (!samples.ok())
		return samples.status();
	NcclRun run;
	run.nranks = ngpus;
	run.bytes = bytes;
	run.iterations = iterations;
	run.samples = samples.value();
	return run;
}

Result<PairObs> measure_allreduce_pair(const Cudart &cuda, const Nccl &nccl, int node_rank,
                                       const std::vector<int> &devices, const ncclUniqueIdT &id,
                                       uint64_t bytes, int warmup, int iterations, int best_of)
{
	int per = static_cast<int>(devices.size());
	if (per < 1)
		return Status::Error("all-reduce pair: no device");
	int nranks = 2 * per;
	// Rank r sends 1 + r % 15 in every byte; the sum stays below 256 for
	// up to 32 ranks (two 16-GPU nodes), larger runs send 1 each.
	auto value = [nranks](int r) { return nranks <= 32 ? 1 + r % 15 : 1; };
	uint32_t sum = 0;
	for (int r = 0; r < nranks; r++)
		sum += static_cast<uint32_t>(value(r));
	std::vector<Rank> ranks(devices.size());
	for (size_t i = 0; i < devices.size(); i++)
		ranks[i].device = devices[i];
	Cleanup done([&] { release(cuda, nccl, ranks); });
	Status st = setup(cuda, ranks, bytes,
	                  [&](size_t i) { return value(node_rank * per + static_cast<int>(i)); });
	if (!st.ok())
		return st;
	// One process drives every GPU of its node: the ranks join in a group.
	NCCL_TRY(nccl.GroupStart());
	for (size_t i = 0; i < ranks.size(); i++) {
		cuda.SetDevice(ranks[i].device);
		ncclResult rc = nccl.CommInitRank(&ranks[i].comm, nranks, id,
		                                  node_rank * per + static_cast<int>(i));
		if (rc != kNcclSuccess) {
			nccl.GroupEnd();
			return Status::Error("ncclCommInitRank: " + nccl.err(rc));
		}
	}
	NCCL_TRY(nccl.GroupEnd());
	auto samples =
	    timed(cuda, nccl, ranks, bytes, warmup, iterations, best_of, byte_pattern(sum & 0xff));
	if (!samples.ok())
		return samples.status();
	PairObs o;
	o.measured = true;
	o.nranks = nranks;
	for (const auto &s : samples.value()) {
		o.samples.push_back(allreduce_busbw_gbs(bytes, s.seconds, nranks));
		o.wrong += s.wrong;
	}
	o.busbw_gbs = onramp::admit::best_of(o.samples).best;
	return o;
}

} // namespace gpu
} // namespace admit
} // namespace onramp
