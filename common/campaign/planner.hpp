// Expansion campaigns: the wave planner and the cross-rack pair sampler.
//
// A rack is a leaf switch of topology.conf (SwitchName=... Nodes=...): the
// unit that shares power, cooling and the first network hop. The planner
// splits a campaign's nodes into waves so that at most
// cap(rack) = max(1, floor(fraction * size(rack))) nodes of any rack are
// in reboot or admission at once, where size(rack) counts every node of the
// rack (not only the campaign's). The floor of 1 means a rack smaller than
// 1/fraction nodes still makes progress, one node per wave.
//
// Pure functions: no I/O.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "status.hpp"

namespace onramp {
namespace campaign {

struct Member {
	std::string node, rack;
};
using Wave = std::vector<Member>;

// Ok for 0 < fraction <= 1, else an error naming the value.
Status check_fraction(double fraction, const char *what = "wave fraction");
// max(1, floor(fraction * rack_size)). REQUIRES: check_fraction ok, rack_size >= 1.
int rack_cap(int rack_size, double fraction);

// Waves for members (kept in their given order within a rack). rack_sizes
// maps each rack to its full size. Errors: bad fraction, a member whose rack
// is not in rack_sizes, a duplicate node, no members.
Result<std::vector<Wave>> plan_waves(const std::vector<Member> &members,
                                     const std::map<std::string, int> &rack_sizes, double fraction);

struct Pair {
	std::string node, rack, peer, peer_rack;
};
// Cross-rack validation pairs among admitted nodes: every rack appears in at
// least one pair, nodes of different racks only, and at least
// max(2, ceil(sample * N)) distinct nodes are covered (when there are that
// many). Empty when fewer than two racks have admitted nodes.
std::vector<Pair> plan_pairs(const std::vector<Member> &admitted, double sample = 0.05);

// node -> leaf switch from topology.conf text: topology/onramp's parser
// (rewire/topology.hpp: continuation lines, tree's grammar) and its leaves.
// Errors name origin and line.
Result<std::map<std::string, std::string>> parse_topology(const std::string &text,
                                                          const std::string &origin);

} // namespace campaign
} // namespace onramp
