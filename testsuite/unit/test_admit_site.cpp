// The site's own checks: which programs of AdmissionSiteChecks run (and
// which directories and files are refused), how a run is judged, NHC's
// output and exit codes (testsuite/fake-nhc/nhc, a test double of LBNL
// NHC's driver), and a whole admission gated by both.
#include "unit.hpp"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

#include "admit/admission.hpp"
#include "admit/site.hpp"
#include "admit_fixture.hpp"
#include "log.hpp"

using namespace onramp;
using namespace onramp::admit;

static void script(const std::string &path, const std::string &body, mode_t mode = 0755)
{
	put(path, "#!/bin/sh\n" + body);
	assert_int_equal(chmod(path.c_str(), mode), 0);
}

static void only_runnable_root_files_run_in_name_order(void **)
{
	if (geteuid() != 0)
		skip(); // ownership by root is what is under test
	std::string dir = unit_tmpdir() + "/site";
	assert_int_equal(mkdir(dir.c_str(), 0755), 0);
	script(dir + "/20-ib", "exit 0\n");
	script(dir + "/10_gpfs", "exit 0\n");
	script(dir + "/README", "not run\n", 0644);
	script(dir + "/x.dpkg-old", "exit 1\n");
	script(dir + "/.hidden", "exit 1\n");
	script(dir + "/backup~", "exit 1\n");
	assert_int_equal(mkdir((dir + "/subdir").c_str(), 0755), 0);
	assert_int_equal(symlink("/bin/false", (dir + "/link").c_str()), 0);
	auto l = list_site_checks(dir);
	assert_true(l.ok());
	assert_int_equal(l->size(), 2);
	assert_string_equal(l.value()[0].name.c_str(), "10_gpfs");
	assert_string_equal(l.value()[1].name.c_str(), "20-ib");
	assert_string_equal(l.value()[1].path.c_str(), (dir + "/20-ib").c_str());

	// A program others may change: refused, naming it.
	assert_int_equal(chmod((dir + "/20-ib").c_str(), 0775), 0);
	l = list_site_checks(dir);
	assert_false(l.ok());
	assert_contains(l.status().message(),
	                (dir + "/20-ib is writable by group or others").c_str());
	assert_int_equal(chmod((dir + "/20-ib").c_str(), 0755), 0);
	assert_int_equal(chown((dir + "/10_gpfs").c_str(), 65534, 65534), 0);
	l = list_site_checks(dir);
	assert_false(l.ok());
	assert_contains(l.status().message(),
	                (dir + "/10_gpfs is owned by uid 65534, not root").c_str());
	assert_int_equal(chown((dir + "/10_gpfs").c_str(), 0, 0), 0);
	// So is the directory.
	assert_int_equal(chmod(dir.c_str(), 0777), 0);
	l = list_site_checks(dir);
	assert_false(l.ok());
	assert_contains(l.status().message(),
	                ("directory " + dir + " is writable by group").c_str());
	assert_int_equal(chmod(dir.c_str(), 0755), 0);
	l = list_site_checks(dir + "/missing");
	assert_false(l.ok());
	assert_contains(l.status().message(), "No such file or directory");
}

