// The host and dcgm checks: their parsers (mountinfo, chronyc CSV, dcgmi
// JSON), the pure evaluate_host/evaluate_dcgm on a pass and on every
// failure, and the observers against a fixture HostRoot and the testsuite's
// stand-in tools (testsuite/doubles: test doubles of dcgmi, chronyc,
// systemctl).
#include <cmath>
#include <sys/stat.h>
#include <unistd.h>

#include "admit/baseline.hpp"
#include "admit/dcgm.hpp"
#include "admit/host.hpp"
#include "admit_fixture.hpp"
#include "unit.hpp"

using namespace onramp;
using namespace onramp::admit;

namespace {

const char *const kMountinfo =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "40 22 0:40 / /ckpt rw,relatime shared:20 - lustre 10.0.0.1@o2ib:/ckpt rw,flock\n"
    "41 22 0:41 / /data rw master:3 - nfs4 filer:/data rw,vers=4.2\n"
    "42 22 0:42 / /with\\040blank rw - tmpfs tmpfs rw\n"
    "garbage line\n"
    "43 22 0:43 / relative rw - tmpfs tmpfs rw\n";

} // namespace

static void mountinfo_is_parsed_and_bad_lines_skipped(void **)
{
	int bad = 0;
	auto v = parse_mountinfo(kMountinfo, &bad);
	assert_int_equal(v.size(), 4);
	assert_int_equal(bad, 2);
	assert_string_equal(v[1].mount_point.c_str(), "/ckpt");
	assert_string_equal(v[1].fstype.c_str(), "lustre");
	assert_string_equal(v[1].source.c_str(), "10.0.0.1@o2ib:/ckpt");
	assert_string_equal(v[2].fstype.c_str(), "nfs4"); // an optional field before '-'
	assert_string_equal(v[3].mount_point.c_str(), "/with blank");
	// No '-' separator, too few fields after it: skipped.
	assert_int_equal(parse_mountinfo("1 2 3:4 / /x rw shared:1 ext4 /dev/x rw\n", &bad).size(),
	                 0);
	assert_int_equal(parse_mountinfo("1 2 3:4 / /x rw - ext4\n", &bad).size(), 0);
	assert_int_equal(parse_mountinfo("", &bad).size(), 0);
}

static void mount_list_config(void **)
{
	auto m = parse_mount_list("/ckpt:lustre:500, /data:nfs4");
	assert_true(m.ok());
	assert_int_equal(m->size(), 2);
	assert_true(m.value()[0].min_free_gib == 500);
	assert_string_equal(m.value()[1].type.c_str(), "nfs4");
	for (const char *bad : {"/ckpt", "ckpt:lustre", "/ckpt:", "/a:b:c:d", "/ckpt:lustre:-1",
	                        "/ckpt:lustre:x", "/a/../b:nfs", "/a:nfs,/a:nfs"})
		assert_false(parse_mount_list(bad).ok());
}

static void chronyc_tracking_csv(void **)
{
	auto c =
	    parse_chronyc_tracking("C0A80001,ntp1,2,1765100000.0,-0.000250000,0.0,0.0,-9.1,0.0,"
	                           "0.04,0.0005,0.0002,64.2,Normal\n");
	assert_true(c.ok());
	assert_true(c->synced);
	assert_true(std::fabs(c->offset_s + 0.00025) < 1e-12);
	assert_int_equal(c->stratum, 2);
	auto u = parse_chronyc_tracking("00000000,,0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,1.0,1.0,0.0,Not "
	                                "synchronised\n");
	assert_true(u.ok());
	assert_false(u->synced);
	assert_false(parse_chronyc_tracking("").ok());
	assert_false(parse_chronyc_tracking("506 Cannot talk to daemon\n").ok());
	assert_false(parse_chronyc_tracking("C0A80001,ntp1,x,0,0.1,0,0,0,0,0,0,0,0,Normal\n").ok());
	assert_false(parse_chronyc_tracking("C0A80001,ntp1,2,0,nan,0,0,0,0,0,0,0,0,Normal\n").ok());
}

