// The campaign driver against the fake Slurm client, in virtual time: a
// crash at every journal step (and around the reboot), then a resume by a
// new driver on the reopened journal; no node is rebooted twice and the
// campaign finishes. A wave below the pass rate pauses the campaign before
// the next wave, and running it again after the fix re-admits the drained
// node without a reboot.
#include "unit.hpp"

#include <map>
#include <memory>
#include <set>
#include <vector>

#include <csignal>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "atomic_file.hpp"
#include "campaign/driver.hpp"
#include "hostlist.hpp"
#include "slurm/fake.hpp"

using namespace onramp;
using namespace onramp::campaign;
using slurm::FakeSlurm;

namespace {

struct Crash {};

// The cluster around the driver: a reboot completes (and its admission
// reservation appears, as onramp's reboot hook makes it) at the next tick;
// an admission started by the driver ends at the next tick, failing on the
// bad node.
struct World : Clock, Admission {
	FakeSlurm fs;
	int64_t t = 1000;
	std::set<std::string> admitting;
	std::string bad; // admission drains it with NCCL_BW_LOW
	int starts = 0;
	std::set<std::string> lose_first; // their first start is lost (no trigger)

	World()
	{
		for (const char *n : {"node1", "node2", "node5", "node6"})
			fs.add_node(n, "gpu");
		fs.on_reboot = [this](slurm::Node &n) {
			fs.resvs_["onramp_admission_" + n.name] = {"onramp_admission_" + n.name,
			                                           n.name};
		};
	}
	int64_t now_ms() override { return t * 1000; }
	void sleep(double s) override
	{
		t += static_cast<int64_t>(s < 1 ? 1 : s);
		for (auto &[name, n] : fs.nodes_)
			if (n.reboot_pending) {
				n.reboot_pending = false;
				n.boot_time = t;
			}
		for (const auto &name : admitting) {
			slurm::Node &n = fs.nodes_[name];
			if (n.reboot_pending || n.boot_time == 0)
				continue; // not back yet: admission waits for it
			if (name == bad) {
				n.drain = true;
				n.reason = "onramp:NCCL_BW_LOW: 12 GB/s < 40 GB/s";
			} else {
				n.features_active = "gpu,onramp_admitted";
			}
			fs.resvs_.erase("onramp_admission_" + name);
		}
		admitting.clear();
	}
	void start(const std::vector<std::string> &nodes) override
	{
		starts++;
		for (const auto &n : nodes)
			if (!lose_first.erase(n))
				admitting.insert(n);
	}
	std::map<std::string, int> reboots() const
	{
		std::map<std::string, int> m;
		for (const auto &a : fs.actions)
			if (a.compare(0, 7, "reboot ") == 0)
				m[a.substr(7, a.find(' ', 7) - 7)]++;
		return m;
	}
};

// Throws Crash at the at-th hook call (0: never); counts the calls.
struct CountingCrash : CrashHook {
	int at = 0, calls = 0;
	void before(const std::string &) override { hit(); }
	void after(const std::string &) override { hit(); }
	void hit()
	{
		if (++calls == at)
			throw Crash();
	}
};

Settings settings()
{
	Settings s;
	s.reservation = "onramp_admission";
	s.kick_after_s = 60;
	s.admit_timeout_s = 1800;
	return s;
}

const std::map<std::string, std::string> kLeafOf = {
    {"node1", "leaf1"}, {"node2", "leaf1"}, {"node5", "leaf2"}, {"node6", "leaf2"}};
const std::map<std::string, int> kSizes = {{"leaf1", 2}, {"leaf2", 2}};

// A directory on tmpfs when there is one: the journal syncs every step, and
// the crash test writes a few thousand steps.
std::string tmpdir()
{
	char tmpl[] = "/dev/shm/onramp-unit.XXXXXX";
	char *d = mkdtemp(tmpl);
	return d ? std::string(d) : unit_tmpdir();
}

void remove_dir(const std::string &dir)
{
	for (const char *f : {"/onramp.db", "/onramp.db-wal", "/onramp.db-shm"})
		unlink((dir + f).c_str());
	rmdir(dir.c_str());
}

std::unique_ptr<Journal> open_journal(const std::string &dir)
{
	auto j = Journal::open(dir + "/onramp.db");
	assert_true(j.ok());
	return std::move(j.value());
}

// Plan c1 (two waves of one node per rack) and run its waves; a crash
// propagates out.
Result<Outcome> run(World &w, const std::string &dir, CrashHook &hook, double min_pass,
                    std::string *why)
{
	auto j = open_journal(dir);
	Settings s = settings();
	Driver d(*j, w.fs, w, s, w, hook);
	PlanRequest r;
	r.id = "c1";
	r.nodes = {"node1", "node2", "node5", "node6"};
	r.fraction = 0.5;
	r.min_pass = min_pass;
	r.boot_timeout = 600;
	bool refused = false;
	auto p = d.plan(r, kLeafOf, kSizes, &refused);
	assert_true(p.ok());
	return d.run_waves("c1", why);
}

void assert_finished_once(World &w, const std::string &dir)
{
	auto j = open_journal(dir);
	bool found = false;
	auto c = j->campaign("c1", &found);
	assert_true(found);
	auto nodes = j->nodes("c1");
	assert_int_equal(nodes->size(), 4);
	for (const auto &n : nodes.value()) {
		if (n.node == w.bad)
			assert_string_equal(n.state.c_str(), "drained");
		else
			assert_string_equal(n.state.c_str(), "admitted");
		assert_int_equal(n.reboots, 1);
	}
	auto rb = w.reboots();
	assert_int_equal(rb.size(), 4);
	for (const auto &[n, k] : rb) {
		if (k != 1)
			print_error("%s rebooted %d times\n", n.c_str(), k);
		assert_int_equal(k, 1);
	}
}

void runs_every_wave_and_judges_each_node(void **)
{
	std::string dir = tmpdir();
	World w;
	w.bad = "node6";
	CountingCrash none;
	std::string why;
	auto r = run(w, dir, none, 0.5, &why);
	assert_true(r.ok());
	assert_true(r.value() == Outcome::Done);
	assert_finished_once(w, dir);
	auto j = open_journal(dir);
	auto nodes = j->nodes("c1");
	assert_true(nodes.ok());
	for (const auto &n : nodes.value()) {
		if (n.node == "node6")
			assert_string_equal(n.code.c_str(), "NCCL_BW_LOW");
		// One node per rack of two per wave at 0.5: node1 and node5 first.
		assert_int_equal(n.wave, n.node == "node1" || n.node == "node5" ? 1 : 2);
	}
	assert_true(none.calls > 10);
}

// Any user may name a job "onramp-admit:NODE": such a job, pending for
// ever, must not stand in for the node's admission (only root's and
// SlurmUser's count), or the node is never admitted.
void a_users_job_named_like_an_admission_does_not_suppress_it(void **)
{
	std::string dir = tmpdir();
	World w;
	auto &fake = w.fs.add_job(77, "", "");
	fake.job.name = "onramp-admit:node1";
	fake.job.state = "PENDING";
	fake.job.uid = 1000;
	// The first admission of node1 is lost: the driver's kick must start
	// another, and the user's job must not look like one queued.
	w.lose_first.insert("node1");
	CountingCrash none;
	std::string why;
	auto r = run(w, dir, none, 0.5, &why);
	assert_true(r.ok());
	assert_true(r.value() == Outcome::Done);
	assert_finished_once(w, dir);
	remove_dir(dir);
}

// Crash at each hook point in turn, resume with a new driver on the
// reopened journal: every node rebooted exactly once, the campaign done.
void a_crash_at_every_step_then_resume_reboots_no_node_twice(void **)
{
	int points = 0;
	{
		std::string dir = tmpdir();
		World w;
		w.bad = "node6";
		CountingCrash count;
		std::string why;
		assert_true(run(w, dir, count, 0.5, &why).ok());
		points = count.calls;
	}
	for (int at = 1; at <= points; at++) {
		std::string dir = tmpdir();
		World w;
		w.bad = "node6";
		CountingCrash crash;
		crash.at = at;
		std::string why;
		bool crashed = false;
		try {
			run(w, dir, crash, 0.5, &why);
		} catch (const Crash &) {
			crashed = true;
		}
		assert_true(crashed);
		CountingCrash none;
		auto r = run(w, dir, none, 0.5, &why);
		assert_true(r.ok());
		assert_true(r.value() == Outcome::Done);
		assert_finished_once(w, dir);
		remove_dir(dir);
	}
}

// min pass 1: node5's wave (the first) fails, the campaign pauses, wave 2
// never starts. The admin fixes node5 and runs it again: node5 is admitted
// on its current boot (no second reboot), then wave 2 runs.
void a_wave_below_the_rate_pauses_and_a_rerun_readmits_without_reboot(void **)
{
	std::string dir = tmpdir();
	World w;
	w.bad = "node5";
	CountingCrash none;
	std::string why;
	auto r = run(w, dir, none, 1, &why);
	assert_true(r.ok());
	assert_true(r.value() == Outcome::Paused);
	assert_contains(why, "wave 1 pass rate 1/2");
	assert_contains(why, "node5 NCCL_BW_LOW");
	auto rb = w.reboots();
	assert_int_equal(rb.size(), 2); // wave 2 not started
	{
		auto j = open_journal(dir);
		bool found = false;
		assert_string_equal(j->campaign("c1", &found)->state.c_str(), "paused");
	}
	w.bad.clear(); // fixed
	r = run(w, dir, none, 1, &why);
	assert_true(r.ok());
	assert_true(r.value() == Outcome::Done);
	assert_finished_once(w, dir);
	assert_false(w.fs.nodes_["node5"].drain);
}

// A node that does not come back within the boot timeout is drained
// BOOT_TIMEOUT (onramp's reason), its reservation released.
void a_node_not_back_in_time_is_drained_boot_timeout(void **)
{
	std::string dir = tmpdir();
	World w;
	w.fs.on_reboot = [&w](slurm::Node &n) {
		w.fs.resvs_["onramp_admission_" + n.name] = {"onramp_admission_" + n.name, n.name};
		if (n.name == "node5")
			n.down = true; // hangs in its boot: never back
	};
	CountingCrash none;
	std::string why;
	auto r = run(w, dir, none, 1, &why);
	assert_true(r.ok());
	assert_true(r.value() == Outcome::Paused);
	assert_contains(why, "node5 BOOT_TIMEOUT");
	assert_true(w.fs.nodes_["node5"].drain);
	assert_contains(w.fs.nodes_["node5"].reason,
	                "onramp:BOOT_TIMEOUT: expand c1 wave 1: not back 600s after reboot");
	assert_int_equal(w.fs.resvs_.count("onramp_admission_node5"), 0);
}

// The journal as the bash orchestrator and the former onramp-campaign left
// it when killed in wave 1 (their DDL and rows, written here by hand):
// node1 admitted, node5 journaled rebooting at 2000 and booted since. The
// driver continues it: node5 is not rebooted again, wave 2 runs, done.
void a_journal_left_by_the_old_tool_mid_wave_is_finished(void **)
{
	std::string dir = tmpdir();
	sqlite3 *db = nullptr;
	assert_int_equal(sqlite3_open((dir + "/onramp.db").c_str(), &db), SQLITE_OK);
	const char *old = R"SQL(
PRAGMA journal_mode=WAL;
CREATE TABLE expand_campaigns (
  id TEXT PRIMARY KEY, nodes TEXT NOT NULL, fraction REAL NOT NULL,
  min_pass REAL NOT NULL, boot_timeout INTEGER NOT NULL,
  state TEXT NOT NULL, status TEXT NOT NULL DEFAULT '',
  created INTEGER NOT NULL, updated INTEGER NOT NULL);
CREATE TABLE expand_nodes (
  campaign TEXT NOT NULL, node TEXT NOT NULL, rack TEXT NOT NULL,
  wave INTEGER NOT NULL, state TEXT NOT NULL,
  code TEXT NOT NULL DEFAULT '', detail TEXT NOT NULL DEFAULT '',
  reboots INTEGER NOT NULL DEFAULT 0,
  t_planned INTEGER, t_rebooting INTEGER, t_booted INTEGER, t_admitting INTEGER,
  t_admitted INTEGER, t_drained INTEGER, t_boot_timeout INTEGER,
  PRIMARY KEY (campaign, node));
CREATE TABLE expand_waves (
  campaign TEXT NOT NULL, wave INTEGER NOT NULL, state TEXT NOT NULL,
  opened INTEGER, closed INTEGER, PRIMARY KEY (campaign, wave));
CREATE TABLE expand_events (
  campaign TEXT NOT NULL, node TEXT NOT NULL, state TEXT NOT NULL,
  time INTEGER NOT NULL);
INSERT INTO expand_campaigns VALUES ('c1', 'node[1-2,5-6]', 0.5, 0.5, 600, 'running', '',
  1000, 1000);
INSERT INTO expand_waves VALUES ('c1', 1, 'open', 1500, NULL), ('c1', 2, 'planned', NULL, NULL);
INSERT INTO expand_nodes (campaign, node, rack, wave, state, reboots, t_planned, t_rebooting,
  t_booted, t_admitting, t_admitted) VALUES
  ('c1', 'node1', 'leaf1', 1, 'admitted', 1, 1000, 1500, 1600, 1600, 1700),
  ('c1', 'node5', 'leaf2', 1, 'rebooting', 1, 1000, 2000, NULL, NULL, NULL),
  ('c1', 'node2', 'leaf1', 2, 'planned', 0, 1000, NULL, NULL, NULL, NULL),
  ('c1', 'node6', 'leaf2', 2, 'planned', 0, 1000, NULL, NULL, NULL, NULL);
)SQL";
	assert_int_equal(sqlite3_exec(db, old, nullptr, nullptr, nullptr), SQLITE_OK);
	sqlite3_close(db);
	World w;
	w.t = 2100;
	w.fs.nodes_["node1"].features_active = "gpu,onramp_admitted";
	w.fs.nodes_["node1"].boot_time = 1550;
	w.fs.nodes_["node5"].boot_time = 2050; // the reboot issued before the kill
	w.fs.resvs_["onramp_admission_node5"] = {"onramp_admission_node5", "node5"};
	w.admitting.insert("node5"); // the admission the old script started
	CountingCrash none;
	std::string why;
	auto r = run(w, dir, none, 0.5, &why);
	assert_true(r.ok());
	assert_true(r.value() == Outcome::Done);
	auto rb = w.reboots();
	assert_int_equal(rb.count("node1") + rb.count("node5"), 0);
	assert_int_equal(rb["node2"], 1);
	assert_int_equal(rb["node6"], 1);
	auto j = open_journal(dir);
	auto nodes = j->nodes("c1");
	assert_true(nodes.ok());
	for (const auto &n : nodes.value()) {
		assert_string_equal(n.state.c_str(), "admitted");
		assert_int_equal(n.reboots, 1);
	}
	remove_dir(dir);
}

