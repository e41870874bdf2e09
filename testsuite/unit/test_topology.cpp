// topology/onramp's model: topology.conf grammar, the switch table as
// topology/tree builds it, the cut rule, fabric and plan validation, the
// --switches defaults during a window and the fault-domain check.
#include "unit.hpp"

#include <chrono>
#include <cstring>
#include <functional>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.hpp"
#include "onramp.h"

#include "config.hpp"
#include "log.hpp"
#include "rewire/topology.hpp"
#include "rewire/window.hpp"
#include "submit.hpp"

using namespace onramp;

// 4 leaves of 2 nodes under one spine (the integration cluster's shape).
static const char *kTopo = "# test fabric\n"
                           "SwitchName=leaf1 Nodes=node[1-2]\n"
                           "SwitchName=leaf2 Nodes=node[3-4] LinkSpeed=100\n"
                           "SwitchName=leaf3 Nodes=node[5-6]\n"
                           "switchname=leaf4 nodes=node[7-8]\n"
                           "SwitchName=spine Switches=leaf[1-\\\n4]\n";

static TopologyConf topo4()
{
	auto t = topology_parse(kTopo, "topology.conf");
	if (!t.ok())
		fail_msg("%s", t.status().message().c_str());
	return t.value();
}

static std::vector<std::string> nodes8()
{
	std::vector<std::string> n;
	for (int i = 1; i <= 8; i++)
		n.push_back("node" + std::to_string(i));
	return n;
}

static const char *kFabric = R"({"spines": ["sp1", "sp2"], "uplinks": [
 {"leaf": "leaf1", "spine": "sp1", "links": 2, "speed_gbps": 400},
 {"leaf": "leaf1", "spine": "sp2"},
 {"leaf": "leaf2", "spine": "sp1"}, {"leaf": "leaf2", "spine": "sp2"},
 {"leaf": "leaf3", "spine": "sp1"}, {"leaf": "leaf3", "spine": "sp2"},
 {"leaf": "leaf4", "spine": "sp1"}]})";

static void parse_grammar(void **)
{
	TopologyConf t = topo4();
	assert_int_equal(t.switches.size(), 5);
	assert_int_equal(t.switches[1].link_speed, 100);
	assert_int_equal(t.switches[0].link_speed, 1);
	assert_string_equal(t.switches[4].switches.c_str(), "leaf[1-4]");
	assert_int_equal(t.switches[4].line, 6);
}

static void parse_errors_name_file_and_line(void **)
{
	struct {
		const char *text, *want;
	} cases[] = {
	    {"SwitchName=a Nodes=n1\nNodes=n2\n", "t.conf:2: a line must begin with SwitchName="},
	    {"SwitchName=a\n", "t.conf:1: switch a has neither"},
	    {"SwitchName=a Nodes=n1 Switches=b\n", "t.conf:1: switch a has both"},
	    {"SwitchName=a Nodes=n1 Speed=3\n", "t.conf:1: switch a: unknown key 'Speed'"},
	    {"\n\nSwitchName=a Nodes=n1 LinkSpeed=x\n", "t.conf:3: switch a: LinkSpeed 'x'"},
	    {"SwitchName=a Nodes=\"n1\n", "t.conf:1: unterminated quote"},
	    {"# t\rSwitchName=a Nodes=n1\rSwitchName=b Nodes=n2\r",
	     "t.conf:1: a carriage return inside a line"},
	};
	for (const auto &c : cases) {
		auto r = topology_parse(c.text, "t.conf");
		assert_false(r.ok());
		assert_contains(r.status().message(), c.want);
	}
	// CRLF line ends are read as slurmctld reads them, continuations too.
	auto crlf =
	    topology_parse("SwitchName=a \\\r\n Nodes=n1\r\nSwitchName=b Nodes=n2\r\n", "t.conf");
	assert_true(crlf.ok());
	assert_int_equal(crlf->switches.size(), 2);
	auto t = topology_parse("SwitchName=a Nodes=n1\nSwitchName=a Nodes=n2\n", "t.conf");
	assert_true(t.ok());
	auto b = build_switch_table(t.value(), {"n1", "n2"});
	assert_false(b.ok());
	assert_contains(b.status().message(), "t.conf:2: switch a has already been defined");
	t = topology_parse("SwitchName=a Nodes=n1\nSwitchName=s Switches=a,zz\n", "t.conf");
	b = build_switch_table(t.value(), {"n1"});
	assert_false(b.ok());
	assert_contains(b.status().message(), "t.conf:2: switch s has invalid child (zz)");
	t = topology_parse("SwitchName=a Nodes=n[1-\n", "t.conf");
	b = build_switch_table(t.value(), {"n1"});
	assert_false(b.ok());
	assert_contains(b.status().message(), "t.conf:1:");
	t = topology_parse("SwitchName=a Switches=b\nSwitchName=b Switches=a\nSwitchName=c "
	                   "Nodes=n1\n",
	                   "t.conf");
	b = build_switch_table(t.value(), {"n1"});
	assert_false(b.ok());
	assert_contains(b.status().message(), "not a tree");
}

static void table_as_tree_builds_it(void **)
{
	auto b = build_switch_table(topo4(), nodes8());
	assert_true(b.ok());
	const SwitchTable &t = b.value();
	assert_int_equal(t.levels, 1);
	assert_true(t.have_root);
	assert_true(t.warnings.empty());
	const SwitchRec &sp = t.sw[4];
	assert_int_equal(sp.level, 1);
	assert_int_equal(sp.node_index.size(), 8);
	assert_int_equal(sp.children.size(), 4);
	assert_int_equal(sp.desc.size(), 4);
	assert_int_equal(t.sw[2].parent, 4);
	assert_int_equal(sp.parent, 0); // as tree: nobody's child
	assert_int_equal(t.sw[0].dist[1], 2);
	assert_int_equal(t.sw[0].dist[4], 1);
	assert_int_equal(t.sw[0].dist[0], 0);
	assert_string_equal(sp.switches.c_str(), "leaf[1-4]");
	// Unknown and multi-homed nodes are warnings, as in tree.
	auto t2 = topology_parse("SwitchName=a Nodes=n[1-2],zz\nSwitchName=b Nodes=n2\n", "x");
	auto b2 = build_switch_table(t2.value(), {"n1", "n2", "n3"});
	assert_true(b2.ok());
	assert_int_equal(b2->warnings.size(), 3);
	assert_false(b2->have_root);
}

