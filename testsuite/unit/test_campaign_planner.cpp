// The expansion planner: waves never take more than max(1, floor(f * size))
// nodes of a rack; every node is planned exactly once; cross-rack pairs
// cover every rack and at least 5% of the nodes; topology.conf gives racks.
#include "unit.hpp"

#include <map>
#include <set>

#include "campaign/planner.hpp"
#include "rewire/topology.hpp"
#include "log.hpp"

using namespace onramp;
using namespace onramp::campaign;

// n nodes named <rack>-<i> in each of the given racks.
static std::vector<Member> racks_of(const std::vector<std::pair<std::string, int>> &racks)
{
	std::vector<Member> m;
	for (const auto &[r, n] : racks)
		for (int i = 1; i <= n; i++)
			m.push_back({strprintf("%s-%d", r.c_str(), i), r});
	return m;
}

// Checks the invariants and returns the number of waves.
static size_t check_plan(const std::vector<Member> &members,
                         const std::map<std::string, int> &sizes, double f)
{
	auto waves = plan_waves(members, sizes, f);
	assert_true(waves.ok());
	std::set<std::string> seen;
	for (const auto &w : waves.value()) {
		assert_false(w.empty());
		std::map<std::string, int> per_rack;
		for (const auto &m : w) {
			assert_true(seen.insert(m.node).second);
			per_rack[m.rack]++;
		}
		for (const auto &[r, k] : per_rack)
			assert_true(k <= rack_cap(sizes.at(r), f));
	}
	assert_int_equal(seen.size(), members.size());
	return waves->size();
}

static void caps_follow_the_fraction_with_a_floor_of_one(void **)
{
	assert_int_equal(rack_cap(5, 0.2), 1);
	assert_int_equal(rack_cap(16, 0.2), 3);
	assert_int_equal(rack_cap(32, 0.2), 6);
	assert_int_equal(rack_cap(4, 0.2), 1); // floor of one: progress on small racks
	assert_int_equal(rack_cap(32, 1.0), 32);
	assert_int_equal(rack_cap(10, 0.01), 1);
}

static void racks_of_5_16_32(void **)
{
	std::map<std::string, int> sizes = {{"leaf1", 5}, {"leaf2", 16}, {"leaf3", 32}};
	auto m = racks_of({{"leaf1", 5}, {"leaf2", 16}, {"leaf3", 32}});
	// 32 / 6 per wave -> 6 waves; 16 / 3 -> 6; 5 / 1 -> 5.
	assert_int_equal(check_plan(m, sizes, 0.2), 6);
	auto waves = plan_waves(m, sizes, 0.2);
	std::map<std::string, int> first;
	for (const auto &x : waves.value()[0])
		first[x.rack]++;
	assert_int_equal(first["leaf1"], 1);
	assert_int_equal(first["leaf2"], 3);
	assert_int_equal(first["leaf3"], 6);
	assert_int_equal(check_plan(m, sizes, 1.0), 1);
	assert_int_equal(check_plan(m, sizes, 0.5), 3); // leaf1: cap 2 -> 3 waves; others 2
}

static void a_subset_of_a_rack_uses_the_whole_rack_as_the_base(void **)
{
	// 3 of a 16-node rack at 0.2: cap 3, so one wave.
	std::map<std::string, int> sizes = {{"leaf1", 16}};
	assert_int_equal(check_plan(racks_of({{"leaf1", 3}}), sizes, 0.2), 1);
	// 3 of a 4-node rack: cap 1, three waves.
	sizes["leaf1"] = 4;
	assert_int_equal(check_plan(racks_of({{"leaf1", 3}}), sizes, 0.2), 3);
}

static void uneven_racks(void **)
{
	std::map<std::string, int> sizes = {{"a", 7}, {"b", 1}, {"c", 23}};
	auto m = racks_of({{"a", 7}, {"b", 1}, {"c", 23}});
	// a: cap 1 -> 7 waves; c: cap 4 -> 6 waves; b: 1 wave.
	assert_int_equal(check_plan(m, sizes, 0.2), 7);
}

static void fraction_bounds_are_refused(void **)
{
	std::map<std::string, int> sizes = {{"leaf1", 4}};
	auto m = racks_of({{"leaf1", 4}});
	for (double f : {0.0, -0.1, 1.0001, 2.0}) {
		auto w = plan_waves(m, sizes, f);
		assert_false(w.ok());
		assert_contains(w.status().message(), "out of range (0,1]");
	}
	assert_true(plan_waves(m, sizes, 1.0).ok());
	assert_true(plan_waves(m, sizes, 0.001).ok());
}