static void sysctl_keys_and_service_names(void **)
{
	assert_string_equal(sysctl_path("net.core.rmem_max")->c_str(),
	                    "proc/sys/net/core/rmem_max");
	assert_string_equal(sysctl_path("net/ipv4/conf/eth0.1/rp_filter")->c_str(),
	                    "proc/sys/net/ipv4/conf/eth0.1/rp_filter");
	for (const char *bad : {"", "net..core", "../etc/shadow", "a/../../b", "net.core rmem"})
		assert_false(sysctl_path(bad).ok());
	assert_true(valid_service_name("nvidia-fabricmanager"));
	assert_true(valid_service_name("getty@tty1.service"));
	assert_false(valid_service_name("--now"));
	assert_false(valid_service_name("a b"));
	assert_false(valid_service_name(""));
}

namespace {

HostSpec full_spec()
{
	HostSpec s;
	s.mounts = {{"/ckpt", "lustre", 100}, {"/data", "nfs4", 0}};
	s.ckpt_mount = "/ckpt";
	s.io_bytes = 1 << 20;
	s.ckpt_write_min_gbs = 1;
	s.ckpt_read_min_gbs = 2;
	s.services = {"munge", "nvidia-fabricmanager"};
	s.clock_max_offset_s = 0.001;
	s.cmdline = {"iommu=pt"};
	s.sysctl = {{"vm.swappiness", "0"}};
	return s;
}

HostObs healthy_obs(const HostSpec &s)
{
	HostObs o;
	for (const auto &m : s.mounts) {
		HostObs::Mount x;
		x.spec = m;
		x.mounted = true;
		x.fstype = m.type;
		x.free_known = true;
		x.free_gib = 1000;
		x.write_known = x.writable = true;
		o.mounts.push_back(x);
	}
	o.io.attempted = o.io.measured = true;
	o.io.mount = "/ckpt";
	o.io.bytes = 1000000000;
	o.io.write_s = 0.5; // 2 GB/s
	o.io.read_s = 0.25; // 4 GB/s
	for (const auto &n : s.services)
		o.services.push_back({n, "active", true, ""});
	o.clock_wanted = o.clock_known = true;
	o.clock.synced = true;
	o.clock.offset_s = -0.0002;
	o.clock.ref_name = "ntp1";
	o.clock.leap = "Normal";
	o.cmdline_known = true;
	o.cmdline = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 iommu=pt quiet\n";
	o.sysctl["vm.swappiness"] = "0";
	return o;
}

void expect(const CheckResult &r, CheckStatus st, const char *code, const char *part)
{
	if (r.status != st || r.code != code)
		print_error("got %s %s: %s\n", check_status_name(r.status), r.code.c_str(),
		            r.detail.c_str());
	assert_int_equal(r.status, st);
	assert_string_equal(r.code.c_str(), code);
	if (part)
		assert_contains(r.detail, part);
}

} // namespace