// Campaign c1 over node1, node2, node5 and node6, planned in waves of half
// a rack: its driver (which keeps references to the settings), journal and
// validation, the jobs' output in dir/expand.
struct C1 {
	Validation v;
	std::unique_ptr<Journal> j;
	Settings s = settings();
	CountingCrash none;
	Driver d;
	C1(const std::string &dir, World &w) : j(open_journal(dir)), d(*j, w.fs, w, s, w, none)
	{
		v.admit = "onramp-admit";
		v.smoke_job = "onramp-smoke-job";
		v.account = "acct";
		v.out_dir = dir + "/expand";
		PlanRequest r{"c1", {"node1", "node2", "node5", "node6"}, 0.5, 1, 600};
		bool refused = false;
		assert_true(d.plan(r, kLeafOf, kSizes, &refused).ok());
	}
};

// After the waves: each cross-rack pair runs in its own reservation (gone
// afterwards) and is journaled with its verdict's detail; a rack whose smoke
// job fails pauses the campaign; after the fix only that rack's smoke job
// runs again, and the campaign is done.
void pairs_and_smoke_jobs_then_done_and_a_failed_rack_reruns_alone(void **)
{
	std::string dir = tmpdir();
	World w;
	bool smoke_fails = true;
	w.fs.on_submit = [&](FakeSlurm::FakeJob &j, const slurm::BatchJob &b) {
		const std::string out = b.output;
		const bool pair = j.job.name.compare(0, 12, "onramp-pair:") == 0;
		const bool bad = !pair && j.job.name == "onramp-smoke:c1:leaf2" && smoke_fails;
		FILE *f = fopen(out.c_str(), "w");
		assert_non_null(f);
		fputs(pair  ? "srun: noise\n{\"detail\": \"180 GB/s both ways\"}\n"
		      : bad ? "verdict: fail: node6: smoke test failed\n"
		            : "verdict: pass: 2 nodes\n",
		      f);
		fclose(f);
		j.job.state = bad ? "FAILED" : "COMPLETED";
		j.job.exit_status = bad ? 1 : 0;
	};
	C1 c(dir, w);
	Validation &v = c.v;
	auto &j = c.j;
	Driver &d = c.d;
	std::string why;
	auto out = d.run("c1", v, &why);
	assert_true(out.ok());
	assert_true(out.value() == Outcome::Paused);
	assert_contains(why, "smoke job failed on rack leaf2");
	assert_contains(why, "node6: smoke test failed");
	auto pairs = j->pairs("c1");
	assert_true(pairs.ok() && !pairs->empty());
	for (const auto &p : pairs.value()) {
		assert_string_equal(p.result.c_str(), "pass");
		assert_string_equal(p.detail.c_str(), "180 GB/s both ways");
		assert_string_not_equal(p.rack.c_str(), p.peer_rack.c_str());
	}
	for (const auto &[name, r] : w.fs.resvs_)
		assert_true(name.find("_pair_") == std::string::npos);
	// Both kinds go through the one submit path as structured jobs: the
	// pair job in its reservation on its two nodes, the smoke job by path
	// on the rack's nodes with the admitted feature.
	int pair_jobs = 0, smoke_jobs = 0;
	for (const auto &b : w.fs.submitted) {
		if (b.name.compare(0, 12, "onramp-pair:") == 0) {
			pair_jobs++;
			assert_int_equal(b.num_nodes, 2);
			assert_contains(b.reservation, "_pair_");
			assert_string_equal(b.account.c_str(), "acct");
			assert_string_equal(b.command.back().c_str(), "--json-only");
		} else {
			smoke_jobs++;
			assert_int_equal(b.num_nodes, 2);
			assert_string_equal(b.constraint.c_str(), c.s.feature.c_str());
			assert_string_equal(b.command.at(0).c_str(), "onramp-smoke-job");
		}
	}
	assert_true(pair_jobs > 0);
	assert_int_equal(smoke_jobs, 2);
	smoke_fails = false; // fixed
	out = d.run("c1", v, &why);
	assert_true(out.ok());
	assert_true(out.value() == Outcome::Done);
	int leaf1 = 0, leaf2 = 0;
	for (const auto &a : w.fs.actions) {
		leaf1 += a == "submit onramp-smoke:c1:leaf1";
		leaf2 += a == "submit onramp-smoke:c1:leaf2";
	}
	assert_int_equal(leaf1, 1);
	assert_int_equal(leaf2, 2);
	bool found = false;
	assert_string_equal(j->campaign("c1", &found)->state.c_str(), "done");
	assert_int_equal(w.reboots().size(), 4);
}

