// The campaign simulation: with no variance and no failures the predicted
// time is waves x (reboot + test); a seed gives one answer; waves below the
// pass rate pause (stop, or cost the fix time); bad arguments are refused
// with messages that name them.
#include "unit.hpp"

#include <cmath>

#include "campaign/simulate.hpp"

using namespace onramp;
using namespace onramp::campaign;

static SimParams base(int nodes, int racks)
{
	SimParams p;
	p.nodes = nodes;
	p.racks = racks;
	p.reboot = parse_dist("5", "--reboot-minutes").value();
	p.test = parse_dist("normal(10,0)", "--test-minutes").value();
	return p;
}

static void zero_variance_is_waves_times_reboot_plus_test(void **)
{
	// 25,000 nodes in 800 racks of 31-32: cap floor(0.2*31) = 6 -> 6 waves.
	auto r = simulate(base(25000, 800));
	assert_true(r.ok());
	assert_int_equal(r->planned_waves, 6);
	assert_int_equal(r->waves.size(), 6);
	assert_true(std::fabs(r->total - 6 * 15 * 60) < 1e-6);
	assert_true(std::fabs(r->total - r->ideal) < 1e-6);
	assert_int_equal(r->admitted, 25000);
	assert_int_equal(r->failed + r->boot_timeouts + r->pauses, 0);
	int n = 0;
	for (const auto &w : r->waves) {
		assert_true(w.max_per_rack <= 6);
		assert_true(std::fabs(w.end - w.start - 900) < 1e-6);
		n += w.nodes;
	}
	assert_int_equal(n, 25000);
	// 16 nodes in 4 racks of 4: cap 1 -> 4 waves.
	auto s = simulate(base(16, 4));
	assert_true(s.ok());
	assert_int_equal(s->planned_waves, 4);
	assert_true(std::fabs(s->total - 4 * 900) < 1e-6);
}

static void a_seed_gives_one_answer(void **)
{
	SimParams p = base(2000, 64);
	p.test = parse_dist("normal(10,3)", "t").value();
	p.reboot = parse_dist("uniform(3,6)", "r").value();
	p.failure_rate = 0.02;
	auto a = simulate(p), b = simulate(p);
	assert_true(a.ok() && b.ok());
	assert_true(a->total == b->total);
	assert_int_equal(a->failed, b->failed);
	assert_true(a->failed > 0);
	// Waves take their slowest node, so the total exceeds the mean-based ideal.
	assert_true(a->total > a->ideal);
	p.seed = 2;
	auto c = simulate(p);
	assert_true(c.ok());
	assert_true(c->total != a->total);
}

static void pauses_stop_or_cost_the_fix_time(void **)
{
	SimParams p = base(16, 4);
	p.failure_rate = 1;
	auto r = simulate(p);
	assert_true(r.ok());
	assert_true(r->stopped);
	assert_int_equal(r->waves.size(), 1);
	assert_true(r->waves[0].paused);
	assert_true(std::fabs(r->total - 900) < 1e-6);
	p.fix_minutes = 30;
	r = simulate(p);
	assert_true(r.ok());
	assert_false(r->stopped);
	assert_int_equal(r->pauses, 4);
	assert_true(std::fabs(r->total - 4 * (900 + 1800)) < 1e-6);
	// Reboots slower than the boot timeout are BOOT_TIMEOUTs at the timeout.
	p = base(16, 4);
	p.reboot = parse_dist("20", "r").value();
	p.fix_minutes = 0;
	r = simulate(p);
	assert_true(r.ok());
	assert_int_equal(r->boot_timeouts, 16);
	assert_true(std::fabs(r->total - 4 * 600) < 1e-6);
}

static void bad_arguments_are_refused(void **)
{
	const char *bad[] = {"",
	                     "x",
	                     "-1",
	                     "0",
	                     "normal(10)",
	                     "normal(-1,2)",
	                     "normal(10,-1)",
	                     "uniform(5,1)",
	                     "gamma(1,2)",
	                     "normal(10,2",
	                     "uniform(0,0)"};
	for (const char *b : bad) {
		auto d = parse_dist(b, "--test-minutes");
		assert_false(d.ok());
		assert_contains(d.status().message(), "--test-minutes");
	}
	assert_true(parse_dist("0", "--fix", true).ok());
	assert_true(parse_dist("uniform( 1 , 2 )", "t").ok());
	SimParams p = base(16, 4);
	p.fraction = 0;
	assert_contains(simulate(p).status().message(), "wave fraction 0");
	p = base(3, 4);
	assert_contains(simulate(p).status().message(), "--nodes 3");
	p = base(16, 0);
	assert_contains(simulate(p).status().message(), "--racks");
	p = base(16, 4);
	p.failure_rate = 1.5;
	assert_contains(simulate(p).status().message(), "failure rate 1.5");
}

int main()
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(zero_variance_is_waves_times_reboot_plus_test),
	    cmocka_unit_test(a_seed_gives_one_answer),
	    cmocka_unit_test(pauses_stop_or_cost_the_fix_time),
	    cmocka_unit_test(bad_arguments_are_refused),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