static void host_passes_and_names_each_failing_part(void **)
{
	HostSpec s = full_spec();
	expect(evaluate_host(healthy_obs(s), s), CheckStatus::Pass, "OK", "2 mounts ok");

	HostObs o = healthy_obs(s);
	o.mounts[1].mounted = false;
	expect(evaluate_host(o, s), CheckStatus::Fail, "MOUNT_MISSING", "/data not mounted");
	o = healthy_obs(s);
	o.mounts[0].fstype = "nfs";
	expect(evaluate_host(o, s), CheckStatus::Fail, "MOUNT_TYPE",
	       "/ckpt is nfs, expected lustre");
	o = healthy_obs(s);
	o.mounts[1].writable = false;
	o.mounts[1].write_error = "create in /data: Permission denied";
	expect(evaluate_host(o, s), CheckStatus::Fail, "MOUNT_NOT_WRITABLE", "/data not writable");
	o = healthy_obs(s);
	o.mounts[0].free_gib = 12.5;
	expect(evaluate_host(o, s), CheckStatus::Fail, "MOUNT_FULL",
	       "/ckpt 12.5 GiB free < 100 GiB");
	o = healthy_obs(s);
	o.io.write_s = 2; // 0.5 GB/s
	expect(evaluate_host(o, s), CheckStatus::Fail, "CKPT_BW_LOW", "/ckpt write 0.50 GB/s < 1");
	o = healthy_obs(s);
	o.io.read_s = 1; // 1 GB/s
	expect(evaluate_host(o, s), CheckStatus::Fail, "CKPT_BW_LOW", "read 1.00 GB/s < 2");
	o = healthy_obs(s);
	o.services[1].state = "failed";
	expect(evaluate_host(o, s), CheckStatus::Fail, "SERVICE_INACTIVE",
	       "nvidia-fabricmanager is failed");
	o = healthy_obs(s);
	o.clock.offset_s = 0.5;
	expect(evaluate_host(o, s), CheckStatus::Fail, "CLOCK_OFFSET",
	       "offset 0.500000 s > 0.001 s");
	o = healthy_obs(s);
	o.clock.synced = false;
	o.clock.leap = "Not synchronised";
	expect(evaluate_host(o, s), CheckStatus::Fail, "CLOCK_UNSYNC", "not synchronised");
	o = healthy_obs(s);
	o.cmdline = "root=/dev/sda1 quiet";
	expect(evaluate_host(o, s), CheckStatus::Fail, "KERNEL_CMDLINE", "lacks iommu=pt");
	o = healthy_obs(s);
	o.sysctl["vm.swappiness"] = "60";
	expect(evaluate_host(o, s), CheckStatus::Fail, "SYSCTL_MISMATCH",
	       "vm.swappiness = 60, expected 0");
	// Several: the most severe code first, every part in the detail.
	o = healthy_obs(s);
	o.services[0].state = "inactive";
	o.mounts[0].mounted = false;
	o.io.measured = false;
	o.io.error = "create: No such file or directory";
	CheckResult r = evaluate_host(o, s);
	expect(r, CheckStatus::Fail, "MOUNT_MISSING", "munge is inactive");
	assert_true(r.detail.find("bandwidth") == std::string::npos); // the missing mount says it
}

static void host_unmeasured_is_not_available_never_pass(void **)
{
	HostSpec s = full_spec();
	HostObs o = healthy_obs(s);
	o.clock_known = false;
	o.clock_error = "/usr/bin/chronyc not available (No such file or directory)";
	expect(evaluate_host(o, s), CheckStatus::Error, "NOT_AVAILABLE", "chronyc not available");
	o = healthy_obs(s);
	o.services[0].known = false;
	o.services[0].error = "/bin/systemctl not available";
	expect(evaluate_host(o, s), CheckStatus::Error, "NOT_AVAILABLE", "service munge");
	o = healthy_obs(s);
	o.sysctl.clear();
	o.sysctl_errors["vm.swappiness"] = "No such file";
	expect(evaluate_host(o, s), CheckStatus::Error, "NOT_AVAILABLE", "sysctl vm.swappiness");
	// A failure outranks what could not be measured.
	o.services[1].state = "inactive";
	expect(evaluate_host(o, s), CheckStatus::Fail, "SERVICE_INACTIVE", "not measured: sysctl");
	// Nothing configured: skipped.
	expect(evaluate_host(HostObs(), HostSpec()), CheckStatus::Skip, "SKIPPED", "not checked");
}