// A pair or smoke job of the campaign ends at once: its output written
// (a pair's detail; the smoke job's verdict), COMPLETED, or FAILED when
// the smoke job does not pass.
static void job_ends(FakeSlurm::FakeJob &j, const slurm::BatchJob &b, bool pass = true)
{
	const bool pair = j.job.name.compare(0, 12, "onramp-pair:") == 0;
	FILE *f = fopen(b.output.c_str(), "w");
	assert_non_null(f);
	fputs(pair   ? "{\"detail\": \"ok\"}\n"
	      : pass ? "verdict: pass: 2 nodes\n"
	             : "verdict: fail: x\n",
	      f);
	fclose(f);
	j.job.state = pair || pass ? "COMPLETED" : "FAILED";
	j.job.exit_status = pair || pass ? 0 : 1;
}

// fault-campaign (seed 202, trial 3): slurmctld killed with SIGKILL
// during an expansion came back from older state, where no node had
// AdmittedFeature active yet; the smoke jobs were refused "Invalid feature
// specification" and the campaign paused. A refused smoke job is tried
// again for Settings::submit_retry_s; a refusal that lasts still fails the
// rack, naming the error.
void a_smoke_job_refused_for_a_while_is_submitted_again(void **)
{
	std::string dir = tmpdir();
	World w;
	const int64_t until = w.t + 30; // the nodes register again by then
	w.fs.refuse_submit = [&](const slurm::BatchJob &b) {
		return b.name.compare(0, 13, "onramp-smoke:") == 0 && w.t < until
		           ? "Batch job submission failed: Invalid feature specification"
		           : "";
	};
	w.fs.on_submit = [](FakeSlurm::FakeJob &j, const slurm::BatchJob &b) { job_ends(j, b); };
	C1 c(dir, w);
	std::string why;
	auto out = c.d.run("c1", c.v, &why);
	assert_true(out.ok());
	assert_true(out.value() == Outcome::Done);
	assert_true(w.t >= until);
	// Refused for good: the rack fails after the retries, naming why.
	std::string dir2 = tmpdir();
	World w2;
	w2.fs.refuse_submit = [](const slurm::BatchJob &b) {
		return b.name.compare(0, 13, "onramp-smoke:") == 0
		           ? "Batch job submission failed: Invalid account"
		           : "";
	};
	w2.fs.on_submit = w.fs.on_submit;
	C1 c2(dir2, w2);
	int64_t t0 = w2.t;
	out = c2.d.run("c1", c2.v, &why);
	assert_true(out.ok());
	assert_true(out.value() == Outcome::Paused);
	assert_contains(why, "cannot submit the smoke job");
	assert_contains(why, "Invalid account");
	assert_true(w2.t - t0 >= 60);
	remove_dir(dir);
	remove_dir(dir2);
}