static void cut_rule(void **)
{
	auto b = build_switch_table(topo4(), nodes8(), {"leaf2"});
	assert_true(b.ok());
	const SwitchTable &t = b.value();
	assert_int_equal(t.sw[4].node_index.size(), 6);
	assert_string_equal(t.sw[4].switches.c_str(), "leaf[1,3-4]");
	assert_int_equal(t.sw[1].level, 0);
	assert_int_equal(t.sw[1].node_index.size(), 2);
	assert_int_equal(t.sw[1].dist[4], kTopoInfinite);
	assert_int_equal(t.sw[1].dist[0], kTopoInfinite);
	assert_int_equal(t.sw[4].desc.size(), 3);
	// A leaf whose every uplink is under change is cut; one that keeps an
	// uplink is not.
	TopologyConf topo = topo4();
	auto f = fabric_parse(kFabric, "fabric.json", topo);
	assert_true(f.ok());
	Window w;
	w.links = {{"leaf1", "sp1"}, {"leaf3", "sp1"}, {"leaf3", "sp2"}, {"leaf4", "sp1"}};
	auto cut = window_cut(w, topo, &f.value());
	std::set<std::string> want = {"leaf3", "leaf4"};
	assert_true(cut == want);
	assert_false(build_switch_table(topo, nodes8(), {"spine"}).ok());
}

// The derived file (Slurm 24.05+: stock topology/tree reads it) gives tree
// the table topology/onramp builds with the same leaves cut.
static void derived_file_builds_the_cut_table(void **)
{
	for (const std::set<std::string> &cut :
	     {std::set<std::string>{}, {"leaf2"}, {"leaf1", "leaf4"}}) {
		auto d = topology_derive(topo4(), cut);
		assert_true(d.ok());
		auto again = topology_parse(d.value(), "derived");
		assert_true(again.ok());
		auto want = build_switch_table(topo4(), nodes8(), cut);
		auto got = build_switch_table(again.value(), nodes8());
		assert_true(want.ok() && got.ok());
		assert_int_equal(got->sw.size(), want->sw.size());
		assert_int_equal(got->levels, want->levels);
		assert_int_equal(got->have_root, want->have_root);
		for (size_t i = 0; i < want->sw.size(); i++) {
			const SwitchRec &w = want->sw[i], &g = got->sw[i];
			assert_string_equal(g.name.c_str(), w.name.c_str());
			assert_int_equal(g.level, w.level);
			assert_int_equal(g.parent, w.parent);
			assert_string_equal(g.switches.c_str(), w.switches.c_str());
			assert_true(g.children == w.children);
			assert_true(g.dist == w.dist);
			assert_true(g.node_index == w.node_index);
		}
	}
	auto d = topology_derive(topo4(), {"leaf2"});
	assert_contains(d.value(), "SwitchName=spine Switches=leaf[1,3-4]\n");
	assert_contains(d.value(), "SwitchName=leaf2 LinkSpeed=100 Nodes=node[3-4]\n");
	// Only leaves are cut, and a switch keeps a child.
	assert_contains(topology_derive(topo4(), {"spine"}).status().message(),
	                "cannot cut 'spine': not a leaf switch");
	assert_contains(topology_derive(topo4(), {"nope"}).status().message(), "cannot cut 'nope'");
	assert_contains(
	    topology_derive(topo4(), {"leaf1", "leaf2", "leaf3", "leaf4"}).status().message(),
	    "switch spine: the cut leaves every child switch it has");
}

static ino_t inode_of(const std::string &path)
{
	struct stat sb;
	assert_int_equal(lstat(path.c_str(), &sb), 0);
	return sb.st_ino;
}

