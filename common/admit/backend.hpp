// The hardware backend: one interface, two implementations.
//
//   real  CUDA runtime, NCCL and NVML loaded with dlopen, hwloc, libibverbs,
//         sysfs and the kernel log. Fails closed: no GPU, or GPU libraries
//         that cannot be loaded, is an error the checks turn into NO_GPU.
//   sim   a per-node hardware profile (profile.hpp), used only when
//         onramp.conf says GpuBackend=sim; everything it returns is marked
//         simulated.
//
// Backends observe; they never judge. The checks (checks.hpp) compare the
// observations with the baseline. Every method may block for as long as the
// measurement takes: callers run them in a check's child process, which the
// runner kills at the check's timeout. CUDA/NCCL state is created per call
// in that child and never in the parent (CUDA does not survive fork).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config.hpp"
#include "status.hpp"

namespace onramp {
namespace admit {

struct GpuInfo {
	int index = 0;
	std::string uuid, serial, pci, model, vbios;
};

struct NicInfo {
	std::string name; // IB device, e.g. mlx5_0
	std::string mac;  // MAC of its network interface ("" when none)
	std::string fw_ver;
};

struct Inventory {
	std::vector<GpuInfo> gpus; // as NVML lists them (it ignores CUDA_VISIBLE_DEVICES)
	std::vector<NicInfo> nics;
	std::string sku; // sim only: the SKU the profile simulates
	// GPUs the CUDA runtime sees (cudaGetDeviceCount); -1: not asked (sim).
	// 0 with cuda_error set when it sees none.
	int cuda_devices = -1;
	std::string cuda_error;
};

struct VersionsObs {
	std::map<std::string, std::string> versions;  // component -> found
	std::map<std::string, std::string> firmware;  // IB device -> fw_ver
	std::map<std::string, std::string> errors;    // component -> why unreadable
	std::map<std::string, std::string> libraries; // nvml/cudart/nccl -> file loaded
};

struct XidEvent {
	int xid = 0;
	std::string gpu;  // PCI bus id as the kernel printed it
	double age_s = 0; // seconds before now
};

struct GpuHealthObs {
	struct Gpu {
		int index = 0;
		std::string pci;
		uint64_t ecc_uncorrected = 0; // volatile, all memory locations
		bool ecc_supported = true;    // false: NVML says not supported
		bool remap_pending = false;
		bool remap_failed = false;
		bool remap_supported = true;         // false: no row remapping read
		unsigned remapped_correctable = 0;   // rows remapped for correctable errors
		unsigned remapped_uncorrectable = 0; // ... and for uncorrectable ones
		std::vector<int> nvlink_down;        // link numbers not active
		int nvlink_links = 0;                // links that exist
	};
	std::vector<Gpu> gpus;
	std::vector<XidEvent> xids; // every XID within the window, any kind
};

// Device-to-device copy bandwidth per GPU, GB/s (bytes read + written).
struct MemBwObs {
	std::vector<double> gbs; // the check's measurement (event-timed copies)
	// The same copies as plain synchronous cudaMemcpy calls timed by the
	// wall clock in the same run, as a reference for the timing and the
	// units; empty when not measured (sim).
	std::vector<double> plain_copy_gbs;
};

struct NcclSample {
	double seconds = 0; // mean time of one all-reduce
	uint64_t wrong = 0; // elements with a wrong result
};

struct NcclRun {
	int nranks = 0;
	uint64_t bytes = 0;
	int iterations = 0;
	std::vector<NcclSample> samples;
};

struct PortObs {
	std::string dev; // mlx5_0
	int port = 0;
	std::string state, phys_state, rate; // sysfs text, e.g. "4: ACTIVE"
	std::string link_layer;              // InfiniBand / Ethernet
	bool has_link_downed = false;
	int64_t link_downed = 0;
	// Every readable file of counters/ (symbol_error, port_rcv_errors,
	// link_downed, ...), by name.
	std::map<std::string, uint64_t> counters;
	int active_mtu = 0; // bytes (256..4096); 0: not known
};

struct FabricObs {
	std::vector<PortObs> first, second; // two reads, interval_s apart
	double interval_s = 0;
	std::string source; // "sysfs:<root>" or "profile"
	// The previous admission's record of the ports' counters (from this
	// node's admission record): port "mlx5_0/1" -> counter -> value.
	// Empty when there is none or it cannot be read.
	std::map<std::string, std::map<std::string, uint64_t>> previous;
	std::string previous_time; // when that admission ran
};

// A PCIe link as sysfs shows it (current_link_speed / current_link_width).
struct PcieLinkObs {
	bool measured = false;
	double speed_gts = 0; // 2.5, 5, 8, 16, 32, 64
	int gen = 0;          // 1..6 (0: a speed of no known generation)
	int width = 0;        // lanes
	std::string why;      // when !measured
};

// gpu_depth's observations: each GPU sampled while under load for load_s
// seconds. A part that could not be read (an NVML entry point the driver
// lacks, NOT_SUPPORTED, an unreadable sysfs file) is listed in unmeasured
// as "<part>: <why>" and its has_* stays false; it is never taken as good.
struct GpuDepthObs {
	struct Gpu {
		int index = 0;
		std::string pci;
		bool has_clock = false;
		unsigned sm_clock_min_mhz = 0; // lowest SM clock seen under load
		bool has_throttle = false;
		uint64_t throttle_reasons = 0; // NVML clocks event reasons, OR of samples
		bool has_temp = false;
		unsigned temp_max_c = 0;
		bool has_power = false;
		double power_max_w = 0;
		bool has_memory = false;
		uint64_t memory_total_mib = 0;
		bool has_persistence = false;
		bool persistence = false;
		bool has_processes = false;
		std::vector<unsigned> foreign_pids; // compute processes not ours
		bool has_ecc_corrected = false;
		uint64_t ecc_corrected = 0; // volatile
		bool has_remapped = false;
		unsigned remapped_rows = 0; // correctable + uncorrectable
		bool has_nvlink_errors = false;
		// counter name (replay, recovery, crc_flit, crc_data) -> delta over
		// the load, summed over the GPU's links
		std::map<std::string, uint64_t> nvlink_error_delta;
		PcieLinkObs pcie; // read under load (idle GPUs train down)
		bool has_host_copy = false;
		double h2d_gbs = 0, d2h_gbs = 0; // pinned host <-> device, GB/s
		std::vector<std::string> unmeasured;
	};
	std::vector<Gpu> gpus;
	struct Hca {
		std::string dev; // mlx5_0
		PcieLinkObs pcie;
	};
	std::vector<Hca> hcas;
	double load_s = 0;
	std::string load; // how the GPUs were loaded
};

struct TopologyObs {
	struct Gpu {
		int index = 0;
		std::string pci;
		int numa = -1;           // -1: unknown
		std::string nearest_nic; // "": none found
	};
	std::vector<Gpu> gpus;
};

struct PairObs {
	bool measured = false;
	double busbw_gbs = 0;
	std::vector<double> samples;
	uint64_t wrong = 0; // elements with a wrong result
	std::string why;    // when !measured
	int nranks = 0;     // ranks of the run (every GPU of both nodes); 0: not said
	std::string note;   // what the backend can tell of the slowest part ("" none)
};

// One rail of the per-rail pass: GPU `gpu` of both nodes with its affine
// HCA port (the one hwloc puts nearest to it), NCCL restricted to that port.
struct RailObs {
	int gpu = 0;
	std::string hca; // this node's HCA, e.g. mlx5_5 ("" none found)
	int port = 1;
	bool measured = false;
	double busbw_gbs = 0;
	uint64_t wrong = 0;
	std::string why; // when !measured
};

class Backend {
public:
	virtual ~Backend() = default;
	virtual const char *name() const = 0; // "real" or "sim"
	virtual bool simulated() const = 0;

