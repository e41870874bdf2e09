// The admission orchestrator (common/admit/orchestrate.hpp) against
// FakeSlurm with a virtual clock: peers chosen (free before busy, spread by
// ordinal), a busy peer still used when no other is free, pass, fail, could
// not judge, timeout, submit failure, an admin's drain; on every path the
// reservation that was widened with peers is shrunk back to the node (or
// deleted), and no admin reason is touched.
#include <algorithm>

#include "unit.hpp"

#include "admit/orchestrate.hpp"
#include "slurm/fake.hpp"

using namespace onramp;
using namespace onramp::admit;
using slurm::FakeSlurm;

namespace {

const char *const kResv = "onramp_admission_node1";

struct Fixture {
	FakeSlurm s;
	OrchestrateOptions o;
	OrchestrateHooks h;
	double t = 1000; // virtual seconds
	std::vector<NodeOutcome> out;

	Fixture()
	{
		for (const char *n : {"node1", "node2", "node3", "node4"})
			s.add_node(n, "onramp_ok,rack1");
		s.add_node("node5", "rack1"); // not admitted: never a peer
		s.nodes_["node1"].features_active = "rack1";
		o.feature = "onramp_ok";
		o.account = "onramp";
		o.resv_base = "onramp_admission";
		o.output_dir = "/state/admit";
		o.job_program = "/libexec/onramp-admission-job";
		o.users = "root,slurm";
		o.timeout_s = 60;
		h.now = [this] { return t; };
		h.sleep = [this](double d) { t += d; };
	}
	// The admission job ends on its first poll with this state and exit.
	void job_ends(const char *state, int status, const std::string &comment = "")
	{
		s.on_poll = [=](FakeSlurm::FakeJob &j) {
			j.job.state = state;
			j.job.exit_status = status;
			j.job.admin_comment = comment;
		};
	}
	int run(const std::vector<std::string> &nodes = {"node1"})
	{
		return orchestrate_admission(s, o, nodes, h, &out);
	}
	bool did(const std::string &action) const
	{
		return std::find(s.actions.begin(), s.actions.end(), action) != s.actions.end();
	}
	// The reservation is gone, or holds the node alone.
	void assert_shrunk_back(const std::string &resv, const std::string &node)
	{
		auto it = s.resvs_.find(resv);
		if (it != s.resvs_.end())
			assert_string_equal(it->second.nodes.c_str(), node.c_str());
	}
};

void peers_are_chosen_and_the_reservation_is_released_on_pass(void **)
{
	Fixture f;
	f.s.nodes_["node1"].drain = true; // an earlier onramp drain
	f.s.nodes_["node1"].reason = "onramp:NCCL_LOW: 10 GB/s";
	f.job_ends("COMPLETED", 0);
	assert_int_equal(f.run(), 0);
	assert_true(f.did("reserve onramp_admission_node1 node1 users=root,slurm"));
	assert_true(f.did("resv onramp_admission_node1 node1,node2,node3"));
	assert_true(f.did("resume node1"));
	assert_int_equal(f.s.submitted.size(), 1);
	const slurm::BatchJob &b = f.s.submitted[0];
	assert_string_equal(b.name.c_str(), "onramp-admit:node1");
	assert_string_equal(b.reservation.c_str(), kResv);
	assert_string_equal(b.nodes.c_str(), "node1,node2,node3");
	assert_int_equal(b.num_nodes, 3);
	assert_int_equal(b.time_limit_min, 1);
	assert_string_equal(b.command.back().c_str(), "node2,node3");
	assert_true(f.did("resv onramp_admission_node1 node1"));
	assert_true(f.did("unreserve onramp_admission_node1"));
	assert_true(f.s.resvs_.empty());
	assert_string_equal(f.out[0].result.c_str(), "admitted");
}

void free_peers_come_before_busy_ones_and_spread_by_ordinal(void **)
{
	std::vector<slurm::Node> nodes;
	for (const char *n : {"a", "b", "c", "d", "e"}) {
		slurm::Node x;
		x.name = n;
		x.state = "IDLE";
		x.features_active = "f";
		nodes.push_back(x);
	}
	nodes[1].reserved = true;     // b lent to another admission
	nodes[3].drain = true;        // d drained
	nodes[4].state = "ALLOCATED"; // e busy with a job
	auto p = pick_peers(nodes, "a", "f", 0, 2);
	assert_int_equal(p.size(), 2);
	assert_string_equal(p[0].c_str(), "c"); // the one free peer first
	assert_string_equal(p[1].c_str(), "b"); // then a reserved one
	nodes[1].reserved = false;
	auto p0 = pick_peers(nodes, "x", "f", 0, 1), p1 = pick_peers(nodes, "x", "f", 1, 1);
	assert_string_not_equal(p0[0].c_str(), p1[0].c_str());
	nodes[0].responding = false;
	nodes[2].features_active = "g";
	assert_int_equal(pick_peers(nodes, "b", "f", 0, 2).size(), 0);
}

void a_busy_peer_is_used_when_no_other_is_free(void **)
{
	Fixture f;
	f.s.nodes_["node2"].reserved = true;
	f.s.nodes_["node3"].state = "ALLOCATED";
	f.s.nodes_["node4"].drain = true;
	f.job_ends("COMPLETED", 0);
	assert_int_equal(f.run(), 0);
	assert_true(f.did("resv onramp_admission_node1 node1,node2"));
	assert_string_equal(f.s.submitted[0].nodes.c_str(), "node1,node2");
	assert_true(f.s.resvs_.empty());
}

void a_failed_admission_drains_with_the_jobs_reason_and_releases(void **)
{
	Fixture f;
	f.job_ends("FAILED", 1, "onramp:NCCL_LOW: busbw 12 GB/s");
	assert_int_equal(f.run(), 1);
	assert_true(f.s.nodes_["node1"].drain);
	assert_string_equal(f.s.nodes_["node1"].reason.c_str(), "onramp:NCCL_LOW: busbw 12 GB/s");
	assert_true(f.did("resv onramp_admission_node1 node1"));
	assert_true(f.s.resvs_.empty());
	// No AdminComment: onramp's generic reason.
	Fixture g;
	g.job_ends("FAILED", 1);
	assert_int_equal(g.run(), 1);
	assert_contains(g.s.nodes_["node1"].reason, "onramp:ADMIT_FAILED: admission job 100");
}

void an_admins_drain_during_the_test_is_kept(void **)
{
	Fixture f;
	f.s.on_poll = [&f](FakeSlurm::FakeJob &j) {
		f.s.nodes_["node1"].drain = true;
		f.s.nodes_["node1"].reason = "admin: ticket 42";
		j.job.state = "FAILED";
		j.job.exit_status = 1;
	};
	assert_int_equal(f.run(), 1);
	assert_string_equal(f.s.nodes_["node1"].reason.c_str(), "admin: ticket 42");
	assert_false(f.did("drain node1"));
	assert_true(f.s.resvs_.empty());
	// A second run refuses the node: nothing reserved, nothing resumed.
	f.s.actions.clear();
	assert_int_equal(f.run(), 2);
	assert_string_equal(f.out[0].result.c_str(), "refused");
	assert_true(f.s.actions.empty());
}

void could_not_judge_keeps_the_node_in_its_shrunk_reservation(void **)
{
	Fixture f;
	f.job_ends("FAILED", 2, "onramp:ADMIT_ERROR: profile node1.json: gpus");
	assert_int_equal(f.run(), 2);
	assert_false(f.s.nodes_["node1"].drain);
	assert_string_equal(f.s.resvs_.at(kResv).nodes.c_str(), "node1");
	assert_string_equal(f.out[0].result.c_str(), "unjudged");
}

void a_timed_out_admission_is_cancelled_and_shrunk_back(void **)
{
	Fixture f;
	double t0 = f.t;
	assert_int_equal(f.run(), 2); // the job stays PENDING
	assert_true(f.did("cancel 100"));
	assert_string_equal(f.s.resvs_.at(kResv).nodes.c_str(), "node1");
	assert_false(f.s.nodes_["node1"].drain);
	assert_string_equal(f.out[0].result.c_str(), "timeout");
	// timeout_s + 60 s, polled every second.
	assert_true(f.t - t0 > 120 && f.t - t0 < 123);
}

// fault-campaign trial 1 (seed 202): slurmctld SIGKILLed during an
// admission came back from older state and drained a peer "Duplicate
// jobid"; the admission job, pending on that peer, waited out its timeout
// and left the node unjudged in its reservation. A job pending on a peer
// no longer usable is now submitted again with usable peers.
void a_job_pending_on_a_lost_peer_is_submitted_again_with_others(void **)
{
	Fixture f;
	f.s.on_poll = [&f](FakeSlurm::FakeJob &j) {
		if (j.job.id == 100) { // pending, and its peer node2 drained by Slurm
			f.s.nodes_["node2"].drain = true;
			f.s.nodes_["node2"].reason = "Duplicate jobid";
			return;
		}
		j.job.state = "COMPLETED";
		j.job.exit_status = 0;
	};
	double t0 = f.t;
	assert_int_equal(f.run(), 0);
	assert_int_equal(f.s.submitted.size(), 2);
	assert_string_equal(f.s.submitted[0].nodes.c_str(), "node1,node2,node3");
	assert_true(f.did("cancel 100"));
	assert_string_equal(f.s.submitted[1].nodes.c_str(), "node1,node3,node4");
	assert_string_equal(f.out[0].result.c_str(), "admitted");
	assert_true(f.s.resvs_.empty());
	// Slurm's drain of the peer is not onramp's: left as it is.
	assert_true(f.s.nodes_["node2"].drain);
	assert_string_equal(f.s.nodes_["node2"].reason.c_str(), "Duplicate jobid");
	assert_true(f.t - t0 < 60); // not the timeout
	// A job whose peers stay lost is submitted again at most twice.
	Fixture g;
	g.s.on_poll = [&g](FakeSlurm::FakeJob &) {
		for (const char *n : {"node2", "node3", "node4"})
			g.s.nodes_[n].drain = true;
	};
	g.o.peer_wait_s = 0;
	assert_int_equal(g.run(), 2);
	assert_true(g.s.submitted.size() <= 3);
}

void a_submit_failure_returns_the_peers_at_once(void **)
{
	Fixture f;
	f.s.submit_error = "Invalid account or account/partition combination specified";
	assert_int_equal(f.run(), 2);
	assert_true(f.did("resv onramp_admission_node1 node1,node2,node3"));
	f.assert_shrunk_back(kResv, "node1");
	assert_string_equal(f.out[0].result.c_str(), "not-submitted");
}

void a_stale_job_is_cancelled_and_a_locked_node_skipped(void **)
{
	Fixture f;
	auto &old = f.s.add_job(7, "node1", "");
	old.job.name = "onramp-admit:node1";
	old.job.uid = 0; // onramp's own (root or SlurmUser submit them)
	f.s.add_job(8, "node2", "").job.name = "onramp-admit:node1x";
	// Any user may name a job so: it is not onramp's to cancel.
	f.s.add_job(9, "node2", "").job.name = "onramp-admit:node1";
	f.job_ends("COMPLETED", 0);
	assert_int_equal(f.run(), 0);
	assert_true(f.did("cancel 7"));
	assert_false(f.did("cancel 8"));
	assert_false(f.did("cancel 9"));
	f.s.actions.clear();
	f.h.lock = [](const std::string &) { return false; };
	assert_int_equal(f.run(), 0);
	assert_string_equal(f.out[0].result.c_str(), "skipped");
	assert_true(f.s.actions.empty());
}

void every_path_of_a_wave_leaves_no_widened_reservation(void **)
{
	// Four nodes at once, each ending a different way; no-wait first.
	Fixture f;
	f.o.wait = false;
	assert_int_equal(f.run({"node1", "node2"}), 0);
	assert_string_equal(f.out[1].result.c_str(), "submitted");
	Fixture g;
	g.s.on_poll = [](FakeSlurm::FakeJob &j) {
		if (j.job.name == "onramp-admit:node1")
			j.job.state = "COMPLETED";
		else if (j.job.name == "onramp-admit:node2") {
			j.job.state = "FAILED";
			j.job.exit_status = 1;
		} else if (j.job.name == "onramp-admit:node3") {
			j.job.state = "CANCELLED";
			j.job.exit_signal = 9;
		} // node4: runs past the deadline
	};
	assert_int_equal(g.run({"node1", "node2", "node3", "node4"}), 2);
	for (const char *n : {"node1", "node2", "node3", "node4"})
		g.assert_shrunk_back(reservation_name("onramp_admission", n), n);
	assert_string_equal(g.out[3].result.c_str(), "timeout");
}

// No admitted peer at all (a first bring-up): before, each admission job
// ran with no peer and its node was admitted on the node-local checks
// alone. Now the run's other nodes are its peers, passed as untested, and
// the job requires a pair test.
void with_no_admitted_peer_new_nodes_are_paired_with_each_other(void **)
{
	Fixture f;
	for (const char *n : {"node1", "node2", "node3", "node4"})
		f.s.nodes_[n].features_active = "rack1";
	f.s.nodes_["node4"].drain = true; // an admin's: never a peer
	f.s.nodes_["node4"].reason = "admin: ticket 7";
	f.job_ends("COMPLETED", 0);
	assert_int_equal(f.run({"node1", "node2", "node3", "node4"}), 2); // node4 refused
	assert_int_equal(f.s.submitted.size(), 3);
	const slurm::BatchJob &b = f.s.submitted[0];
	assert_string_equal(b.nodes.c_str(), "node1,node2,node3");
	std::vector<std::string> tail(b.command.end() - 2, b.command.end());
	assert_string_equal(tail[0].c_str(), "--untested-peers");
	assert_string_equal(tail[1].c_str(), "node2,node3");
	// Every job has two other nodes of the run, never the admin's node4.
	for (const auto &j : f.s.submitted) {
		assert_int_equal(j.num_nodes, 3);
		assert_true(j.nodes.find("node4") == std::string::npos);
	}
	// One admitted node: the normal path, no untested peers.
	Fixture g;
	g.job_ends("COMPLETED", 0);
	assert_int_equal(g.run({"node1"}), 0);
	assert_true(std::find(g.s.submitted[0].command.begin(), g.s.submitted[0].command.end(),
	                      "--untested-peers") == g.s.submitted[0].command.end());
	// Admitted nodes that do not respond yet (a slurmctld restart) are
	// waited for, not replaced by untested ones.
	Fixture w;
	for (const char *n : {"node2", "node3", "node4"})
		w.s.nodes_[n].responding = false;
	w.h.sleep = [&w](double d) {
		w.t += d;
		if (w.t > 1010)
			w.s.nodes_["node3"].responding = true;
	};
	w.job_ends("COMPLETED", 0);
	assert_int_equal(w.run({"node1", "node5"}), 0);
	assert_string_equal(w.s.submitted[0].nodes.c_str(), "node1,node3");
	assert_string_equal(w.s.submitted[0].command.back().c_str(), "node3");
	// ... for peer_wait_s at most: then no peer, and the job requires one.
	Fixture x;
	for (const char *n : {"node2", "node3", "node4"})
		x.s.nodes_[n].responding = false;
	x.job_ends("COMPLETED", 0);
	double t0 = x.t;
	x.run({"node1", "node5"});
	assert_string_equal(x.s.submitted[0].nodes.c_str(), "node1");
	assert_true(x.t - t0 >= 60 && x.t - t0 < 62 + 70);
	// Alone in the run with no admitted peer: no peer, the job runs without.
	std::vector<slurm::Node> nodes(1);
	nodes[0].name = "a";
	assert_int_equal(pick_untested_peers(nodes, "a", {"a"}, 0, 2).size(), 0);
}

} // namespace