static void host_observed_under_a_fixture_root(void **)
{
	std::string root = unit_tmpdir();
	chmod(root.c_str(), 0755);
	mkdir((root + "/proc").c_str(), 0755);
	mkdir((root + "/proc/self").c_str(), 0755);
	mkdir((root + "/proc/sys").c_str(), 0755);
	mkdir((root + "/proc/sys/vm").c_str(), 0755);
	mkdir((root + "/ckpt").c_str(), 01777);
	chmod((root + "/ckpt").c_str(), 01777);
	mkdir((root + "/data").c_str(), 0755); // root's: the test user cannot write
	put(root + "/proc/self/mountinfo", kMountinfo);
	put(root + "/proc/cmdline", "root=/dev/sda1 iommu=pt\n");
	put(root + "/proc/sys/vm/swappiness", "0\n");
	std::string tools = root + "/bin";
	mkdir(tools.c_str(), 0755);
	for (const char *t : {"chronyc", "systemctl", "dcgmi"})
		assert_int_equal(symlink(src_path(std::string("testsuite/doubles/") + t).c_str(),
		                         (tools + "/" + t).c_str()),
		                 0);
	put(tools + "/systemctl.inactive", "nvidia-fabricmanager\n");
	auto cfg =
	    Config::parse("HostRoot=" + root + "\nAdmissionMounts=/ckpt:lustre,/data:nfs4\n" +
	                      "AdmissionCheckpointMount=/ckpt\nAdmissionIoBytes=3000000\n" +
	                      "AdmissionServices=munge,nvidia-fabricmanager\n" +
	                      "AdmissionClockMaxOffset=0.001\nSystemctlCommand=" + tools +
	                      "/systemctl\nChronycCommand=" + tools + "/chronyc\n",
	                  "test.conf");
	assert_true(cfg.ok());
	auto spec = host_spec(cfg.value(), {"iommu=pt"}, {{"vm.swappiness", "0"}}, 0, 0);
	assert_true(spec.ok());
	HostObs o = observe_host(spec.value(), cfg.value(), "n1");
	assert_string_equal(o.mountinfo_error.c_str(), "");
	assert_int_equal(o.mounts.size(), 2);
	assert_true(o.mounts[0].mounted && o.mounts[0].writable);
	assert_true(o.io.measured);
	assert_int_equal(o.io.bytes, 3000000);
	// The test file is gone.
	std::string left = slurp(root + "/ckpt/.onramp-admit-n1-0");
	assert_true(left.empty());
	if (geteuid() == 0) { // as root the probe runs as nobody: /data is root's 0755
		assert_true(o.mounts[1].write_known);
		assert_false(o.mounts[1].writable);
	}
	assert_true(o.clock_known);
	assert_true(o.cmdline_known);
	assert_string_equal(o.sysctl["vm.swappiness"].c_str(), "0");
	CheckResult r = evaluate_host(o, spec.value());
	expect(r, CheckStatus::Fail, geteuid() == 0 ? "MOUNT_NOT_WRITABLE" : "SERVICE_INACTIVE",
	       "nvidia-fabricmanager is inactive");
	// Not mounted when mountinfo lacks it.
	put(root + "/proc/self/mountinfo", "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n");
	o = observe_host(spec.value(), cfg.value(), "n1");
	expect(evaluate_host(o, spec.value()), CheckStatus::Fail, "MOUNT_MISSING",
	       "/ckpt not mounted");
	// Missing tools: not available.
	auto cfg2 = Config::parse("HostRoot=" + root + "\nAdmissionClockMaxOffset=1\n" +
	                              "ChronycCommand=" + root + "/nowhere/chronyc\n",
	                          "test.conf");
	auto spec2 = host_spec(cfg2.value(), {}, {}, 0, 0);
	expect(evaluate_host(observe_host(spec2.value(), cfg2.value(), "n1"), spec2.value()),
	       CheckStatus::Error, "NOT_AVAILABLE", "chronyc not available");
	// The checkpoint mount must be one of the mounts.
	auto cfg3 = Config::parse("AdmissionMounts=/data:nfs4\nAdmissionCheckpointMount=/ckpt\n",
	                          "test.conf");
	auto bad = host_spec(cfg3.value(), {}, {}, 0, 0);
	assert_false(bad.ok());
	assert_contains(bad.status().message(), "AdmissionCheckpointMount (test.conf:2)");
	auto cfg4 = Config::parse("AdmissionMounts=/data\n", "test.conf");
	bad = host_spec(cfg4.value(), {}, {}, 0, 0);
	assert_false(bad.ok());
	assert_contains(bad.status().message(), "AdmissionMounts (test.conf:1): '/data' is not");
}

