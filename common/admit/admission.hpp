// One admission run: the node-local checks (or the pair test) for one node,
// each isolated by the runner, gathered into a Verdict; and the record
// written from it.
//
// Bad input of our own (onramp.conf, baseline, sim profile, boot id) is a
// Status error from prepare_admission(): the caller exits 2 and writes no
// record, so a node is never drained for our mistake.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "admit/backend.hpp"
#include "admit/baseline.hpp"
#include "admit/verdict.hpp"
#include "config.hpp"
#include "status.hpp"

namespace onramp {
namespace admit {

struct AdmitInputs {
	Config cfg;
	std::string node;
	Baseline baseline;
	std::unique_ptr<Backend> backend;
	std::string boot_id;
};

// Load the baseline (<BaselineDir>/<Sku>.json), the backend (sim profile)
// and the boot id for node. Errors name the file and field.
Result<std::unique_ptr<AdmitInputs>> prepare_admission(const Config &cfg, const std::string &node);

struct AdmitOptions {
	std::vector<std::string> checks; // empty: local_checks()
	// Told each check's process group as it starts (tests, diagnostics).
	std::function<void(const std::string &check, pid_t pgid)> on_spawn;
	// Pair peers that are not admitted themselves (a first bring-up, or
	// every node lost admission at once: new nodes are paired with each
	// other). A pass with one is evidence for the node (a pair reaches the
	// SKU's busbw only when both sides' GPUs and rails do); a failure with
	// one is never blamed on the node: PAIR_INCONCLUSIVE, the node stays
	// fenced, never drained.
	std::vector<std::string> untested_peers;
};

// Parse "a,b,c" into check names; an error names an unknown one.
Result<std::vector<std::string>> parse_check_list(const std::string &list);

// Run the checks in order; each in its own process with its own timeout,
// then (a full run: opt.checks empty) NHC and the site's programs
// (site.hpp; the caller refuses a bad site configuration first with
// validate_site_config(), which the prolog's use of prepare_admission()
// must not depend on). A check that could not measure (TIMEOUT, ERROR) is run again
// up to CheckRetries times, CheckRetryBackoff seconds apart and doubling;
// still unmeasured its code is INCONCLUSIVE_<CHECK>, and the verdict is
// inconclusive unless another check FAILed (a measured failure stands).
Verdict run_admission(AdmitInputs &in, const AdmitOptions &opt);

// The 2-node test against peers tried in order (the node itself and
// repeats are skipped) until the blame rule decides; see pair.hpp. A Status
// error is bad input (a peer's sim profile).
Result<Verdict> run_pair_admission(AdmitInputs &in, const std::vector<std::string> &peers,
                                   const AdmitOptions &opt);

// The verdict of a full admission that had no peer at all: its node-local
// checks passed but no pair test ran, so it is PAIR_INCONCLUSIVE (recorded
// INCONCLUSIVE: the node stays fenced until a tested peer exists), never a
// pass. A failed verdict is returned as it is.
Verdict require_pair(Verdict v);

// Write <NodeStateDir>/admission.json from a verdict: PASS, FAIL, or
// INCONCLUSIVE (not admitted, not failed: the node stays fenced). An
// error, and nothing written, for a PASS that lacks one of local_checks()
// (a partial run must never admit a node).
Status record_verdict(const Config &cfg, const Verdict &v);

// The one-line human summary: "<node> FAIL NCCL_BW_LOW: <detail>".
std::string verdict_summary(const Verdict &v);

// Publish node's recorded admission to Slurm at once: the admitted
// feature set or cleared in slurmctld as judge() says, then the node's
// slurmd asked to re-register (it reports its features from the record).
// Problems are logged, never fatal: the record is already written.
void publish_admission(const Config &cfg, const std::string &node);

} // namespace admit
} // namespace onramp