// Slurm 24.05+: the file tree reads is the window's derived one while the
// admin's stays, the same inode and mode, beside it; every reader of onramp
// reads the admin's; restore puts that inode back.
static void installed_derived_file_keeps_the_admins_and_restore_puts_it_back(void **)
{
	std::string dir = unit_tmpdir(), path = dir + "/topology.conf";
	std::string saved = topology_saved_path(path);
	assert_true(write_file_atomic(path, kTopo, 0640).ok());
	ino_t admin = inode_of(path);
	assert_string_equal(topology_admin_path(path).c_str(), path.c_str());

	assert_true(topology_install_derived(path, {"leaf2"}, "w1").ok());
	assert_string_equal(topology_admin_path(path).c_str(), saved.c_str());
	assert_int_equal(inode_of(saved), admin);
	assert_string_equal(read_file(saved)->c_str(), kTopo);
	std::string derived = read_file(path).value();
	assert_contains(derived,
	                ("# onramp rewire window w1; the admin's file is " + saved).c_str());
	assert_contains(derived, "SwitchName=spine Switches=leaf[1,3-4]\n");
	struct stat sb;
	assert_int_equal(stat(path.c_str(), &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0640);

	// A second window derives from the admin's file, not from the cut one.
	assert_true(topology_install_derived(path, {"leaf3"}, "w2").ok());
	assert_int_equal(inode_of(saved), admin);
	assert_contains(read_file(path).value(), "SwitchName=spine Switches=leaf[1-2,4]\n");

	assert_true(topology_restore_admin(path).ok());
	assert_int_equal(inode_of(path), admin);
	assert_string_equal(read_file(path)->c_str(), kTopo);
	assert_int_equal(access(saved.c_str(), F_OK), -1);
	assert_true(topology_restore_admin(path).ok());
	assert_string_equal(read_file(path)->c_str(), kTopo);
}

// A cut tree would refuse changes nothing Slurm reads; the admin's file,
// already kept under its second name (as after a crash right after the
// link), is restored by dropping that name.
static void refused_derived_file_changes_nothing(void **)
{
	std::string dir = unit_tmpdir(), path = dir + "/topology.conf";
	assert_true(write_file_atomic(path, kTopo, 0644).ok());
	ino_t admin = inode_of(path);
	Status st = topology_install_derived(path, {"leaf1", "leaf2", "leaf3", "leaf4"}, "w1");
	assert_false(st.ok());
	assert_contains(st.message(), "the cut leaves every child switch it has");
	assert_int_equal(inode_of(path), admin);
	assert_int_equal(inode_of(topology_saved_path(path)), admin);
	assert_true(topology_restore_admin(path).ok());
	assert_int_equal(inode_of(path), admin);
	assert_int_equal(access(topology_saved_path(path).c_str(), F_OK), -1);
	assert_string_equal(read_file(path)->c_str(), kTopo);
	// No admin's file at all: named, nothing written.
	st = topology_install_derived(dir + "/none.conf", {"leaf2"}, "w1");
	assert_contains(st.message(), "none.conf");
	assert_int_equal(access((dir + "/none.conf").c_str(), F_OK), -1);
}

static void fabric_errors_name_file_and_field(void **)
{
	TopologyConf topo = topo4();
	struct {
		const char *text, *want;
	} cases[] = {
	    {R"({"spines": ["sp1"], "uplinks": [{"leaf": "leafX", "spine": "sp1"}]})",
	     "f.json: field 'uplinks[0].leaf': unknown leaf switch 'leafX'"},
	    {R"({"spines": ["sp1"], "uplinks": [{"leaf": "leaf1", "spine": "sp9"}]})",
	     "f.json: field 'uplinks[0].spine': unknown spine 'sp9'"},
	    {R"({"spines": ["sp1"], "uplinks": [{"leaf": "spine", "spine": "sp1"}]})",
	     "field 'uplinks[0].leaf': unknown leaf switch 'spine'"},
	    {R"({"spines": ["sp1"], "uplinks": [{"leaf": "leaf1"}]})", "uplinks[0].spine"},
	    {R"({"spines": ["sp1"], "uplink": []})", "f.json"},
	};
	for (const auto &c : cases) {
		auto r = fabric_parse(c.text, "f.json", topo);
		assert_false(r.ok());
		assert_contains(r.status().message(), c.want);
	}
}

static std::string plan_json(const std::string &windows)
{
	return "{\"windows\": [" + windows + "]}";
}

static void plan_validation(void **)
{
	TopologyConf topo = topo4();
	auto f = fabric_parse(kFabric, "fabric.json", topo);
	const std::string w1 =
	    R"({"id": "w1", "reason": "spine add", "start": "2026-12-01T10:00:00Z",
 "end": "2026-12-01T12:00:00Z", "leaves": ["leaf2"], "state": "active"})";
	auto ok = plan_parse(plan_json(w1), "plan.json", topo, &f.value());
	assert_true(ok.ok());
	assert_string_equal(ok->active()->id.c_str(), "w1");
	assert_int_equal(ok->active()->stages.size(), 3);
	// Round trip through plan_dump.
	auto again = plan_parse(plan_dump(ok.value()), "plan.json", topo, &f.value());
	assert_true(again.ok());
	struct {
		std::string text;
		const char *want;
	} cases[] = {
	    {plan_json(
	         R"({"id": "w1", "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z",
 "leaves": ["leafX"]})"),
	     "plan.json: field 'windows[0].leaves[0]': unknown leaf switch 'leafX'"},
	    {plan_json(
	         R"({"id": "w1", "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z",
 "links": [{"leaf": "leaf1", "spine": "sp7"}]})"),
	     "window 'w1': links: no uplink leaf1->sp7"},
	    {plan_json(w1 + "," + R"({"id": "w2", "start": "2026-12-01T11:00:00Z",
 "end": "2026-12-01T13:00:00Z", "leaves": ["leaf3"]})"),
	     "window 'w2': overlaps window 'w1'"},
	    {plan_json(
	         R"({"id": "w1", "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z",
 "leaves": ["leaf1", "leaf2", "leaf3"], "state": "active"})"),
	     "window 'w1' leaves no usable multi-leaf path"},
	    {plan_json(R"({"id": "w1", "start": "2026-12-01 10:00", "end": "2026-12-01T12:00:00Z",
 "leaves": ["leaf1"]})"),
	     "field 'windows[0].start'"},
	    {plan_json(
	         R"({"id": "w1", "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z",
 "leaves": ["leaf1"], "state": "running"})"),
	     "field 'windows[0].state'"},
	};
	for (const auto &c : cases) {
		auto r = plan_parse(c.text, "plan.json", topo, &f.value());
		assert_false(r.ok());
		assert_contains(r.status().message(), c.want);
	}
	// Links need a fabric file.
	auto r = plan_parse(plan_json(R"({"id": "w1", "start": "2026-12-01T10:00:00Z",
 "end": "2026-12-01T12:00:00Z", "links": [{"leaf": "leaf1", "spine": "sp1"}]})"),
	                    "plan.json", topo, nullptr);
	assert_false(r.ok());
	assert_contains(r.status().message(), "need a fabric file");
	// A done window does not overlap anything.
	std::string done = w1;
	done.replace(done.find("active"), 6, "done");
	r = plan_parse(plan_json(done + "," + R"({"id": "w2", "start": "2026-12-01T11:00:00Z",
 "end": "2026-12-01T13:00:00Z", "leaves": ["leaf3"]})"),
	               "plan.json", topo, &f.value());
	assert_true(r.ok());
}

// A generated 25,000-node / 800-leaf / 32-spine fabric.
static void a_long_plan_history_validates_in_linear_time(void **)
{
	// 50,000 finished windows and one planned: validated under slurmctld's
	// config lock at every reconfigure, so never quadratic (which took
	// seconds at 20,000 and left the controller unresponsive).
	TopologyConf topo = topo4();
	std::string ws;
	for (int i = 0; i < 50000; i++)
		ws += strprintf("{\"id\": \"old%d\", \"start\": \"2020-01-01T00:00:00Z\", "
		                "\"end\": \"2020-01-02T00:00:00Z\", \"leaves\": [\"leaf%d\"], "
		                "\"state\": \"done\"},",
		                i, i % 4 + 1);
	ws += R"({"id": "next", "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z",
 "leaves": ["leaf1"]})";
	auto t0 = std::chrono::steady_clock::now();
	auto p = plan_parse(plan_json(ws), "plan.json", topo, nullptr);
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	assert_true(p.ok());
	assert_int_equal(p->windows.size(), 50001);
	print_message("50,001 windows validated in %.3f s\n", secs);
	assert_true(secs < 5);
	// A repeated id at the end is still found.
	auto r = plan_parse(plan_json(ws + R"(, {"id": "old7", "start": "2020-01-01T00:00:00Z",
 "end": "2020-01-02T00:00:00Z", "leaves": ["leaf1"], "state": "done"})"),
	                    "plan.json", topo, nullptr);
	assert_false(r.ok());
	assert_contains(r.status().message(), "window 'old7': id repeated");
}

