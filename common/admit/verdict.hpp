// Check results and the admission verdict of onramp-admit.
//
// A CheckResult is what one check found; a Verdict is all of them for one
// node plus the identity (boot id, baseline digest) they were judged
// against. Both serialise to the JSON documented in onramp-admit(8) and
// parse back (a check's child process sends its result over a pipe).
#pragma once

#include <string>
#include <vector>

#include "json.hpp"
#include "status.hpp"

namespace onramp {
namespace admit {

// Check names, in the order onramp-admit runs them.
extern const char *const kInventory;
extern const char *const kVersions;
extern const char *const kGpuHealth;
extern const char *const kMemBw;
extern const char *const kNcclAllreduce;
extern const char *const kNcclPair;
extern const char *const kFabric;
extern const char *const kTopology;

// The node-local checks (every check but nccl_pair), in run order.
const std::vector<std::string> &local_checks();
// True for any of the eight check names.
bool is_check_name(const std::string &name);

// Failure codes (the <CODE> of "onramp:<CODE>: <detail>").
namespace code {
extern const char *const kOk;               // a passing check
extern const char *const kSkipped;          // a check not run
extern const char *const kNoGpu;            // no GPU / GPU libraries missing
extern const char *const kGpuCount;         // GPU count differs from the SKU
extern const char *const kGpuModel;         // GPU model differs from the SKU
extern const char *const kVersionMismatch;  // a version differs from the baseline
extern const char *const kEccUncorrected;   // volatile uncorrected ECC errors
extern const char *const kRowRemap;         // row remap pending or failed
extern const char *const kXidCritical;      // critical XID within XidWindow
extern const char *const kNvlinkDown;       // an NVLink link is down
extern const char *const kMemBwLow;         // device memory bandwidth too low
extern const char *const kNcclBwLow;        // single-node NCCL busbw too low
extern const char *const kNcclCorrupt;      // NCCL produced wrong results
extern const char *const kPairBwLow;        // 2-node busbw too low with >= 2 peers
extern const char *const kPairInconclusive; // one failing peer, or nothing measured
extern const char *const kRailBwLow;        // one rail (GPU + its HCA port) too low with >= 2 peers
extern const char *const kPortDown;         // an IB/RoCE port not ACTIVE/LinkUp
extern const char *const kPortRateLow;      // port rate below the SKU's
extern const char *const kPortFlapping;     // link_downed rose during the check
extern const char *const kPortMissing;      // fewer ports than the SKU has
extern const char *const kAffinityMismatch; // GPU's nearest NIC / NUMA differs
extern const char *const kCheckTimeout;     // a check overran its timeout
extern const char *const kCheckError;       // a check could not measure
extern const char *const kBadInput;         // our own input is bad (exit 2)
} // namespace code

enum class CheckStatus { Pass, Fail, Timeout, Skip, Error };
const char *check_status_name(CheckStatus s); // "PASS", "FAIL", ...
// Parses a check_status_name(); false for anything else.
bool parse_check_status(const std::string &text, CheckStatus *out);

struct CheckResult {
	std::string name;
	CheckStatus status = CheckStatus::Error;
	std::string code;     // code::kOk on PASS
	double value = 0;     // the measured quantity (NaN: none)
	double threshold = 0; // what it was compared with (NaN: none)
	std::string unit;
	double duration_s = 0;
	std::string detail;
	std::vector<double> samples; // every sample taken, in order
	bool simulated = false;
	Json data; // check-specific structure (assets, versions found), or null

	bool passed() const { return status == CheckStatus::Pass || status == CheckStatus::Skip; }
	Json to_json() const;
	static Result<CheckResult> from_json(const json_t *j, const std::string &origin);
};

// Helpers for building results.
CheckResult make_pass(const std::string &name, const std::string &detail);
CheckResult make_fail(const std::string &name, const std::string &code, const std::string &detail);

struct Verdict {
	std::string node, boot_id, baseline_digest, backend, sku, time;
	bool simulated = false;
	// Could not judge (e.g. nccl_pair with one failing peer): exit 2.
	bool inconclusive = false;
	std::vector<CheckResult> checks;

	// PASS when every check passed or was skipped, else FAIL.
	bool passed() const;
	// The first failing check, or nullptr when passed().
	const CheckResult *first_failure() const;
	// "PASS", "FAIL" or "INCONCLUSIVE".
	std::string status() const
	{
		return inconclusive ? "INCONCLUSIVE" : passed() ? "PASS" : "FAIL";
	}
	// First failure's code; when passed, a passing check's own code other
	// than OK/SKIPPED (a warning such as SLOW_MEMBW), else "OK".
	std::string code() const;
	std::string detail() const; // first failure's detail, or a pass summary with warnings
	Json to_json() const;
};

// The "[SIMULATED]" marker appended to every detail in sim mode.
extern const char *const kSimulatedMarker;

} // namespace admit
} // namespace onramp
