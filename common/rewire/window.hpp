// Rewiring windows: the fabric file (the Clos uplink map, leaf -> spines) and
// the rewire plan (windows of leaves / leaf->spine links under change), both
// JSON and validated against topology.conf. See onramp-rewire(5).
//
// Cut rule: while a window is active, a leaf switch is cut off from every
// parent in Slurm's switch table when the window names the leaf itself, or
// when every uplink the fabric file lists for it is under change. A leaf that
// keeps at least one uplink stays connected (traffic shifts to the others).
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "config.hpp"
#include "rewire/topology.hpp"
#include "status.hpp"

namespace onramp {

struct Uplink {
	std::string leaf, spine;
	int links = 1;
	double speed_gbps = 0;
};

struct Fabric {
	std::string origin;
	std::vector<std::string> spines;
	std::vector<Uplink> uplinks;
	// Uplinks of leaf (empty when the fabric does not list it).
	std::vector<const Uplink *> of_leaf(const std::string &leaf) const;
};

// Parse and validate against topo: every leaf must be a leaf switch of
// topology.conf, every spine declared in "spines". Errors name file + field.
Result<Fabric> fabric_parse(const std::string &text, const std::string &origin,
                            const TopologyConf &topo);
Result<Fabric> fabric_load(const std::string &path, const TopologyConf &topo);

enum class WindowState { Planned, Active, Done };
const char *window_state_name(WindowState s);
// "planned", "active" or "done" into *out; false for anything else.
bool window_state_parse(const std::string &name, WindowState *out);

struct Window {
	std::string id, reason;
	time_t start = 0, end = 0; // planned, UTC
	std::vector<std::string> leaves;
	std::vector<std::pair<std::string, std::string>> links; // leaf, spine
	std::vector<int> stages{5, 50, 100};                    // ECMP weight (%) per stage
	int stage = 0;                                          // index into stages
	WindowState state = WindowState::Planned;
};

struct Plan {
	std::string origin;
	std::vector<Window> windows;
	// The active window, or nullptr.
	const Window *active() const;
	Window *find(const std::string &id);
};

// Parse and validate a plan: unique ids, known leaves / links (links need a
// fabric), start < end, no two unfinished windows overlapping in time, at
// most one active, and the active window must leave a multi-leaf path.
// fabric may be null. Errors name the file and the item.
Result<Plan> plan_parse(const std::string &text, const std::string &origin,
                        const TopologyConf &topo, const Fabric *fabric);
Result<Plan> plan_load(const std::string &path, const TopologyConf &topo, const Fabric *fabric);
// Validate a plan held in memory (plan_parse calls it).
Status plan_validate(const Plan &plan, const TopologyConf &topo, const Fabric *fabric);
// JSON text of a plan (for onrampctl rewire, written with write_file_atomic).
std::string plan_dump(const Plan &plan);

// Leaves cut while window w is active (the rule above).
std::set<std::string> window_cut(const Window &w, const TopologyConf &topo, const Fabric *fabric);

// Fault domains (onrampctl topology check). The uplinks of each leaf
// switch: its spines in the fabric, else its parents in the tree.
std::map<std::string, std::set<std::string>> leaf_uplinks(const TopologyConf &topo,
                                                          const Fabric *fabric);
// Every switch some leaf has as an uplink, sorted.
std::vector<std::string> fault_spines(const TopologyConf &topo, const Fabric *fabric);
// Leaves cut off when the switches in failed fail: a failed leaf, or one
// whose every uplink failed.
std::vector<std::string> leaves_cut_by(const TopologyConf &topo, const Fabric *fabric,
                                       const std::set<std::string> &failed);

// "onrampctl rewire stage ID N": N must index w's stages; an error names
// the window and its stage count.
Status window_set_stage(Window *w, const std::string &index);

// One line of "onrampctl rewire status" (no newline): "ID STATE
// stage=N% leaves=HOSTLIST start=UTC end=UTC reason=TEXT".
std::string window_status_line(const Window &w);

// Slurm 24.05+ (stock topology/tree reads topology.conf): make the file
// Slurm reads (path) follow cfg's RewirePlan: the active window's derived
// file, else the admin's own (no window active, one that cuts nothing, no
// RewirePlan, or no plan file: none written yet, or removed). A bad plan
// fails and changes nothing.
Status topology_sync_with_plan(const Config &cfg, const TopologyConf &topo, const Fabric *fabric,
                               const std::string &path);

// Parse "2026-11-29T10:00:00Z" (UTC); and back.
Result<time_t> parse_utc(const std::string &s);
std::string format_utc(time_t t);

// Everything topology/onramp and job_submit/onramp need, loaded off the
// submit path from onramp.conf (FabricFile, RewirePlan) and topology.conf.
struct RewireModel {
	TopologyConf topo;
	std::shared_ptr<const Fabric> fabric; // null without FabricFile
	std::shared_ptr<const Plan> plan;     // null without RewirePlan
	std::set<std::string> cut;            // leaves cut now
	std::string active_id;                // "" without an active window
	bool plan_missing = false;            // RewirePlan set but no such file
};

// Load topology.conf (topo_path) and, when configured, the fabric and plan.
// A bad topology.conf fails; a bad fabric/plan fails with plan_error set
// (the caller may then fall back to the plain tree).
Result<RewireModel> rewire_model_load(const Config &cfg, const std::string &topo_path,
                                      bool *plan_error);

} // namespace onramp