// fault-campaign (seed 202, trial 60): the flow killed with SIGKILL during
// an admission and slurmctld restarted left node2's and node6's admission
// reservations, widened with their peers, although both nodes were
// admitted; the campaign resumed, and its smoke jobs waited on reserved
// nodes. An admitted node's admission reservation with no admission job
// queued is released before its rack's smoke job.
void an_admitted_nodes_leftover_reservation_is_released_before_the_smoke_job(void **)
{
	std::string dir = tmpdir();
	World w;
	std::vector<std::string> resvs_at_smoke;
	w.fs.on_submit = [&](FakeSlurm::FakeJob &j, const slurm::BatchJob &b) {
		const bool pair = j.job.name.compare(0, 12, "onramp-pair:") == 0;
		if (pair) // the leftovers, as the restarted controller shows them
			for (const char *n : {"node1", "node6"})
				w.fs.resvs_[std::string("onramp_admission_") + n] = {
				    std::string("onramp_admission_") + n,
				    std::string(n) + ",node2"};
		else { // the smoke job's own nodes must be out of them
			auto hosts = hostlist_expand(b.nodes);
			assert_true(hosts.ok());
			for (const auto &n : hosts.value())
				if (w.fs.resvs_.count("onramp_admission_" + n))
					resvs_at_smoke.push_back(n);
		}
		job_ends(j, b);
	};
	C1 c(dir, w);
	std::string why;
	auto out = c.d.run("c1", c.v, &why);
	assert_true(out.ok());
	assert_true(out.value() == Outcome::Done);
	assert_int_equal(resvs_at_smoke.size(), 0);
	assert_true(std::find(w.fs.actions.begin(), w.fs.actions.end(),
	                      "unreserve onramp_admission_node1") != w.fs.actions.end());
	remove_dir(dir);
}

