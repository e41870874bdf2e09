// The campaign report: what "onrampctl expand-status" and "onrampctl
// report" show of each campaign (the journal, the five layers per campaign,
// rack and wave, the nodes' admission checks), as JSON and as text; and the
// text of a simulation ("onrampctl simulate").
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "campaign/journal.hpp"
#include "campaign/simulate.hpp"
#include "config.hpp"
#include "json.hpp"
#include "slurm/client.hpp"
#include "status.hpp"

namespace onramp {
namespace campaign {

// What the report reads besides the journal.
struct ReportInputs {
	std::string topology; // topology.conf ("": where topology/onramp reads it)
	// slurmctld, read for the platform and network layers (nodes,
	// partitions, the switch table); null: not read (those facts unknown).
	slurm::SlurmClient *slurm = nullptr;
	std::string exporter;     // "ok" or why the exporter did not answer
	int64_t budget = 45 * 60; // seconds a node may take from reboot to outcome
};

// node -> rack and rack -> size, from topology.conf's leaf switches (topology,
// else where topology/onramp reads it).
Status load_racks(const std::string &topology, const Config &cfg,
                  std::map<std::string, std::string> *leaf_of, std::map<std::string, int> *sizes);

// {"campaigns": [...]}: campaign id, or every campaign when id is "".
// *unknown is set (and an error returned) when there is no campaign id.
Result<Json> status_report(Journal &j, const std::string &id, const ReportInputs &in,
                           const Config &cfg, bool *unknown);
// The text of status_report()'s answer: "expand-status" (per node) or
// "report" (the layer table).
void print_status(const Json &campaigns);
void print_report(const Json &campaigns);

// A simulation as onrampctl simulate prints it (text or JSON).
void print_simulation(const SimParams &p, const SimResult &s, bool json);

} // namespace campaign
} // namespace onramp
