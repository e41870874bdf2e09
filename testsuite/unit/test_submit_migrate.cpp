// job_submit/onramp policy, migration part (common/migrate/submit_migrate.cpp).
#include "unit.hpp"

#include <csignal>

#include "migrate/migrate.hpp"
#include "onramp.h"
#include "submit.hpp"

using namespace onramp;

static PolicyState conf(const char *text = "MigratePartitions=train,long MigrateQos=ckpt\n")
{
	auto c = Config::parse(text, "t.conf");
	if (!c.ok())
		abort();
	PolicyState st;
	st.cfg = std::make_shared<const Config>(c.value());
	if (!migrate_load(*st.cfg, &st.migrate).ok())
		abort();
	return st;
}

static void opted_in_jobs_become_migratable(void **)
{
	PolicyState st = conf();
	JobView j;
	j.submit_uid = 1000;
	j.partition = "batch,train";
	Decision d = decide_submit(st, j);
	assert_false(d.reject);
	assert_true(d.requeue.has_value() && *d.requeue == 1);
	assert_true(d.open_append.has_value() && *d.open_append);
	assert_int_equal(*d.warn_signal, SIGUSR2);
	assert_int_equal(*d.warn_time, 120);
	assert_contains(d.message, "migratable (partition)");

	JobView q;
	q.qos = "ckpt";
	assert_true(decide_submit(st, q).requeue.has_value());

	JobView s;
	s.spank_env = {"SPANK_OTHER=1", "SPANK_ONRAMP_CHECKPOINT_DIR=/scratch/u/run1",
	               "SPANK_ONRAMP_CHECKPOINT_SIGNAL=USR1@90"};
	d = decide_submit(st, s);
	assert_int_equal(*d.warn_signal, SIGUSR1);
	assert_int_equal(*d.warn_time, 90);
	assert_string_equal(d.comment_append.c_str(),
	                    "onramp:ckpt=/scratch/u/run1; onramp:signal=F:USR1@90");
	// As spank_job_control_setenv() stores it (no SPANK_ prefix).
	JobView b;
	b.spank_env = {"ONRAMP_CHECKPOINT_DIR=/scratch/u/run2"};
	d = decide_submit(st, b);
	assert_string_equal(d.comment_append.c_str(),
	                    "onramp:ckpt=/scratch/u/run2; onramp:signal=F:USR2@120");
	assert_string_equal(d.ckpt_signal_env.c_str(), "USR2@120");
	assert_true(*d.requeue == 1);
}

static void other_jobs_are_left_alone(void **)
{
	PolicyState st = conf();
	JobView j;
	j.partition = "batch";
	j.qos = "normal";
	Decision d = decide_submit(st, j);
	assert_false(d.requeue.has_value());
	assert_false(d.open_append.has_value());
	assert_false(d.warn_signal.has_value());
	assert_string_equal(d.comment_append.c_str(), "");
	assert_string_equal(d.ckpt_signal_env.c_str(), "");
}

static void onramps_own_jobs_are_not_opted_in_by_partition_or_qos(void **)
{
	PolicyState st = conf();
	for (const char *name :
	     {"onramp-admit:node3", "onramp-pair:node3:node1", "onramp-smoke:exp1:r2"}) {
		JobView j;
		j.submit_is_admin = true;
		j.name = name;
		j.default_partition = "train";
		j.qos = "ckpt";
		Decision d = decide_submit(st, j);
		assert_false(d.reject);
		assert_false(d.requeue.has_value());
		assert_false(d.warn_signal.has_value());
		assert_string_equal(d.comment_append.c_str(), "");
		// A user's job of that name is not onramp's: the partition counts.
		j.submit_is_admin = false;
		d = decide_submit(st, j);
		assert_true(d.requeue.has_value() && *d.requeue == 1);
	}
	JobView u;
	u.submit_is_admin = true;
	u.name = "onramp-admitted-run";
	u.partition = "train";
	assert_true(decide_submit(st, u).requeue.has_value());
	assert_false(migrate::is_onramp_job_name("xonramp-admit:n1"));
}

static void a_users_own_signal_is_kept(void **)
{
	PolicyState st = conf();
	JobView j;
	j.partition = "train";
	j.warn_signal = SIGTERM;
	j.warn_time = 300;
	Decision d = decide_submit(st, j);
	assert_false(d.warn_signal.has_value());
	assert_false(d.warn_time.has_value());
	assert_true(*d.requeue == 1);
}