static void a_run_is_judged_by_its_exit_and_first_line(void **)
{
	std::string dir = unit_tmpdir();
	script(dir + "/ok", "echo \"node $ONRAMP_NODE fine\"\n");
	SpawnResult r = spawn_capture({dir + "/ok"}, "", "n7");
	assert_true(r.started);
	CheckResult c = evaluate_site("ok", r);
	assert_int_equal(c.status, CheckStatus::Pass);
	assert_string_equal(c.name.c_str(), "site_ok");
	assert_string_equal(c.detail.c_str(), "site check ok passed: node n7 fine");

	script(dir + "/gpfs-mount",
	       "echo; echo '  /gpfs/ckpt\tnot mounted  ' >&2; echo second\nexit 3\n");
	c = evaluate_site("gpfs-mount", spawn_capture({dir + "/gpfs-mount"}, "", "n7"));
	assert_int_equal(c.status, CheckStatus::Fail);
	assert_string_equal(c.code.c_str(), "SITE_GPFS_MOUNT");
	assert_string_equal(c.detail.c_str(), "/gpfs/ckpt not mounted (exit 3)");
	assert_int_equal(static_cast<int>(c.value), 3);

	script(dir + "/quiet", "exit 1\n");
	c = evaluate_site("quiet", spawn_capture({dir + "/quiet"}, "", "n7"));
	assert_string_equal(c.detail.c_str(), "quiet: exit 1 without output");

	// Output past the cap is read and dropped: the program never blocks.
	script(dir + "/loud", "head -c 200000 /dev/zero | tr '\\\\0' x; echo\nexit 0\n");
	r = spawn_capture({dir + "/loud"}, "", "n7");
	assert_int_equal(r.rc, 0);
	assert_true(r.truncated);
	assert_int_equal(r.out.size(), kSiteOutputMax);

	// A process left behind holding its output does not hold the run:
	// the program's own exit ends it (the runner kills the rest).
	script(dir + "/daemon", "sleep 30 &\necho \"left $!\"\nexit 0\n");
	r = spawn_capture({dir + "/daemon"}, "", "n7");
	assert_int_equal(r.rc, 0);
	int left = 0;
	assert_int_equal(sscanf(r.out.c_str(), "left %d", &left), 1);
	assert_int_equal(kill(left, 0), 0); // still there: the run did not wait for it
	kill(left, SIGKILL);

	// Cannot be started: unmeasured, never a failure of the node.
	put(dir + "/noexec", "#!/nonexistent/interpreter\n");
	chmod((dir + "/noexec").c_str(), 0755);
	r = spawn_capture({dir + "/noexec"}, "", "n7");
	assert_false(r.started);
	c = evaluate_site("noexec", r);
	assert_int_equal(c.status, CheckStatus::Error);
	assert_contains(c.detail, ("site check noexec not run: exec " + dir + "/noexec").c_str());
	r = spawn_capture({dir + "/ok"}, "no-such-user-onramp", "n7");
	assert_false(r.started);
	assert_contains(r.why, "'no-such-user-onramp' is not a known user");
}

static void nhc_output_is_parsed(void **)
{
	NhcReport p = parse_nhc_output(
	    "Running check\nERROR:  nhc:  Health check failed:  check_fs_mount:  /scratch not "
	    "mounted\nmore\n");
	assert_true(p.found);
	assert_string_equal(p.message.c_str(), "check_fs_mount:  /scratch not mounted");
	p = parse_nhc_output("[12] - ERROR:  nhc-cron:  Health check failed:  Check x returned 2");
	assert_string_equal(p.message.c_str(), "Check x returned 2");
	p = parse_nhc_output("ERROR Health check failed:  detached result\n");
	assert_string_equal(p.message.c_str(), "detached result");
	p = parse_nhc_output("ERROR:  nhc:  3 health checks failed.\n");
	assert_string_equal(p.message.c_str(), "3 health checks failed");
	p = parse_nhc_output("all fine\nINFO Health check failed: not an error line\n");
	assert_false(p.found);
	p = parse_nhc_output("ERROR:  nhc:  Health check failed:  ");
	assert_string_equal(p.message.c_str(), "health check failed");
}