static void large_topology(void **)
{
	std::string text;
	for (int l = 0; l < 800; l++) {
		int first = l * 25000 / 800 + 1, last = (l + 1) * 25000 / 800;
		text += "SwitchName=leaf" + std::to_string(l) + " Nodes=n[" +
		        std::to_string(first) + "-" + std::to_string(last) + "]\n";
	}
	for (int s = 0; s < 32; s++)
		text += "SwitchName=spine" + std::to_string(s) + " Switches=leaf[" +
		        std::to_string(s * 25) + "-" + std::to_string(s * 25 + 24) + "]\n";
	text += "SwitchName=core Switches=spine[0-31]\n";
	auto topo = topology_parse(text, "big.conf");
	assert_true(topo.ok());
	auto names = topology_node_names(topo.value());
	assert_true(names.ok());
	assert_int_equal(names->size(), 25000);
	auto t0 = std::chrono::steady_clock::now();
	auto b = build_switch_table(topo.value(), names.value(), {"leaf7", "leaf400"});
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	assert_true(b.ok());
	assert_int_equal(b->sw.size(), 833);
	assert_int_equal(b->levels, 2);
	assert_int_equal(b->sw[832].node_index.size(), 25000 - 32 - 31);
	assert_int_equal(b->sw[832].desc.size(), 32 + 798);
	assert_int_equal(b->sw[0].dist[1], 2);
	assert_int_equal(b->sw[0].dist[25], 4);
	assert_int_equal(b->sw[7].dist[0], kTopoInfinite);
	print_message("25k nodes / 833 switches built in %.3f s\n", secs);
}

static PolicyState window_state(const std::string &dir)
{
	std::string topo = dir + "/topology.conf", plan = dir + "/plan.json";
	FILE *f = fopen(topo.c_str(), "w");
	fputs(kTopo, f);
	fclose(f);
	f = fopen(plan.c_str(), "w");
	fputs(plan_json(
	          R"({"id": "w1", "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z",
 "leaves": ["leaf2"], "state": "active"})")
	          .c_str(),
	      f);
	fclose(f);
	auto cfg =
	    Config::parse("RewirePlan=" + plan + "\nRewireSwitchesWait=5m\n", dir + "/onramp.conf");
	if (!cfg.ok())
		fail_msg("%s", cfg.status().message().c_str());
	PolicyState st;
	st.cfg = std::make_shared<const Config>(cfg.value());
	Status s = rewire_load(*st.cfg, &st.rewire);
	if (!s.ok())
		fail_msg("%s", s.message().c_str());
	return st;
}

static void switches_defaults(void **)
{
	PolicyState st = window_state(unit_tmpdir());
	assert_non_null(st.rewire.get());
	JobView j;
	j.submit_uid = 1000;
	// Single-node: untouched.
	j.min_nodes = 1;
	Decision d = decide_submit(st, j);
	assert_false(d.req_switch.has_value());
	assert_false(d.hold);
	// 2 nodes fit one leaf; 3 need 2 leaves; 6 need 3 (leaf2 cut).
	j.min_nodes = 2;
	d = decide_submit(st, j);
	assert_int_equal(*d.req_switch, 1);
	assert_int_equal(*d.wait4switch, 300);
	assert_contains(d.message, "rewire window w1");
	j.min_nodes = 3;
	d = decide_submit(st, j);
	assert_int_equal(*d.req_switch, 2);
	j.min_nodes = 6;
	d = decide_submit(st, j);
	assert_int_equal(*d.req_switch, 3);
	assert_false(d.hold);
	// User's --switches kept, its wait capped.
	j.min_nodes = 4;
	j.req_switch = 1;
	j.wait4switch = 3600;
	d = decide_submit(st, j);
	assert_false(d.req_switch.has_value());
	assert_int_equal(*d.wait4switch, 300);
	j.wait4switch = 60;
	d = decide_submit(st, j);
	assert_int_equal(*d.wait4switch, 60);
	// Larger than the connected part (6 nodes): held with the reason.
	j.req_switch = 0;
	j.min_nodes = 7;
	d = decide_submit(st, j);
	assert_true(d.hold);
	assert_string_equal(d.hold_reason.c_str(), "onramp: held until rewire window w1 finishes");
	// ...and marked in AdminComment, which users cannot write.
	assert_string_equal(d.admin_comment_append.c_str(), "onramp:rewire-held window=w1");
	// Submitted held by its user (--hold): held, unmarked (its user releases it).
	j.user_hold = true;
	d = decide_submit(st, j);
	assert_true(d.hold);
	assert_true(d.admin_comment_append.empty());
	j.user_hold = false;
	// No plan configured: nothing.
	PolicyState none;
	none.cfg = st.cfg;
	d = decide_submit(none, j);
	assert_false(d.hold);
	assert_true(d.admin_comment_append.empty());
	assert_false(d.req_switch.has_value());
}

// The node count is the fewest nodes the job can run on, whatever asked for
// them (issue 23: -n4 --ntasks-per-node=1 got no --switches, -n7 was not
// held). The window cuts leaf2: 3 leaves of 2 nodes stay connected.
static void every_shape_that_needs_nodes_counts(void **)
{
	PolicyState st = window_state(unit_tmpdir());
	auto submit = [&](const std::function<void(JobView &)> &set) {
		JobView j;
		j.submit_uid = 1000;
		set(j);
		return decide_submit(st, j);
	};
	// -n4 --ntasks-per-node=1 is -N4: two leaves.
	Decision d = submit([](JobView &j) {
		j.num_tasks = 4;
		j.ntasks_per_node = 1;
	});
	assert_int_equal(*d.req_switch, 2);
	assert_contains(d.message, "for 4 nodes");
	// -n7 on 1-CPU nodes needs 7 nodes: more than the 6 connected, held.
	d = submit([](JobView &j) {
		j.num_tasks = 7;
		j.node_cpus_max = 1;
	});
	assert_true(d.hold);
	assert_string_equal(d.admin_comment_append.c_str(), "onramp:rewire-held window=w1");
	// ...on 2-CPU nodes, 4 nodes; -n8 -c2 on 8-CPU nodes, 2.
	d = submit([](JobView &j) {
		j.num_tasks = 7;
		j.node_cpus_max = 2;
	});
	assert_false(d.hold);
	assert_int_equal(*d.req_switch, 2);
	d = submit([](JobView &j) {
		j.num_tasks = 8;
		j.cpus_per_task = 2;
		j.node_cpus_max = 8;
	});
	assert_int_equal(*d.req_switch, 1);
	assert_contains(d.message, "for 2 nodes");
	// Tasks that fit the largest node, node size unknown, or -O: one node.
	for (auto set : std::vector<std::function<void(JobView &)>>{
	         [](JobView &j) {
		         j.num_tasks = 4;
		         j.node_cpus_max = 4;
	         },
	         [](JobView &j) { j.num_tasks = 4; },
	         [](JobView &j) {
		         j.num_tasks = 8;
		         j.overcommit = true;
		         j.node_cpus_max = 2;
	         },
	         // -N1 caps every other count.
	         [](JobView &j) {
		         j.num_tasks = 4;
		         j.ntasks_per_node = 1;
		         j.min_nodes = j.max_nodes = 1;
	         },
	         // -w naming one node (twice).
	         [](JobView &j) { j.req_nodes = "node1,node1"; },
	         // A list slurmctld will reject is not counted here.
	         [](JobView &j) { j.req_nodes = "node[4-1]"; },
	     }) {
		d = submit(set);
		assert_false(d.req_switch.has_value());
		assert_false(d.hold);
	}
	// -w node[1-3] is 3 nodes; duplicates count once.
	d = submit([](JobView &j) { j.req_nodes = "node[1-3]"; });
	assert_int_equal(*d.req_switch, 2);
	d = submit([](JobView &j) { j.req_nodes = "node[1-8],node[3-4]"; });
	assert_true(d.hold);
	assert_contains(d.message, "8 nodes exceed the 6");
}

