// Fault localisation: which component makes slow pairs slow.
//
// A pair (a, b) crosses components: the nodes a and b, and when a and b hang
// off different leaves, the uplinks of leaf(a) and of leaf(b) (all of a
// leaf's uplinks as one component), the two leaf-spine links it takes and
// the one spine it is routed through. A slow pair says one of its components
// is at fault; a healthy pair says none of its components slows every pair
// through it. The localiser explains slow pairs greedily (group testing with
// "explaining away"): it blames the component with the most slow pairs not
// yet explained whose pairs are nearly all slow (>= kMinSlowRatio), marks
// those pairs explained, and repeats. What is left unexplained is reported,
// never blamed on a node.
//
// Routing: the fabric model (FabricFile) lists the spines each leaf's
// uplinks reach, not which spine a flow takes. The model used here is
// deterministic: a cross-leaf pair's spine is the
//     common_spines(leaf(a), leaf(b))[fnv1a64(min(a,b) + "|" + max(a,b)) % n]
// with common_spines sorted by name. It stands for ECMP's per-flow hash:
// stable per pair, spread over the spines. Without FabricFile each leaf's
// parent switches in topology.conf are its spines.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "config.hpp"
#include "json.hpp"
#include "rewire/topology.hpp"
#include "rewire/window.hpp"
#include "status.hpp"

namespace onramp {
namespace fleet {

// Leaves, their nodes and their spines.
class FabricView {
public:
	// From topology.conf and the fabric file (may be null). Errors are
	// topology.conf's.
	static Result<FabricView> from(const TopologyConf &topo, const Fabric *fabric);
	// Built directly (tests, simulations): leaf -> nodes, leaf -> spines.
	void add_leaf(const std::string &leaf, const std::vector<std::string> &nodes,
	              const std::vector<std::string> &spines);

	// "" when the node is on no leaf.
	const std::string &leaf_of(const std::string &node) const;
	const std::vector<std::string> &nodes_of(const std::string &leaf) const;
	const std::vector<std::string> &spines_of(const std::string &leaf) const;
	// Spines both leaves reach, sorted.
	std::vector<std::string> common_spines(const std::string &l1, const std::string &l2) const;
	// The spine pair (a, b) is routed through (the rule above); "" when the
	// nodes share a leaf, a leaf is unknown, or the leaves share no spine.
	std::string route(const std::string &a, const std::string &b) const;
	const std::vector<std::string> &leaves() const { return leaves_; }
	std::vector<std::string> spines() const;

private:
	std::vector<std::string> leaves_;
	std::map<std::string, std::string> leaf_;
	std::map<std::string, std::vector<std::string>> nodes_, spines_;
};

// topology.conf (topo_path) and FabricFile when set, as a FabricView.
// Errors name the file.
struct FabricModel {
	TopologyConf topo;
	std::unique_ptr<Fabric> fabric; // null without FabricFile
	FabricView view;
};
Result<std::unique_ptr<FabricModel>> load_fabric_model(const Config &cfg,
                                                       const std::string &topo_path);

// 64-bit FNV-1a of s (the routing hash above).
uint64_t fnv1a64(const std::string &s);

struct PairResult {
	std::string a, b;
	double busbw_gbs = 0; // NaN: no result (left out: evidence of nothing)
};

enum class Kind { Node, Uplink, Link, Spine };
const char *kind_name(Kind k); // "node", "uplink", "link", "spine"

// A suspected component: "node n1", "uplink leaf2" (the leaf's uplinks),
// "link leaf2/spine-a" (one leaf-spine link), "spine spine-a". On a tie a
// link component is preferred to a node, so a node is never blamed for what
// a link explains as well; a suspect whose pairs another candidate explains
// as well is marked ambiguous by halving its confidence.
struct Suspect {
	Kind kind = Kind::Node;
	std::string name;
	double confidence = 0; // 0..1
	size_t slow = 0, fast = 0;
	std::vector<PairResult> evidence; // the slow pairs it explains
};

constexpr double kMinSlowRatio = 0.8;

struct LocaliseOptions {
	// A pair at or above good_gbs is healthy. <= 0: the median of all pairs
	// times (1 - margin).
	double good_gbs = 0;
	double margin = 0.05;
	// The fewest slow pairs a component needs to be blamed (a node: distinct
	// peers).
	size_t min_evidence = 2;
};

struct Diagnosis {
	double good_gbs = 0;
	size_t pairs = 0, slow = 0;
	std::vector<Suspect> suspects;       // most evidence first
	std::vector<PairResult> unexplained; // slow pairs no suspect explains

	// Nothing blamed and slow pairs left over.
	bool inconclusive() const { return suspects.empty() && !unexplained.empty(); }
	bool blames_node(const std::string &node) const;
	// True when node's pair failures are a link's fault: node is not
	// blamed, it has slow pairs, and each of them is explained by a blamed
	// uplink or spine. False otherwise, including when the evidence is too
	// thin to say: then the caller keeps its own rule.
	bool clears(const std::string &node) const;
	// The suspect that explains the slow pair (a, b), or nullptr.
	const Suspect *explaining(const std::string &a, const std::string &b) const;
	// "uplink leaf2 (confidence 0.95, 12 slow / 0 fast pairs)"; or
	// "nothing conclusive".
	std::string summary() const;
	Json to_json() const;

	// Filled by localise(): the fabric, for clears().
	const FabricView *view = nullptr;
};

// REQUIRES: view outlives the Diagnosis.
Diagnosis localise(const std::vector<PairResult> &pairs, const FabricView &view,
                   const LocaliseOptions &opt);

// Whether node may be cleared of its slow pairs: localise(pairs) clears it
// (Diagnosis::clears), and every component blamed for one of its slow pairs
// is blamed too (the confidence is the pooled diagnosis's: in a leaf of two
// nodes the other one ties with the uplinks) by the other evidence: every pair
// but the node's own slow ones (its healthy pairs speak for its peers). The
// node's slow pairs never clear it by themselves. *why: the diagnosis, or
// why it is not enough.
bool cleared_independently(const std::vector<PairResult> &pairs, const FabricView &view,
                           const LocaliseOptions &opt, const std::string &node, std::string *why);

} // namespace fleet
} // namespace onramp
