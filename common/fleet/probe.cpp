#include "fleet/probe.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace onramp {
namespace fleet {

ProbePlan plan_probes(const FabricView &view, const std::vector<std::string> &nodes, size_t budget)
{
	ProbePlan plan;
	std::set<std::string> want(nodes.begin(), nodes.end());
	// leaf -> its planned nodes, in the view's order.
	std::vector<std::pair<std::string, std::vector<std::string>>> leaves;
	size_t total = 0, max_spines = 0;
	for (const auto &l : view.leaves()) {
		std::vector<std::string> ns;
		for (const auto &n : view.nodes_of(l))
			if (want.empty() || want.count(n))
				ns.push_back(n);
		if (ns.empty())
			continue;
		total += ns.size();
		max_spines = std::max(max_spines, view.spines_of(l).size());
		leaves.emplace_back(l, std::move(ns));
	}
	plan.all_pairs = total * (total ? total - 1 : 0) / 2;
	std::set<std::pair<std::string, std::string>> seen;
	std::vector<std::pair<std::string, std::string>> round;
	auto add = [&](const std::string &a, const std::string &b) {
		if (a == b)
			return false;
		auto key = std::make_pair(std::min(a, b), std::max(a, b));
		if (!seen.insert(key).second)
			return false;
		round.push_back(key);
		return true;
	};
	auto close_round = [&]() {
		if (budget && plan.pairs.size() + round.size() > budget) {
			round.resize(budget - plan.pairs.size());
			plan.pairs.insert(plan.pairs.end(), round.begin(), round.end());
			round.clear();
			return false;
		}
		plan.pairs.insert(plan.pairs.end(), round.begin(), round.end());
		plan.rounds++;
		round.clear();
		return true;
	};
	for (const auto &[l, ns] : leaves)
		for (size_t i = 0; ns.size() > 1 && i < ns.size(); i++)
			add(ns[i], ns[(i + 1) % ns.size()]);
	if (!close_round() || leaves.size() < 2)
		return plan;
	size_t nl = leaves.size();
	for (size_t r = 1; r <= max_spines; r++) {
		for (size_t li = 0; li < nl; li++) {
			const auto &[l, ns] = leaves[li];
			const auto &spines = view.spines_of(l);
			for (size_t i = 0; i < ns.size() && !spines.empty(); i++) {
				const std::string &want_spine = spines[(i + r) % spines.size()];
				// Leaves in turn; within a leaf the first node whose route
				// takes the wanted spine.
				bool done = false;
				for (size_t k = 0; k + 1 < nl && !done; k++) {
					size_t lj = (li + 1 + (i + r + k) % (nl - 1)) % nl;
					const auto &other = leaves[lj].second;
					for (size_t t = 0; t < other.size() && !done; t++) {
						const std::string &peer =
						    other[(i * 7 + r + t) % other.size()];
						if (view.route(ns[i], peer) == want_spine)
							done = add(ns[i], peer);
					}
				}
			}
		}
		if (!close_round())
			break;
	}
	return plan;
}

std::vector<std::string> leaves_of(const FabricView &view, const std::vector<std::string> &nodes)
{
	std::vector<std::string> out;
	for (const auto &n : nodes) {
		const std::string &l = view.leaf_of(n);
		if (!l.empty() && std::find(out.begin(), out.end(), l) == out.end())
			out.push_back(l);
	}
	return out;
}

std::vector<SpineCut> single_spine_cuts(const FabricView &view,
                                        const std::vector<std::string> &leaves)
{
	std::map<std::string, SpineCut> cuts;
	for (size_t i = 0; i < leaves.size(); i++)
		for (size_t j = i + 1; j < leaves.size(); j++) {
			auto common = view.common_spines(leaves[i], leaves[j]);
			if (common.size() > 1)
				continue;
			std::string s = common.empty() ? "" : common.front();
			cuts[s].spine = s;
			cuts[s].apart.emplace_back(leaves[i], leaves[j]);
		}
	std::vector<SpineCut> out;
	for (auto &[s, c] : cuts)
		out.push_back(std::move(c));
	return out;
}

} // namespace fleet
} // namespace onramp
