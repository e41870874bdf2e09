// Whole admission runs: every shipped sim profile gives its intended
// verdict, a hung check is killed with its whole process group, the record
// is written for PASS/FAIL only, and the real backend here fails NO_GPU.
#include "unit.hpp"

#include <cstring>

#include <chrono>
#include <cmath>
#include <csignal>
#include <map>
#include <dirent.h>
#include <sys/wait.h>

#include "admit/admission.hpp"
#include "admit/record.hpp"
#include "admit/runner.hpp"
#include "admit_fixture.hpp"

using namespace onramp;
using namespace onramp::admit;

static Verdict admit_node(AdmitFixture &fx, const std::string &node, AdmitOptions opt = {})
{
	fx.boot(node, "boot-" + node);
	auto in = prepare_admission(fx.config(), node);
	if (!in.ok())
		print_error("%s\n", in.status().message().c_str());
	assert_true(in.ok());
	return run_admission(*in.value(), opt);
}

static const CheckResult &check(const Verdict &v, const std::string &name)
{
	for (const auto &c : v.checks)
		if (c.name == name)
			return c;
	print_error("no check %s\n", name.c_str());
	fail();
	return v.checks.front();
}

static void every_profile_gives_its_code(void **)
{
	struct {
		const char *profile, *status, *code, *check;
	} cases[] = {
	    {"healthy", "PASS", "OK", nullptr},
	    {"low-nccl", "FAIL", "NCCL_BW_LOW", "nccl_allreduce"},
	    {"corrupt-nccl", "FAIL", "NCCL_CORRUPT", "nccl_allreduce"},
	    {"xid", "FAIL", "XID_CRITICAL", "gpu_health"},
	    {"ecc", "FAIL", "ECC_UNCORRECTED", "gpu_health"},
	    {"baseline-mismatch", "FAIL", "VERSION_MISMATCH", "versions"},
	    {"port-down", "FAIL", "PORT_DOWN", "fabric"},
	    {"wrong-affinity", "FAIL", "AFFINITY_MISMATCH", "topology"},
	    {"bad-peer", "PASS", "OK", nullptr}, // healthy locally
	    {"gpu-throttled", "FAIL", "GPU_THROTTLED", "gpu_depth"},
	    {"pcie-degraded", "FAIL", "PCIE_DEGRADED", "gpu_depth"},
	    {"port-errors", "FAIL", "PORT_ERRORS", "fabric"},
	    // Could not measure (after a retry): inconclusive, never a pass.
	    {"nvml-partial", "INCONCLUSIVE", "INCONCLUSIVE_GPU_DEPTH", "gpu_depth"},
	    {"weak-rail", "PASS", "OK", nullptr},     // only the per-rail pass sees it
	    {"slow-gpu-pair", "PASS", "OK", nullptr}, // only the all-GPU pair run sees it
	};
	AdmitFixture fx("sim", "CheckRetries=1\nCheckRetryBackoff=0\n");
	for (auto &tc : cases) {
		fx.profile(tc.profile, tc.profile);
		Verdict v = admit_node(fx, tc.profile);
		if (v.status() != tc.status || v.code() != tc.code)
			print_error("%s: got %s %s: %s\n", tc.profile, v.status().c_str(),
			            v.code().c_str(), v.detail().c_str());
		assert_string_equal(v.status().c_str(), tc.status);
		assert_string_equal(v.code().c_str(), tc.code);
		assert_int_equal(v.checks.size(), local_checks().size());
		assert_true(v.simulated);
		assert_string_equal(v.backend.c_str(), "sim");
		assert_string_equal(v.boot_id.c_str(), (std::string("boot-") + tc.profile).c_str());
		for (const auto &c : v.checks) {
			assert_true(c.simulated);
			assert_contains(c.detail, "[SIMULATED]");
		}
		if (tc.check)
			assert_string_equal(v.first_failure()->name.c_str(), tc.check);
		// Only the intended check fails.
		size_t failing = 0;
		for (const auto &c : v.checks)
			failing += !c.passed();
		assert_int_equal(failing, tc.check ? 1 : 0);
	}
}