// Contract 7: slurmctld restarted from a state saved before the run's
// deletion (a crash or a failover seconds after it): the reservation is
// back. The run deletes it again and waits for a save later than that.
void a_deletion_the_controller_lost_is_redone_before_the_run_ends(void **)
{
	Fixture f;
	f.job_ends("COMPLETED", 0);
	double wall = 5000;
	f.h.wall = [&] { return wall += 1; };
	int calls = 0;
	double last_since = 0;
	slurm::Reservation saved_copy;
	f.s.conf_.boot_time = 1000;
	f.h.saved = [&](double since, const std::vector<std::string> &files) {
		calls++;
		last_since = since;
		assert_int_equal(files.size(), 1);
		assert_string_equal(files[0].c_str(), "resv_state");
		if (calls == 1) {
			// The controller comes back (a new start time) without the
			// deletion.
			f.s.conf_.boot_time = 1100;
			saved_copy.name = kResv;
			saved_copy.nodes = "node1";
			f.s.resvs_[kResv] = saved_copy;
			return std::optional<bool>(false);
		}
		return std::optional<bool>(calls >= 3);
	};
	assert_int_equal(f.run(), 0);
	assert_int_equal(f.s.resvs_.count(kResv), 0);
	assert_int_equal(
	    std::count(f.s.actions.begin(), f.s.actions.end(), std::string("unreserve ") + kResv),
	    2);
	// The save that ended the wait is later than the second deletion.
	assert_true(last_since > 5001);
	assert_int_equal(f.out[0].result == "admitted", 1);
}

