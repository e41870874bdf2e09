#include "campaign/planner.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "hostlist.hpp"
#include "log.hpp"
#include "rewire/topology.hpp"

namespace onramp {
namespace campaign {

Status check_fraction(double fraction, const char *what)
{
	if (!(fraction > 0.0 && fraction <= 1.0))
		return Status::Error(strprintf("%s %g is out of range (0,1]", what, fraction));
	return Status::Ok();
}

int rack_cap(int rack_size, double fraction)
{
	// A small epsilon so 0.2 * 5 is 1, not 0.9999.
	int cap = static_cast<int>(std::floor(fraction * rack_size + 1e-9));
	return cap < 1 ? 1 : cap;
}

Result<std::vector<Wave>> plan_waves(const std::vector<Member> &members,
                                     const std::map<std::string, int> &rack_sizes, double fraction)
{
	Status st = check_fraction(fraction);
	if (!st.ok())
		return st;
	if (members.empty())
		return Status::Error("no nodes to plan");
	std::map<std::string, std::vector<Member>> by_rack;
	std::vector<std::string> rack_order;
	std::set<std::string> seen;
	for (const auto &m : members) {
		if (!seen.insert(m.node).second)
			return Status::Error("node " + m.node + " is listed twice");
		auto it = rack_sizes.find(m.rack);
		if (it == rack_sizes.end() || it->second < 1)
			return Status::Error("node " + m.node + ": unknown rack '" + m.rack + "'");
		if (!by_rack.count(m.rack))
			rack_order.push_back(m.rack);
		by_rack[m.rack].push_back(m);
	}
	for (const auto &[rack, list] : by_rack)
		if (static_cast<int>(list.size()) > rack_sizes.at(rack))
			return Status::Error(
			    strprintf("rack %s: %zu campaign nodes but the rack has %d",
			              rack.c_str(), list.size(), rack_sizes.at(rack)));
	std::vector<Wave> waves;
	for (size_t k = 0;; k++) {
		Wave w;
		for (const auto &rack : rack_order) {
			const auto &list = by_rack[rack];
			size_t cap = rack_cap(rack_sizes.at(rack), fraction);
			for (size_t i = k * cap; i < std::min(list.size(), (k + 1) * cap); i++)
				w.push_back(list[i]);
		}
		if (w.empty())
			break;
		waves.push_back(std::move(w));
	}
	return waves;
}

std::vector<Pair> plan_pairs(const std::vector<Member> &admitted, double sample)
{
	std::map<std::string, std::vector<std::string>> by_rack;
	for (const auto &m : admitted)
		by_rack[m.rack].push_back(m.node);
	std::vector<std::string> racks;
	for (const auto &[r, _] : by_rack)
		racks.push_back(r);
	std::vector<Pair> pairs;
	if (racks.size() < 2)
		return pairs;
	size_t total = admitted.size();
	size_t want = std::max<size_t>(2, static_cast<size_t>(std::ceil(sample * total - 1e-9)));
	want = std::min(want, total);
	std::map<std::string, size_t> next; // next unused index per rack
	std::set<std::string> used;
	// Take the next unused node of rack r, or its first one when all are used.
	auto take = [&](const std::string &r) {
		auto &list = by_rack[r];
		size_t &i = next[r];
		std::string n = i < list.size() ? list[i++] : list.front();
		used.insert(n);
		return n;
	};
	auto has_unused = [&](const std::string &r) { return next[r] < by_rack[r].size(); };
	// Cover every rack: (r0,r1), (r2,r3), ...; an odd last rack pairs with r0.
	for (size_t i = 0; i < racks.size(); i += 2) {
		const std::string &a = racks[i];
		const std::string &b = racks[(i + 1) % racks.size()];
		std::string n = take(a), p = take(b);
		pairs.push_back({n, a, p, b});
	}
	// More pairs until enough distinct nodes are covered, rotating partners.
	size_t shift = 1;
	while (used.size() < want) {
		bool progress = false;
		for (size_t i = 0; i < racks.size() && used.size() < want; i++) {
			const std::string &a = racks[i];
			const std::string &b = racks[(i + shift) % racks.size()];
			if (a == b || !has_unused(a) || !has_unused(b))
				continue;
			std::string n = take(a), p = take(b);
			pairs.push_back({n, a, p, b});
			progress = true;
		}
		if (!progress) {
			// Only one rack has unused nodes left: pair them with another rack's first
			// node.
			for (const auto &a : racks) {
				while (has_unused(a) && used.size() < want) {
					const std::string &b = a == racks[0] ? racks[1] : racks[0];
					std::string n = take(a);
					pairs.push_back({n, a, by_rack[b].front(), b});
				}
			}
			break;
		}
		shift = shift % (racks.size() - 1) + 1;
	}
	return pairs;
}

Result<std::map<std::string, std::string>> parse_topology(const std::string &text,
                                                          const std::string &origin)
{
	auto conf = topology_parse(text, origin);
	if (!conf.ok())
		return conf.status();
	return topology_leaf_of(conf.value());
}

} // namespace campaign
} // namespace onramp