// fault-campaign (seed 202, second run, trial 3): after a kill -9 of
// slurmctld the id journaled for leaf3's smoke job was given again to
// leaf1's new one, and leaf3 waited on it; and a pair reservation the
// controller brought back kept MAINT on the pair's nodes. A journaled
// smoke job is adopted only under its own name, and the campaign's pair
// reservations are released once the pairs are recorded.
void a_reused_smoke_job_id_and_a_pair_reservation_brought_back_are_not_trusted(void **)
{
	std::string dir = tmpdir();
	World w;
	bool leaf2_fails = true;
	w.fs.on_submit = [&](FakeSlurm::FakeJob &j, const slurm::BatchJob &b) {
		job_ends(j, b, !(j.job.name == "onramp-smoke:c1:leaf2" && leaf2_fails));
	};
	C1 c(dir, w);
	std::string why;
	auto out = c.d.run("c1", c.v, &why);
	assert_true(out.ok() && out.value() == Outcome::Paused);
	// leaf2's row says running as job 100, which is now another job (the
	// first pair job's id); a pair reservation is back.
	uint32_t other = w.fs.jobs_.begin()->first;
	assert_string_not_equal(w.fs.jobs_.begin()->second.job.name.c_str(),
	                        "onramp-smoke:c1:leaf2");
	w.fs.jobs_.begin()->second.job.state = "RUNNING";
	assert_true(c.j->set_smoke("c1", "leaf2", std::to_string(other), "running", "", w.t).ok());
	w.fs.resvs_["onramp_admission_pair_c1_1"] = {"onramp_admission_pair_c1_1", "node1,node6"};
	leaf2_fails = false;
	out = c.d.run("c1", c.v, &why);
	assert_true(out.ok());
	assert_true(out.value() == Outcome::Done);
	int leaf2 = 0;
	for (const auto &a : w.fs.actions)
		leaf2 += a == "submit onramp-smoke:c1:leaf2";
	assert_int_equal(leaf2, 2); // submitted again, not the other job waited on
	assert_int_equal(w.fs.resvs_.count("onramp_admission_pair_c1_1"), 0);
	remove_dir(dir);
}