static void no_requeue_conflicts_with_opting_in(void **)
{
	PolicyState st = conf();
	JobView j;
	j.partition = "train";
	j.requeue = 0;
	Decision d = decide_submit(st, j);
	assert_true(d.reject);
	assert_contains(d.message, "must be requeueable");
}

static void migration_in_flight_keeps_the_job_requeueable(void **)
{
	PolicyState st = conf();
	JobView m;
	m.job_id = 42;
	m.requeue = 0;
	m.current_admin_comment = "onramp:migrating to=rack2 since=2026-01-01T00:00:00Z";
	Decision d = decide_modify(st, m);
	assert_true(d.reject);
	assert_contains(d.message, "job 42 is being migrated");
	// Other changes go through; so does requeue=0 when no migration runs.
	m.requeue = -1;
	assert_false(decide_modify(st, m).reject);
	m.requeue = 0;
	m.current_admin_comment = "";
	assert_false(decide_modify(st, m).reject);
}

static void signal_specs(void **)
{
	int sig = 0, secs = 0;
	assert_true(migrate::parse_signal_spec("TERM", &sig, &secs).ok());
	assert_int_equal(sig, SIGTERM);
	assert_int_equal(secs, 120);
	assert_true(migrate::parse_signal_spec("SIGUSR1@30", &sig, &secs).ok());
	assert_int_equal(sig, SIGUSR1);
	assert_int_equal(secs, 30);
	assert_true(migrate::parse_signal_spec("12@600", &sig, &secs).ok());
	assert_int_equal(sig, 12);
	for (const char *bad : {"KILL", "FOO", "USR2@", "USR2@x", "USR2@99999", "9"})
		assert_false(migrate::parse_signal_spec(bad, &sig, &secs).ok());
	auto c = Config::parse("MigrateSignal=BOGUS@1\n", "t.conf");
	assert_true(c.ok());
	std::shared_ptr<const void> v;
	Status s = migrate_load(c.value(), &v);
	assert_false(s.ok());
	assert_contains(s.message(), "t.conf:1: MigrateSignal");
}

static void jobs_naming_no_partition_or_qos_count_in_the_defaults(void **)
{
	PolicyState st = conf();
	// No -p: the default partition the shim resolved decides.
	JobView j;
	j.default_partition = "train";
	Decision d = decide_submit(st, j);
	assert_true(d.requeue.has_value() && *d.requeue == 1);
	assert_contains(d.message, "migratable (default partition)");
	// An explicit partition wins over the default.
	j.partition = "batch";
	assert_false(decide_submit(st, j).requeue.has_value());
	// A list opts in when any listed partition is migratable.
	j.partition = "batch,long";
	assert_contains(decide_submit(st, j).message, "migratable (partition)");
	JobView n;
	n.default_partition = "batch";
	assert_false(decide_submit(st, n).requeue.has_value());
	// No --qos: the association's default QOS.
	JobView q;
	q.default_partition = "batch";
	q.default_qos = "ckpt";
	d = decide_submit(st, q);
	assert_contains(d.message, "migratable (default qos)");
	q.qos = "normal";
	assert_false(decide_submit(st, q).requeue.has_value());
	q.qos = "normal,ckpt";
	assert_true(decide_submit(st, q).requeue.has_value());
	// The default partition cannot dodge --no-requeue.
	JobView r;
	r.default_partition = "long";
	r.requeue = 0;
	assert_true(decide_submit(st, r).reject);
}

