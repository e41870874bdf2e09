// The layered view of a campaign: what blocks each of the five layers for a
// set of nodes, from the journal's rows and the facts gathered from Slurm
// and the monitoring setup; and how what SlurmClient read (nodes,
// partitions, the switch table) becomes those facts.
#include "unit.hpp"

#include "campaign/layers.hpp"

using namespace onramp;
using namespace onramp::campaign;

static NodeRow node(const char *n, const char *rack, const char *state, const char *code = "")
{
	NodeRow r;
	r.node = n;
	r.rack = rack;
	r.state = state;
	r.code = code;
	r.wave = 1;
	return r;
}

static const Layer &layer(const std::vector<Layer> &ls, const char *name)
{
	for (const auto &l : ls)
		if (l.name == name)
			return l;
	fail_msg("no layer %s", name);
	return ls.front();
}

static std::string blocks(const Layer &l)
{
	std::string s;
	for (const auto &b : l.blocked_by)
		s += b + "|";
	return s;
}

// A node as SlurmClient returns it.
static slurm::Node snode(const char *name, const char *state, const char *features)
{
	slurm::Node n;
	n.name = name;
	n.state = state;
	n.features_active = features;
	return n;
}

// The facts of nodes in partitions, which must expand.
static std::map<std::string, SlurmNode> facts(const std::vector<slurm::Node> &nodes,
                                              const std::vector<slurm::Partition> &parts)
{
	auto s = slurm_nodes(nodes, parts);
	if (!s.ok())
		abort();
	return s.value();
}

// slurmctld's switch table: leaf1 (leaf1_nodes) and leaf2 (node[5-8]), under
// spine1 as spine_children says.
static std::map<std::string, LiveLeaf> table(const char *leaf1_nodes, const char *spine_children)
{
	auto t = live_leaves({{"leaf1", 0, leaf1_nodes, ""},
	                      {"leaf2", 0, "node[5-8]", ""},
	                      {"spine1", 1, "node[1-8]", spine_children}});
	if (!t.ok())
		abort();
	return t.value();
}

// Everything in place: two racks, admitted nodes, passing pair and smoke
// jobs, schedulable in an UP partition, exporter and rules ok.
static LayerFacts healthy()
{
	LayerFacts f;
	f.feature = "onramp_ok";
	f.campaign_racks = 2;
	f.have_slurm = true;
	f.slurm = facts(
	    {snode("node1", "IDLE", "onramp_ok,rack1"), snode("node5", "MIXED", "rack2,onramp_ok")},
	    {{"batch", true, "node[1-8]"}});
	f.have_topology = true;
	f.leaves = table("node[1-4]", "leaf[1-2]");
	f.pairs = {{"node1", "leaf1", "node5", "leaf2", "pass", "ok", 1}};
	f.smokes = {{"leaf1", "node1", "10", "pass", "1 node(s) answered", 2},
	            {"leaf2", "node5", "11", "pass", "1 node(s) answered", 2}};
	f.exporter = "ok";
	f.rules = "ok";
	return f;
}

static void all_five_layers_hold_when_everything_passed(void **)
{
	auto n1 = node("node1", "leaf1", "admitted"), n5 = node("node5", "leaf2", "admitted");
	auto ls = compute_layers({&n1, &n5}, {"leaf1", "leaf2"}, healthy());
	assert_int_equal(ls.size(), 5);
	for (int i = 0; kLayerNames[i]; i++) {
		assert_string_equal(ls[i].name.c_str(), kLayerNames[i]);
		assert_int_equal(ls[i].ok, 1);
		assert_string_equal(blocks(ls[i]).c_str(), "");
	}
}