static void nhc_runs_are_judged_by_its_conventions(void **)
{
	std::string dir = unit_tmpdir();
	std::string nhc = src_path("testsuite/fake-nhc/nhc");
	put(dir + "/ok.conf", "# comment\n* || check_file_test -e /\n");
	put(dir + "/bad.conf", "* || check_file_test -e /nonexistent/scratch\n");
	put(dir + "/hang.conf", "* || sleep 30\n");
	auto conf = [&](const std::string &file) {
		auto c = Config::parse("AdmissionNhcProgram=" + nhc + "\nAdmissionNhc=" + dir +
		                           "/" + file + "\n",
		                       "test");
		assert_true(c.ok());
		return c.value();
	};
	std::vector<std::string> argv = nhc_argv(conf("ok.conf"), 7);
	assert_int_equal(argv.size(), 7);
	assert_string_equal(argv[1].c_str(), "-c");
	assert_string_equal(argv[3].c_str(), "-t");
	assert_string_equal(argv[4].c_str(), "7");
	assert_string_equal(argv[5].c_str(), "MARK_OFFLINE=0");
	CheckResult c = run_nhc(conf("ok.conf"), "n1", 5);
	assert_int_equal(c.status, CheckStatus::Pass);
	c = run_nhc(conf("bad.conf"), "n1", 5);
	assert_int_equal(c.status, CheckStatus::Fail);
	assert_string_equal(c.code.c_str(), "NHC");
	assert_string_equal(c.detail.c_str(),
	                    "check_file_test:  /nonexistent/scratch does not exist");
	// Its own watchdog: could not measure.
	c = run_nhc(conf("hang.conf"), "n1", 1);
	assert_int_equal(c.status, CheckStatus::Error);
	assert_contains(c.detail, "nhc could not finish (exit 142): Script timed out while "
	                          "executing \"sleep 30\".");
	// A missing nhc: a missing tool, unmeasured.
	auto missing = Config::parse(
	    "AdmissionNhcProgram=/nonexistent/nhc\nAdmissionNhc=" + dir + "/ok.conf\n", "test");
	c = run_nhc(missing.value(), "n1", 5);
	assert_int_equal(c.status, CheckStatus::Error);
	assert_contains(c.detail, "nhc not run: exec /nonexistent/nhc: No such file");
	// Exit codes alone.
	SpawnResult r;
	r.started = true;
	r.rc = 143;
	assert_int_equal(evaluate_nhc(r).status, CheckStatus::Error);
	r.rc = 9;
	assert_int_equal(evaluate_nhc(r).status, CheckStatus::Error);
	r.rc = 2;
	r.out = "something odd\n";
	c = evaluate_nhc(r);
	assert_int_equal(c.status, CheckStatus::Fail);
	assert_string_equal(c.detail.c_str(), "something odd");
}

