// job_submit/onramp policy: the admission-path guard.
#include "unit.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.hpp"
#include "log.hpp"
#include "onramp.h"
#include "submit.hpp"

using namespace onramp;

static PolicyState conf()
{
	auto c = Config::parse("AdmissionReservation=onramp_admission AdmissionAccount=onramp\n",
	                       "t.conf");
	if (!c.ok())
		abort();
	PolicyState st;
	st.cfg = std::make_shared<const Config>(c.value());
	return st;
}

static void users_cannot_enter_the_admission_path(void **)
{
	PolicyState c = conf();
	JobView j;
	j.submit_uid = 1000;
	j.reservation = "onramp_admission_node3";
	Decision d = decide_submit(c, j);
	assert_true(d.reject);
	assert_contains(d.message, "reservation onramp_admission_node3");
	assert_contains(d.message, "admins only");

	JobView a;
	a.submit_uid = 1000;
	a.account = "onramp";
	assert_true(decide_submit(c, a).reject);

	JobView multi;
	multi.submit_uid = 1000;
	multi.reservation = "other,onramp_admission";
	assert_true(decide_submit(c, multi).reject);
}

// job_submit runs before slurmctld lowercases the account: -A ONRAMP is the
// admission account too, for a user and for an admin outside a reservation.
static void the_admission_account_is_matched_in_any_case(void **)
{
	PolicyState c = conf();
	for (const char *acct : {"ONRAMP", "OnRamp", "onrAMP"}) {
		JobView u;
		u.submit_uid = 1000;
		u.account = acct;
		Decision d = decide_submit(c, u);
		assert_true(d.reject);
		assert_contains(d.message, "admins only");
		assert_true(decide_modify(c, u).reject);
		JobView a;
		a.submit_is_admin = true;
		a.account = acct;
		d = decide_submit(c, a);
		assert_true(d.reject);
		assert_contains(d.message, "run only inside an onramp admission reservation");
	}
	// A configured name in capitals matches the lowercased account.
	auto cfg = Config::parse("AdmissionAccount=OnRamp\n", "t.conf");
	assert_true(cfg.ok());
	PolicyState up;
	up.cfg = std::make_shared<const Config>(cfg.value());
	JobView u;
	u.submit_uid = 1000;
	u.account = "onramp";
	assert_true(decide_submit(up, u).reject);
	// Only the same name matches.
	u.account = "onramp2";
	assert_false(decide_submit(up, u).reject);
}

static void user_jobs_are_left_alone(void **)
{
	PolicyState c = conf();
	JobView j;
	j.submit_uid = 1000;
	j.reservation = "onramp_admissionX"; // not ours: no '_' separator
	j.account = "physics";
	j.features = "rack2";
	Decision d = decide_submit(c, j);
	assert_false(d.reject);
	assert_string_equal(d.message.c_str(), "");
}

static void admins_use_it_only_inside_a_reservation(void **)
{
	PolicyState c = conf();
	JobView j;
	j.submit_uid = 0;
	j.submit_is_admin = true;
	j.account = "onramp";
	Decision d = decide_submit(c, j);
	assert_true(d.reject);
	assert_contains(d.message, "run only inside an onramp admission reservation");
	j.reservation = "onramp_admission_node7";
	d = decide_submit(c, j);
	assert_false(d.reject);
	assert_contains(d.message, "admission job by uid 0 accepted");
}

static void modify_cannot_move_a_user_job_in(void **)
{
	PolicyState c = conf();
	JobView change;
	change.submit_uid = 1000;
	change.reservation = "onramp_admission";
	assert_true(decide_modify(c, change).reject);
	JobView other;
	other.submit_uid = 1000;
	other.partition = "batch";
	assert_false(decide_modify(c, other).reject);
}

