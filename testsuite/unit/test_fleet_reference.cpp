// Fleet-relative admission: the reference is the median and MAD of the
// other nodes of the SKU; a passing figure more than FleetSlowMargin below
// the median is SLOW_<CHECK> (warn or drain by policy); with too few samples
// only the floor applies and the detail says so; a node's history is kept.
#include "unit.hpp"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "admit/record.hpp"
#include "atomic_file.hpp"
#include "fleet/diagnose.hpp"
#include "fleet/reference.hpp"
#include "log.hpp"

using namespace onramp;
using namespace onramp::fleet;

static void median_and_mad_of_odd_and_even_samples(void **)
{
	assert_true(std::fabs(median({3, 1, 2}) - 2) < 1e-9);
	assert_true(std::fabs(median({4, 1, 3, 2}) - 2.5) < 1e-9);
	assert_true(std::isnan(median({})));
	// |x - 2| = 1, 1, 0, 1, 98 -> MAD 1: one outlier does not move it.
	assert_true(std::fabs(mad({1, 3, 2, 1, 100}) - 1) < 1e-9);
}

static Policy policy(int min_samples)
{
	Policy p;
	p.min_samples = min_samples;
	p.margin = 0.05;
	return p;
}

static std::vector<double> fleet_of(int n, double centre)
{
	std::vector<double> v;
	for (int i = 0; i < n; i++)
		v.push_back(centre + (i % 3 - 1) * 0.2); // a small spread
	return v;
}

static void a_node_at_93_percent_of_the_median_is_slow(void **)
{
	Judgement j = judge(93, fleet_of(10, 100), policy(8));
	assert_int_equal(static_cast<int>(j.outcome), static_cast<int>(Outcome::Slow));
	assert_true(std::fabs(j.ref.median - 100) < 1e-9);
	assert_contains(j.note, "fleet median 100.0");
	assert_contains(j.note, "93%");
}

static void a_node_at_97_percent_of_the_median_is_not_slow(void **)
{
	Judgement j = judge(97, fleet_of(10, 100), policy(8));
	assert_int_equal(static_cast<int>(j.outcome), static_cast<int>(Outcome::Ok));
}

static void a_noisy_fleet_widens_the_limit_by_its_mad(void **)
{
	// Spread +-10: 3 * 1.4826 * MAD is beyond the 5% margin, so 93 is
	// within the fleet's own spread.
	std::vector<double> v = {90, 110, 90, 110, 100, 90, 110, 100, 90, 110};
	Judgement j = judge(93, v, policy(8));
	assert_int_equal(static_cast<int>(j.outcome), static_cast<int>(Outcome::Ok));
}

static void too_few_samples_fall_back_to_the_floor_with_a_note(void **)
{
	Judgement j = judge(50, fleet_of(3, 100), policy(8));
	assert_int_equal(static_cast<int>(j.outcome), static_cast<int>(Outcome::TooFewSamples));
	assert_contains(j.note, "needs 8 samples, has 3: only the absolute floor applied");
}

static admit::Verdict passing_verdict(const std::string &node, double membw)
{
	admit::Verdict v;
	v.node = node;
	v.sku = "H200-SXM-8";
	v.time = admit::iso_time(time(nullptr));
	admit::CheckResult c = admit::make_pass(admit::kMemBw, "mem_bw ok");
	c.value = membw;
	c.threshold = 60;
	c.unit = "GB/s";
	v.checks.push_back(c);
	return v;
}

static std::vector<Entry> entries(int n, double membw)
{
	std::vector<Entry> out;
	for (int i = 0; i < n; i++)
		out.push_back(entry_of(passing_verdict(strprintf("n%d", i), membw)));
	return out;
}