static const char *const kDcgmFail = R"(WARNING: a line dcgmi printed first
{"DCGM GPU Diagnostic": {"test_categories": [
  {"category": "Deployment", "tests": [
     {"name": "Denylist", "results": [{"gpu_ids": "0,1,2,3", "status": "PASS"}]}, null]},
  {"category": "Hardware", "tests": [
     {"name": "SM Stress", "results": [
        {"gpu_ids": "2", "status": "Pass"},
        {"gpu_ids": 3, "status": "Fail",
         "warnings": [{"warning": "SM stress failed: 12 errors", "error_id": 43}]}]},
     {"name": "Page Retirement/Row Remap", "results": [
        {"gpu_ids": "1", "status": "Warn", "warnings": ["retired pages"]}]}]}],
  "version": "3.3.5"}})";

static void dcgm_json_and_codes(void **)
{
	auto r = parse_dcgm_diag(kDcgmFail);
	assert_true(r.ok());
	assert_int_equal(r->results, 4);
	assert_int_equal(r->failures.size(), 1);
	assert_int_equal(r->warnings.size(), 1);
	assert_string_equal(r->failures[0].test.c_str(), "SM Stress");
	assert_int_equal(r->failures[0].gpus.size(), 1);
	assert_int_equal(r->failures[0].gpus[0], 3);
	assert_string_equal(r->failures[0].message.c_str(), "SM stress failed: 12 errors");
	assert_string_equal(r->version.c_str(), "3.3.5");
	assert_string_equal(dcgm_code("SM Stress").c_str(), "DCGM_SM_STRESS");
	assert_string_equal(dcgm_code("Page Retirement/Row Remap").c_str(),
	                    "DCGM_PAGE_RETIREMENT_ROW_REMAP");
	assert_string_equal(dcgm_code("").c_str(), "DCGM_UNNAMED");
	for (const char *bad :
	     {"", "not json", "{}", "{\"DCGM GPU Diagnostic\": 3}",
	      "{\"DCGM GPU Diagnostic\": {\"test_categories\": 1}}",
	      "{\"DCGM GPU Diagnostic\": {\"test_categories\": [{\"tests\": [{\"name\": 1}]}]}}",
	      "{\"DCGM GPU Diagnostic\": {\"test_categories\": [{\"tests\": [{\"name\": \"x\", "
	      "\"results\": [{\"gpu_ids\": \"a\", \"status\": \"Pass\"}]}]}]}}",
	      "{\"DCGM GPU Diagnostic\": {\"test_categories\": [{\"tests\": [{\"name\": \"x\", "
	      "\"results\": [{\"gpu_ids\": \"1\"}]}]}]}}"})
		assert_false(parse_dcgm_diag(bad).ok());
	auto rt = parse_dcgm_diag("{\"DCGM GPU Diagnostic\": {\"runtime_error\": \"no GPUs\"}}");
	assert_true(rt.ok());
	assert_string_equal(rt->runtime_error.c_str(), "no GPUs");
}

static void dcgm_evaluated_pass_fail_and_not_available(void **)
{
	DcgmObs o;
	o.available = o.parsed = true;
	o.level = 3;
	o.rc = 1;
	o.report = parse_dcgm_diag(kDcgmFail).value();
	expect(evaluate_dcgm(o, false), CheckStatus::Fail, "DCGM_SM_STRESS",
	       "SM Stress GPU 3: SM stress failed: 12 errors");
	o.report.failures.clear();
	o.rc = 0;
	expect(evaluate_dcgm(o, false), CheckStatus::Pass, "OK", "diag -r 3 passed");
	o.rc = 1; // no failed test, yet dcgmi says it failed: cannot tell
	expect(evaluate_dcgm(o, false), CheckStatus::Error, "CHECK_ERROR", "exited 1");
	o.rc = 0;
	o.report.results = 0;
	o.report.runtime_error = "no GPUs found";
	expect(evaluate_dcgm(o, false), CheckStatus::Error, "CHECK_ERROR", "no GPUs found");
	o.parsed = false;
	o.why = "did not finish within 900 s";
	expect(evaluate_dcgm(o, true), CheckStatus::Error, "CHECK_ERROR", "900 s");
	DcgmObs na;
	na.why = "/usr/bin/dcgmi not installed";
	CheckResult r = evaluate_dcgm(na, false);
	expect(r, CheckStatus::Skip, "NOT_AVAILABLE", "not installed");
	assert_true(r.status != CheckStatus::Pass);
	expect(evaluate_dcgm(na, true), CheckStatus::Error, "NOT_AVAILABLE", "DcgmRequired=yes");
	na.level = 0;
	expect(evaluate_dcgm(na, true), CheckStatus::Skip, "SKIPPED", "DcgmDiagLevel=0");
}

