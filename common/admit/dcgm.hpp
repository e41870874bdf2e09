// The DCGM check: NVIDIA's diagnostic, `dcgmi diag -r LEVEL -j`, where
// dcgmi and its host engine (nv-hostengine) exist. Its JSON report (DCGM
// 3.x; the shape NVIDIA's NVVS and dcgmi print):
//   {"DCGM GPU Diagnostic": {
//      "test_categories": [
//        {"category": "Deployment|Hardware|Integration|Performance|...",
//         "tests": [{"name": "SM Stress",
//                    "results": [{"gpu_ids": "3" | 3 | "0,1,2",
//                                 "status": "Pass|Fail|Warn|Skip" (any case),
//                                 "warnings": ["text" | {"warning": "text",
//                                                        "error_id": N}],
//                                 "info": ["text"]}]}]}],
//      "version": "3.3.5", "runtime_error": "..." (when it could not run)}}
// Text before the first '{' (dcgmi's own warnings) is skipped.
//
// Each failed test becomes onramp:DCGM_<TEST> (the test's name in capitals,
// other characters '_') naming the GPUs. Without dcgmi or a host engine the
// check is NOT_AVAILABLE: SKIP with DcgmRequired=no, ERROR (inconclusive,
// the node stays fenced) with DcgmRequired=yes; never a pass.
#pragma once

#include <string>
#include <vector>

#include "admit/verdict.hpp"
#include "config.hpp"
#include "status.hpp"

namespace onramp {
namespace admit {

extern const char *const kDcgm;

struct DcgmResult {
	std::string category, test, status; // status as printed
	std::vector<int> gpus;              // empty: not per GPU
	std::string message;                // first warning (or info) text
};
struct DcgmReport {
	std::string version, runtime_error;
	int results = 0;                  // results read, of every status
	std::vector<DcgmResult> failures; // status Fail
	std::vector<DcgmResult> warnings; // status Warn
};
// Error: no JSON object, no "DCGM GPU Diagnostic" object, a malformed
// category/test/result. A runtime_error alone is a report (no results).
Result<DcgmReport> parse_dcgm_diag(const std::string &text);

// "SM Stress" -> "DCGM_SM_STRESS"; "" -> "DCGM_UNNAMED".
std::string dcgm_code(const std::string &test);

struct DcgmObs {
	bool available = false; // dcgmi and a host engine answered
	std::string why;        // why not available, or why unparsable
	int level = 1;
	int rc = 0;
	bool parsed = false;
	DcgmReport report;
};
// level 0: the check is off (SKIP).
CheckResult evaluate_dcgm(const DcgmObs &obs, bool required);

// Run DcgmiCommand diag -r DcgmDiagLevel -j within DcgmTimeout.
DcgmObs observe_dcgm(const Config &cfg, const std::string &node);

} // namespace admit
} // namespace onramp
