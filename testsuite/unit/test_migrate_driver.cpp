// The migration driver (common/migrate/driver.hpp) against FakeSlurm: a
// crash before and after every journal state, then a resume (a fresh
// Journal and Driver, as a new process would have) finishes the migration
// with no job lost, duplicated, left held, and no node left drained; a
// journal written by the previous onramp-migrate (its DDL copied here)
// mid-migration is finished; slurmctld down in the middle only delays.
#include <chrono>
#include <ctime>
#include <csignal>
#include <fstream>
#include <functional>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.hpp"

#include "config.hpp"
#include "db/db.hpp"
#include "migrate/driver.hpp"
#include "migrate/manifest.hpp"
#include "migrate/migrate.hpp"
#include "proc.hpp"
#include "slurm/fake.hpp"

using namespace onramp;
using migrate::Migration;
using slurm::FakeSlurm;

namespace {

const uint32_t kJob = 7;
const char *const kStates[] = {"PLANNED",  "DRAINED", "SIGNALLING", "SIGNALLED", "CHECKPOINTED",
                               "VERIFIED", "HELD",    "STEERED",    "RELEASED",  "DONE"};

struct FakeClock : migrate::Clock {
	int64_t t = 1700000000000;
	int64_t now_ms() override { return t; }
	void sleep(double s) override { t += static_cast<int64_t>(s * 1000); }
};

struct Crash {};
struct CrashAt : migrate::CrashHook {
	std::string when, state;
	void before(const std::string &s) override
	{
		if (when == "before" && s == state)
			throw Crash();
	}
	void after(const std::string &s) override
	{
		if (when == "after" && s == state)
			throw Crash();
	}
};

// One generation of the job's checkpoint, committed.
void commit_generation(const std::string &dir, uint64_t g, int64_t step)
{
	std::string gd = ckpt::generation_dir(dir, g);
	mkdir(gd.c_str(), 0700);
	std::ofstream(gd + "/model.bin") << "weights " << g;
	assert_true(ckpt::commit(dir, g, step, {"model.bin"}, 1).ok());
}

struct World {
	std::string dir, ckpt, state;
	FakeSlurm slurm;
	FakeClock clock;
	Config cfg;
	int starts = 0;

	World() : cfg(Config::parse("", "t.conf").value())
	{
		// In memory where there is one: the test is about the driver's
		// logic, not the disk's fsync latency (20 crash cases in < 1 s).
		char tmpl[] = "/dev/shm/onramp-unit.XXXXXX";
		char *d = access("/dev/shm", W_OK) == 0 ? mkdtemp(tmpl) : nullptr;
		dir = d ? d : unit_tmpdir();
		ckpt = dir + "/ckpt";
		state = dir + "/state";
		mkdir(ckpt.c_str(), 0700);
		mkdir(state.c_str(), 0700);
		cfg = Config::parse("StateDir=" + state + "\nMigrateAckTimeout=60\n", "t.conf")
		          .value();
		commit_generation(ckpt, 1, 100);
		slurm.add_node("n1", "rack1", "leaf1");
		slurm.add_node("n2", "rack1", "leaf1");
		slurm.add_node("n3", "rack2", "leaf2");
		slurm.add_node("n4", "rack2", "leaf2");
		auto &j = slurm.add_job(kJob, "n1",
		                        "onramp:ckpt=" + ckpt + "; onramp:signal=" +
		                            migrate::format_checkpoint_signal(
		                                SIGUSR2, 60, migrate::SignalTarget::Batch));
		j.job.admin_comment = "site note";
		j.job.uid = getuid(); // the checkpoint's files are the job's user's
		// The job: checkpoints when signalled, resumes when started.
		slurm.on_signal = [this](FakeSlurm::FakeJob &, int sig) {
			assert_int_equal(sig, SIGUSR2);
			if (ckpt::list_generations(ckpt).front() < 2)
				commit_generation(ckpt, 2, 200);
		};
		slurm.on_start = [this](FakeSlurm::FakeJob &fj) {
			starts++;
			ckpt::Resumed r;
			r.generation = ckpt::latest(ckpt)->generation;
			r.step = 200;
			r.restart_count = fj.job.restarts;
			r.time_ms = clock.now_ms();
			fj.job.start_time = clock.now_ms() / 1000;
			assert_true(ckpt::mark_resumed(ckpt, r).ok());
		};
	}

