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
#include "status.hpp"

namespace onramp {
namespace admit {

// Version components the baseline may pin, in report order.
const std::vector<std::string> &version_components();

// The AzHPC critical XID list (used when the file has no critical_xids).
const std::vector<int> &default_critical_xids();

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

	struct Affinity {
		std::string nic; // nearest NIC, e.g. "mlx5_0" (empty: not checked)
		int numa = -1;   // NUMA node (-1: not checked)
	};
	std::map<int, Affinity> affinity; // GPU index -> expected

	std::map<std::string, int64_t> timeouts; // check -> seconds

	// Effective thresholds: the file's override, else onramp.conf's.
	double nccl_threshold_gbs(const Config &cfg) const;
	double mem_bw_threshold_gbs(const Config &cfg) const;
	double pair_threshold_gbs(const Config &cfg) const;
	// 0 when the baseline has no peak.rail_busbw_gbs.
	double rail_threshold_gbs(const Config &cfg) const;
	// Per-check timeout: timeouts[check], else CheckTimeout.
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