static void dcgm_observed_through_the_test_double(void **)
{
	std::string dir = unit_tmpdir();
	std::string bin = dir + "/dcgmi";
	assert_int_equal(symlink(src_path("testsuite/doubles/dcgmi").c_str(), bin.c_str()), 0);
	auto cfg = Config::parse("DcgmiCommand=" + bin + "\nDcgmDiagLevel=3\nDcgmTimeout=10\n",
	                         "test.conf");
	assert_true(cfg.ok());
	expect(evaluate_dcgm(observe_dcgm(cfg.value(), "n1"), true), CheckStatus::Pass, "OK",
	       "diag -r 3 passed");
	put(dir + "/dcgmi.scenario", "fail Targeted_Power 5 power below the limit\n");
	expect(evaluate_dcgm(observe_dcgm(cfg.value(), "n1"), true), CheckStatus::Fail,
	       "DCGM_TARGETED_POWER", "Targeted Power GPU 5: power below the limit");
	put(dir + "/dcgmi.scenario", "no-hostengine\n");
	expect(evaluate_dcgm(observe_dcgm(cfg.value(), "n1"), true), CheckStatus::Error,
	       "NOT_AVAILABLE", "no DCGM host engine");
	put(dir + "/dcgmi.scenario", "garbage\n");
	expect(evaluate_dcgm(observe_dcgm(cfg.value(), "n1"), true), CheckStatus::Error,
	       "CHECK_ERROR", "no JSON object");
	auto none = Config::parse("DcgmiCommand=" + dir + "/none\n", "test.conf");
	expect(evaluate_dcgm(observe_dcgm(none.value(), "n1"), false), CheckStatus::Skip,
	       "NOT_AVAILABLE", "not installed");
}

static void baseline_host_section(void **)
{
	std::string base = slurp(src_path("etc/baselines/SIM-8GPU.json"));
	std::string with = base.substr(0, base.rfind('}')) +
	                   ", \"host\": {\"cmdline\": [\"iommu=pt\"], \"sysctl\": "
	                   "{\"vm.swappiness\": \"0\"}, \"ckpt_write_gbs\": 5, "
	                   "\"ckpt_read_gbs\": 8}}";
	auto b = parse_baseline(with, "SIM-8GPU.json");
	assert_true(b.ok());
	assert_int_equal(b->host_cmdline.size(), 1);
	assert_true(b->ckpt_write_min_gbs == 5 && b->ckpt_read_min_gbs == 8);
	std::string bad =
	    base.substr(0, base.rfind('}')) + ", \"host\": {\"sysctl\": {\"../x\": \"0\"}}}";
	auto e = parse_baseline(bad, "SIM-8GPU.json");
	assert_false(e.ok());
	assert_contains(e.status().message(), "host.sysctl");
	bad = base.substr(0, base.rfind('}')) + ", \"host\": {\"cmdline\": [\"a b\"]}}";
	assert_false(parse_baseline(bad, "SIM-8GPU.json").ok());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(mountinfo_is_parsed_and_bad_lines_skipped),
	    cmocka_unit_test(mount_list_config),
	    cmocka_unit_test(chronyc_tracking_csv),
	    cmocka_unit_test(sysctl_keys_and_service_names),
	    cmocka_unit_test(host_passes_and_names_each_failing_part),
	    cmocka_unit_test(host_unmeasured_is_not_available_never_pass),
	    cmocka_unit_test(host_observed_under_a_fixture_root),
	    cmocka_unit_test(dcgm_json_and_codes),
	    cmocka_unit_test(dcgm_evaluated_pass_fail_and_not_available),
	    cmocka_unit_test(dcgm_observed_through_the_test_double),
	    cmocka_unit_test(baseline_host_section),
	};
	return cmocka_run_group_tests_name("admit_host", tests, NULL, NULL);
}