	~World() { (void)run_argv({"rm", "-rf", dir}); }

	std::unique_ptr<migrate::Journal> journal()
	{
		auto j = migrate::Journal::open(state + "/migrate.db");
		assert_true(j.ok());
		return std::move(j.value());
	}

	// "onrampctl migrate --jobs 7 --to rack2" with hook.
	void migrate(migrate::CrashHook &hook)
	{
		auto jr = journal();
		migrate::Driver d(*jr, slurm, cfg, clock, hook);
		migrate::Request r;
		r.jobs = std::to_string(kJob);
		r.to = "rack2";
		bool usage = true;
		auto plan = d.plan(r, &usage);
		assert_true(plan.ok());
		assert_false(plan->bad);
		for (auto &m : plan->planned)
			d.drive(m);
	}

	// "onrampctl migrate" planning r, without driving it.
	migrate::Plan plan(const migrate::Request &r)
	{
		auto jr = journal();
		migrate::CrashHook none;
		migrate::Driver d(*jr, slurm, cfg, clock, none);
		bool usage = false;
		auto p = d.plan(r, &usage);
		assert_true(p.ok());
		return p.value();
	}

	// migrate() crashing (through a CrashHook) at when ("before"/"after")
	// state; returns whether it crashed.
	bool migrate_crashing(const char *when, const char *state)
	{
		CrashAt hook;
		hook.when = when;
		hook.state = state;
		try {
			migrate(hook);
		} catch (const Crash &) {
			return true;
		}
		return false;
	}

	// "onrampctl migrate resume"; returns how many migrations it drove.
	size_t resume()
	{
		auto jr = journal();
		migrate::CrashHook none;
		migrate::Driver d(*jr, slurm, cfg, clock, none);
		auto act = jr->active();
		assert_true(act.ok());
		for (auto &m : act.value())
			assert_true(d.drive(m));
		return act->size();
	}

	size_t count_actions(const std::string &prefix)
	{
		size_t n = 0;
		for (const auto &a : slurm.actions)
			n += a.compare(0, prefix.size(), prefix) == 0;
		return n;
	}

