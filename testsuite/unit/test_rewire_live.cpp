// common/rewire/live over FakeSlurm: a window's finish releases exactly
// the jobs job_submit/onramp marked in AdminComment, never one whose
// user-written comment or name carries the mark's text; the jobs a window
// strands come from the job list and topology.conf; the switch table and
// job_submit's acknowledgement are waited for, bounded.
#include <algorithm>
#include <fstream>

#include "unit.hpp"

#include "atomic_file.hpp"
#include "rewire/live.hpp"
#include "slurm/fake.hpp"
#include "submit.hpp"

using namespace onramp;
using slurm::FakeSlurm;

static TopologyConf four_leaves()
{
	auto t = topology_parse("SwitchName=leaf1 Nodes=node[1-2]\n"
	                        "SwitchName=leaf2 Nodes=node[3-4]\n"
	                        "SwitchName=leaf3 Nodes=node[5-6]\n"
	                        "SwitchName=leaf4 Nodes=node[7-8]\n"
	                        "SwitchName=spine1 Switches=leaf[1-4]\n",
	                        "topology.conf");
	if (!t.ok())
		abort();
	return t.value();
}

static FakeSlurm::FakeJob &pending(FakeSlurm &f, uint32_t id, bool held,
                                   const std::string &admin_comment)
{
	auto &j = f.add_job(id, "", "");
	j.job.state = "PENDING";
	j.job.held = held;
	j.job.admin_comment = admin_comment;
	return j;
}

static int count_actions(const FakeSlurm &f, const std::string &prefix)
{
	return static_cast<int>(
	    std::count_if(f.actions.begin(), f.actions.end(), [&](const std::string &a) {
		    return a.compare(0, prefix.size(), prefix) == 0;
	    }));
}

static void test_the_mark_is_one_whole_item_of_admin_comment(void **)
{
	const std::string m = rewire_hold_marker("w1");
	assert_string_equal(m.c_str(), "onramp:rewire-held window=w1");
	assert_true(rewire_held_by(m, "w1"));
	assert_true(rewire_held_by("site note; " + m, "w1"));
	assert_true(rewire_held_by(m + "; onramp:migrating id=3 to=rack2", "w1"));
	assert_false(rewire_held_by(m, "w2"));
	assert_false(rewire_held_by(m + "x", "w1"));
	assert_false(rewire_held_by("x" + m, "w1"));
	assert_false(rewire_held_by("", "w1"));
	// The user-visible hold reason is not the mark.
	assert_false(rewire_held_by(rewire_hold_reason("w1"), "w1"));
}

static void test_finish_releases_only_jobs_marked_in_admin_comment(void **)
{
	FakeSlurm f;
	const std::string mark = rewire_hold_marker("w1");
	pending(f, 10, true, mark);                  // onramp held it
	pending(f, 11, true, "site: keep; " + mark); // an admin's note beside it
	auto &comment = pending(f, 12, true, "");    // the user wrote the text
	comment.job.comment = rewire_hold_reason("w1") + " Comment=" + rewire_hold_reason("w1");
	auto &name = pending(f, 13, true, "");
	name.job.name = "x Comment=" + rewire_hold_reason("w1") + " AdminComment=" + mark;
	name.job.work_dir = "/home/u/AdminComment=" + mark;
	pending(f, 15, true, rewire_hold_marker("w2"));      // another window's
	pending(f, 16, true, mark + "x");                    // not the mark
	pending(f, 17, false, mark);                         // already released
	pending(f, 19, true, mark).job.held_by_admin = true; // released, then an admin's hold
	f.add_job(18, "node1", "").job.admin_comment = mark; // running
	f.add_node("node1", "");
	std::vector<std::string> failed;
	auto ids = rewire_release_held(f, "w1", &failed);
	assert_true(ids.ok());
	assert_int_equal(ids->size(), 2);
	assert_int_equal(ids.value()[0], 10);
	assert_int_equal(ids.value()[1], 11);
	assert_true(failed.empty());
	assert_int_equal(count_actions(f, "release"), 2);
	for (uint32_t id : {12u, 13u, 15u, 16u, 19u})
		assert_true(f.jobs_.at(id).job.held);
}

// A fake whose slurmctld refuses to release job 20 (it vanished between
// the read and the release).
struct RefusesJob20 : FakeSlurm {
	Status release(uint32_t id) override
	{
		if (id == 20)
			return Status::Error("cannot release job 20: Invalid job id specified");
		return FakeSlurm::release(id);
	}
};

static void test_release_reports_a_refusal_and_goes_on(void **)
{
	RefusesJob20 v;
	pending(v, 20, true, rewire_hold_marker("w1"));
	pending(v, 21, true, rewire_hold_marker("w1"));
	std::vector<std::string> failed;
	auto ids = rewire_release_held(v, "w1", &failed);
	assert_true(ids.ok());
	assert_int_equal(ids->size(), 1);
	assert_int_equal(ids.value()[0], 21);
	assert_int_equal(failed.size(), 1);
	assert_contains(failed[0], "job 20");
	// slurmctld unreachable past the timeout: an error, nothing released.
	v.down_forever = true;
	v.ctld_timeout_s = 1;
	assert_false(rewire_release_held(v, "w1", &failed).ok());
}