// A drain the controller lost is set again; both files must be saved.
void a_drain_the_controller_lost_is_set_again(void **)
{
	Fixture f;
	f.job_ends("COMPLETED", 1, "onramp:GPU_HEALTH: XID 79");
	f.s.conf_.boot_time = 1000;
	int calls = 0;
	f.h.saved = [&](double, const std::vector<std::string> &files) {
		calls++;
		assert_int_equal(files.size(), 2);
		if (calls == 1) {
			f.s.conf_.boot_time = 1100; // restarted from an older save
			f.s.nodes_["node1"].drain = false;
			f.s.nodes_["node1"].reason.clear();
			return std::optional<bool>(false);
		}
		return std::optional<bool>(true);
	};
	assert_int_equal(f.run(), 1);
	assert_true(f.s.nodes_["node1"].drain);
	assert_string_equal(f.s.nodes_["node1"].reason.c_str(), "onramp:GPU_HEALTH: XID 79");
	assert_true(calls >= 2);
}

// The same slurmctld lost nothing: a drain gone or a reservation back while
// the run waits for the save is a newer decision (a campaign resuming the
// node to admit it again, an admin), left as it is. Before, the run drained
// the node again with its old reason and the new admission judged nothing.
void a_change_by_someone_else_under_the_same_controller_is_left(void **)
{
	Fixture f;
	f.job_ends("COMPLETED", 1, "onramp:GPU_HEALTH: XID 79");
	f.s.conf_.boot_time = 1000;
	int calls = 0;
	f.h.saved = [&](double, const std::vector<std::string> &) {
		calls++;
		if (calls == 1) {
			f.s.nodes_["node1"].drain = false;
			f.s.nodes_["node1"].reason.clear();
			slurm::Reservation r;
			r.name = kResv;
			r.nodes = "node1";
			f.s.resvs_[kResv] = r;
			return std::optional<bool>(false);
		}
		return std::optional<bool>(calls >= 3);
	};
	assert_int_equal(f.run(), 1);
	assert_false(f.s.nodes_["node1"].drain);
	assert_int_equal(f.s.resvs_.count(kResv), 1);
	assert_int_equal(
	    std::count(f.s.actions.begin(), f.s.actions.end(), std::string("unreserve ") + kResv),
	    1);
}

