// The probe planner and the single-spine fault check.
//
// A probe plan is a set of node pairs that lets localise() tell a node from
// a leaf's uplinks, a leaf-spine link and a spine, at a small fraction of all
// n(n-1)/2 pairs. It is built in rounds, each round complete before the next
// starts, so a budget cuts whole rounds' worth of coverage evenly:
//   round 0: a ring inside each leaf (each node with its two neighbours), so
//            a node is seen with same-leaf peers;
//   round r (1..max spines of a leaf): each node with one node of another
//            leaf (leaves taken in turn), chosen so the pair is routed
//            (FabricView::route) through the leaf's r-th spine in turn.
// The plan is deterministic for a given view and node list.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fleet/localise.hpp"

namespace onramp {
namespace fleet {

struct ProbePlan {
	std::vector<std::pair<std::string, std::string>> pairs;
	size_t all_pairs = 0; // n(n-1)/2 over the nodes planned for
	size_t rounds = 0;    // complete rounds planned
};

// nodes: the nodes to probe (empty: every node of the view); unknown nodes
// are left out. budget: the most pairs (0: no limit).
ProbePlan plan_probes(const FabricView &view, const std::vector<std::string> &nodes, size_t budget);

// The leaves a job spans, from its nodes (nodes on no leaf left out).
std::vector<std::string> leaves_of(const FabricView &view, const std::vector<std::string> &nodes);

// One spine whose loss cuts two of the given leaves apart (they share no
// other spine). spine "" lists leaf pairs that share no spine at all.
struct SpineCut {
	std::string spine;
	std::vector<std::pair<std::string, std::string>> apart;
};
// Every single spine whose loss cuts some pair of leaves apart (empty: the
// leaves survive the loss of any one spine). Leaves are connected only
// through a common spine (a two-level Clos routes leaf-spine-leaf).
std::vector<SpineCut> single_spine_cuts(const FabricView &view,
                                        const std::vector<std::string> &leaves);

} // namespace fleet
} // namespace onramp
