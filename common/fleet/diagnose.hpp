// The fleet's drivers: where its evidence lives and how admission and the
// CLI use it (onrampctl diagnose, probe, spine-check; onramp-admit --record).
//
// Evidence: every pair of every node's admission history (reference.hpp)
// and the probe results, <FleetDir>/probe/results.json (a JSON array of
// {a, b, busbw_gbs, time}, the newest kProbeMax kept), both within
// FleetWindow.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "admit/verdict.hpp"
#include "config.hpp"
#include "fleet/localise.hpp"
#include "fleet/probe.hpp"
#include "fleet/reference.hpp"
#include "rewire/window.hpp"

namespace onramp {
namespace fleet {

// The outcome of a pair failure the localiser blamed on a link: the node
// passes (is not drained) and its record says so.
extern const char *const kPairLinkFault; // "PAIR_LINK_FAULT"

constexpr size_t kProbeMax = 100000;

std::string probe_results_path(const Policy &p);
Result<std::vector<PairSample>> read_probe_results(const Policy &p);
// Append samples to the probe results (crash-safe).
Status record_probe_results(const Policy &p, const std::vector<PairSample> &samples);
// Every pair of evidence within the window (admissions and probes).
std::vector<PairResult> gather_pairs(const Policy &p, long long now);

// Measure each planned pair with the backend of its first node (simulated
// or real, as GpuBackend says). A pair that gives no number is kept with
// busbw NaN (the localiser leaves it out), one with wrong sums as 0 GB/s.
// Errors are our own bad input (a profile).
Result<std::vector<PairSample>> run_probes(const Config &cfg, const ProbePlan &plan);

// Prometheus text of a diagnosis: onramp_fleet_pairs, onramp_fleet_slow_pairs
// and onramp_fleet_suspect_confidence{kind,name} per suspect (the alert
// OnrampFabricLinkSuspected reads it).
std::string diagnosis_metrics(const Diagnosis &d);

// Judge a verdict against the fleet before it is recorded: SLOW_<CHECK>
// (apply_fleet) and, for a nccl_pair failed for low bandwidth, the
// localiser over the fleet's fresh evidence (FleetClearWindow) plus this
// run's attempts: when it clears the node and the other nodes' pairs alone
// blame the same link (cleared_independently), nccl_pair passes with code
// PAIR_LINK_FAULT naming the link; otherwise today's rule stands and the
// detail says why. Without topology.conf the localiser is skipped (said in
// the detail). Errors: a bad policy key.
Status review_verdict(const Config &cfg, admit::Verdict *v);
// Append the verdict's figures to the node's history.
Status remember_verdict(const Config &cfg, const admit::Verdict &v);

} // namespace fleet
} // namespace onramp