// A whole admission: NHC and the site's programs after the built-in checks,
// their results never marked simulated; a failure drains with its code, a
// hung site check is retried and then inconclusive; a bad configuration is
// refused before anything runs.
static void site_checks_gate_a_whole_admission(void **)
{
	if (geteuid() != 0)
		skip();
	std::string dir = unit_tmpdir();
	std::string site = dir + "/site";
	assert_int_equal(mkdir(site.c_str(), 0755), 0);
	script(site + "/10-ok", "exit 0\n");
	put(dir + "/nhc.conf", "* || check_file_test -d /\n");
	AdmitFixture fx("sim",
	                "AdmissionSiteChecks=" + site + "\nAdmissionNhc=" + dir +
	                    "/nhc.conf\nAdmissionNhcProgram=" + src_path("testsuite/fake-nhc/nhc") +
	                    "\nCheckRetries=1\nCheckRetryBackoff=0\n");
	fx.profile("n1", "healthy");
	fx.boot("n1", "b1");
	auto in = prepare_admission(fx.config(), "n1");
	assert_true(in.ok());
	Verdict v = run_admission(*in.value(), {});
	assert_string_equal(v.status().c_str(), "PASS");
	// The node's own checks, then NHC, then the site's programs.
	size_t n = local_checks().size();
	assert_int_equal(v.checks.size(), n + 2);
	assert_string_equal(v.checks[n].name.c_str(), "nhc");
	assert_string_equal(v.checks[n + 1].name.c_str(), "site_10-ok");
	assert_false(v.checks[n + 1].simulated);
	// Some are skipped here (dcgm: no dcgmi, DcgmRequired=no).
	assert_int_equal(v.checks[n].status, CheckStatus::Pass);
	assert_int_equal(v.checks[n + 1].status, CheckStatus::Pass);
	size_t passed = static_cast<size_t>(
	    std::count_if(v.checks.begin(), v.checks.end(),
	                  [](const CheckResult &c) { return c.status == CheckStatus::Pass; }));
	assert_contains(v.detail(), strprintf("%zu checks passed", passed).c_str());

	script(site + "/20-ib", "echo 'mlx5_3 port 1 down'\nexit 1\n");
	v = run_admission(*in.value(), {});
	assert_string_equal(v.status().c_str(), "FAIL");
	assert_string_equal(v.code().c_str(), "SITE_20_IB");
	assert_string_equal(v.detail().c_str(), "mlx5_3 port 1 down (exit 1)");

	// A site check that hangs: timed out twice, inconclusive.
	script(site + "/20-ib", "sleep 30\n");
	std::string b = slurp(fx.baselines + "/SIM-8GPU.json");
	size_t t = b.find("\"timeouts\": {");
	assert_true(t != std::string::npos);
	b.insert(t + strlen("\"timeouts\": {"), "\"site_20-ib\": 1, ");
	put(fx.baselines + "/SIM-8GPU.json", b);
	auto in2 = prepare_admission(fx.config(), "n1");
	if (!in2.ok())
		print_error("%s\n", in2.status().message().c_str());
	assert_true(in2.ok());
	v = run_admission(*in2.value(), {});
	assert_string_equal(v.status().c_str(), "INCONCLUSIVE");
	assert_string_equal(v.code().c_str(), "INCONCLUSIVE_SITE_20_IB");
	assert_contains(v.detail(), "(unmeasured after 2 tries)");

	// NHC finds a fault: NHC, before the site's programs.
	put(dir + "/nhc.conf", "* || check_file_test -e /nonexistent/gpfs\n");
	v = run_admission(*in2.value(), {});
	assert_string_equal(v.code().c_str(), "NHC");
	assert_string_equal(v.detail().c_str(),
	                    "check_file_test:  /nonexistent/gpfs does not exist");

	// Refused before anything runs: a program others may change, a
	// missing NHC configuration.
	assert_int_equal(chmod((site + "/20-ib").c_str(), 0757), 0);
	Status bad = validate_site_config(fx.config());
	assert_false(bad.ok());
	assert_contains(bad.message(), "AdmissionSiteChecks (");
	assert_contains(bad.message(), (site + "/20-ib is writable by group or others").c_str());
	// onramp-admit refuses the full run (exit 2, never a drain); the
	// prolog's inputs do not depend on it.
	Run cli = run_admit("--conf " + fx.conf + " --node n1 --record");
	assert_int_equal(cli.rc, 2);
	assert_contains(cli.out, "\"code\":\"BAD_INPUT\"");
	assert_contains(cli.err, "is writable by group or others");
	assert_true(prepare_admission(fx.config(), "n1").ok());
	assert_int_equal(chmod((site + "/20-ib").c_str(), 0755), 0);
	unlink((dir + "/nhc.conf").c_str());
	bad = validate_site_config(fx.config());
	assert_false(bad.ok());
	assert_contains(bad.message(), "nhc passes every node without its configuration");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(only_runnable_root_files_run_in_name_order),
	    cmocka_unit_test(a_run_is_judged_by_its_exit_and_first_line),
	    cmocka_unit_test(nhc_output_is_parsed),
	    cmocka_unit_test(nhc_runs_are_judged_by_its_conventions),
	    cmocka_unit_test(site_checks_gate_a_whole_admission),
	};
	int rc = cmocka_run_group_tests(tests, nullptr, nullptr);
	unit_remove_tmpdirs();
	return rc;
}
