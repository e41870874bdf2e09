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
// The optional site checks, run after the node-local ones in a full run:
// LBNL NHC with the site's configuration (AdmissionNhc) and each program
// of AdmissionSiteChecks, as "site_<file name>".
extern const char *const kNhc;
extern const char *const kSitePrefix; // "site_"
extern const char *const kGpuDepth;

// The node-local checks (every check but nccl_pair), in run order.
const std::vector<std::string> &local_checks();
// True for any check name (local_checks() and nccl_pair). The host and
// dcgm checks' names and codes are in admit/host.hpp and admit/dcgm.hpp.
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
extern const char *const kPortErrors;       // a port error counter grew past its limit
extern const char *const kPortWidthLow;     // a port trained to fewer lanes
extern const char *const kPortMtuLow;       // a port's active MTU below the SKU's
extern const char *const kGpuThrottled;     // thermal/power slowdown or low SM clock under load
extern const char *const kGpuTempHigh;      // temperature over the SKU limit under load
extern const char *const kGpuPowerHigh;     // power over the SKU limit under load
extern const char *const kPcieDegraded;     // GPU/HCA PCIe gen or width below the SKU's
extern const char *const kEccCorrectedHigh; // volatile corrected ECC over the limit
extern const char *const kRowRemapHigh;     // remapped rows over the limit
extern const char *const kNvlinkErrors;     // NVLink error counters grew past the limit
extern const char *const kGpuMemory;        // GPU memory smaller than the SKU's
extern const char *const kPersistenceOff;   // persistence mode off
extern const char *const kGpuForeignProcess;  // a process not ours on a GPU
extern const char *const kCheckTimeout;       // a check overran its timeout
extern const char *const kCheckError;         // a check could not measure
extern const char *const kBadInput;           // our own input is bad (exit 2)
extern const char *const kNhc;                // NHC reported the node unhealthy
extern const char *const kSitePrefix;         // "SITE_": a site check failed
extern const char *const kInconclusivePrefix; // "INCONCLUSIVE_": unmeasured after retries
} // namespace code

// The code of a check that could not measure after its retries:
// "INCONCLUSIVE_<CHECK>" (nccl_allreduce: INCONCLUSIVE_NCCL; other names
// upper-cased, anything but letters and digits an underscore).
std::string inconclusive_code(const std::string &check);
// "SITE_<NAME>" for a site check's file name (upper-cased the same way).
std::string site_code(const std::string &file);

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
	// Could not measure (TIMEOUT, ERROR): evidence of nothing about the node.
	bool unmeasured() const
	{
		return status == CheckStatus::Timeout || status == CheckStatus::Error;
	}
	Json to_json() const;
	static Result<CheckResult> from_json(const json_t *j, const std::string &origin);
};

// Helpers for building results.
CheckResult make_pass(const std::string &name, const std::string &detail);
CheckResult make_fail(const std::string &name, const std::string &code, const std::string &detail);

struct Verdict {
	std::string node, boot_id, baseline_digest, backend, sku, time;
	bool simulated = false;
	// Could not judge (nccl_pair with one failing peer, a check unmeasured
	// after its retries and no check failed): exit 2, the node stays fenced.
	bool inconclusive = false;
	std::vector<CheckResult> checks;

	// PASS when every check passed or was skipped, else FAIL.
	bool passed() const;
	// The first check that FAILed (measured), else the first unmeasured
	// one; nullptr when passed().
	const CheckResult *first_failure() const;
	// True when some check FAILed: a measured failure outranks an
	// unmeasured check.
	bool has_measured_failure() const;
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
