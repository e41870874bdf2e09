// job_submit/onramp policy: the admission-path guard.
#include "unit.hpp"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(users_cannot_enter_the_admission_path),
	    cmocka_unit_test(user_jobs_are_left_alone),
	    cmocka_unit_test(admins_use_it_only_inside_a_reservation),
	    cmocka_unit_test(modify_cannot_move_a_user_job_in),
	};
	return cmocka_run_group_tests_name("submit", tests, NULL, NULL);
}
