// The switch topology of topology.conf (topology/tree's grammar) and the
// switch table Slurm builds from it, computed exactly as topology/tree does
// (levels, parents, children, descendants, distances), optionally with some
// leaf switches cut off from every parent (a rewiring window).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "status.hpp"

namespace onramp {

// One SwitchName= line.
struct TopoSwitchConf {
	std::string name;
	uint32_t link_speed = 1; // LinkSpeed=, 1 when not given (as tree)
	std::string nodes;       // Nodes= as written ("" for non-leaves)
	std::string switches;    // Switches= as written ("" for leaves)
	int line = 0;
};

struct TopologyConf {
	std::string origin;
	std::vector<TopoSwitchConf> switches; // in file order
	// Index of a switch by name, -1 when unknown.
	int find(const std::string &name) const;
};

// Parse topology.conf text. Keys are case-insensitive (SwitchName, Nodes,
// Switches, LinkSpeed); '#' starts a comment; a trailing '\' continues the
// line. Errors name origin and line.
Result<TopologyConf> topology_parse(const std::string &text, const std::string &origin);
// Read and parse a file (file I/O).
Result<TopologyConf> topology_load(const std::string &path);

// One entry of Slurm's switch_record_table.
struct SwitchRec {
	std::string name;
	int level = 0;
	uint32_t link_speed = 1;
	std::string nodes;              // leaves: Nodes= as written; others "" (Slurm fills it)
	std::string switches;           // Switches= (the remaining children when cut)
	int parent = 0;                 // as tree: 0 for switches nobody names as child
	std::vector<uint16_t> children; // switch_index
	std::vector<uint16_t> desc;     // switch_desc_index (tree's order)
	std::vector<uint32_t> dist;     // switches_dist (INFINITE: 0xfffffffe)
	std::vector<int> node_index;    // indexes into the node list given
};

struct SwitchTable {
	std::vector<SwitchRec> sw;
	int levels = 0;
	std::vector<std::string> warnings; // tree's WARNINGs (unknown names, ...)
	bool have_root = false;            // some switch reaches all nodes
};

constexpr uint32_t kTopoInfinite = 0xfffffffe; // Slurm's INFINITE

// Build the table. nodes[i] is the name of Slurm's node index i ("" for a
// hole). Leaves named in cut lose every link to their parents. Errors (where
// tree would fatal: duplicate switch, unknown child, not a tree, no leaf)
// name the file and line.
Result<SwitchTable> build_switch_table(const TopologyConf &conf,
                                       const std::vector<std::string> &nodes,
                                       const std::set<std::string> &cut = {});

// All node names of the leaves, in file order, duplicates removed.
Result<std::vector<std::string>> topology_node_names(const TopologyConf &conf);

// node -> the leaf switch whose Nodes= names it (a rack). A node under two
// leaves is an error naming the file and the second leaf's line.
Result<std::map<std::string, std::string>> topology_leaf_of(const TopologyConf &conf);

// The text of a topology.conf for stock topology/tree whose table equals
// build_switch_table(conf, nodes, cut): every leaf in cut is dropped from its
// parents' Switches= (tree then gives it no parent: jobs stay inside it),
// every other line as written. The rewiring mechanism on Slurm 24.05+, where
// the switch table is the topology plugin's own (README, "Slurm versions").
// Errors: a cut name that is not a leaf switch, a switch left without
// children; the text is parsed and built again before it is returned.
Result<std::string> topology_derive(const TopologyConf &conf, const std::set<std::string> &cut);

// The Nodes= hostlist of each leaf switch, by switch name.
std::map<std::string, std::string> topology_leaf_nodes(const TopologyConf &conf);

class Config;
// Where the admin's topology.conf is, for every reader (topology/onramp, the
// rewire and campaign tools, the exporter): topology_admin_path() of
// topology_path_beside(cfg's origin).
std::string default_topology_path(const Config &cfg);
// The same for the default onramp.conf (default_conf_path()), without
// loading it.
std::string default_topology_path();
// The file Slurm reads: $ONRAMP_TOPOLOGY_CONF, else topology.conf beside
// conf_path (where Slurm keeps it beside slurm.conf).
std::string topology_path_beside(const std::string &conf_path);

// Slurm 24.05+ (stock topology/tree): while a rewiring window is active the
// file Slurm reads (path) is onramp's derived one and the admin's own is
// kept as path + ".onramp-orig", the same inode (a hard link made before the
// first install: owner, mode, a symlink kept as it was).
std::string topology_saved_path(const std::string &path);
// The admin's file: the saved one while it exists, else path.
std::string topology_admin_path(const std::string &path);
// Install topology_derive(the admin's file, cut) as path, atomically (temp,
// fsync, rename, fsync dir), window named in its first line; saves the
// admin's file first unless it is saved already (never overwritten: a
// second install derives from it again). An error (bad topology, a cut
// that leaves a switch childless) leaves path as it was.
Status topology_install_derived(const std::string &path, const std::set<std::string> &cut,
                                const std::string &window);
// Put the admin's file back as path (rename of the saved one; nothing to do
// when none is saved). Safe to repeat after a crash at any step.
Status topology_restore_admin(const std::string &path);

} // namespace onramp