	// Called in a check's child process before the check runs (sim:
	// injected delays and hangs).
	virtual void enter_check(const std::string &check) { (void)check; }

	// GPUs and NICs. An error, or no GPU, means NO_GPU.
	virtual Result<Inventory> inventory() = 0;
	virtual Result<VersionsObs> versions() = 0;
	// xid_window_s: how far back the kernel log counts.
	virtual Result<GpuHealthObs> gpu_health(double xid_window_s) = 0;
	// Per-GPU device-to-device copy bandwidth (see MemBwObs).
	virtual Result<MemBwObs> mem_bw(uint64_t bytes, int iterations) = 0;
	// Single-node all-reduce over every local GPU, best_of samples.
	virtual Result<NcclRun> nccl_allreduce(uint64_t bytes, int warmup, int iterations,
	                                       int best_of) = 0;
	virtual Result<FabricObs> fabric(double interval_s) = 0;
	// Clocks, throttle reasons, temperature and power sampled while every
	// GPU is loaded for at least load_s seconds, and the static state
	// (PCIe links of GPUs and HCAs, memory, persistence, processes,
	// corrected ECC, remapped rows, NVLink error counter deltas).
	virtual Result<GpuDepthObs> gpu_depth(double load_s) = 0;
	virtual Result<TopologyObs> topology() = 0;
	// 2-node all-reduce over every GPU of both nodes (one rank per GPU,
	// NCCL free to use every HCA) between this node and peer. An error
	// Status is our own bad input (a peer's sim profile); a run that did not
	// produce a number is measured == false with why.
	virtual Result<PairObs> pair_busbw(const std::string &peer) = 0;
	// The per-rail pass with peer: for each GPU of this node, a 2-rank
	// all-reduce between that GPU of both nodes with NCCL restricted to the
	// GPU's affine HCA port. One entry per GPU; an entry that could not be
	// measured says why (never a low number).
	virtual Result<std::vector<RailObs>> pair_rails(const std::string &peer) = 0;
};

// The backend onramp.conf asks for. A bad sim profile is an error naming
// the file and field (the caller exits 2); the real backend always builds
// (its failures show up as NO_GPU when the checks run).
Result<std::unique_ptr<Backend>> make_backend(const Config &cfg, const std::string &node);

} // namespace admit
} // namespace onramp
