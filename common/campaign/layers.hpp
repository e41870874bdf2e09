// The layered view of an expansion campaign (onrampctl report): for a set of
// the campaign's nodes (all of them, one rack, one wave), whether each layer
// holds and what blocks it.
//
//   node         every node admitted (its checks passed)
//   network      no port/pair failure code, the rack's leaf in slurmctld's
//                switch table and connected to a spine with the nodes under
//                it, every rack in a passing cross-rack NCCL pair; its note
//                names the component the fault localiser blames, if any
//   platform     admitted nodes schedulable (no drain/down/reserved/reboot
//                state), the admitted feature active, in an UP partition
//   application  the rack's smoke job (a short multi-node srun on its new
//                nodes) passed
//   operations   the metrics exporter answers, the alert rules file is
//                there with alert rules, each new node has its textfile
//                (when MetricsTextfileDir is set)
//
// Pure functions over facts gathered by the caller (common/campaign/report
// reads slurmctld through SlurmClient): no I/O.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "campaign/journal.hpp"
#include "fleet/localise.hpp"
#include "slurm/client.hpp"
#include "status.hpp"

namespace onramp {
namespace campaign {

// A node as slurmctld holds it, for the platform layer.
struct SlurmNode {
	std::string state, features;
	std::map<std::string, bool> partitions; // partition -> up
};

// A leaf switch as slurmctld's live switch table holds it.
struct LiveLeaf {
	bool connected = false; // some upper switch lists it
	std::set<std::string> nodes;
};

struct LayerFacts {
	std::string feature = "onramp_ok";
	int campaign_racks = 0; // racks of the whole campaign (pairs need two)
	bool have_slurm = false;
	std::map<std::string, SlurmNode> slurm;
	bool have_topology = false;
	std::map<std::string, LiveLeaf> leaves;
	std::vector<PairRow> pairs;
	std::vector<SmokeRow> smokes;
	// Operations: "" when not checked, "ok", else why not.
	std::string exporter, rules;
	std::string textfile_dir;        // "" when not configured
	std::set<std::string> textfiles; // nodes that have one
	// The fault localiser's summary of the campaign's pairs (network
	// layer's note); "" when not made (no topology.conf).
	std::string fabric_diagnosis;
};

struct Layer {
	std::string name;
	int ok = -1; // 1 holds, 0 blocked, -1 unknown (facts missing)
	std::vector<std::string> blocked_by;
	std::string note;
};

extern const char *const kLayerNames[]; // node .. operations, nullptr-terminated

// The five layers for nodes (a subset of the campaign's), their racks being
// racks.
std::vector<Layer> compute_layers(const std::vector<const NodeRow *> &nodes,
                                  const std::set<std::string> &racks, const LayerFacts &f);

// The fault localiser (fleet/localise.hpp) over the campaign's cross-rack
// pairs that have run (pass: healthy, anything else: slow): its summary.
std::string diagnose_pairs(const std::vector<PairRow> &pairs, const fleet::FabricView &view);

// The facts from what SlurmClient read (libslurm's structures, no text).
// A node's state: its base state with "+DRAIN", "+RESERVED", "+REBOOT" and
// "+NOT_RESPONDING" for those flags ("IDLE+DRAIN"); the partitions whose
// node lists name it, UP or not. Error naming a partition whose node list
// does not expand.
Result<std::map<std::string, SlurmNode>>
slurm_nodes(const std::vector<slurm::Node> &nodes, const std::vector<slurm::Partition> &partitions);
// The leaves (level 0) of slurmctld's switch table with their nodes, and
// whether a switch names them as a child. Error naming a switch whose
// lists do not expand.
Result<std::map<std::string, LiveLeaf>> live_leaves(const std::vector<slurm::Switch> &table);

} // namespace campaign
} // namespace onramp