// An update of a pending job is judged as the submission of the job it
// makes (issue 23: Switches=0 removed the default; NumTasks=7 NumNodes=7-7
// got no hold or mark).
static void updates_of_pending_jobs_are_judged_as_submissions(void **)
{
	PolicyState st = window_state(unit_tmpdir());
	// A pending 4-node job with the window's default.
	JobView now;
	now.job_id = 42;
	now.submit_uid = 1000;
	now.current_pending = true;
	now.current_min_nodes = 4;
	now.current_num_tasks = 4;
	now.current_req_switch = 2;
	now.current_wait4switch = 300;

	// Switches=0 gets the default back.
	JobView c = now;
	c.req_switch_set = true;
	Decision d = decide_modify(st, c);
	assert_false(d.reject);
	assert_int_equal(*d.req_switch, 2);
	assert_int_equal(*d.wait4switch, 300);
	assert_contains(d.message, "job 42: rewire window w1: --switches=2@300s for 4 nodes");
	assert_contains(d.message, "removed --switches");
	// A longer wait is capped; a count the user gives is kept.
	c = now;
	c.req_switch_set = true;
	c.req_switch = 1;
	c.wait4switch = 3600;
	d = decide_modify(st, c);
	assert_false(d.req_switch.has_value());
	assert_int_equal(*d.wait4switch, 300);
	// A change that does not touch the shape, or of a running job: nothing.
	c = now;
	c.time_limit = 60;
	d = decide_modify(st, c);
	assert_false(d.req_switch.has_value() || d.wait4switch.has_value() || d.hold);
	c = now;
	c.current_pending = false;
	c.req_switch_set = true;
	d = decide_modify(st, c);
	assert_false(d.req_switch.has_value() || d.wait4switch.has_value() || d.hold);

	// A one-node job made multi-node gets the default...
	JobView one = now;
	one.current_min_nodes = 1;
	one.current_num_tasks = 1;
	one.current_req_switch = 0;
	one.current_wait4switch = 0;
	c = one;
	c.num_tasks = 4;
	c.ntasks_per_node = 1;
	d = decide_modify(st, c);
	assert_int_equal(*d.req_switch, 2);
	c = one;
	c.req_nodes = "node[1-3]";
	c.req_nodes_set = true;
	d = decide_modify(st, c);
	assert_int_equal(*d.req_switch, 2);
	// ...and NumTasks=7 NumNodes=7-7 is held and marked, as a submission.
	c = one;
	c.num_tasks = 7;
	c.min_nodes = c.max_nodes = 7;
	d = decide_modify(st, c);
	assert_false(d.reject);
	assert_true(d.hold);
	assert_string_equal(d.hold_reason.c_str(), "onramp: held until rewire window w1 finishes");
	assert_string_equal(d.admin_comment_append.c_str(), "onramp:rewire-held window=w1");
	assert_contains(d.message, "job 42: 7 nodes exceed the 6");
	// Held already (by its user, an admin or the window): stays so, unmarked.
	c.current_held = c.current_user_held = true;
	d = decide_modify(st, c);
	assert_false(d.reject);
	assert_false(d.hold);
	assert_true(d.admin_comment_append.empty());
	assert_contains(d.message, "stays held");

	// Releasing a job too large for the window waits for its end; an admin
	// (onrampctl rewire finish) may.
	JobView big = now;
	big.current_min_nodes = big.current_num_tasks = 7;
	big.current_req_switch = 0;
	big.current_held = true;
	big.current_admin_comment = "onramp:rewire-held window=w1";
	c = big;
	c.release = true;
	d = decide_modify(st, c);
	assert_true(d.reject);
	assert_contains(d.message, "onramp: job 42: 7 nodes exceed the 6 the fabric connects "
	                           "during rewire window w1; it can be released when the "
	                           "window finishes");
	c.submit_is_admin = true;
	d = decide_modify(st, c);
	assert_false(d.reject);
	assert_false(d.hold);
	// A release of a job that fits is the user's.
	c = now;
	c.current_held = c.current_user_held = true;
	c.release = true;
	assert_false(decide_modify(st, c).reject);
}