static void the_checkpoint_signal_reaches_whom_the_job_needs(void **)
{
	PolicyState st = conf();
	JobView j;
	j.partition = "train";
	Decision d = decide_submit(st, j);
	// Default MigrateSignalTarget=full: batch shell and its processes.
	assert_true(*d.warn_target == migrate::SignalTarget::Full);
	assert_string_equal(d.comment_append.c_str(), "onramp:signal=F:USR2@120");
	assert_contains(d.message, "signal 12@120 to full");

	PolicyState b = conf("MigratePartitions=train\nMigrateSignal=TERM@60\n"
	                     "MigrateSignalTarget=batch\n");
	d = decide_submit(b, j);
	assert_int_equal(*d.warn_signal, SIGTERM);
	assert_int_equal(*d.warn_time, 60);
	assert_true(*d.warn_target == migrate::SignalTarget::Batch);
	assert_string_equal(d.comment_append.c_str(), "onramp:signal=B:TERM@60");

	// --checkpoint-signal with sbatch's B: (and onramp's S:, F:), any case.
	const struct {
		const char *spec;
		migrate::SignalTarget t;
		const char *comment;
	} cases[] = {
	    {"B:USR1@90", migrate::SignalTarget::Batch, "onramp:ckpt=/c; onramp:signal=B:USR1@90"},
	    {"s:TERM", migrate::SignalTarget::Steps, "onramp:ckpt=/c; onramp:signal=S:TERM@120"},
	    {"F:10@30", migrate::SignalTarget::Full, "onramp:ckpt=/c; onramp:signal=F:USR1@30"},
	    {"HUP@5", migrate::SignalTarget::Batch, "onramp:ckpt=/c; onramp:signal=B:HUP@5"},
	};
	for (const auto &c : cases) {
		JobView s;
		s.spank_env = {"ONRAMP_CHECKPOINT_DIR=/c",
		               std::string("ONRAMP_CHECKPOINT_SIGNAL=") + c.spec};
		d = decide_submit(b, s); // no prefix: MigrateSignalTarget (batch)
		assert_true(*d.warn_target == c.t);
		assert_string_equal(d.comment_append.c_str(), c.comment);
	}

	// Not a batch job (srun, salloc): no batch shell, its steps get it.
	JobView i;
	i.partition = "train";
	i.batch = false;
	d = decide_submit(b, i);
	assert_true(*d.warn_target == migrate::SignalTarget::Steps);
	assert_string_equal(d.comment_append.c_str(), "onramp:signal=S:TERM@60");

	// A user's own --signal is kept and recorded as Slurm will send it.
	JobView o;
	o.partition = "train";
	o.warn_signal = SIGUSR1;
	o.warn_time = 300;
	o.warn_batch = true;
	d = decide_submit(st, o);
	assert_false(d.warn_signal.has_value());
	assert_false(d.warn_target.has_value());
	assert_string_equal(d.comment_append.c_str(), "onramp:signal=B:USR1@300");
	assert_string_equal(d.ckpt_signal_env.c_str(), "USR1@300");
	o.warn_batch = false;
	assert_string_equal(decide_submit(st, o).comment_append.c_str(),
	                    "onramp:signal=S:USR1@300");
	// ... but --checkpoint-signal says how onrampctl migrate asks.
	o.spank_env = {"ONRAMP_CHECKPOINT_DIR=/c", "ONRAMP_CHECKPOINT_SIGNAL=F:USR2@100"};
	d = decide_submit(st, o);
	assert_false(d.warn_signal.has_value());
	assert_string_equal(d.comment_append.c_str(), "onramp:ckpt=/c; onramp:signal=F:USR2@100");
}

static void checkpoint_signal_specs_and_how_migrate_signals(void **)
{
	int sig = 0, secs = 0;
	migrate::SignalTarget t = migrate::SignalTarget::Steps;
	bool has = true;
	assert_true(migrate::parse_checkpoint_signal("USR2", &sig, &secs, &t, &has).ok());
	assert_false(has);
	assert_true(migrate::parse_checkpoint_signal("b:SIGTERM@7", &sig, &secs, &t, &has).ok());
	assert_true(has && t == migrate::SignalTarget::Batch && sig == SIGTERM && secs == 7);
	for (const char *bad : {"R:USR2", "B:", "B:KILL", "BB:USR2", "F:USR2@x"}) {
		Status s = migrate::parse_checkpoint_signal(bad, &sig, &secs, &t, &has);
		assert_false(s.ok());
		assert_contains(s.message(), bad);
	}
	assert_string_equal(
	    migrate::format_checkpoint_signal(40, 9, migrate::SignalTarget::Steps).c_str(),
	    "S:40@9");

	auto c = Config::parse("MigrateSignal=TERM@60\nMigrateSignalTarget=steps\n", "t.conf");
	assert_true(c.ok());
	// The job's recorded signal wins; without one, onramp.conf's.
	migrate::checkpoint_signal_of("onramp:ckpt=/d; onramp:signal=B:USR1@90", c.value(), &sig,
	                              &t);
	assert_int_equal(sig, SIGUSR1);
	assert_true(t == migrate::SignalTarget::Batch);
	for (const char *comment :
	     {"onramp:ckpt=/d", "onramp:signal=bogus", "onramp:signal=USR1"}) {
		migrate::checkpoint_signal_of(comment, c.value(), &sig, &t);
		assert_int_equal(sig, SIGTERM);
		assert_true(t == migrate::SignalTarget::Steps);
	}
	auto args = [](int s, migrate::SignalTarget tg) {
		std::string out;
		for (const auto &a : migrate::scancel_signal_args(s, tg, "42"))
			out += (out.empty() ? "" : " ") + a;
		return out;
	};
	assert_string_equal(args(12, migrate::SignalTarget::Full).c_str(),
	                    "scancel --signal=12 --full 42");
	assert_string_equal(args(12, migrate::SignalTarget::Batch).c_str(),
	                    "scancel --signal=12 --batch 42");
	assert_string_equal(args(15, migrate::SignalTarget::Steps).c_str(),
	                    "scancel --signal=15 42");
	assert_string_equal(migrate::comment_value("x onramp:ckpt=/a/b;y", "onramp:ckpt=").c_str(),
	                    "/a/b");

	auto pre = Config::parse("\nMigrateSignal=B:USR2@60\n", "t.conf");
	std::shared_ptr<const void> pv;
	Status ps = migrate_load(pre.value(), &pv);
	assert_false(ps.ok());
	assert_contains(ps.message(), "t.conf:2: MigrateSignal: 'B:USR2@60': no B:/S:/F: prefix");

	auto bad = Config::parse("MigrateSignalTarget=everyone\n", "t.conf");
	std::shared_ptr<const void> v;
	Status s = bad.ok() ? migrate_load(bad.value(), &v) : bad.status();
	assert_false(s.ok());
	assert_contains(s.message(), "t.conf:1");
	assert_contains(s.message(), "MigrateSignalTarget");
}