static void numbers_are_carried(void **)
{
	AdmitFixture fx;
	fx.profile("n1", "low-nccl");
	Verdict v = admit_node(fx, "n1");
	const CheckResult &n = check(v, "nccl_allreduce");
	assert_true(std::fabs(n.value - 301.2) < 1e-6);
	assert_true(std::fabs(n.threshold - 387.9) < 1e-6);
	assert_int_equal(n.samples.size(), 3);
	assert_true(std::fabs(n.samples[1] - 298.7) < 1e-6);
	assert_string_equal(v.detail().c_str(), "nccl_allreduce busbw 301.2 GB/s < 387.9 GB/s "
	                                        "(best of 3) [SIMULATED]");
	assert_string_equal(verdict_summary(v).c_str(),
	                    "n1 FAIL NCCL_BW_LOW: nccl_allreduce busbw 301.2 GB/s < 387.9 GB/s "
	                    "(best of 3) [SIMULATED]");
	const CheckResult &m = check(v, "mem_bw");
	assert_int_equal(m.samples.size(), 8);
	assert_true(std::fabs(m.threshold - 3440) < 1e-6); // 0.8 x 4300
	assert_true(std::fabs(m.value - 4284.9) < 1e-6);   // the slowest GPU
	// A stricter onramp.conf fraction makes the healthy numbers fail.
	AdmitFixture strict("sim", "MemBwFraction=1.0\n");
	strict.profile("n1", "healthy");
	Verdict s = admit_node(strict, "n1");
	assert_string_equal(s.code().c_str(), "MEM_BW_LOW");
	// The verdict's JSON has the documented fields.
	std::string j = v.to_json().dump();
	for (const char *f : {"\"node\":\"n1\"", "\"boot_id\":\"boot-n1\"", "\"baseline_digest\":",
	                      "\"backend\":\"sim\"", "\"simulated\":true", "\"sku\":\"SIM-8GPU\"",
	                      "\"time\":", "\"status\":\"FAIL\"", "\"checks\":[", "\"samples\":[",
	                      "\"duration_s\":", "\"unit\":\"GB/s\""})
		assert_contains(j, f);
}

static bool pid_alive(pid_t p)
{
	return kill(p, 0) == 0;
}

static void hang_times_out_and_leaves_nothing(void **)
{
	// One retry, at once: the hung check runs twice, then is inconclusive.
	AdmitFixture fx("sim", "CheckRetries=1\nCheckRetryBackoff=0\n");
	// A 1 s timeout for the hanging check.
	std::string b = slurp(fx.baselines + "/SIM-8GPU.json");
	b.replace(b.find("\"nccl_allreduce\": 5"), strlen("\"nccl_allreduce\": 5"),
	          "\"nccl_allreduce\": 1");
	put(fx.baselines + "/SIM-8GPU.json", b);
	std::string text = slurp(src_path("etc/sim-profiles/hang.json"));
	text.replace(text.find("\"check\": \"nccl_allreduce\""),
	             strlen("\"check\": \"nccl_allreduce\""),
	             "\"check\": \"nccl_allreduce\", \"pid_file\": \"hang.pids\"");
	put(fx.profiles + "/n1.json", text);
	std::map<std::string, pid_t> pgids;
	std::map<std::string, int> spawns;
	AdmitOptions opt;
	opt.checks = {"inventory", "nccl_allreduce", "fabric"};
	opt.on_spawn = [&](const std::string &c, pid_t g) {
		pgids[c] = g;
		spawns[c]++;
	};
	auto t0 = std::chrono::steady_clock::now();
	Verdict v = admit_node(fx, "n1", opt);
	double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	const CheckResult &n = check(v, "nccl_allreduce");
	// Could not measure, twice: inconclusive, never a failure.
	assert_int_equal(n.status, CheckStatus::Timeout);
	assert_string_equal(n.code.c_str(), "INCONCLUSIVE_NCCL");
	assert_contains(n.detail, "nccl_allreduce did not finish within 1 s");
	assert_contains(n.detail, "(unmeasured after 2 tries) [SIMULATED]");
	assert_int_equal(spawns["nccl_allreduce"], 2);
	assert_int_equal(spawns["inventory"], 1);
	assert_true(n.duration_s >= 2.0 && n.duration_s < 6.0);
	assert_true(took < 12.0);
	assert_string_equal(v.code().c_str(), "INCONCLUSIVE_NCCL");
	assert_true(v.inconclusive);
	assert_string_equal(v.status().c_str(), "INCONCLUSIVE");
	assert_false(v.passed());
	// The checks after it still ran.
	assert_int_equal(check(v, "fabric").status, CheckStatus::Pass);
	// The hung check and its helper are gone, and nothing of its group.
	std::string pids = slurp(fx.profiles + "/hang.pids");
	int child = 0, helper = 0;
	assert_int_equal(sscanf(pids.c_str(), "%d %d", &child, &helper), 2);
	assert_int_equal(child, pgids["nccl_allreduce"]);
	assert_false(pid_alive(child));
	assert_false(pid_alive(helper));
	for (const auto &kv : pgids)
		assert_false(process_group_alive(kv.second));
}