static void a_failed_smoke_job_blocks_the_application_layer_of_its_rack_only(void **)
{
	auto f = healthy();
	f.smokes[1].result = "fail";
	f.smokes[1].detail = "srun exit 1 on node5";
	auto n1 = node("node1", "leaf1", "admitted"), n5 = node("node5", "leaf2", "admitted");
	auto rack1 = compute_layers({&n1}, {"leaf1"}, f);
	auto rack2 = compute_layers({&n5}, {"leaf2"}, f);
	assert_int_equal(layer(rack1, "application").ok, 1);
	assert_int_equal(layer(rack2, "application").ok, 0);
	assert_string_equal(blocks(layer(rack2, "application")).c_str(),
	                    "rack leaf2: smoke job 11 on node5 failed: srun exit 1 on node5|");
	// The other layers of that rack still hold.
	assert_int_equal(layer(rack2, "platform").ok, 1);
	// Not run yet, still running, no admitted node: each says so.
	f.smokes.clear();
	assert_contains(blocks(layer(compute_layers({&n5}, {"leaf2"}, f), "application")),
	                "rack leaf2: no smoke job yet");
	f.smokes = {{"leaf2", "node5", "12", "running", "", 3}};
	assert_contains(blocks(layer(compute_layers({&n5}, {"leaf2"}, f), "application")),
	                "smoke job 12 on node5 not finished");
	auto d5 = node("node5", "leaf2", "drained", "GPU_COUNT");
	f.smokes.clear();
	assert_contains(blocks(layer(compute_layers({&d5}, {"leaf2"}, f), "application")),
	                "rack leaf2: no admitted new node");
}

static void node_network_and_platform_name_what_blocks_them(void **)
{
	auto f = healthy();
	auto n1 = node("node1", "leaf1", "admitted");
	auto n5 = node("node5", "leaf2", "drained", "PORT_DOWN");
	auto ls = compute_layers({&n1, &n5}, {"leaf1", "leaf2"}, f);
	assert_string_equal(blocks(layer(ls, "node")).c_str(), "node5: PORT_DOWN|");
	assert_contains(blocks(layer(ls, "network")), "node5: PORT_DOWN|");
	// A cut leaf (rewire window) and a node missing under its leaf.
	f.leaves = table("node[2-4]", "leaf2");
	f.pairs[0].result = "fail";
	f.pairs[0].detail = "busbw low";
	ls = compute_layers({&n1}, {"leaf1"}, f);
	std::string net = blocks(layer(ls, "network"));
	assert_contains(net, "rack leaf1: cut off from the spine");
	assert_contains(net, "node1: not under leaf1");
	assert_contains(net, "node1<->node5: pair fail (busbw low)");
	assert_contains(net, "rack leaf1: no passing cross-rack pair");
	// Platform: drained in Slurm, feature lost, partition down.
	auto drained = snode("node1", "IDLE", "onramp_ok");
	drained.drain = true;
	f.slurm = facts({drained}, {{"batch", true, "node1"}});
	assert_string_equal(blocks(layer(compute_layers({&n1}, {"leaf1"}, f), "platform")).c_str(),
	                    "node1: state IDLE+DRAIN|");
	f.slurm = facts({snode("node1", "IDLE", "rack1")}, {{"batch", true, "node1"}});
	assert_contains(blocks(layer(compute_layers({&n1}, {"leaf1"}, f), "platform")),
	                "feature onramp_ok not active");
	f.slurm = facts({snode("node1", "IDLE", "onramp_ok")},
	                {{"batch", false, "node[1-4]"}, {"gpu", false, "node1"}});
	assert_contains(blocks(layer(compute_layers({&n1}, {"leaf1"}, f), "platform")),
	                "in no UP partition");
	// No Slurm facts: unknown, not a pass.
	f.have_slurm = false;
	assert_int_equal(layer(compute_layers({&n1}, {"leaf1"}, f), "platform").ok, -1);
	// One rack only: no cross-rack pair needed.
	f = healthy();
	f.campaign_racks = 1;
	f.pairs.clear();
	assert_int_equal(layer(compute_layers({&n1}, {"leaf1"}, f), "network").ok, 1);
}

static void operations_checks_exporter_rules_and_textfiles(void **)
{
	auto f = healthy();
	auto n1 = node("node1", "leaf1", "admitted"), n2 = node("node2", "leaf1", "admitted");
	f.exporter = "http://127.0.0.1:9810/metrics: Connection refused";
	f.rules = "/etc/prometheus/rules/onramp-rules.yml: No such file or directory";
	f.textfile_dir = "/var/lib/node_exporter";
	f.textfiles = {"node1"};
	std::string b = blocks(layer(compute_layers({&n1, &n2}, {"leaf1"}, f), "operations"));
	assert_contains(b, "metrics exporter: http://127.0.0.1:9810/metrics: Connection refused|");
	assert_contains(b, "alert rules: /etc/prometheus/rules/onramp-rules.yml");
	assert_contains(b, "node2: no onramp-node2.prom in /var/lib/node_exporter|");
	assert_true(b.find("node1:") == std::string::npos);
	// Not checked at all: unknown.
	f = healthy();
	f.exporter.clear();
	assert_int_equal(layer(compute_layers({&n1}, {"leaf1"}, f), "operations").ok, -1);
}

