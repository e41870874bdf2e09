// job_submit/onramp policy, migration part (common/migrate/submit_migrate.cpp).
#include "unit.hpp"

#include <csignal>

#include "migrate/migrate.hpp"
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
	assert_string_equal(d.comment_append.c_str(), "onramp:ckpt=/scratch/u/run1");
	// As spank_job_control_setenv() stores it (no SPANK_ prefix).
	JobView b;
	b.spank_env = {"ONRAMP_CHECKPOINT_DIR=/scratch/u/run2"};
	d = decide_submit(st, b);
	assert_string_equal(d.comment_append.c_str(), "onramp:ckpt=/scratch/u/run2");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(opted_in_jobs_become_migratable),
	    cmocka_unit_test(other_jobs_are_left_alone),
	    cmocka_unit_test(a_users_own_signal_is_kept),
	    cmocka_unit_test(no_requeue_conflicts_with_opting_in),
	    cmocka_unit_test(migration_in_flight_keeps_the_job_requeueable),
	    cmocka_unit_test(signal_specs),
	};
	return cmocka_run_group_tests_name("submit_migrate", tests, NULL, NULL);
}