static void runner_reports_crashes_and_keeps_stdout_clean(void **)
{
	IsolatedRun r = run_isolated("x", 5, []() -> CheckResult {
		printf("noise on stdout\n");
		raise(SIGKILL);
		return make_pass("x", "");
	});
	assert_int_equal(r.result.status, CheckStatus::Error);
	assert_string_equal(r.result.code.c_str(), "CHECK_ERROR");
	assert_contains(r.result.detail, "killed by signal 9");
	assert_false(process_group_alive(r.pgid));
	// The leader was kept a zombie until its group was killed, then reaped.
	assert_int_equal(waitpid(r.pgid, nullptr, WNOHANG), -1);
	// A check that leaves a background process behind: killed too.
	pid_t bg = 0;
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	r = run_isolated("y", 5, [&]() -> CheckResult {
		pid_t p = fork();
		if (p == 0) {
			for (;;)
				pause();
		}
		if (write(fds[1], &p, sizeof p) != sizeof p)
			_exit(1);
		return make_pass("y", "ok");
	});
	assert_int_equal(read(fds[0], &bg, sizeof bg), sizeof bg);
	close(fds[0]);
	close(fds[1]);
	assert_int_equal(r.result.status, CheckStatus::Pass);
	assert_string_equal(r.result.detail.c_str(), "ok");
	assert_false(pid_alive(bg));
	assert_false(process_group_alive(r.pgid));
	assert_int_equal(waitpid(r.pgid, nullptr, WNOHANG), -1);
}

static void cli_records_pass_and_fail(void **)
{
	AdmitFixture fx;
	fx.profile("good", "healthy");
	fx.profile("slow", "low-nccl");
	fx.boot("good", "boot-1");
	fx.boot("slow", "boot-2");
	Run r = run_admit("--conf " + fx.conf + " --node good --record");
	assert_int_equal(r.rc, 0);
	assert_contains(r.err, "onramp-admit: good PASS: 8 checks passed [SIMULATED]");
	auto j = json_parse(r.out, "stdout");
	assert_true(j.ok());
	assert_string_equal(json_string_value(json_object_get(j->get(), "status")), "PASS");
	auto rec = read_record(fx.record("good"));
	assert_true(rec.ok());
	assert_string_equal(rec->status.c_str(), "PASS");
	assert_string_equal(rec->boot_id.c_str(), "boot-1");
	std::string why;
	assert_int_equal(judge(fx.config(), "good", &why), Judgement::Admitted);

	r = run_admit("--conf " + fx.conf + " --node slow --record --json-only");
	assert_int_equal(r.rc, 1);
	assert_string_equal(r.err.c_str(), "");
	rec = read_record(fx.record("slow"));
	assert_string_equal(rec->status.c_str(), "FAIL");
	assert_string_equal(rec->code.c_str(), "NCCL_BW_LOW");
	assert_int_equal(judge(fx.config(), "slow", &why), Judgement::NotAdmitted);
	assert_contains(why, "admission FAIL NCCL_BW_LOW: nccl_allreduce busbw 301.2");

	// Without --record nothing is written.
	fx.profile("quiet", "healthy");
	fx.boot("quiet", "b");
	assert_int_equal(run_admit("--conf " + fx.conf + " --node quiet").rc, 0);
	assert_true(access(fx.record("quiet").c_str(), F_OK) != 0);
}

static void a_partial_run_never_records_a_pass(void **)
{
	AdmitFixture fx;
	fx.profile("part", "healthy");
	fx.boot("part", "boot-1");
	Run r = run_admit("--conf " + fx.conf + " --node part --checks inventory --record");
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "a partial run");
	assert_true(access(fx.record("part").c_str(), F_OK) != 0);
	std::string why;
	assert_int_equal(judge(fx.config(), "part", &why), Judgement::NotAdmitted);
	// A partial run that fails still records its FAIL.
	fx.profile("bad", "low-nccl");
	fx.boot("bad", "boot-2");
	r = run_admit("--conf " + fx.conf + " --node bad --checks nccl_allreduce --record");
	assert_int_equal(r.rc, 1);
	auto rec = read_record(fx.record("bad"));
	assert_true(rec.ok());
	assert_string_equal(rec->status.c_str(), "FAIL");
}

