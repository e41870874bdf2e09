// The per-SKU baseline and threshold file, <BaselineDir>/<Sku>.json: what
// a healthy node of the SKU has (GPU count and model, versions, firmware,
// fabric, GPU-NIC affinity) and the peaks its measurements are judged
// against. The format is documented in onramp-admit(8).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config.hpp"
#include "json.hpp"
#include "status.hpp"

namespace onramp {
namespace admit {

// Version components the baseline may pin, in report order.
const std::vector<std::string> &version_components();

// The AzHPC critical XID list (used when the file has no critical_xids).
const std::vector<int> &default_critical_xids();

// The port counters fabric.counter_limits may name (sysfs counters/ files).
const std::vector<std::string> &fabric_error_counters();
// The NVLink error counters gpu_depth.nvlink_errors may name.
const std::vector<std::string> &nvlink_error_counters();
// NVML clocks event (throttle) reason bit of a name (sw_power_cap,
// hw_slowdown, sw_thermal, hw_thermal, hw_power_brake); 0 for others.
uint64_t throttle_reason_bit(const std::string &name);
// "hw_thermal,sw_power_cap" for a bit set ("none" for 0).
std::string throttle_reason_names(uint64_t bits);

// {"name": <non-negative integer>, ...} at path with names from known;
// errors (an unknown name lists the known ones) go to r.
void parse_counter_map(JsonReader &r, const json_t *o, const std::string &path,
                       const std::vector<std::string> &known, std::map<std::string, uint64_t> *out);

struct Baseline {
	std::string path;   // the file it was read from
	std::string digest; // SHA-256 of the file's bytes (hex)
	std::string sku;
	int gpu_count = 0;
	std::string gpu_model;
	std::map<std::string, std::string> versions; // component -> expected
	std::map<std::string, std::string> firmware; // IB device -> fw_ver

	double peak_mem_bw_gbs = 0;     // D2D copy, bytes read + written
	double peak_nccl_busbw_gbs = 0; // single-node all-reduce busbw
	double peak_pair_busbw_gbs = 0; // 2-node, every GPU of both (one rank each)
	// 2-node, one GPU each over its affine HCA port alone (the per-rail
	// pass); 0: not in the baseline, the per-rail pass is not run.
	double peak_rail_busbw_gbs = 0;

	// Optional overrides (< 0: not set; onramp.conf's fractions apply).
	double nccl_fraction = -1;
	double mem_bw_fraction = -1;
	double pair_min_gbs = -1;
	double rail_min_gbs = -1;

	uint64_t nccl_bytes = 1ull << 30; // one large fixed size (1 GiB)
	int nccl_iterations = 20;         // timed all-reduces per sample
	int nccl_warmup = 5;
	int nccl_best_of = 3;
	uint64_t mem_bw_bytes = 1ull << 30;
	int mem_bw_iterations = 20;

	std::vector<int> critical_xids;

	int fabric_ports = 0; // IB/RoCE ports expected (0: not checked)
	double fabric_min_rate_gbps = 0;
	double fabric_flap_interval_s = 2;
	int fabric_width = 0;   // lanes of every port (4 for "4X"); 0: not checked
	int fabric_min_mtu = 0; // active MTU bytes; 0: not checked
	// Port counter -> most it may grow during the check (and, for
	// link_downed, since the previous admission); absent: not judged.
	std::map<std::string, uint64_t> fabric_counter_limits;

	// NVLink per SKU (gpu_health): links that must be active on every GPU
	// (a bit per link number; 0: every link NVML lists) and how many are
	// active (-1: not checked). Links outside the mask are inactive by
	// design and never drain a node.
	uint64_t nvlink_mask = 0;
	int nvlink_active_links = -1;

	// gpu_depth: absent (present == false) means the check is skipped.
	struct GpuDepth {
		bool present = false;
		double load_s = -1;                       // < 0: GpuLoadSeconds applies
		unsigned min_sm_clock_mhz = 0;            // 0: not checked
		unsigned max_temp_c = 0;                  // 0: not checked
		double max_power_w = 0;                   // 0: not checked
		uint64_t memory_mib = 0;                  // 0: not checked
		bool persistence = false;                 // true: persistence mode must be on
		bool foreign_processes = true;            // false: no other compute process
		int64_t max_ecc_corrected = -1;           // volatile; -1: not checked
		int64_t max_remapped_rows = -1;           // -1: not checked
		int gpu_pcie_gen = 0, gpu_pcie_width = 0; // 0: not checked
		int hca_pcie_gen = 0, hca_pcie_width = 0;
		double min_h2d_gbs = 0, min_d2h_gbs = 0; // pinned copies; 0: not checked
		// NVLink error counter (replay, recovery, crc_flit, crc_data) ->
		// most it may grow on one GPU during the load.
		std::map<std::string, uint64_t> nvlink_errors;
		// Throttle reasons that fail (NVML clocks event reason bits):
		// by default HW slowdown, SW/HW thermal slowdown, HW power brake.
		uint64_t throttle_fail_mask = 0x8 | 0x20 | 0x40 | 0x80;
	} gpu_depth;

	struct Affinity {
		std::string nic; // nearest NIC, e.g. "mlx5_0" (empty: not checked)
		int numa = -1;   // NUMA node (-1: not checked)
	};
	std::map<int, Affinity> affinity; // GPU index -> expected

	std::map<std::string, int64_t> timeouts; // check -> seconds

	// The host check's pins (section "host"): kernel command line tokens
	// that must be present, sysctl key -> value, the checkpoint
	// filesystem's write/read bandwidth floors (GB/s; 0: not judged).
	std::vector<std::string> host_cmdline;
	std::map<std::string, std::string> host_sysctl;
	double ckpt_write_min_gbs = 0, ckpt_read_min_gbs = 0;

	// Effective thresholds: the file's override, else onramp.conf's.
	double nccl_threshold_gbs(const Config &cfg) const;
	double mem_bw_threshold_gbs(const Config &cfg) const;
	double pair_threshold_gbs(const Config &cfg) const;
	// 0 when the baseline has no peak.rail_busbw_gbs.
	double rail_threshold_gbs(const Config &cfg) const;
	// Per-check timeout: timeouts[check], else CheckTimeout (for dcgm at
	// least DcgmTimeout + 60 s, for host at least 2 AdmissionIoTimeout + 60 s).
	int64_t timeout_s(const Config &cfg, const std::string &check) const;
	bool is_critical_xid(int xid) const;
};

// Parse a baseline (digest computed over text). Errors name origin and the
// field ("H200.json: field 'peak.nccl_busbw_gbs': missing").
Result<Baseline> parse_baseline(const std::string &text, const std::string &origin);
// Read and parse a file.
Result<Baseline> load_baseline(const std::string &path);

} // namespace admit
} // namespace onramp