static void slurm_facts_come_from_the_clients_structures(void **)
{
	auto busy = snode("node2", "ALLOCATED", "");
	busy.reserved = true;
	busy.reboot_pending = true;
	busy.responding = false;
	auto s = facts(
	    {snode("node1", "IDLE", "onramp_ok,rack1"), busy},
	    {{"batch", true, "node[1-2]"}, {"debug", false, "node1,node9"}, {"none", true, ""}});
	assert_int_equal(s.size(), 2); // node9 of a partition's list is not a node: no entry
	assert_string_equal(s["node1"].state.c_str(), "IDLE");
	assert_string_equal(s["node1"].features.c_str(), "onramp_ok,rack1");
	assert_int_equal(s["node1"].partitions.size(), 2);
	assert_true(s["node1"].partitions["batch"]);
	assert_false(s["node1"].partitions["debug"]);
	assert_string_equal(s["node2"].state.c_str(), "ALLOCATED+RESERVED+REBOOT+NOT_RESPONDING");
	assert_int_equal(s["node2"].partitions.size(), 1);
	auto badp = slurm_nodes({busy}, {{"batch", true, "node[1-"}});
	assert_false(badp.ok());
	assert_contains(badp.status().message(), "partition batch");
	auto t = table("node[1-2]", "leaf1");
	assert_int_equal(t.size(), 2);
	assert_true(t["leaf1"].connected);
	assert_false(t["leaf2"].connected);
	assert_int_equal(t["leaf2"].nodes.count("node8"), 1);
	auto bad = live_leaves({{"leaf1", 0, "node[1-", ""}});
	assert_false(bad.ok());
	assert_contains(bad.status().message(), "switch leaf1");
}

static void the_network_layer_names_the_component_its_failed_pairs_blame(void **)
{
	// Three racks; every pair across leaf3 failed, pairs between the
	// others passed: leaf3's uplinks, not its nodes.
	fleet::FabricView v;
	v.add_leaf("leaf1", {"node1", "node2"}, {"spine1"});
	v.add_leaf("leaf2", {"node5", "node6"}, {"spine1"});
	v.add_leaf("leaf3", {"node9", "node10"}, {"spine1"});
	std::vector<PairRow> pairs = {{"node1", "leaf1", "node5", "leaf2", "pass", "", 1},
	                              {"node2", "leaf1", "node6", "leaf2", "pass", "", 1},
	                              {"node9", "leaf3", "node1", "leaf1", "fail", "", 1},
	                              {"node10", "leaf3", "node5", "leaf2", "fail", "", 1},
	                              {"node9", "leaf3", "node6", "leaf2", "fail", "", 1},
	                              {"node9", "leaf3", "node10", "leaf3", "pass", "", 1},
	                              {"node2", "leaf1", "node10", "leaf3", "", "", 0}};
	LayerFacts f = healthy();
	f.fabric_diagnosis = diagnose_pairs(pairs, v);
	assert_contains(f.fabric_diagnosis, "uplink leaf3");
	NodeRow n1 = node("node1", "leaf1", "admitted");
	assert_contains(layer(compute_layers({&n1}, {"leaf1"}, f), "network").note,
	                "fabric diagnosis: uplink leaf3");
	assert_string_equal(diagnose_pairs({}, v).c_str(), "");
}

int main()
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(all_five_layers_hold_when_everything_passed),
	    cmocka_unit_test(a_failed_smoke_job_blocks_the_application_layer_of_its_rack_only),
	    cmocka_unit_test(node_network_and_platform_name_what_blocks_them),
	    cmocka_unit_test(operations_checks_exporter_rules_and_textfiles),
	    cmocka_unit_test(slurm_facts_come_from_the_clients_structures),
	    cmocka_unit_test(the_network_layer_names_the_component_its_failed_pairs_blame),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