static void slow_warns_by_default_and_records_the_fleet_figures(void **)
{
	admit::Verdict v = passing_verdict("x1", 93);
	assert_int_equal(apply_fleet(policy(8), entries(10, 100), &v), 1);
	assert_true(v.passed());
	assert_string_equal(v.checks[0].code.c_str(), "SLOW_MEMBW");
	assert_contains(v.checks[0].detail, "fleet median 100.0");
	assert_contains(v.checks[0].detail, "FleetSlowAction=warn");
	assert_string_equal(v.code().c_str(), "SLOW_MEMBW");
	assert_contains(v.to_json().dump(), "\"fleet\"");
}

static void slow_drains_when_the_policy_says_drain(void **)
{
	Policy p = policy(8);
	p.drain = true;
	admit::Verdict v = passing_verdict("x1", 93);
	apply_fleet(p, entries(10, 100), &v);
	assert_false(v.passed());
	assert_string_equal(v.code().c_str(), "SLOW_MEMBW");
}

static void the_node_itself_and_other_skus_are_not_its_reference(void **)
{
	auto fleet = entries(10, 100);
	fleet[0].node = "x1"; // its own earlier admission
	for (int i = 1; i < 4; i++)
		fleet[i].sku = "other";
	assert_int_equal(fleet_values(fleet, "H200-SXM-8", admit::kMemBw, "x1").size(), 6);
	admit::Verdict v = passing_verdict("x1", 93);
	assert_int_equal(apply_fleet(policy(8), fleet, &v), 0);
	assert_contains(v.checks[0].detail, "only the absolute floor applied");
	assert_string_equal(v.checks[0].code.c_str(), "OK");
}

static void a_nodes_history_is_kept_and_bounded(void **)
{
	Policy p = policy(1);
	p.dir = unit_tmpdir() + "/fleet";
	for (size_t i = 0; i < kHistoryMax + 3; i++)
		assert_true(append_history(p, entry_of(passing_verdict("x1", 100.0 - i))).ok());
	auto h = read_history(history_path(p, "x1"));
	assert_true(h.ok());
	assert_int_equal(h->size(), kHistoryMax);
	// Oldest dropped first: the last one is the most recent, slowest.
	assert_true(std::fabs(h->back().metrics.at(admit::kMemBw) - (100.0 - (kHistoryMax + 2))) <
	            1e-9);
	auto fleet = load_fleet(p, time(nullptr), nullptr);
	assert_int_equal(fleet.size(), 1);
	assert_true(std::fabs(fleet[0].metrics.at(admit::kMemBw) -
	                      h->back().metrics.at(admit::kMemBw)) < 1e-9);
}

