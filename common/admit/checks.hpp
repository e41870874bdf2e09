// The admission checks (verdict.hpp local_checks(); the host and dcgm
// checks are in host.hpp and dcgm.hpp). Each has a pure evaluate_* function that
// judges backend observations against the baseline (unit-tested directly)
// and run_check() that observes through a backend and evaluates; the
// runner calls run_check() inside the check's child process.
#pragma once

#include <string>
#include <vector>

#include "admit/backend.hpp"
#include "admit/baseline.hpp"
#include "admit/verdict.hpp"
#include "config.hpp"

namespace onramp {
namespace admit {

struct CheckContext {
	const Config *cfg = nullptr;
	const Baseline *baseline = nullptr;
	Backend *backend = nullptr;
	std::string node;
	// Set once the inventory check ran in this invocation.
	bool inventory_known = false;
	bool no_gpu = false;
	std::string no_gpu_why;
};

// Observe and judge one check (any name of local_checks()). Never throws;
// results of a simulated backend are marked simulated with "[SIMULATED]".
CheckResult run_check(const std::string &name, CheckContext &ctx);

CheckResult evaluate_inventory(const Inventory &inv, const Baseline &b);
CheckResult evaluate_versions(const VersionsObs &v, const Baseline &b);
// xids: the window's events; only critical ones fail, each XID once.
CheckResult evaluate_gpu_health(const GpuHealthObs &h, const Baseline &b, double window_s);
// Every GPU against threshold_gbs; data has each GPU's value as a fraction
// of peak_gbs and of the plain-copy reference measured in the same run.
CheckResult evaluate_mem_bw(const MemBwObs &obs, double threshold_gbs, double peak_gbs);
// busbw of every sample (nccl-tests all-reduce definition), best of them
// against threshold_gbs; any wrong element is NCCL_CORRUPT. Fewer ranks
// than expected_ranks (the SKU's GPUs) is GPU_COUNT; one rank (a one-GPU
// SKU) measures no bus bandwidth and is SKIP, unless its sums were wrong.
CheckResult evaluate_nccl(const NcclRun &run, double threshold_gbs, int expected_ranks);
CheckResult evaluate_fabric(const FabricObs &f, const Baseline &b);
CheckResult evaluate_topology(const TopologyObs &t, const Baseline &b);
// Every GPU (and HCA PCIe link) against the baseline's gpu_depth limits. A
// measured failure fails with its code (GPU_THROTTLED first); a judged part
// that could not be measured, with no failure, is an ERROR naming GPU and
// part, never a pass.
CheckResult evaluate_gpu_depth(const GpuDepthObs &o, const Baseline &b);

// Mark a result as simulated (flag and detail suffix), once.
void mark_simulated(CheckResult *r);

} // namespace admit
} // namespace onramp