// spank/onramp checks --checkpoint-signal at sbatch time with the C API;
// job_submit/onramp parses it with parse_checkpoint_signal: one validator, so
// a spec the one accepts the other accepts, and the same for refusals.
static void spank_and_job_submit_accept_the_same_checkpoint_signals(void **)
{
	const char *specs[] = {
	    "USR1",   "B:USR2@90",  "s:TERM",      "F:10@30",  "SIGQUIT@60", "ALRM",    "B:ALRM@5",
	    "HUP",    "URG",        "CONT",        "INT",      "64",         "SIG12@0", "KILL",
	    "STOP",   "9",          "19",          "0",        "65",         "X:USR1",  "USR1@",
	    "USR1@x", "USR1@65536", "USR1@123456", "",         "B:",         "FOO",     "USR1@-1",
	    "1234",   "SIG",        "@30",         "USR1 @30", "usr1"};
	for (const char *spec : specs) {
		int sig = 0, secs = 0;
		migrate::SignalTarget t = migrate::SignalTarget::Full;
		bool has_target = false;
		const bool cpp =
		    migrate::parse_checkpoint_signal(spec, &sig, &secs, &t, &has_target).ok();
		char err[256] = "";
		const bool c = onramp_checkpoint_signal_check(spec, err, sizeof(err)) == 0;
		if (c != cpp)
			fail_msg("'%s': spank says %d, job_submit says %d", spec, c, cpp);
		if (!c)
			assert_contains(err, spec);
	}
	char err[256];
	assert_int_equal(onramp_checkpoint_signal_check("B:QUIT@60", err, sizeof(err)), 0);
	assert_int_equal(onramp_checkpoint_signal_check("ALRM", err, sizeof(err)), 0);
	assert_int_equal(onramp_checkpoint_signal_check(nullptr, err, sizeof(err)), -1);
	assert_int_equal(onramp_checkpoint_signal_check("KILL", err, sizeof(err)), -1);
	assert_contains(err, "not a usable signal");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(opted_in_jobs_become_migratable),
	    cmocka_unit_test(other_jobs_are_left_alone),
	    cmocka_unit_test(onramps_own_jobs_are_not_opted_in_by_partition_or_qos),
	    cmocka_unit_test(a_users_own_signal_is_kept),
	    cmocka_unit_test(no_requeue_conflicts_with_opting_in),
	    cmocka_unit_test(migration_in_flight_keeps_the_job_requeueable),
	    cmocka_unit_test(signal_specs),
	    cmocka_unit_test(jobs_naming_no_partition_or_qos_count_in_the_defaults),
	    cmocka_unit_test(the_checkpoint_signal_reaches_whom_the_job_needs),
	    cmocka_unit_test(checkpoint_signal_specs_and_how_migrate_signals),
	    cmocka_unit_test(spank_and_job_submit_accept_the_same_checkpoint_signals),
	};
	return cmocka_run_group_tests_name("submit_migrate", tests, NULL, NULL);
}
