// The layered view of a campaign: what blocks each of the five layers for a
// set of nodes, from the journal's rows and the facts gathered from Slurm
// and the monitoring setup; and the parsers of sinfo and scontrol show
// topology output.
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

// Everything in place: two racks, admitted nodes, passing pair and smoke
// jobs, schedulable in an UP partition, exporter and rules ok.
static LayerFacts healthy()
{
	LayerFacts f;
	f.feature = "onramp_ok";
	f.campaign_racks = 2;
	f.have_slurm = true;
	f.slurm = parse_sinfo("node1 idle onramp_ok,rack1 batch* up\n"
	                      "node5 mixed rack2,onramp_ok batch* up\n");
	f.have_topology = true;
	f.leaves = parse_live_topology(
	    "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=node[1-4] Switches=(null)\n"
	    "SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=node[5-8] Switches=(null)\n"
	    "SwitchName=spine1 Level=1 LinkSpeed=1 Nodes=node[1-8] Switches=leaf[1-2]\n");
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
	f.leaves = parse_live_topology(
	    "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=node[2-4] Switches=(null)\n"
	    "SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=node[5-8] Switches=(null)\n"
	    "SwitchName=spine1 Level=1 LinkSpeed=1 Nodes=node[5-8] Switches=leaf2\n");
	f.pairs[0].result = "fail";
	f.pairs[0].detail = "busbw low";
	ls = compute_layers({&n1}, {"leaf1"}, f);
	std::string net = blocks(layer(ls, "network"));
	assert_contains(net, "rack leaf1: cut off from the spine");
	assert_contains(net, "node1: not under leaf1");
	assert_contains(net, "node1<->node5: pair fail (busbw low)");
	assert_contains(net, "rack leaf1: no passing cross-rack pair");
	// Platform: drained in Slurm, feature lost, partition down.
	f.slurm = parse_sinfo("node1 drained onramp_ok batch up\n");
	assert_string_equal(blocks(layer(compute_layers({&n1}, {"leaf1"}, f), "platform")).c_str(),
	                    "node1: state drained|");
	f.slurm = parse_sinfo("node1 idle rack1 batch up\n");
	assert_contains(blocks(layer(compute_layers({&n1}, {"leaf1"}, f), "platform")),
	                "feature onramp_ok not active");
	f.slurm = parse_sinfo("node1 idle onramp_ok batch* down\nnode1 idle onramp_ok gpu inact\n");
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

static void parsers_read_sinfo_and_the_live_switch_table(void **)
{
	auto s = parse_sinfo("node1 idle onramp_ok,rack1 batch* up\n"
	                     "node1 idle onramp_ok,rack1 debug down\n"
	                     "node2 drained (null) batch* up\ngarbage\n");
	assert_int_equal(s.size(), 2);
	assert_string_equal(s["node1"].features.c_str(), "onramp_ok,rack1");
	assert_true(s["node1"].partitions["batch"]);
	assert_false(s["node1"].partitions["debug"]);
	assert_string_equal(s["node2"].features.c_str(), "");
	auto t = parse_live_topology(
	    "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=node[1-2] Switches=(null)\n"
	    "SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=node[3-4] Switches=(null)\n"
	    "SwitchName=spine1 Level=1 LinkSpeed=1 Nodes=node[1-2] Switches=leaf1\n");
	assert_int_equal(t.size(), 2);
	assert_true(t["leaf1"].connected);
	assert_false(t["leaf2"].connected);
	assert_int_equal(t["leaf2"].nodes.count("node4"), 1);
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
	    cmocka_unit_test(parsers_read_sinfo_and_the_live_switch_table),
	    cmocka_unit_test(the_network_layer_names_the_component_its_failed_pairs_blame),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