// On a site StateDir/expand is SlurmUser's: a pair's or smoke job's output
// name that is a symlink (to a root-only file) is never read by root; the
// pair and the rack are judged on the jobs' exit status alone.
void outputs_behind_symlinks_are_not_read(void **)
{
	std::string dir = tmpdir();
	World w;
	int n = 0;
	w.fs.on_submit = [&](FakeSlurm::FakeJob &j, const slurm::BatchJob &b) {
		std::string target = dir + "/root-only." + std::to_string(n++);
		assert_true(
		    write_file_atomic(
		        target, "{\"detail\": \"root's secret\"}\nverdict: pass: root's secret\n")
		        .ok());
		unlink(b.output.c_str());
		assert_int_equal(symlink(target.c_str(), b.output.c_str()), 0);
		j.job.state = "COMPLETED";
		j.job.exit_status = 0;
	};
	C1 c(dir, w);
	std::string why;
	auto out = c.d.run("c1", c.v, &why);
	assert_true(out.ok() && out.value() == Outcome::Done);
	auto pairs = c.j->pairs("c1");
	assert_true(pairs.ok() && !pairs->empty());
	for (const auto &p : pairs.value())
		assert_true(p.detail.find("secret") == std::string::npos);
	assert_true(n > 0);
}

// A pair job that never starts (its nodes taken, its reservation stuck) is
// cancelled after the pair's wait and the pair is inconclusive: the
// campaign goes on.
void a_pair_job_that_never_ends_is_cancelled_and_inconclusive(void **)
{
	std::string dir = tmpdir();
	struct Bounded : World {
		void sleep(double s) override
		{
			World::sleep(s);
			if (t > 1000 + 86400)
				throw Crash(); // a day: the wait has no end
		}
	} w;
	w.fs.on_submit = [&](FakeSlurm::FakeJob &j, const slurm::BatchJob &b) {
		if (j.job.name.compare(0, 12, "onramp-pair:") == 0)
			return; // PENDING for ever
		FILE *f = fopen(b.output.c_str(), "w");
		assert_non_null(f);
		fputs("verdict: pass: 2 nodes\n", f);
		fclose(f);
		j.job.state = "COMPLETED";
	};
	Validation v;
	v.admit = "onramp-admit";
	v.smoke_job = "onramp-smoke-job";
	v.out_dir = dir + "/expand";
	auto j = open_journal(dir);
	Settings s = settings();
	CountingCrash none;
	Driver d(*j, w.fs, w, s, w, none);
	PlanRequest r{"c1", {"node1", "node2", "node5", "node6"}, 0.5, 1, 600};
	bool refused = false;
	assert_true(d.plan(r, kLeafOf, kSizes, &refused).ok());
	std::string why;
	try {
		auto out = d.run("c1", v, &why);
		assert_true(out.ok());
	} catch (const Crash &) {
		fail_msg("the campaign still waits for a pair job after a day");
	}
	auto pairs = j->pairs("c1");
	assert_true(pairs.ok() && !pairs->empty());
	int cancels = 0;
	for (const auto &a : w.fs.actions)
		cancels += a.compare(0, 7, "cancel ") == 0;
	assert_int_equal(cancels, static_cast<int>(pairs->size()));
	for (const auto &p : pairs.value()) {
		assert_string_equal(p.result.c_str(), "inconclusive");
		assert_contains(p.detail, "not ended within 900 s: cancelled");
	}
	for (const auto &[name, r] : w.fs.resvs_)
		assert_true(name.find("_pair_") == std::string::npos);
}