// A cluster directory: topology.conf, onramp.conf naming plan.json, and a
// plan with window w1 active (leaf2 cut).
struct PlanDir {
	std::string dir, conf, topo, plan;
	std::vector<std::string> names = nodes8();
	std::vector<const char *> cnames;
	PlanDir() : dir(unit_tmpdir())
	{
		conf = dir + "/onramp.conf";
		topo = dir + "/topology.conf";
		plan = dir + "/plan.json";
		assert_true(write_file_atomic(topo, kTopo).ok());
		assert_true(write_file_atomic(conf, "\n\nRewirePlan=" + plan + "\n").ok());
		good_plan();
		for (const auto &n : names)
			cnames.push_back(n.c_str());
	}
	void good_plan()
	{
		unlink(plan.c_str());
		rmdir(plan.c_str());
		assert_true(write_file_atomic(plan, plan_json(R"({"id": "w1",
 "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z", "leaves": ["leaf2"],
 "state": "active"})"))
		                .ok());
	}
	// Build with what is in force; returns whether a table came back and
	// its window flag, the message in msg.
	onramp_topo_t *build(int previous, std::string *msg)
	{
		char buf[1024] = "";
		auto t0 = std::chrono::steady_clock::now();
		onramp_topo_t *t = onramp_topo_build(conf.c_str(), topo.c_str(), cnames.data(), 8,
		                                     previous, buf, sizeof buf);
		// Never blocked by what stands in place of a file.
		assert_true(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
		*msg = buf;
		return t;
	}
};

static void an_unusable_plan_never_drops_the_window_in_force(void **)
{
	PlanDir d;
	std::string msg;
	onramp_topo_t *t = d.build(0, &msg);
	assert_non_null(t);
	assert_true(onramp_topo_window_active(t));
	onramp_topo_free(t);
	const int in_force = ONRAMP_TOPO_PREVIOUS | ONRAMP_TOPO_PREVIOUS_WINDOW;
	struct {
		const char *what;
		std::function<void()> make;
		const char *want;
	} cases[] = {
	    {"missing", [&] { unlink(d.plan.c_str()); }, "missing while a rewire window"},
	    {"symlink loop",
	     [&] {
		     unlink(d.plan.c_str());
		     assert_int_equal(symlink(d.plan.c_str(), d.plan.c_str()), 0);
	     },
	     "RewirePlan ("},
	    {"FIFO",
	     [&] {
		     unlink(d.plan.c_str());
		     assert_int_equal(mkfifo(d.plan.c_str(), 0600), 0);
	     },
	     "not a regular file"},
	    {"directory",
	     [&] {
		     unlink(d.plan.c_str());
		     assert_int_equal(mkdir(d.plan.c_str(), 0700), 0);
	     },
	     "not a regular file"},
	    {"truncated",
	     [&] { assert_true(write_file_atomic(d.plan, "{\"windows\": [{\"id\"").ok()); },
	     "plan.json"},
	    {"binary",
	     [&] { assert_true(write_file_atomic(d.plan, std::string("\x7f\0\xff\x01", 4)).ok()); },
	     "plan.json"},
	    {"huge line",
	     [&] { assert_true(write_file_atomic(d.plan, std::string(17u << 20, '[')).ok()); },
	     "larger than"},
	};
	for (auto &c : cases) {
		d.good_plan();
		c.make();
		t = d.build(in_force, &msg);
		if (t)
			fail_msg("%s plan: a new table replaced the window in force", c.what);
		assert_contains(msg, c.want);
		assert_contains(msg, "keeping the switch table in force");
	}
	// onramp.conf gone or unreadable while the window is in force: kept too.
	d.good_plan();
	unlink(d.conf.c_str());
	assert_null(d.build(in_force, &msg));
	assert_contains(msg, "missing while a rewire window");
	assert_int_equal(symlink(d.conf.c_str(), d.conf.c_str()), 0);
	assert_null(d.build(ONRAMP_TOPO_PREVIOUS, &msg));
	unlink(d.conf.c_str());
	assert_int_equal(mkfifo(d.conf.c_str(), 0600), 0);
	assert_null(d.build(ONRAMP_TOPO_PREVIOUS, &msg));
	assert_contains(msg, "not a regular file");
	// Without a window in force, a plan that does not exist is no window.
	unlink(d.conf.c_str());
	assert_true(write_file_atomic(d.conf, "RewirePlan=" + d.plan + "\n").ok());
	unlink(d.plan.c_str());
	t = d.build(ONRAMP_TOPO_PREVIOUS, &msg);
	assert_non_null(t);
	assert_false(onramp_topo_window_active(t));
	onramp_topo_free(t);
}

static std::string g_logged;
static void capture(int, const char *msg)
{
	g_logged += std::string(msg) + "\n";
}

// Every line end an editor writes keeps the window in force; an onramp.conf
// that sets no key at all is refused while one is; a window that ends says
// so, and why, in the log.
static void a_window_survives_any_line_ending_and_its_end_is_logged(void **)
{
	PlanDir d;
	std::string msg;
	const int in_force = ONRAMP_TOPO_PREVIOUS | ONRAMP_TOPO_PREVIOUS_WINDOW;
	for (const char *eol : {"\r", "\r\n", "\n"}) {
		assert_true(write_file_atomic(d.conf, std::string("# onramp.conf") + eol +
		                                          "RewirePlan=" + d.plan + eol +
		                                          "Sku=h200" + eol)
		                .ok());
		onramp_topo_t *t = d.build(in_force, &msg);
		if (!t || !onramp_topo_window_active(t))
			fail_msg("line end %s: the window in force was dropped (%s)",
			         eol[0] == '\r' ? (eol[1] ? "CRLF" : "CR") : "LF", msg.c_str());
		assert_contains(msg, "rewire window w1 active");
		onramp_topo_free(t);
	}
	for (const char *text : {"", "# only a comment\n", "\r\n\r\n"}) {
		assert_true(write_file_atomic(d.conf, text).ok());
		assert_null(d.build(in_force, &msg));
		assert_contains(msg, "sets no key while a rewire window is in force");
	}
	// A good onramp.conf without RewirePlan ends it, and says so.
	assert_true(write_file_atomic(d.conf, "Sku=h200\n").ok());
	onramp_topo_t *t = d.build(in_force, &msg);
	assert_non_null(t);
	assert_false(onramp_topo_window_active(t));
	onramp_topo_free(t);
	assert_contains(msg, "rewire window ended");
	assert_contains(msg, "sets no RewirePlan");
	// The job_submit side: the same at a reload.
	setenv("ONRAMP_TOPOLOGY_CONF", d.topo.c_str(), 1);
	char err[512] = "";
	assert_true(write_file_atomic(d.conf, "RewirePlan=" + d.plan + "\n").ok());
	onramp_ctx_t *ctx = onramp_ctx_create(d.conf.c_str(), "test", err, sizeof err);
	assert_non_null(ctx);
	assert_true(write_file_atomic(d.conf, "# onramp.conf\rRewirePlan=" + d.plan + "\r").ok());
	g_logged.clear();
	onramp_log_set_sink(capture);
	assert_int_equal(onramp_ctx_reload(ctx), 0);
	assert_true(g_logged.find("rewire window ended") == std::string::npos);
	assert_true(write_file_atomic(d.conf, "").ok());
	assert_int_equal(onramp_ctx_reload(ctx), -1);
	assert_true(write_file_atomic(d.conf, "Sku=h200\n").ok());
	assert_int_equal(onramp_ctx_reload(ctx), 0);
	onramp_log_set_sink(nullptr);
	assert_contains(g_logged, "sets no key while a rewire window is in force");
	assert_contains(g_logged, "rewire window ended");
	onramp_ctx_destroy(ctx);
	unsetenv("ONRAMP_TOPOLOGY_CONF");
}

// slurmctld started (or restarted) on a topology.conf it cannot parse has
// no table at all: the log must say so, not that one is kept.
static void a_bad_topology_at_the_first_build_says_no_table_is_in_force(void **)
{
	PlanDir d;
	std::string msg;
	assert_true(write_file_atomic(d.topo, "SwitchName=leaf1 Nodes=node[1-\n").ok());
	for (const char *conf : {"", "RewirePlan=/nonexistent/plan.json\n"}) {
		assert_true(write_file_atomic(d.conf, conf).ok());
		onramp_topo_t *t = d.build(0, &msg);
		if (t) {
			onramp_topo_free(t);
			continue; // the bad range may only show at the table's build
		}
		assert_contains(msg, "no switch table is in force");
		assert_true(msg.find("keeping the switch table") == std::string::npos);
	}
	assert_true(write_file_atomic(d.topo, "SwitchName=leaf1 Nodes=node1 Bogus=1\n").ok());
	assert_null(d.build(0, &msg));
	assert_contains(msg, "no switch table is in force");
	assert_null(d.build(ONRAMP_TOPO_PREVIOUS, &msg));
	assert_contains(msg, "keeping the switch table in force");
}

static void job_submit_starts_with_a_bad_plan_and_keeps_the_last_good_one(void **)
{
	PlanDir d;
	char err[512] = "", val[64] = "";
	setenv("ONRAMP_TOPOLOGY_CONF", d.topo.c_str(), 1);
	// A bad plan at the first load: loaded, no window, logged (never fatal).
	assert_true(write_file_atomic(d.plan, "{").ok());
	onramp_ctx_t *ctx = onramp_ctx_create(d.conf.c_str(), "test", err, sizeof err);
	assert_non_null(ctx);
	onramp_ctx_destroy(ctx);
	// Unless this is slurmctld re-executed by a reconfigure (23.11+): it
	// fails, naming the plan, and the running slurmctld keeps its policy.
	setenv("SLURMCTLD_RECONF", "1", 1);
	assert_null(onramp_ctx_create(d.conf.c_str(), "test", err, sizeof err));
	assert_non_null(strstr(err, d.plan.c_str()));
	// There a plan file gone is no window, unless a window's derived
	// topology.conf is installed (24.05+): then it fails too.
	unlink(d.plan.c_str());
	ctx = onramp_ctx_create(d.conf.c_str(), "test", err, sizeof err);
	assert_non_null(ctx);
	onramp_ctx_destroy(ctx);
	assert_true(topology_install_derived(d.topo, {"leaf2"}, "w1").ok());
	assert_null(onramp_ctx_create(d.conf.c_str(), "test", err, sizeof err));
	assert_non_null(strstr(err, "missing while a rewire window is in force"));
	assert_true(topology_restore_admin(d.topo).ok());
	assert_true(write_file_atomic(d.plan, "{").ok());
	unsetenv("SLURMCTLD_RECONF");
	ctx = onramp_ctx_create(d.conf.c_str(), "test", err, sizeof err);
	assert_non_null(ctx);
	// A good one is taken at reload; then a plan gone or unusable is not.
	d.good_plan();
	assert_int_equal(onramp_ctx_reload(ctx), 0);
	unlink(d.plan.c_str());
	assert_int_equal(onramp_ctx_reload(ctx), -1);
	assert_int_equal(mkfifo(d.plan.c_str(), 0600), 0);
	assert_int_equal(onramp_ctx_reload(ctx), -1);
	onramp_ctx_destroy(ctx);
	// onramp.conf itself a FIFO: refused at once, naming it.
	unlink(d.conf.c_str());
	assert_int_equal(mkfifo(d.conf.c_str(), 0600), 0);
	assert_null(onramp_ctx_create(d.conf.c_str(), "test", err, sizeof err));
	assert_non_null(strstr(err, "not a regular file"));
	// A config-only context (node_features) ignores the plan and the
	// migration settings altogether.
	unlink(d.conf.c_str());
	assert_true(write_file_atomic(d.conf, "AdmittedFeature=gpu_ok\nRewirePlan=" + d.plan +
	                                          "\nMigrateSignal=USR2@bad\n")
	                .ok());
	assert_true(write_file_atomic(d.plan, "{").ok());
	ctx =
	    onramp_ctx_create_scoped(d.conf.c_str(), "test", ONRAMP_SCOPE_CONFIG, err, sizeof err);
	assert_non_null(ctx);
	assert_int_equal(onramp_ctx_get(ctx, "AdmittedFeature", val, sizeof val), 0);
	assert_string_equal(val, "gpu_ok");
	onramp_ctx_destroy(ctx);
	unsetenv("ONRAMP_TOPOLOGY_CONF");
}

// onramp-rewire sync-topology (24.05+): the file Slurm reads follows the
// plan; no plan file is no window; a bad plan changes nothing.
static void topology_follows_the_plan_and_a_bad_plan_changes_nothing(void **)
{
	PlanDir d;
	auto cfg = Config::load(d.conf);
	assert_true(cfg.ok());
	TopologyConf topo = topo4();
	std::string saved = topology_saved_path(d.topo);
	assert_true(topology_sync_with_plan(cfg.value(), topo, nullptr, d.topo).ok());
	assert_contains(read_file(d.topo).value(), "# onramp rewire window w1;");
	assert_contains(read_file(d.topo).value(), "SwitchName=spine Switches=leaf[1,3-4]\n");
	assert_string_equal(read_file(saved)->c_str(), kTopo);
	// A bad plan: an error naming it, the derived file stays.
	std::string derived = read_file(d.topo).value();
	assert_true(write_file_atomic(d.plan, "{").ok());
	Status st = topology_sync_with_plan(cfg.value(), topo, nullptr, d.topo);
	assert_false(st.ok());
	assert_contains(st.message(), d.plan.c_str());
	assert_string_equal(read_file(d.topo)->c_str(), derived.c_str());
	// The window done: the admin's file again.
	assert_true(write_file_atomic(d.plan, plan_json(R"({"id": "w1",
 "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T12:00:00Z", "leaves": ["leaf2"],
 "state": "done"})"))
	                .ok());
	assert_true(topology_sync_with_plan(cfg.value(), topo, nullptr, d.topo).ok());
	assert_string_equal(read_file(d.topo)->c_str(), kTopo);
	assert_int_equal(access(saved.c_str(), F_OK), -1);
	// No plan file: no window, the admin's file (and a second time too).
	d.good_plan();
	assert_true(topology_sync_with_plan(cfg.value(), topo, nullptr, d.topo).ok());
	assert_int_equal(access(saved.c_str(), F_OK), 0);
	unlink(d.plan.c_str());
	assert_true(topology_sync_with_plan(cfg.value(), topo, nullptr, d.topo).ok());
	assert_string_equal(read_file(d.topo)->c_str(), kTopo);
}

static void leaf_nodes_by_switch(void **)
{
	auto leaves = topology_leaf_nodes(topo4());
	assert_int_equal(leaves.size(), 4);
	assert_string_equal(leaves["leaf2"].c_str(), "node[3-4]");
	assert_int_equal(leaves.count("spine"), 0);
}

static void status_line_state_and_stage_of_a_window(void **)
{
	Window w;
	w.id = "w7";
	w.reason = "swap sp2";
	w.leaves = {"leaf2", "leaf3"};
	w.start = 1796119200; // 2026-12-01T10:00:00Z
	w.end = w.start + 7200;
	w.stage = 1;
	w.state = WindowState::Active;
	assert_string_equal(window_status_line(w).c_str(),
	                    "w7 active stage=50% leaves=leaf[2-3] start=2026-12-01T10:00:00Z "
	                    "end=2026-12-01T12:00:00Z reason=swap sp2");
	w.stages.clear();
	assert_contains(window_status_line(w), " stage=0% ");
	// set and stage.
	assert_true(window_state_parse("done", &w.state));
	assert_int_equal(static_cast<int>(w.state), static_cast<int>(WindowState::Done));
	assert_false(window_state_parse("Done", &w.state));
	assert_int_equal(static_cast<int>(w.state), static_cast<int>(WindowState::Done));
	w.stages = {5, 100};
	assert_true(window_set_stage(&w, "1").ok());
	assert_int_equal(w.stage, 1);
	Status st = window_set_stage(&w, "2");
	assert_false(st.ok());
	assert_string_equal(st.message().c_str(),
	                    "stage '2' is not an index of window w7's 2 stages");
	assert_false(window_set_stage(&w, "-1").ok());
	assert_int_equal(w.stage, 1);
}

static void a_refused_onramp_conf_still_names_its_feature(void **)
{
	std::string dir = unit_tmpdir(), conf = dir + "/onramp.conf";
	char val[64] = "";
	assert_true(
	    write_file_atomic(conf, "Bogus=1 AdmittedFeature=gpu_ok\nCheckTimeout=-5\n").ok());
	assert_int_equal(onramp_conf_peek(conf.c_str(), "admittedfeature", val, sizeof val), 0);
	assert_string_equal(val, "gpu_ok");
	assert_true(write_file_atomic(conf, "CheckTimeout=-5\n").ok());
	assert_int_equal(onramp_conf_peek(conf.c_str(), "AdmittedFeature", val, sizeof val), 1);
	assert_string_equal(val, "onramp_ok");
	assert_true(write_file_atomic(conf, "AdmittedFeature=bad,feature\n").ok());
	assert_int_equal(onramp_conf_peek(conf.c_str(), "AdmittedFeature", val, sizeof val), -1);
	unlink(conf.c_str());
	assert_int_equal(mkfifo(conf.c_str(), 0600), 0);
	assert_int_equal(onramp_conf_peek(conf.c_str(), "AdmittedFeature", val, sizeof val), -1);
}

// onrampctl topology check without a fabric: the tree's parents are the
// uplinks; a spine failure cuts every leaf under it, a leaf's only itself.
static void fault_domains_follow_the_tree_without_a_fabric(void **)
{
	auto t = topo4();
	auto sp = fault_spines(t, nullptr);
	assert_int_equal(sp.size(), 1);
	assert_string_equal(sp[0].c_str(), "spine");
	assert_int_equal(leaves_cut_by(t, nullptr, {"spine"}).size(), 4);
	auto one = leaves_cut_by(t, nullptr, {"leaf2"});
	assert_int_equal(one.size(), 1);
	assert_string_equal(one[0].c_str(), "leaf2");
	assert_true(leaves_cut_by(t, nullptr, {"spine-z"}).empty());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(parse_grammar),
	    cmocka_unit_test(parse_errors_name_file_and_line),
	    cmocka_unit_test(table_as_tree_builds_it),
	    cmocka_unit_test(cut_rule),
	    cmocka_unit_test(derived_file_builds_the_cut_table),
	    cmocka_unit_test(installed_derived_file_keeps_the_admins_and_restore_puts_it_back),
	    cmocka_unit_test(refused_derived_file_changes_nothing),
	    cmocka_unit_test(fabric_errors_name_file_and_field),
	    cmocka_unit_test(plan_validation),
	    cmocka_unit_test(a_long_plan_history_validates_in_linear_time),
	    cmocka_unit_test(large_topology),
	    cmocka_unit_test(switches_defaults),
	    cmocka_unit_test(every_shape_that_needs_nodes_counts),
	    cmocka_unit_test(updates_of_pending_jobs_are_judged_as_submissions),
	    cmocka_unit_test(an_unusable_plan_never_drops_the_window_in_force),
	    cmocka_unit_test(job_submit_starts_with_a_bad_plan_and_keeps_the_last_good_one),
	    cmocka_unit_test(a_bad_topology_at_the_first_build_says_no_table_is_in_force),
	    cmocka_unit_test(a_window_survives_any_line_ending_and_its_end_is_logged),
	    cmocka_unit_test(a_refused_onramp_conf_still_names_its_feature),
	    cmocka_unit_test(fault_domains_follow_the_tree_without_a_fabric),
	    cmocka_unit_test(topology_follows_the_plan_and_a_bad_plan_changes_nothing),
	    cmocka_unit_test(status_line_state_and_stage_of_a_window),
	    cmocka_unit_test(leaf_nodes_by_switch),
	};
	return cmocka_run_group_tests_name("topology", tests, NULL, NULL);
}