// The job_submit watcher's acknowledgement: what is in force, with the
// stamps of the files read ("PATH INODE MTIME.NSEC SIZE", as stat -c
// '%n %i %.9Y %s' prints them); a rejected reload says why it kept the last
// good configuration.
static void the_watcher_acknowledges_what_is_in_force(void **)
{
	std::string dir = unit_tmpdir(), conf = dir + "/onramp.conf", plan = dir + "/plan.json",
	            ack = dir + "/ack";
	assert_true(write_file_atomic(conf, "RewirePlan=" + plan + "\n").ok());
	assert_true(
	    write_file_atomic(dir + "/topology.conf", "SwitchName=leaf1 Nodes=node1\n").ok());
	char err[512] = "";
	onramp_ctx_t *ctx = onramp_ctx_create(conf.c_str(), "test", err, sizeof(err));
	if (!ctx)
		print_error("%s\n", err);
	assert_non_null(ctx);
	char stamp[4096];
	onramp_ctx_stamp(ctx, stamp, sizeof(stamp));
	struct stat sb;
	assert_int_equal(stat(conf.c_str(), &sb), 0);
	std::string want =
	    strprintf("%s %lu %ld.%09ld %ld\n", conf.c_str(), (unsigned long)sb.st_ino,
	              (long)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec, (long)sb.st_size);
	assert_contains(stamp, want.c_str());
	assert_contains(stamp, (plan + " missing\n").c_str());
	assert_int_equal(onramp_ctx_ack(ctx, ack.c_str(), stamp), 0);
	auto a = read_file(ack);
	assert_true(a.ok());
	assert_string_equal(a->c_str(), (std::string("status loaded\n") + stamp).c_str());
	// A bad file: the last good configuration stays, and the ack says why.
	assert_true(write_file_atomic(conf, "NoSuchKey=1\n").ok());
	assert_int_equal(onramp_ctx_reload(ctx), -1);
	assert_int_equal(onramp_ctx_ack(ctx, ack.c_str(), stamp), 0);
	a = read_file(ack);
	assert_contains(a.value(), "status kept ");
	assert_contains(a.value(), "NoSuchKey");
	// Fixed again: loaded.
	assert_true(write_file_atomic(conf, "\n").ok());
	assert_int_equal(onramp_ctx_reload(ctx), 0);
	assert_int_equal(onramp_ctx_ack(ctx, ack.c_str(), ""), 0);
	assert_string_equal(read_file(ack)->c_str(), "status loaded\n");
	// An unwritable place is an error, not a crash.
	assert_int_equal(onramp_ctx_ack(ctx, (dir + "/no/such/dir/ack").c_str(), ""), -1);
	onramp_ctx_destroy(ctx);
}

// Rewrite path in place with text, then give it back the mtime it had, as
// "cp -p BACKUP path" does over an existing file.
static void rewrite_keeping_mtime(const std::string &path, const std::string &text)
{
	struct stat sb;
	assert_int_equal(stat(path.c_str(), &sb), 0);
	int fd = open(path.c_str(), O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text.data(), text.size()), (ssize_t)text.size());
	struct timespec times[2] = {sb.st_atim, sb.st_mtim};
	assert_int_equal(futimens(fd, times), 0);
	close(fd);
}

// What the watcher compares: a file changed and put back with cp -p (the
// same inode, mtime and size; the file_stamp of the acknowledgement is the
// same) still reads as changed, by its ctime; the newest ctime comes back.
static void a_file_put_back_with_cp_p_reads_as_changed(void **)
{
	std::string dir = unit_tmpdir(), conf = dir + "/onramp.conf";
	const std::string good = "# good\n";
	assert_true(write_file_atomic(conf, good).ok());
	char err[512] = "";
	onramp_ctx_t *ctx = onramp_ctx_create(conf.c_str(), "test", err, sizeof(err));
	assert_non_null(ctx);
	char stamp[4096], stamp2[4096], change[8192], change2[8192];
	onramp_ctx_stamp(ctx, stamp, sizeof(stamp));
	int64_t ctime0 = onramp_ctx_change_stamp(ctx, change, sizeof(change));
	struct stat sb;
	assert_int_equal(stat(conf.c_str(), &sb), 0);
	assert_true(ctime0 == (int64_t)sb.st_ctim.tv_sec * 1000000000 + sb.st_ctim.tv_nsec);
	assert_contains(change, strprintf("%s %lu %ld.%09ld %ld %ld.%09ld\n", conf.c_str(),
	                                  (unsigned long)sb.st_ino, (long)sb.st_mtim.tv_sec,
	                                  sb.st_mtim.tv_nsec, (long)sb.st_size,
	                                  (long)sb.st_ctim.tv_sec, sb.st_ctim.tv_nsec)
	                            .c_str());
	// Past the filesystem's timestamp granularity (a clock tick).
	usleep(50000);
	rewrite_keeping_mtime(conf, "NoSuchKey=1\n");
	rewrite_keeping_mtime(conf, good);
	onramp_ctx_stamp(ctx, stamp2, sizeof(stamp2));
	assert_string_equal(stamp2, stamp);
	int64_t ctime1 = onramp_ctx_change_stamp(ctx, change2, sizeof(change2));
	assert_string_not_equal(change2, change);
	assert_true(ctime1 > ctime0);
	onramp_ctx_destroy(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(users_cannot_enter_the_admission_path),
	    cmocka_unit_test(the_admission_account_is_matched_in_any_case),
	    cmocka_unit_test(user_jobs_are_left_alone),
	    cmocka_unit_test(admins_use_it_only_inside_a_reservation),
	    cmocka_unit_test(modify_cannot_move_a_user_job_in),
	    cmocka_unit_test(the_watcher_acknowledges_what_is_in_force),
	    cmocka_unit_test(a_file_put_back_with_cp_p_reads_as_changed),
	};
	return cmocka_run_group_tests_name("submit", tests, NULL, NULL);
}