static void test_jobs_across_are_running_multi_leaf_jobs_touching_a_cut_leaf(void **)
{
	FakeSlurm f;
	auto topo = four_leaves();
	f.add_job(1, "node[2-3]", "");               // leaf1 + leaf2: strands
	f.add_job(2, "node[3-4]", "");               // inside leaf2: fine
	f.add_job(3, "node[5-8]", "");               // leaf3 + leaf4: not on leaf2
	f.add_job(4, "node1", "NodeList=node[1-8]"); // user text is not its nodes
	f.jobs_[4].job.name = "Nodes=node[3-8]";
	f.add_job(5, "node[4-5],other9", "");    // leaf2 + leaf3 (+ a node under none)
	auto &p = f.add_job(6, "node[2-3]", ""); // not running
	p.job.state = "COMPLETED";
	auto across = rewire_jobs_across(f, topo, {"leaf2"});
	assert_true(across.ok());
	assert_int_equal(across->size(), 2);
	assert_int_equal(across.value()[0].id, 1);
	assert_string_equal(across.value()[0].nodes.c_str(), "node[2-3]");
	assert_int_equal(across.value()[1].id, 5);
	// No cut leaf: nothing.
	across = rewire_jobs_across(f, topo, {});
	assert_true(across.ok());
	assert_true(across->empty());
	// A node list that does not expand is an error naming the job.
	f.add_job(7, "node[3-", "");
	across = rewire_jobs_across(f, topo, {"leaf2"});
	assert_false(across.ok());
	assert_contains(across.status().message(), "job 7");
}

static std::vector<slurm::Switch> table(const std::string &spine_children)
{
	return {{"leaf1", 0, "node[1-2]", ""},
	        {"leaf2", 0, "node[3-4]", ""},
	        {"leaf3", 0, "node[5-6]", ""},
	        {"leaf4", 0, "node[7-8]", ""},
	        {"spine1", 1, "node[1-8]", spine_children}};
}

static void test_connected_leaves_are_children_of_a_switch(void **)
{
	auto c = slurm::connected_leaves(table("leaf[1,3-4]"));
	assert_true(c.ok());
	assert_int_equal(c->size(), 3);
	assert_false(c->count("leaf2"));
	assert_false(slurm::connected_leaves(table("leaf[1-")).ok());
}

static void test_confirm_waits_for_the_table_bounded(void **)
{
	FakeSlurm f;
	f.switches_ = table("leaf[1-4]");
	int sleeps = 0;
	RewireWait w{30, 1, [&](double) {
		             if (++sleeps == 2)
			             f.switches_ = table("leaf[1,3-4]"); // the reconfigure took
	             }};
	assert_true(rewire_confirm_table(f, "w1", {"leaf2"}, true, w).ok());
	assert_int_equal(sleeps, 2);
	// Whole again: leaf2 is still cut, so it never confirms; bounded.
	sleeps = 10;
	Status st = rewire_confirm_table(f, "w1", {"leaf2"}, false, w);
	assert_false(st.ok());
	assert_contains(st.message(), "does not show window w1 as whole");
	assert_int_equal(sleeps, 10 + 29);
	f.switches_ = table("leaf[1-4]");
	assert_true(rewire_confirm_table(f, "w1", {"leaf2"}, false, w).ok());
}

static void write_text(const std::string &path, const std::string &text)
{
	std::ofstream(path) << text;
}

static void test_settle_waits_for_job_submit_to_list_the_plan(void **)
{
	std::string dir = unit_tmpdir(), plan = dir + "/plan.json",
	            ack = dir + "/onramp_job_submit.loaded";
	write_text(plan, "{}\n");
	FakeSlurm f;
	f.conf_.job_submit_plugins = "lua, onramp";
	f.conf_.state_save_location = dir;
	write_text(ack, "status loaded\n" + plan + " 1 2.000000000 3\n"); // an older plan
	int sleeps = 0;
	RewireWait w{60, 0.5, [&](double) {
		             if (++sleeps == 3)
			             write_text(ack, "status loaded\n" + file_stamp(plan) + "\n");
	             }};
	std::string note;
	assert_true(rewire_settle_submit(f, plan, w, &note).ok());
	assert_int_equal(sleeps, 3);
	assert_true(note.empty());
	// The plugin kept its previous policy: its reason.
	write_text(ack, "status kept plan.json: windows[0].leaves[0]: unknown leaf\n" +
	                    file_stamp(plan) + "\n");
	Status st = rewire_settle_submit(f, plan, w, &note);
	assert_false(st.ok());
	assert_contains(st.message(), "kept its previous policy: plan.json: windows[0]");
	// Never listed: bounded, names the plan.
	write_text(ack, "status loaded\n");
	sleeps = 100;
	st = rewire_settle_submit(f, plan, w, &note);
	assert_false(st.ok());
	assert_contains(st.message(), ("did not take up " + plan + " within 30 s").c_str());
	// Not on the controller: one pause, a note.
	f.conf_.state_save_location = dir + "/elsewhere";
	double slept = 0;
	st = rewire_settle_submit(f, plan, RewireWait{60, 0.5, [&](double s) { slept += s; }},
	                          &note);
	assert_true(st.ok());
	assert_true(slept == 2);
	assert_contains(note, "not on the controller?");
	// job_submit/onramp not configured: nothing to wait for.
	f.conf_.job_submit_plugins = "lua";
	note.clear();
	assert_true(rewire_settle_submit(f, plan, w, &note).ok());
	assert_true(note.empty());
}

int main()
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_the_mark_is_one_whole_item_of_admin_comment),
	    cmocka_unit_test(test_finish_releases_only_jobs_marked_in_admin_comment),
	    cmocka_unit_test(test_release_reports_a_refusal_and_goes_on),
	    cmocka_unit_test(test_jobs_across_are_running_multi_leaf_jobs_touching_a_cut_leaf),
	    cmocka_unit_test(test_connected_leaves_are_children_of_a_switch),
	    cmocka_unit_test(test_confirm_waits_for_the_table_bounded),
	    cmocka_unit_test(test_settle_waits_for_job_submit_to_list_the_plan),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
