// Expansion campaigns: a discrete-event simulation of a campaign, to answer
// "how long does admitting N nodes take with these settings" before running
// one. It uses the same planner (plan_waves) as onrampctl expand, and the
// same rules: a wave's nodes are all rebooted when the wave opens, a node
// not back within the boot timeout is a BOOT_TIMEOUT, every other node runs
// the admission test and passes or fails; the wave closes when its last node
// finishes, and the next opens then, unless the wave's pass rate is below
// the minimum: the campaign pauses, and either stops there (reported) or
// resumes after the admin fix time.
//
// Deterministic for a seed: the generator is std::mt19937_64 (fully
// specified by the standard) with our own uniform and normal transforms, so
// results do not depend on the C++ library.
//
// Pure functions: no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "campaign/planner.hpp"
#include "status.hpp"

namespace onramp {
namespace campaign {

// A duration distribution in minutes: "C" or "const(C)", "normal(MEAN,SD)"
// (truncated to > 0 by redrawing), "uniform(A,B)".
struct Dist {
	enum Kind { kConst, kNormal, kUniform } kind = kConst;
	double a = 0, b = 0; // const: a; normal: mean a, sd b; uniform: [a, b]
	double mean() const { return kind == kUniform ? (a + b) / 2 : a; }
	std::string str() const;
};
// what names the option in error messages. allow_zero: const(0) is valid.
Result<Dist> parse_dist(const std::string &text, const char *what, bool allow_zero = false);

struct SimParams {
	int nodes = 0, racks = 0;
	double fraction = 0.2;           // MaxWaveFraction
	double min_pass = 0.8;           // MinWavePassRate
	Dist reboot{Dist::kConst, 5, 0}; // minutes
	Dist test{Dist::kConst, 10, 0};  // minutes
	double failure_rate = 0;         // per admission test, [0, 1]
	double boot_timeout = 10;        // minutes; slower reboots are BOOT_TIMEOUT
	double fix_minutes = -1;         // admin fix time per pause; < 0: stop at the pause
	uint64_t seed = 1;
};
Status check_params(const SimParams &p);

struct SimWave {
	int wave = 0, nodes = 0, racks = 0, max_per_rack = 0;
	int admitted = 0, failed = 0, boot_timeouts = 0;
	double start = 0, end = 0; // seconds from the campaign start
	double node_mean = 0, node_p50 = 0, node_p95 = 0, node_max = 0; // per node, seconds
	bool paused = false;                                            // pass rate below min_pass
	double fix = 0; // seconds of admin fix after it
	double pass_rate() const { return nodes ? static_cast<double>(admitted) / nodes : 0; }
};

struct SimResult {
	std::vector<SimWave> waves; // simulated (up to the stop, if stopped)
	int planned_waves = 0;
	int admitted = 0, failed = 0, boot_timeouts = 0, pauses = 0;
	double total = 0;               // seconds: predicted campaign time
	double ideal = 0;               // planned_waves * (mean reboot + mean test), seconds
	bool stopped = false;           // paused with no fix time: total is up to the pause
	int rack_min = 0, rack_max = 0; // rack sizes
};

// The synthetic cluster: racks r1..rR, nodes spread evenly (sizes differ by
// at most one), every node in the campaign.
std::vector<Member> synthetic_members(int nodes, int racks, std::map<std::string, int> *sizes);

Result<SimResult> simulate(const SimParams &p);

// Set option o (as onrampctl simulate names it: --nodes, --racks,
// --wave-fraction, ...) to v; an error names the option and the value.
Status set_sim_option(SimParams *p, const std::string &o, const std::string &v);

} // namespace campaign
} // namespace onramp
