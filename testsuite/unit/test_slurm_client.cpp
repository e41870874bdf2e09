// common/slurm over FakeSlurm: drain/resume never touch a reason onramp
// did not write, retry while slurmctld is down (bounded), the admin check.
#include "unit.hpp"

#include "slurm/client.hpp"
#include "slurm/fake.hpp"

using namespace onramp;
using slurm::FakeSlurm;

static void test_drain_keeps_admin_reason(void **)
{
	FakeSlurm f;
	f.add_node("n1", "rack1");
	f.add_node("n2", "rack1");
	f.nodes_["n2"].reason = "bad fan (admin)";
	f.nodes_["n2"].drain = true;
	bool kept = true;
	assert_true(slurm::drain_node(f, "n1", "onramp:MIGRATE: job 1 to rack2", &kept).ok());
	assert_false(kept);
	assert_true(f.nodes_["n1"].drain);
	assert_true(slurm::drain_node(f, "n2", "onramp:MIGRATE: job 1 to rack2", &kept).ok());
	assert_true(kept);
	assert_string_equal(f.nodes_["n2"].reason.c_str(), "bad fan (admin)");
	// A reason that is not onramp's is refused outright.
	assert_false(slurm::drain_node(f, "n1", "maintenance").ok());
	// An unknown node is an error, not a silent success.
	assert_false(slurm::drain_node(f, "n9", "onramp:X: y").ok());
}

static void test_resume_only_our_prefix(void **)
{
	FakeSlurm f;
	f.add_node("n1", "");
	f.add_node("n2", "");
	f.add_node("n3", "");
	f.nodes_["n1"].reason = "onramp:MIGRATE: job 1 to rack2";
	f.nodes_["n2"].reason = "onramp:XID: 79 on GPU 3";
	f.nodes_["n3"].reason = "admin: cable";
	for (auto n : {"n1", "n2", "n3"})
		f.nodes_[n].drain = true;
	bool left = false;
	assert_true(slurm::resume_node(f, "n1", "onramp:MIGRATE:", &left).ok());
	assert_false(left);
	assert_false(f.nodes_["n1"].drain);
	assert_true(slurm::resume_node(f, "n2", "onramp:MIGRATE:", &left).ok());
	assert_true(left);
	assert_true(f.nodes_["n2"].drain);
	assert_true(slurm::resume_node(f, "n3", "onramp:MIGRATE:", &left).ok());
	assert_true(left);
	assert_true(f.nodes_["n3"].drain);
	// Only onramp's own prefixes may be resumed.
	assert_false(slurm::resume_node(f, "n3", "admin:").ok());
	assert_true(f.nodes_["n3"].drain);
}

static void test_retry_while_down(void **)
{
	FakeSlurm f;
	f.add_node("n1", "");
	f.down_calls = 3; // slurmctld restarting: 3 attempts unanswered
	auto n = f.node("n1");
	assert_true(n.ok());
	assert_true(n.value().has_value());
	assert_true(f.waited_s > 3.0); // 0.5 + 1 + 2 of backoff
	assert_true(f.waited_s < 4.0);
	f.down_forever = true;
	f.ctld_timeout_s = 20;
	f.waited_s = 0;
	auto gone = f.node("n1");
	assert_false(gone.ok());
	assert_contains(gone.status().message(), "Unable to contact slurm controller");
	assert_true(f.waited_s >= 20 && f.waited_s < 26); // bounded by the timeout
}

static void test_backoff_doubles_up_to_max(void **)
{
	std::vector<double> sleeps;
	slurm::Backoff b;
	b.timeout_s = 30;
	b.sleep = [&](double s) { sleeps.push_back(s); };
	int calls = 0;
	assert_true(slurm::retry_while_unreachable(
	    b, [&] { return ++calls == 6; }, "t"));
	assert_int_equal(calls, 6);
	std::vector<double> want = {0.5, 1, 2, 4, 5};
	assert_int_equal(sleeps.size(), want.size());
	for (size_t i = 0; i < want.size(); i++)
		assert_true(sleeps[i] == want[i]);
}

static void test_is_admin(void **)
{
	FakeSlurm f;
	f.slurm_user = 64030;
	assert_true(slurm::is_admin(f, 0));
	assert_true(slurm::is_admin(f, 64030));
	assert_false(slurm::is_admin(f, 1000));
	f.down_forever = true;
	f.ctld_timeout_s = 1;
	assert_false(slurm::is_admin(f, 64030)); // cannot tell: not an admin
}

static void test_set_active_feature(void **)
{
	FakeSlurm f;
	f.add_node("n1", "rack1,gpu");
	assert_true(slurm::set_active_feature(f, "n1", "admitted", true).ok());
	assert_string_equal(f.nodes_["n1"].features_active.c_str(), "rack1,gpu,admitted");
	f.actions.clear();
	assert_true(slurm::set_active_feature(f, "n1", "admitted", true).ok());
	assert_true(f.actions.empty()); // already there: no update
	assert_true(slurm::set_active_feature(f, "n1", "admitted", false).ok());
	assert_string_equal(f.nodes_["n1"].features_active.c_str(), "rack1,gpu");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_drain_keeps_admin_reason),
	    cmocka_unit_test(test_resume_only_our_prefix),
	    cmocka_unit_test(test_retry_while_down),
	    cmocka_unit_test(test_backoff_doubles_up_to_max),
	    cmocka_unit_test(test_is_admin),
	    cmocka_unit_test(test_set_active_feature),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