// --no-wait: the caller returns "submitted"; the detached part of the run
// waits, judges and shrinks the reservation back. Before, nothing judged
// the node and its peers stayed in the MAINT reservation for good.
void no_wait_detaches_a_run_that_judges_and_returns_the_peers(void **)
{
	Fixture f;
	f.o.wait = false;
	f.job_ends("COMPLETED", 0);
	f.h.detach = [] { return false; }; // the caller's side of the fork
	assert_int_equal(f.run(), 0);
	assert_string_equal(f.out[0].result.c_str(), "submitted"); // the caller's view
	assert_true(f.did("resv onramp_admission_node1 node1,node2,node3"));
	assert_false(f.did("resv onramp_admission_node1 node1"));
	Fixture g;
	g.o.wait = false;
	g.job_ends("COMPLETED", 0);
	g.h.detach = [] { return true; }; // the detached process
	assert_int_equal(g.run(), 0);
	assert_true(g.did("resv onramp_admission_node1 node1"));
	assert_true(g.s.resvs_.empty());
	assert_string_equal(g.out[0].result.c_str(), "admitted");
}

// A run that died (kill -9, or --no-wait before it detached) left its peers
// in the node's reservation: the next run returns them before it starts.
void peers_left_in_the_reservation_by_a_dead_run_are_returned(void **)
{
	Fixture f;
	slurm::Reservation r;
	r.name = kResv;
	r.nodes = "node1,node2,node3";
	f.s.resvs_[kResv] = r;
	f.s.nodes_["node2"].features_active = "rack1"; // no peer this time
	f.s.nodes_["node3"].features_active = "rack1";
	f.s.nodes_["node4"].features_active = "rack1";
	f.o.wait = false; // returned before judging: only the start can repair
	assert_int_equal(f.run(), 0);
	assert_true(f.did("resv onramp_admission_node1 node1"));
	assert_string_equal(f.s.resvs_[kResv].nodes.c_str(), "node1");
	assert_true(f.s.submitted.size() == 1 && f.s.submitted[0].nodes == "node1");
}