// The admission the campaign detaches outlives it: it must not take the
// campaign's descriptors along (onrampctl expand's lock, inherited from the
// shell without close-on-exec), or a re-run is refused while it lives.
void a_detached_admission_holds_none_of_the_campaigns_descriptors(void **)
{
	std::string dir = unit_tmpdir(), lock = dir + "/expand.c1.lock", pidf = dir + "/pid",
	            ctl = dir + "/onrampctl";
	assert_true(write_file_atomic(ctl, "#!/bin/sh\necho $$ >" + pidf + ".new && mv " + pidf +
	                                       ".new " + pidf + "\nexec sleep 30\n")
	                .ok());
	assert_int_equal(chmod(ctl.c_str(), 0755), 0);
	int fd = open(lock.c_str(), O_RDONLY | O_CREAT, 0644); // as bash opens it
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	SpawnAdmission(ctl, 60, dir + "/admit.log", 1 << 20).start({"n1"});
	for (int i = 0; i < 100 && !read_file(pidf, 64).ok(); i++)
		usleep(50000);
	auto p = read_file(pidf, 64);
	assert_true(p.ok());
	close(fd);
	int again = open(lock.c_str(), O_RDONLY);
	int rc = flock(again, LOCK_EX | LOCK_NB);
	close(again);
	kill(atoi(p.value().c_str()), SIGKILL);
	if (rc != 0)
		fail_msg("the detached admission still holds the campaign's lock");
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(runs_every_wave_and_judges_each_node),
	    cmocka_unit_test(a_detached_admission_holds_none_of_the_campaigns_descriptors),
	    cmocka_unit_test(a_pair_job_that_never_ends_is_cancelled_and_inconclusive),
	    cmocka_unit_test(outputs_behind_symlinks_are_not_read),
	    cmocka_unit_test(a_users_job_named_like_an_admission_does_not_suppress_it),
	    cmocka_unit_test(a_crash_at_every_step_then_resume_reboots_no_node_twice),
	    cmocka_unit_test(a_wave_below_the_rate_pauses_and_a_rerun_readmits_without_reboot),
	    cmocka_unit_test(a_node_not_back_in_time_is_drained_boot_timeout),
	    cmocka_unit_test(a_journal_left_by_the_old_tool_mid_wave_is_finished),
	    cmocka_unit_test(pairs_and_smoke_jobs_then_done_and_a_failed_rack_reruns_alone),
	    cmocka_unit_test(a_smoke_job_refused_for_a_while_is_submitted_again),
	    cmocka_unit_test(
	        an_admitted_nodes_leftover_reservation_is_released_before_the_smoke_job),
	    cmocka_unit_test(
	        a_reused_smoke_job_id_and_a_pair_reservation_brought_back_are_not_trusted),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