	// The migration ended as it should, whatever crashed on the way.
	void check_finished(bool signalled = true)
	{
		auto jr = journal();
		auto all = jr->list(kJob);
		assert_true(all.ok());
		assert_int_equal(all->size(), 1); // never planned twice
		const Migration &m = all->front();
		if (m.state != "DONE" || !m.error.empty())
			print_error("migration ended %s: %s\n", m.state.c_str(), m.error.c_str());
		assert_string_equal(m.state.c_str(), "DONE");
		assert_int_equal(m.gen, 2);
		assert_true(jr->active()->empty());
		const auto &fj = slurm.jobs_.at(kJob);
		assert_string_equal(fj.job.state.c_str(), "RUNNING"); // not lost
		assert_false(fj.job.held);                            // not left held
		assert_int_equal(fj.job.restarts, 1);                 // requeued once
		assert_int_equal(count_actions("requeuehold"), 1);
		assert_int_equal(starts, 1); // started once
		assert_true(fj.job.nodes == "n3" || fj.job.nodes == "n4");
		assert_string_equal(fj.job.features.c_str(), "rack2");
		assert_string_equal(fj.exc_nodes.c_str(), "n1");
		assert_int_equal(fj.job.req_switch, 1); // one leaf before, one after
		assert_string_equal(fj.job.admin_comment.c_str(), "site note"); // marker gone
		for (const auto &n : slurm.nodes_) {
			if (n.second.drain)
				print_error("node %s left drained: %s\n", n.first.c_str(),
				            n.second.reason.c_str());
			assert_false(n.second.drain);
		}
		if (signalled)
			assert_true(count_actions("signal 7 12 batch") >= 1);
	}
};

void test_no_crash(void **)
{
	World w;
	auto start = w.slurm.on_start;
	w.slurm.on_start = [&](FakeSlurm::FakeJob &j) {
		w.clock.t += 5000; // the job takes 5 s to start on the target
		start(j);
	};
	migrate::CrashHook none;
	w.migrate(none);
	w.check_finished();
	assert_int_equal(w.count_actions("signal"), 1);
	assert_int_equal(w.count_actions("drain n1"), 1);
	assert_int_equal(w.count_actions("resume n1"), 1);
	// What onramp-metrics reads, read-only.
	auto ro = migrate::Journal::open_read_only(w.state + "/migrate.db");
	assert_true(ro.ok());
	auto counts = ro.value()->count_by_state();
	assert_true(counts.ok());
	assert_int_equal(counts->size(), 1);
	assert_int_equal(counts->at("DONE"), 1);
	auto spans = ro.value()->spans();
	assert_true(spans.ok());
	assert_int_equal(spans->size(), 1);
	assert_int_equal(spans->front().job, kJob);
	assert_true(spans->front().seconds == 5.0);
}

void test_crash_at_every_boundary(void **)
{
	// Under a second of CPU: the fake clock does all the waiting. (CPU
	// time, not wall time: a loaded machine must not fail the test.)
	std::clock_t c0 = std::clock();
	auto t0 = std::chrono::steady_clock::now();
	int cases = 0;
	for (const char *when : {"before", "after"}) {
		for (const char *state : kStates) {
			World w;
			assert_true(w.migrate_crashing(when, state));
			size_t resumed = w.resume();
			if (std::string(when) == "before" && std::string(state) == "PLANNED") {
				// Nothing journaled, nothing done: the admin runs it again.
				assert_int_equal(resumed, 0);
				assert_true(w.slurm.actions.empty());
				migrate::CrashHook none;
				w.migrate(none);
			} else if (std::string(state) == "DONE" && std::string(when) == "after") {
				assert_int_equal(resumed, 0);
			} else {
				assert_int_equal(resumed, 1);
			}
			w.check_finished();
			cases++;
		}
	}
	assert_int_equal(cases, 20);
	double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
	printf("# %d crash cases in %.3f s (%.3f s of CPU)\n", cases, s, cpu);
	assert_true(cpu < 1.0);
}

// slurmctld killed after the checkpoint, before it saved the run's end:
// it recovers the job PENDING with its Restarts unchanged (26.05 did, in
// faults.bats). The resumed driver holds, steers and releases it, and the
// run on the target that began after the signal confirms the move.
void test_requeue_lost_by_slurmctld(void **)
{
	World w;
	assert_true(w.migrate_crashing("after", "CHECKPOINTED"));
	auto &fj = w.slurm.jobs_.at(kJob);
	fj.job.state = "PENDING";
	fj.job.nodes.clear();
	assert_int_equal(fj.job.restarts, 0);
	auto start = w.slurm.on_start;
	w.slurm.on_start = [&](FakeSlurm::FakeJob &j) {
		w.clock.t += 5000; // it starts on the target 5 s later
		start(j);
	};
	assert_int_equal(w.resume(), 1);
	auto all = w.journal()->list(kJob);
	assert_true(all.ok());
	assert_int_equal(all->size(), 1);
	assert_string_equal(all->front().state.c_str(), "DONE");
	assert_string_equal(all->front().error.c_str(), "");
	assert_string_equal(fj.job.state.c_str(), "RUNNING");
	assert_false(fj.job.held);
	assert_true(fj.job.nodes == "n3" || fj.job.nodes == "n4");
	assert_int_equal(w.starts, 1);
	assert_int_equal(w.count_actions("requeuehold"), 0); // it was pending: held
}

// slurmctld SIGKILLed right after the release and restarted from a state
// saved before the requeue (issue 24): the job is RUNNING in its old run on
// n1 with Restarts 0, n1's drain is gone. The driver sees the move was
// lost and redoes it from VERIFIED; DONE only once the job runs on rack2.
void test_a_move_the_controller_forgot_is_redone(void **)
{
	World w;
	auto start = w.slurm.on_start;
	int64_t before_signal = w.slurm.jobs_.at(kJob).job.start_time;
	bool lost = false;
	w.slurm.on_start = [&](FakeSlurm::FakeJob &j) {
		if (lost) {
			start(j);
			return;
		}
		lost = true; // the state saved before the requeue comes back
		j.job.state = "RUNNING";
		j.job.nodes = "n1";
		j.job.restarts = 0;
		j.job.start_time = before_signal;
		j.job.held = false;
		j.exc_nodes.clear();
		j.job.features.clear();
		slurm::Node &n1 = w.slurm.nodes_["n1"];
		n1.drain = false;
		n1.reason.clear();
	};
	migrate::CrashHook none;
	w.migrate(none);
	auto all = w.journal()->list(kJob);
	assert_true(all.ok());
	assert_int_equal(all->size(), 1);
	assert_string_equal(all->front().state.c_str(), "DONE");
	if (!all->front().error.empty())
		fail_msg("journaled DONE with: %s", all->front().error.c_str());
	auto &fj = w.slurm.jobs_.at(kJob);
	assert_string_equal(fj.job.state.c_str(), "RUNNING");
	assert_true(fj.job.nodes == "n3" || fj.job.nodes == "n4");
	assert_int_equal(w.count_actions("requeuehold"), 2);
	assert_int_equal(w.count_actions("drain n1"), 2); // its lost drain set again
	assert_false(w.slurm.nodes_["n1"].drain);         // and undone at the end
	assert_int_equal(w.starts, 1);
}

// slurmctld killed (or failed over, onramp-cluster failover --kill) after
// the requeue and hold, before it saved them: the controller in control
// recovers the job RUNNING in its old run on n1, n1's drain gone. The
// driver journaled HELD; steering a running job is refused ("Job is no
// longer pending execution"), which aborted the migration (failover.bats,
// bench/fault-campaign --failover). It sees the requeue was lost and redoes
// the move from VERIFIED, whether it goes on or is resumed after a crash.
void test_a_hold_the_controller_forgot_is_redone(void **)
{
	for (bool crash : {false, true}) {
		World w;
		int64_t before_signal = w.slurm.jobs_.at(kJob).job.start_time;
		auto forget = [&w, before_signal]() {
			auto &j = w.slurm.jobs_.at(kJob);
			j.job.state = "RUNNING";
			j.job.nodes = "n1";
			j.job.restarts = 0;
			j.job.start_time = before_signal;
			j.job.held = false;
			slurm::Node &n1 = w.slurm.nodes_["n1"];
			n1.drain = false;
			n1.reason.clear();
		};
		if (crash) {
			assert_true(w.migrate_crashing("after", "HELD"));
			forget();
			assert_int_equal(w.resume(), 1);
		} else {
			struct ForgetAfterHeld : migrate::CrashHook {
				std::function<void()> f;
				bool done = false;
				void after(const std::string &s) override
				{
					if (s == "HELD" && !done) {
						done = true;
						f();
					}
				}
			} hook;
			hook.f = forget;
			w.migrate(hook);
		}
		auto all = w.journal()->list(kJob);
		assert_true(all.ok());
		assert_int_equal(all->size(), 1);
		if (all->front().state != "DONE" || !all->front().error.empty())
			fail_msg("%s: journaled %s with: %s", crash ? "resumed" : "went on",
			         all->front().state.c_str(), all->front().error.c_str());
		auto &fj = w.slurm.jobs_.at(kJob);
		assert_string_equal(fj.job.state.c_str(), "RUNNING");
		assert_true(fj.job.nodes == "n3" || fj.job.nodes == "n4");
		assert_false(fj.job.held);
		assert_int_equal(w.count_actions("requeuehold"), 2);
		assert_int_equal(w.count_actions("drain n1"), 2); // its lost drain set again
		assert_false(w.slurm.nodes_["n1"].drain);         // and undone at the end
		assert_int_equal(w.starts, 1);
	}
}

void test_ctld_down_midway(void **)
{
	World w;
	auto sig = w.slurm.on_signal;
	w.slurm.on_signal = [&](FakeSlurm::FakeJob &j, int s) {
		sig(j, s);
		w.slurm.down_calls = 6; // slurmctld restarts after the signal
	};
	migrate::CrashHook none;
	w.migrate(none);
	w.check_finished();
	assert_true(w.slurm.waited_s > 0);
}

void test_ctld_down_too_long_aborts_cleanly(void **)
{
	World w;
	w.slurm.ctld_timeout_s = 5;
	// slurmctld goes away for good (longer than MigrateCtldTimeout) once
	// the nodes are drained: the job cannot be read and the migration
	// aborts instead of waiting forever.
	assert_true(w.migrate_crashing("after", "DRAINED"));
	w.slurm.down_forever = true;
	{
		auto jr = w.journal();
		migrate::CrashHook none;
		migrate::Driver d(*jr, w.slurm, w.cfg, w.clock, none);
		auto act = jr->active();
		assert_int_equal(act->size(), 1);
		assert_false(d.drive(act.value()[0]));
	}
	w.slurm.down_forever = false;
	auto all = w.journal()->list(kJob);
	assert_string_equal(all->front().state.c_str(), "ABORTED");
	assert_contains(all->front().error, "is gone");
	// The abort could not reach slurmctld: n1 is still drained by onramp
	// and the marker is still there; that is what the journal says.
	assert_true(w.slurm.nodes_["n1"].drain);
}

// The DDL of onramp-migrate before the driver moved into common/migrate
// (contrib/tools/onramp-migrate.cpp at 16ebdf0), copied, not shared: a
// change of the driver's schema must fail this test.
const char *const kOldSchema =
    "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
    "CREATE TABLE IF NOT EXISTS migrations("
    " id INTEGER PRIMARY KEY, job INTEGER NOT NULL,"
    " active INTEGER NOT NULL DEFAULT 1, state TEXT NOT NULL,"
    " src TEXT NOT NULL, target TEXT NOT NULL, target_nodes INTEGER NOT NULL,"
    " from_mode INTEGER NOT NULL, ckpt_dir TEXT NOT NULL,"
    " base_gen INTEGER NOT NULL, gen INTEGER NOT NULL DEFAULT 0,"
    " signal_ms INTEGER NOT NULL DEFAULT 0, restarts INTEGER NOT NULL,"
    " drained TEXT NOT NULL DEFAULT '', admin_comment TEXT NOT NULL DEFAULT '',"
    " old_features TEXT NOT NULL DEFAULT '', leaves INTEGER NOT NULL DEFAULT 0,"
    " sig INTEGER NOT NULL, ack_s INTEGER NOT NULL, grace_s INTEGER NOT NULL,"
    " confirm_s INTEGER NOT NULL, error TEXT NOT NULL DEFAULT '',"
    " created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);"
    "CREATE UNIQUE INDEX IF NOT EXISTS one_active_per_job"
    " ON migrations(job) WHERE active = 1;"
    "CREATE TABLE IF NOT EXISTS events(id INTEGER PRIMARY KEY,"
    " migration INTEGER NOT NULL, time_ms INTEGER NOT NULL,"
    " state TEXT NOT NULL, message TEXT NOT NULL);";

void test_old_journal_mid_flight(void **)
{
	World w;
	// What the previous binary left after journaling SIGNALLED: n1 drained,
	// the job marked and signalled (it committed generation 2).
	w.slurm.nodes_["n1"].drain = true;
	w.slurm.nodes_["n1"].reason = "onramp:MIGRATE: job 7 to rack2";
	w.slurm.jobs_[kJob].job.admin_comment = "onramp:migrating id=1 to=rack2";
	commit_generation(w.ckpt, 2, 200);
	{
		auto raw = db::Db::open(w.state + "/migrate.db");
		assert_true(raw.ok());
		assert_true(raw.value()->exec(kOldSchema).ok());
		std::string ins =
		    "INSERT INTO migrations(job, state, src, target, target_nodes, from_mode,"
		    " ckpt_dir, base_gen, restarts, admin_comment, sig, ack_s, grace_s, confirm_s,"
		    " created_ms, updated_ms, old_features, leaves, signal_ms, drained)"
		    " VALUES(7, 'SIGNALLED', 'n1', 'rack2', 0, 0, '" +
		    w.ckpt + "', 1, 0, 'site note', 12, 60, 300, 300, 1, 1, '', 1, " +
		    std::to_string(w.clock.t - 1000) +
		    ", 'n1');"
		    "INSERT INTO events(migration, time_ms, state, message)"
		    " VALUES(1, 1, 'SIGNALLED', 'signal 12 (RUNNING): scancel --signal=12 --batch "
		    "7');";
		assert_true(raw.value()->exec(ins).ok());
	}
	assert_int_equal(w.resume(), 1);
	w.check_finished(false);
	assert_int_equal(w.count_actions("signal"), 0); // not signalled twice
	auto jr = w.journal();
	auto msg = jr->event_message(1, "STEERED");
	assert_true(msg.ok());
	assert_string_equal(msg.value().c_str(), "ExcNodeList=n1 Features=rack2 Switches=1@2");
}

// The checkpoint directory is named by the job's comment, which its user
// writes: a checkpoint that is not the job's user's (another user's
// directory, root's files; before, the driver verified as the owner of the
// generation directory, whoever that was) is never verified, used or
// leaked: the migration is aborted, the job keeps running where it was.
void test_checkpoint_of_another_user_is_refused(void **)
{
	World w;
	uid_t other = getuid() == 65534 ? 65533 : 65534;
	w.slurm.jobs_.at(kJob).job.uid = other;
	if (geteuid() == 0) {
		// As root the directory is looked at as the job's user, who
		// cannot enter it (root's, mode 0700): refused when planned,
		// before anything is drained or signalled. Before, root listed
		// it itself and went on.
		migrate::Request r;
		r.jobs = std::to_string(kJob);
		r.to = "rack2";
		migrate::Plan plan = w.plan(r);
		assert_true(plan.bad);
		assert_true(plan.planned.empty());
		assert_true(w.slurm.actions.empty());
		assert_true(w.journal()->list(kJob)->empty());
		return;
	}
	migrate::CrashHook none;
	w.migrate(none);
	auto all = w.journal()->list(kJob);
	assert_true(all.ok());
	assert_int_equal(all->size(), 1);
	const Migration &m = all->front();
	assert_string_equal(m.state.c_str(), "ABORTED");
	assert_contains(m.error, "new checkpoint is bad");
	// As the user (not root) the owner check names both uids.
	assert_contains(m.error, ("not by uid " + std::to_string(other)).c_str());
	const auto &fj = w.slurm.jobs_.at(kJob);
	assert_string_equal(fj.job.state.c_str(), "RUNNING");
	assert_string_equal(fj.job.nodes.c_str(), "n1");
	assert_int_equal(w.count_actions("requeuehold"), 0);
	assert_false(w.slurm.nodes_.at("n1").drain);
}

// As root the job's user's checkpoint is verified by a child that became
// the user: a shard the user cannot read (mode 0, his own file) fails even
// though root could read it, and the same tree readable by him migrates.
// The move is confirmed only by a resumed.json of his: one of root's (or
// anyone else's) in his directory leaves it DONE but not confirmed (before,
// root took it).
void test_root_verifies_as_the_job_user(void **)
{
	if (geteuid() != 0) {
		print_message("# skipped: needs root\n");
		return;
	}
	uid_t user = 65534;
	enum { Unreadable, Readable, ForeignResumed };
	for (int c : {Unreadable, Readable, ForeignResumed}) {
		World w;
		w.slurm.jobs_.at(kJob).job.uid = user;
		auto sig = w.slurm.on_signal;
		w.slurm.on_signal = [&](FakeSlurm::FakeJob &j, int s) {
			sig(j, s);
			std::string gd = ckpt::generation_dir(w.ckpt, 2);
			if (c == Unreadable)
				assert_int_equal(chmod((gd + "/model.bin").c_str(), 0), 0);
			assert_int_equal(run_argv({"chown", "-R", std::to_string(user), w.dir}).rc,
			                 0);
		};
		auto start = w.slurm.on_start;
		w.slurm.on_start = [&](FakeSlurm::FakeJob &j) {
			start(j); // resumed.json written as root
			if (c != ForeignResumed)
				assert_int_equal(
				    chown((w.ckpt + "/resumed.json").c_str(), user, user), 0);
		};
		assert_int_equal(run_argv({"chown", "-R", std::to_string(user), w.dir}).rc, 0);
		migrate::CrashHook none;
		w.migrate(none);
		auto all = w.journal()->list(kJob);
		assert_true(all.ok());
		if (c == Readable) {
			assert_string_equal(all->front().error.c_str(), "");
			w.check_finished();
		} else if (c == ForeignResumed) {
			assert_string_equal(all->front().state.c_str(), "DONE");
			assert_contains(all->front().error, "not confirmed");
			assert_contains(all->front().error,
			                "resumed.json is owned by uid 0, not by uid 65534");
		} else {
			assert_string_equal(all->front().state.c_str(), "ABORTED");
			assert_contains(all->front().error, "model.bin");
			assert_int_equal(w.count_actions("requeuehold"), 0);
		}
	}
}

void test_second_migration_refused(void **)
{
	World w;
	assert_true(w.migrate_crashing("after", "DRAINED"));
	migrate::Request r;
	r.jobs = "7";
	r.to = "rack2";
	migrate::Plan plan = w.plan(r);
	assert_true(plan.bad);
	assert_true(plan.planned.empty());
}

// The job's own constraint survives a move where the target can satisfy
// it (ANDed with the target) and a rollback restores it; the rack it was
// placed on (a term no target node carries) is what the move replaces.
// Before, a move replaced all of it with the target and a rollback cleared
// it, so a "gpu" job could land on any node.
void test_the_jobs_own_constraint_is_kept_and_restored(void **)
{
	World w;
	for (auto &n : w.slurm.nodes_)
		n.second.features_active += ",gpu";
	w.slurm.add_node("n5", "rack2", "leaf2"); // a rack2 node without the gpu
	w.slurm.jobs_.at(kJob).job.features = "rack1&gpu";
	migrate::CrashHook none;
	w.migrate(none);
	auto &fj = w.slurm.jobs_.at(kJob);
	assert_string_equal(fj.job.features.c_str(), "gpu&rack2");
	assert_true(fj.job.nodes == "n3" || fj.job.nodes == "n4");
	// Roll back to n1 (by nodes): the job's own constraint comes back.
	w.slurm.on_signal = [&](FakeSlurm::FakeJob &, int) {
		if (ckpt::list_generations(w.ckpt).front() < 3)
			commit_generation(w.ckpt, 3, 300);
	};
	migrate::Request r;
	r.jobs = std::to_string(kJob);
	r.to = "n1";
	r.rollback = true;
	migrate::Plan plan = w.plan(r);
	assert_false(plan.bad);
	assert_int_equal(plan.planned.size(), 1);
	assert_string_equal(plan.planned[0].old_features.c_str(), "rack1&gpu");
	auto jr = w.journal();
	migrate::Driver d(*jr, w.slurm, w.cfg, w.clock, none);
	assert_true(d.drive(plan.planned[0]));
	assert_string_equal(fj.job.features.c_str(), "rack1&gpu");
	assert_string_equal(fj.job.nodes.c_str(), "n1");
}

// Which terms are kept: those some candidate satisfies; a top-level OR as
// one term in parentheses; what Slurm cannot extend is replaced whole.
void test_steer_features_keeps_what_the_target_satisfies(void **)
{
	const std::vector<std::string> rack2 = {"rack2,gpu,a100", "rack2,gpu"};
	std::string dropped;
	auto steer = [&](const char *own, const char *target, bool nodes) {
		dropped.clear();
		return migrate::steer_features(own, target, nodes, rack2, &dropped);
	};
	assert_string_equal(steer("", "rack2", false).c_str(), "rack2");
	assert_string_equal(steer("", "n3", true).c_str(), "");
	assert_string_equal(steer("gpu", "rack2", false).c_str(), "gpu&rack2");
	assert_string_equal(steer("rack1&a100", "rack2", false).c_str(), "a100&rack2");
	assert_string_equal(dropped.c_str(), "rack1");
	assert_string_equal(steer("a100|h100", "rack2", false).c_str(), "(a100|h100)&rack2");
	assert_string_equal(steer("(a100|h100)&gpu", "rack2", false).c_str(),
	                    "(a100|h100)&gpu&rack2");
	assert_string_equal(steer("rack1&gpu", "n3", true).c_str(), "gpu");
	assert_string_equal(steer("[rack1|rack2]", "rack2", false).c_str(), "rack2");
	assert_string_equal(dropped.c_str(), "[rack1|rack2]");
	assert_string_equal(steer("[rack1|rack2]", "n3", true).c_str(), "");
	assert_string_equal(steer("(a&b)|c", "rack2", false).c_str(), "rack2");
	assert_string_equal(steer("a|b&c", "rack2", false).c_str(), "rack2");
	assert_string_equal(steer("gpu*2", "rack2", false).c_str(), "rack2");
}

// "onrampctl migrate --from n1": the pair test running on n1 and n3 is
// onramp's own job; only the user's job is planned and nothing is refused.
void test_from_passes_over_onramps_own_jobs(void **)
{
	World w;
	w.slurm.add_job(8, "n1,n3", "").job.name = "onramp-pair:n1:n3";
	migrate::Request r;
	r.from = "n1";
	r.to = "rack2";
	migrate::Plan plan = w.plan(r);
	assert_false(plan.bad);
	assert_int_equal(plan.planned.size(), 1);
	assert_int_equal(plan.planned[0].job, kJob);
}

// ONRAMP_MIGRATE_STOP_AFTER=STATE (bench/fault-campaign's boundary): the
// process stops itself at that state and nowhere else, and goes on after
// SIGCONT; the crash hooks' variables still exit with 99.
void test_env_stop_hook(void **)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("ONRAMP_MIGRATE_STOP_AFTER", "HELD", 1);
		migrate::EnvCrashHook hook;
		for (const char *s : kStates) {
			hook.before(s);
			hook.after(s);
		}
		setenv("ONRAMP_MIGRATE_CRASH_BEFORE", "DONE", 1);
		hook.before("DONE");
		_exit(0);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
	assert_true(WIFSTOPPED(st));
	assert_int_equal(WSTOPSIG(st), SIGSTOP);
	kill(pid, SIGCONT);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 99);
}

} // namespace

int main(void)
{
	// Root's verifications run the onramp-ckpt just built.
	ckpt::set_verifier(ONRAMP_BUILDDIR "/contrib/tools/onramp-ckpt");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_crash),
	    cmocka_unit_test(test_crash_at_every_boundary),
	    cmocka_unit_test(test_env_stop_hook),
	    cmocka_unit_test(test_requeue_lost_by_slurmctld),
	    cmocka_unit_test(test_a_move_the_controller_forgot_is_redone),
	    cmocka_unit_test(test_a_hold_the_controller_forgot_is_redone),
	    cmocka_unit_test(test_ctld_down_midway),
	    cmocka_unit_test(test_ctld_down_too_long_aborts_cleanly),
	    cmocka_unit_test(test_old_journal_mid_flight),
	    cmocka_unit_test(test_second_migration_refused),
	    cmocka_unit_test(test_from_passes_over_onramps_own_jobs),
	    cmocka_unit_test(test_the_jobs_own_constraint_is_kept_and_restored),
	    cmocka_unit_test(test_steer_features_keeps_what_the_target_satisfies),
	    cmocka_unit_test(test_checkpoint_of_another_user_is_refused),
	    cmocka_unit_test(test_root_verifies_as_the_job_user),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