// Nothing to confirm when it cannot be told (StateSaveLocation not
// readable): one look, the outcome unchanged; and the wait is bounded.
void an_unconfirmed_save_is_bounded_and_changes_nothing(void **)
{
	Fixture f;
	f.job_ends("COMPLETED", 0);
	int calls = 0;
	f.h.saved = [&](double, const std::vector<std::string> &) {
		calls++;
		return std::optional<bool>();
	};
	assert_int_equal(f.run(), 0);
	assert_int_equal(calls, 1);
	Fixture g;
	g.job_ends("COMPLETED", 0);
	g.o.save_wait_s = 10;
	calls = 0;
	g.h.saved = [&](double, const std::vector<std::string> &) {
		calls++;
		return std::optional<bool>(false);
	};
	double t0 = g.t;
	assert_int_equal(g.run(), 0);
	assert_true(calls >= 10 && calls <= 12);
	assert_true(g.t - t0 < 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(peers_are_chosen_and_the_reservation_is_released_on_pass),
	    cmocka_unit_test(free_peers_come_before_busy_ones_and_spread_by_ordinal),
	    cmocka_unit_test(a_busy_peer_is_used_when_no_other_is_free),
	    cmocka_unit_test(a_failed_admission_drains_with_the_jobs_reason_and_releases),
	    cmocka_unit_test(an_admins_drain_during_the_test_is_kept),
	    cmocka_unit_test(could_not_judge_keeps_the_node_in_its_shrunk_reservation),
	    cmocka_unit_test(a_timed_out_admission_is_cancelled_and_shrunk_back),
	    cmocka_unit_test(a_job_pending_on_a_lost_peer_is_submitted_again_with_others),
	    cmocka_unit_test(a_submit_failure_returns_the_peers_at_once),
	    cmocka_unit_test(with_no_admitted_peer_new_nodes_are_paired_with_each_other),
	    cmocka_unit_test(a_stale_job_is_cancelled_and_a_locked_node_skipped),
	    cmocka_unit_test(every_path_of_a_wave_leaves_no_widened_reservation),
	    cmocka_unit_test(a_deletion_the_controller_lost_is_redone_before_the_run_ends),
	    cmocka_unit_test(a_drain_the_controller_lost_is_set_again),
	    cmocka_unit_test(a_change_by_someone_else_under_the_same_controller_is_left),
	    cmocka_unit_test(no_wait_detaches_a_run_that_judges_and_returns_the_peers),
	    cmocka_unit_test(peers_left_in_the_reservation_by_a_dead_run_are_returned),
	    cmocka_unit_test(an_unconfirmed_save_is_bounded_and_changes_nothing),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