static void bad_members_are_refused(void **)
{
	std::map<std::string, int> sizes = {{"leaf1", 4}};
	auto w = plan_waves({{"n1", "leaf9"}}, sizes, 0.2);
	assert_false(w.ok());
	assert_contains(w.status().message(), "unknown rack 'leaf9'");
	w = plan_waves({{"n1", "leaf1"}, {"n1", "leaf1"}}, sizes, 0.2);
	assert_false(w.ok());
	assert_contains(w.status().message(), "listed twice");
	assert_false(plan_waves({}, sizes, 0.2).ok());
}

static void pairs_cover_every_rack_and_five_percent(void **)
{
	for (int racks : {2, 3, 4, 5, 16}) {
		for (int per : {1, 3, 40}) {
			std::vector<std::pair<std::string, int>> spec;
			for (int r = 1; r <= racks; r++)
				spec.push_back({strprintf("leaf%02d", r), per});
			auto m = racks_of(spec);
			auto pairs = plan_pairs(m);
			std::set<std::string> covered_racks, nodes;
			for (const auto &p : pairs) {
				assert_string_not_equal(p.rack.c_str(), p.peer_rack.c_str());
				covered_racks.insert(p.rack);
				covered_racks.insert(p.peer_rack);
				nodes.insert(p.node);
				nodes.insert(p.peer);
			}
			assert_int_equal(covered_racks.size(), racks);
			size_t want = std::max<size_t>(2, (m.size() * 5 + 99) / 100);
			assert_true(nodes.size() >= std::min(want, m.size()));
		}
	}
	assert_true(plan_pairs(racks_of({{"leaf1", 10}})).empty()); // one rack: no cross-rack pair
}

static void topology_gives_leaf_racks(void **)
{
	auto t = parse_topology("# generated\nSwitchName=leaf1 Nodes=node[1-4]\n"
	                        "SwitchName=leaf2 Nodes=node[5-8] # rack 2\n"
	                        "SwitchName=spine1 Switches=leaf[1-2]\n",
	                        "topology.conf");
	assert_true(t.ok());
	assert_int_equal(t->size(), 8);
	assert_string_equal(t->at("node3").c_str(), "leaf1");
	assert_string_equal(t->at("node8").c_str(), "leaf2");
	auto bad = parse_topology("Nodes=node1\n", "topology.conf");
	assert_false(bad.ok());
	assert_contains(bad.status().message(), "topology.conf:1");
}

// The planner and topology/onramp read racks from the same topology.conf the
// same way: continuation lines joined, the leaves' Nodes= expanded.
static void planner_racks_agree_with_the_topology_plugin(void **)
{
	const std::string text = "SwitchName=leaf1 \\\n"
	                         "   Nodes=node[1-3]\n"
	                         "SwitchName=leaf2 Nodes=node4,\\\n"
	                         "node[5-6] # rack 2\n"
	                         "SwitchName=spine1 \\\n Switches=leaf[1-2]\n";
	auto racks = parse_topology(text, "topology.conf");
	assert_true(racks.ok());
	auto conf = topology_parse(text, "topology.conf");
	assert_true(conf.ok());
	auto nodes = topology_node_names(conf.value());
	assert_true(nodes.ok());
	auto table = build_switch_table(conf.value(), nodes.value());
	assert_true(table.ok());
	size_t leaf_nodes = 0;
	for (const auto &sw : table->sw) {
		if (sw.level != 0)
			continue;
		for (int i : sw.node_index) {
			const std::string &n = nodes.value()[static_cast<size_t>(i)];
			assert_true(racks->count(n) == 1);
			assert_string_equal(racks->at(n).c_str(), sw.name.c_str());
			leaf_nodes++;
		}
	}
	assert_int_equal(leaf_nodes, 6);
	assert_int_equal(racks->size(), leaf_nodes);
	// Errors name the file and the first line of the joined line.
	auto bad = parse_topology("SwitchName=leaf1 Nodes=node[1-2]\nSwitchName=leaf2 \\\n"
	                          "Nodes=node[3-\n",
	                          "topology.conf");
	assert_false(bad.ok());
	assert_contains(bad.status().message(), "topology.conf:2");
}

int main()
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(caps_follow_the_fraction_with_a_floor_of_one),
	    cmocka_unit_test(racks_of_5_16_32),
	    cmocka_unit_test(a_subset_of_a_rack_uses_the_whole_rack_as_the_base),
	    cmocka_unit_test(uneven_racks),
	    cmocka_unit_test(fraction_bounds_are_refused),
	    cmocka_unit_test(bad_members_are_refused),
	    cmocka_unit_test(pairs_cover_every_rack_and_five_percent),
	    cmocka_unit_test(topology_gives_leaf_racks),
	    cmocka_unit_test(planner_racks_agree_with_the_topology_plugin),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