// A check that could not measure, even when retried, records INCONCLUSIVE:
// exit 2 (the orchestrator leaves the node fenced in its reservation,
// undrained), its reason INCONCLUSIVE_<CHECK>, not admitted, and kept out
// of the fleet's history. A measured failure beside it outranks it.
static void an_unmeasured_check_records_inconclusive_not_fail(void **)
{
	std::string fleet = unit_tmpdir() + "/fleet";
	AdmitFixture fx("sim", "CheckRetries=1\nCheckRetryBackoff=0\nFleetDir=" + fleet + "\n");
	std::string b = slurp(fx.baselines + "/SIM-8GPU.json");
	b.replace(b.find("\"nccl_allreduce\": 5"), strlen("\"nccl_allreduce\": 5"),
	          "\"nccl_allreduce\": 1");
	put(fx.baselines + "/SIM-8GPU.json", b);
	fx.profile("hung", "hang");
	fx.boot("hung", "boot-1");
	std::string reason = unit_tmpdir() + "/reason";
	Run r = run_admit("--conf " + fx.conf + " --node hung --record --reason-file " + reason);
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "onramp-admit: hung INCONCLUSIVE INCONCLUSIVE_NCCL: nccl_allreduce "
	                       "did not finish within 1 s");
	assert_contains(slurp(reason), "onramp:INCONCLUSIVE_NCCL: nccl_allreduce did not finish");
	auto rec = read_record(fx.record("hung"));
	assert_true(rec.ok());
	assert_string_equal(rec->status.c_str(), "INCONCLUSIVE");
	assert_string_equal(rec->code.c_str(), "INCONCLUSIVE_NCCL");
	std::string why;
	assert_int_equal(judge(fx.config(), "hung", &why), Judgement::NotAdmitted);
	assert_contains(why, "admission INCONCLUSIVE INCONCLUSIVE_NCCL");
	// Nothing in the fleet's history (a healthy node's run writes there).
	DIR *d = opendir(fleet.c_str());
	if (d) {
		while (struct dirent *e = readdir(d))
			assert_true(e->d_name[0] == '.');
		closedir(d);
	}
	fx.profile("fine", "healthy");
	fx.boot("fine", "boot-2");
	assert_int_equal(run_admit("--conf " + fx.conf + " --node fine --record").rc, 0);
	d = opendir(fleet.c_str());
	assert_non_null(d);
	int files = 0;
	while (struct dirent *e = readdir(d))
		files += e->d_name[0] != '.';
	closedir(d);
	assert_int_equal(files, 1);

	// Unmeasured beside a measured failure: the failure is the verdict.
	Verdict v;
	CheckResult t = make_fail("fabric", "INCONCLUSIVE_FABRIC", "fabric did not finish");
	t.status = CheckStatus::Timeout;
	v.checks = {t, make_fail("gpu_health", "XID_CRITICAL", "XID 79 on GPU 3")};
	assert_true(v.has_measured_failure());
	assert_string_equal(v.first_failure()->code.c_str(), "XID_CRITICAL");
	assert_string_equal(v.status().c_str(), "FAIL");
	assert_string_equal(inconclusive_code("nccl_allreduce").c_str(), "INCONCLUSIVE_NCCL");
	assert_string_equal(inconclusive_code("site_gpfs-mount").c_str(),
	                    "INCONCLUSIVE_SITE_GPFS_MOUNT");
}

static void real_backend_here_is_no_gpu(void **)
{
	AdmitFixture fx("real", "SysfsRoot=" + unit_tmpdir() + "\n");
	fx.boot("n1", "boot-1");
	Run r = run_admit("--conf " + fx.conf +
	                  " --node n1 --checks inventory,mem_bw,nccl_allreduce"
	                  " --record");
	assert_int_equal(r.rc, 1);
	assert_contains(r.err, "onramp-admit: n1 FAIL NO_GPU:");
	assert_contains(r.out, "\"backend\":\"real\"");
	assert_contains(r.out, "\"simulated\":false");
	auto rec = read_record(fx.record("n1"));
	assert_true(rec.ok());
	assert_string_equal(rec->status.c_str(), "FAIL");
	assert_string_equal(rec->code.c_str(), "NO_GPU");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(every_profile_gives_its_code),
	    cmocka_unit_test(numbers_are_carried),
	    cmocka_unit_test(hang_times_out_and_leaves_nothing),
	    cmocka_unit_test(runner_reports_crashes_and_keeps_stdout_clean),
	    cmocka_unit_test(cli_records_pass_and_fail),
	    cmocka_unit_test(a_partial_run_never_records_a_pass),
	    cmocka_unit_test(an_unmeasured_check_records_inconclusive_not_fail),
	    cmocka_unit_test(real_backend_here_is_no_gpu),
	};
	return cmocka_run_group_tests_name("admit_sim", tests, NULL, NULL);
}