// <StateDir>/fleet replaced by SlurmUser (who may own StateDir) with a
// symlink to a root-only directory: root writes no history there. An
// admin's (root's) own symlink is followed.
// A root-only directory t/victim and, at link, a symlink to it that nobody
// owns (as SlurmUser would have made it).
static void plant_foreign_symlink(const std::string &t, const std::string &link)
{
	assert_int_equal(mkdir((t + "/victim").c_str(), 0700), 0);
	assert_int_equal(symlink((t + "/victim").c_str(), link.c_str()), 0);
	struct passwd *nobody = getpwnam("nobody");
	assert_non_null(nobody);
	assert_int_equal(lchown(link.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
}

static void a_symlink_someone_else_put_in_place_of_the_fleet_dir_is_refused(void **)
{
	if (geteuid() != 0)
		skip();
	std::string t = unit_tmpdir();
	Policy p = policy(1);
	p.dir = t + "/fleet";
	plant_foreign_symlink(t, p.dir);
	Status st = append_history(p, entry_of(passing_verdict("x1", 100)));
	assert_false(st.ok());
	assert_contains(st.message(), (p.dir + ": a symlink of uid").c_str());
	assert_true(list_dir(t + "/victim").empty());
	// root's own symlink (an admin's FleetDir elsewhere) is used.
	assert_int_equal(lchown(p.dir.c_str(), 0, 0), 0);
	assert_true(append_history(p, entry_of(passing_verdict("x1", 100))).ok());
	assert_int_equal(list_dir(t + "/victim").size(), 1);
}

// The same symlink swapped in and out (renameat2 RENAME_EXCHANGE, no gap)
// while root appends: checked by name and then written by path, root wrote
// a history into the victim now and then; in the directory opened once,
// never.
static void a_symlink_swapped_in_after_the_check_gets_no_history(void **)
{
	if (geteuid() != 0)
		skip();
	std::string t = unit_tmpdir();
	Policy p = policy(1);
	p.dir = t + "/fleet";
	std::string link = t + "/fleet.link";
	assert_int_equal(mkdir(p.dir.c_str(), 0755), 0);
	plant_foreign_symlink(t, link);
	std::atomic<bool> stop{false};
	std::thread swapper([&] {
		while (!stop)
			renameat2(AT_FDCWD, p.dir.c_str(), AT_FDCWD, link.c_str(), RENAME_EXCHANGE);
	});
	// 300 appends, and more until one found the real directory (on a
	// loaded machine every one of the first 300 may meet the symlink).
	int ok = 0;
	for (int i = 0; i < 300 || (ok == 0 && i < 20000); i++)
		ok += append_history(p, entry_of(passing_verdict("x1", 100))).ok();
	stop = true;
	swapper.join();
	assert_true(list_dir(t + "/victim").empty());
	assert_true(ok > 0); // the real directory was written to in between
}

// t/victim/secret, root's, in a root-only directory: "precious root data".
static void plant_secret(const std::string &t)
{
	assert_int_equal(mkdir((t + "/victim").c_str(), 0700), 0);
	FILE *f = fopen((t + "/victim/secret").c_str(), "w");
	assert_non_null(f);
	fputs("precious root data\n", f);
	fclose(f);
}

// SlurmUser may own <StateDir>/fleet's parent and put its own fleet/ there
// with NODE.json as a symlink to a root-only file: root's reader of the
// fleet (every admission, onrampctl diagnose) opened the target and quoted
// its first word in a warning ("near 'precious'") that landed in the
// admission job's world-readable output. Neither a history nor the
// directory is followed; the foreign fleet dir is refused.
static void root_reads_no_history_through_a_symlink(void **)
{
	if (geteuid() != 0)
		skip();
	std::string t = unit_tmpdir();
	Policy p = policy(1);
	p.dir = t + "/fleet";
	assert_int_equal(mkdir(p.dir.c_str(), 0755), 0);
	assert_true(append_history(p, entry_of(passing_verdict("n1", 100))).ok());
	plant_secret(t);
	assert_int_equal(symlink((t + "/victim/secret").c_str(), (p.dir + "/x1.json").c_str()), 0);
	std::vector<std::string> warnings;
	auto fleet = load_fleet(p, time(nullptr), &warnings);
	assert_int_equal(fleet.size(), 1);
	assert_int_equal(warnings.size(), 1);
	assert_true(warnings[0].find("precious") == std::string::npos);
	assert_contains(warnings[0], (p.dir + "/x1.json").c_str());
	auto h = read_history(p.dir + "/x1.json");
	assert_false(h.ok());
	assert_true(h.status().message().find("precious") == std::string::npos);
	// The whole fleet/ a symlink of another account's: nothing read.
	std::string link = t + "/fleet2";
	assert_int_equal(symlink(p.dir.c_str(), link.c_str()), 0);
	struct passwd *nobody = getpwnam("nobody");
	assert_int_equal(lchown(link.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
	p.dir = link;
	warnings.clear();
	assert_true(load_fleet(p, time(nullptr), &warnings).empty());
	assert_int_equal(warnings.size(), 1);
	assert_contains(warnings[0], (link + ": a symlink of uid").c_str());
}

// onrampctl diagnose read FleetDir/probe/results.json by path: a symlink
// SlurmUser put there had root open its target and quote it in the parse
// error. Read through the directories opened once, never followed.
static void root_reads_no_probe_results_through_a_symlink(void **)
{
	if (geteuid() != 0)
		skip();
	std::string t = unit_tmpdir();
	Policy p = policy(1);
	p.dir = t + "/fleet";
	assert_true(read_probe_results(p).ok()); // nothing there yet: no samples
	assert_true(read_probe_results(p)->empty());
	assert_true(record_probe_results(p, {{"n1", "n2", 40.0, "2026-12-07T00:00:00Z"}}).ok());
	assert_int_equal(read_probe_results(p)->size(), 1);
	plant_secret(t);
	std::string res = p.dir + "/probe/results.json";
	assert_int_equal(unlink(res.c_str()), 0);
	assert_int_equal(symlink((t + "/victim/secret").c_str(), res.c_str()), 0);
	auto r = read_probe_results(p);
	assert_false(r.ok());
	assert_true(r.status().message().find("precious") == std::string::npos);
	assert_contains(r.status().message(), res.c_str());
	// probe/ itself a symlink to the victim's directory: refused too.
	assert_int_equal(unlink(res.c_str()), 0);
	assert_int_equal(rmdir((p.dir + "/probe").c_str()), 0);
	assert_int_equal(
	    rename((t + "/victim/secret").c_str(), (t + "/victim/results.json").c_str()), 0);
	assert_int_equal(symlink((t + "/victim").c_str(), (p.dir + "/probe").c_str()), 0);
	r = read_probe_results(p);
	assert_false(r.ok());
	assert_true(r.status().message().find("precious") == std::string::npos);
	assert_contains(r.status().message(), "/probe: a symlink or not a directory, refused");
}

static void old_admissions_and_excluded_nodes_leave_the_reference(void **)
{
	Policy p = policy(1);
	p.dir = unit_tmpdir() + "/fleet";
	p.window_s = 3600;
	Entry old = entry_of(passing_verdict("old1", 100));
	old.time = admit::iso_time(time(nullptr) - 7200);
	assert_true(append_history(p, old).ok());
	assert_true(append_history(p, entry_of(passing_verdict("n1", 100))).ok());
	assert_true(append_history(p, entry_of(passing_verdict("n2", 100))).ok());
	p.exclude = {"n2"};
	auto fleet = load_fleet(p, time(nullptr), nullptr);
	assert_int_equal(fleet.size(), 1);
	assert_string_equal(fleet[0].node.c_str(), "n1");
}

static void a_bad_history_file_is_an_error_naming_it(void **)
{
	std::string d = unit_tmpdir();
	FILE *f = fopen((d + "/x.json").c_str(), "w");
	fputs("[{\"node\": \"x\", \"time\": 3}]", f);
	fclose(f);
	auto h = read_history(d + "/x.json");
	assert_false(h.ok());
	assert_contains(h.status().message(), (d + "/x.json").c_str());
}

int main()
{
	log_set_program("test_fleet_reference");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(median_and_mad_of_odd_and_even_samples),
	    cmocka_unit_test(a_node_at_93_percent_of_the_median_is_slow),
	    cmocka_unit_test(a_node_at_97_percent_of_the_median_is_not_slow),
	    cmocka_unit_test(a_noisy_fleet_widens_the_limit_by_its_mad),
	    cmocka_unit_test(too_few_samples_fall_back_to_the_floor_with_a_note),
	    cmocka_unit_test(slow_warns_by_default_and_records_the_fleet_figures),
	    cmocka_unit_test(slow_drains_when_the_policy_says_drain),
	    cmocka_unit_test(the_node_itself_and_other_skus_are_not_its_reference),
	    cmocka_unit_test(a_nodes_history_is_kept_and_bounded),
	    cmocka_unit_test(a_symlink_someone_else_put_in_place_of_the_fleet_dir_is_refused),
	    cmocka_unit_test(a_symlink_swapped_in_after_the_check_gets_no_history),
	    cmocka_unit_test(root_reads_no_history_through_a_symlink),
	    cmocka_unit_test(root_reads_no_probe_results_through_a_symlink),
	    cmocka_unit_test(old_admissions_and_excluded_nodes_leave_the_reference),
	    cmocka_unit_test(a_bad_history_file_is_an_error_naming_it),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
