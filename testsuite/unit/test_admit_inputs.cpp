// Our own bad input (baseline, sim profile, onramp.conf) is reported with
// the file and the field, and makes onramp-admit exit 2 without a verdict
// or a record: a node is never drained for our mistake.
#include "unit.hpp"

#include <cstring>

#include <sys/wait.h>

#include "admit/admission.hpp"
#include "admit/baseline.hpp"
#include "admit/profile.hpp"
#include "admit_fixture.hpp"

using namespace onramp;
using namespace onramp::admit;

static void shipped_baselines_parse(void **)
{
	for (const char *b : {"SIM-8GPU", "H200-SXM-8"}) {
		auto r = load_baseline(src_path(std::string("etc/baselines/") + b + ".json"));
		if (!r.ok())
			print_error("%s\n", r.status().message().c_str());
		assert_true(r.ok());
		assert_int_equal(r->gpu_count, 8);
		assert_int_equal(r->digest.size(), 64);
		assert_int_equal(r->affinity.size(), 8);
	}
	auto h = load_baseline(src_path("etc/baselines/H200-SXM-8.json"));
	Config c = Config::parse("", "x").value();
	// 90% of the H200 peak is AzHPC's 431 GB/s single-node threshold.
	assert_true(h->nccl_threshold_gbs(c) > 431.0 && h->nccl_threshold_gbs(c) < 433.0);
	assert_true(h->is_critical_xid(79));
	assert_false(h->is_critical_xid(13));
	assert_int_equal(h->timeout_s(c, "nccl_allreduce"), 600);
	auto s = load_baseline(src_path("etc/baselines/SIM-8GPU.json"));
	assert_true(s->nccl_threshold_gbs(c) > 387.8 && s->nccl_threshold_gbs(c) < 388.0);
	assert_int_equal(s->timeout_s(c, "mem_bw"), 300); // CheckTimeout's default
	// The check bundle's one-GPU baseline: the datasheet's memory peak, an
	// affinity entry that pins nothing (topology runs hwloc, judges nothing).
	auto one = load_baseline(src_path("etc/baselines/H200-SXM-1.json"));
	if (!one.ok())
		print_error("%s\n", one.status().message().c_str());
	assert_true(one.ok());
	assert_int_equal(one->gpu_count, 1);
	assert_true(one->peak_mem_bw_gbs == 4800 && h->peak_mem_bw_gbs == 4800);
	assert_int_equal(one->affinity.size(), 1);
	assert_true(one->affinity.at(0).nic.empty() && one->affinity.at(0).numa == -1);
	// The per-rail pass: H200-SXM-8's NDR rails; none on a host without HCAs.
	assert_true(h->rail_threshold_gbs(c) == 40 && h->peak_rail_busbw_gbs == 48);
	assert_true(one->rail_threshold_gbs(c) == 0);
}

static void baseline_errors_name_file_and_field(void **)
{
	std::string good = slurp(src_path("etc/baselines/SIM-8GPU.json"));
	struct {
		const char *from, *to, *expect;
	} cases[] = {
	    {"\"nccl_busbw_gbs\": 431", "\"nccl_busbw_gbs\": \"fast\"",
	     "b.json: field 'peak.nccl_busbw_gbs': expected a number"},
	    {"\"nccl_busbw_gbs\": 431,", "", "b.json: field 'peak.nccl_busbw_gbs': missing"},
	    {"\"gpu_count\": 8", "\"gpu_count\": 8, \"colour\": 1",
	     "b.json: field 'colour': unknown field"},
	    {"\"0\": {", "\"9\": {", "b.json: field 'affinity.9': key must be a GPU index"},
	    {"\"nccl_allreduce\": 5", "\"nccl_allreduc\": 5",
	     "b.json: field 'timeouts.nccl_allreduc': not a check name"},
	    {"\"pair_min_gbs\": 40", "\"pair_min_gbs\": -1",
	     "b.json: field 'thresholds.pair_min_gbs': must be a positive number"},
	    {"\"pair_min_gbs\": 40", "\"nccl_fraction\": 1.5",
	     "b.json: field 'thresholds.nccl_fraction': must be in (0, 1]"},
	    {"\"driver\":", "\"bios\":", "b.json: field 'versions.bios': unknown component"},
	    {"\"gpu_count\": 8", "\"gpu_count\": 0", "b.json: field 'gpu_count': must be in"},
	    {"\"best_of\": 3", "\"best_of\": 0", "b.json: field 'nccl.best_of': must be in"},
	    {"\"symbol_error\": 10", "\"symbol_errors\": 10",
	     "b.json: field 'fabric.counter_limits.symbol_errors': unknown counter "
	     "(symbol_error, "},
	    {"\"port_rcv_errors\": 10", "\"port_rcv_errors\": -1",
	     "b.json: field 'fabric.counter_limits.port_rcv_errors': expected a non-negative"},
	    {"\"width\": 4", "\"width\": 0", "b.json: field 'fabric.width': must be in [1, 32]"},
	    {"\"mask\": \"0x3ffff\"", "\"mask\": \"3ffff\"",
	     "b.json: field 'nvlink.mask': expected a non-zero hex bit mask"},
	    {"\"mask\": \"0x3ffff\"", "\"mask\": \"0xzz\"", "b.json: field 'nvlink.mask'"},
	    {"\"max_temp_c\": 85", "\"max_temp_c\": 850",
	     "b.json: field 'gpu_depth.max_temp_c': must be in [1, 200]"},
	    {"\"gpu_gen\": 5", "\"gpu_gen\": 7",
	     "b.json: field 'gpu_depth.pcie.gpu_gen': must be in"},
	    {"\"replay\": 100", "\"replays\": 100",
	     "b.json: field 'gpu_depth.nvlink_errors.replays': unknown counter"},
	    {"\"persistence\": true", "\"persistence\": true, \"throttle_fail\": [\"idle\"]",
	     "b.json: field 'gpu_depth.throttle_fail[0]': expected a throttle reason"},
	    {"\"persistence\": true", "\"persistence\": true, \"load_s\": 0",
	     "b.json: field 'gpu_depth.load_s': must be in [1, 3600]"},
	    {"\"persistence\": true", "\"persistence\": true, \"fan\": 1",
	     "b.json: field 'gpu_depth.fan': unknown field"},
	    {"\"rail_busbw_gbs\": 48", "\"rail_busbw_gbs\": 0",
	     "b.json: field 'peak.rail_busbw_gbs': must be a positive number"},
	    {"\"rail_busbw_gbs\": 48", "\"rail_gbs\": 48",
	     "b.json: field 'peak.rail_gbs': unknown field"},
	    {",\n    \"rail_busbw_gbs\": 48", "",
	     "b.json: field 'thresholds.rail_min_gbs': needs peak.rail_busbw_gbs"},
	    {"{", "[", "b.json:"},
	};
	for (auto &tc : cases) {
		std::string text = good;
		size_t pos = text.find(tc.from);
		assert_true(pos != std::string::npos);
		text.replace(pos, strlen(tc.from), tc.to);
		auto r = parse_baseline(text, "b.json");
		assert_false(r.ok());
		assert_contains(r.status().message(), tc.expect);
	}
	assert_true(parse_baseline(good, "b.json").ok());
	auto missing = load_baseline("/nonexistent/SKU.json");
	assert_contains(missing.status().message(), "/nonexistent/SKU.json");
}

static void profile_errors_name_file_and_field(void **)
{
	std::string good = slurp(src_path("etc/sim-profiles/healthy.json"));
	struct {
		const char *from, *to, *expect;
	} cases[] = {
	    {"\"model\": \"NVIDIA H200\"", "\"model\": \"NVIDIA H200\", \"colour\": \"red\"",
	     "p.json: field 'gpus[0].colour': unknown field"},
	    {"\"uuid\": \"GPU-0c1a5e00-0000-4000-8000-000000000000\",", "",
	     "p.json: field 'gpus[0].uuid': missing"},
	    {"\"corrupt\": false", "\"corrupt\": \"no\"",
	     "p.json: field 'nccl.corrupt': expected true or false"},
	    {"\"nvlink_down\": []", "\"nvlink_down\": [18]",
	     "p.json: field 'gpus[0].nvlink_down[0]': expected a link number"},
	    {"\"pair_busbw_gbs\": 46.5",
	     "\"pair_busbw_gbs\": 46.5, \"hang\": {\"check\": \"nccl\"}",
	     "p.json: field 'hang.check': 'nccl' is not a check name"},
	    {"\"rate_gbps\": 400", "\"rate_gbps\": \"400\"",
	     "p.json: field 'nics[0].ports[0].rate_gbps': expected a number"},
	    {"\"age_s\": 1200", "\"age_s\": -1", "p.json: field 'xids[0]'"},
	    {"\"mem_bw_gbs\": 4291.5", "\"mem_bw_gbs\": 4291.5, \"throttle\": [\"hot\"]",
	     "p.json: field 'gpus[0].throttle': 'hot' is not a throttle reason"},
	    {"\"mem_bw_gbs\": 4291.5", "\"mem_bw_gbs\": 4291.5, \"unmeasured\": [\"fan: gone\"]",
	     "p.json: field 'gpus[0].unmeasured': 'fan: gone' names no part"},
	    {"\"mem_bw_gbs\": 4291.5", "\"mem_bw_gbs\": 4291.5, \"pcie\": {\"gen\": 9}",
	     "p.json: field 'gpus[0].pcie': gen must be in [1, 6]"},
	    {"\"mem_bw_gbs\": 4291.5", "\"mem_bw_gbs\": 4291.5, \"processes\": [0]",
	     "p.json: field 'gpus[0].processes[0]': expected a process id"},
	    {"\"link_downed_after\": 2", "\"link_downed_after\": 2, \"counters\": {\"x\": 1}",
	     "p.json: field 'nics[0].ports[0].counters.x': unknown counter"},
	    {"\"mem_bw_gbs\": 4291.5", "\"mem_bw_gbs\": 4291.5, \"pair_busbw_gbs\": -2",
	     "p.json: field 'gpus[0].pair_busbw_gbs': must not be negative"},
	    {"\"link_downed_after\": 2", "\"link_downed_after\": 2, \"rail_busbw_gbs\": \"x\"",
	     "p.json: field 'nics[0].ports[0].rail_busbw_gbs': expected a number"},
	};
	for (auto &tc : cases) {
		std::string text = good;
		size_t pos = text.find(tc.from);
		assert_true(pos != std::string::npos);
		text.replace(pos, strlen(tc.from), tc.to);
		auto r = parse_profile(text, "p.json");
		assert_false(r.ok());
		assert_contains(r.status().message(), tc.expect);
	}
	assert_true(parse_profile(good, "p.json").ok());
}

static void prepare_reports_bad_input(void **)
{
	AdmitFixture fx;
	fx.boot("n1", "boot-A");
	// No profile for the node and no default.json.
	auto r = prepare_admission(fx.config(), "n1");
	assert_false(r.ok());
	assert_contains(r.status().message(), (fx.profiles + "/default.json").c_str());
	// default.json is used when there is no <node>.json.
	fx.profile("default", "healthy");
	assert_true(prepare_admission(fx.config(), "n1").ok());
	// A broken baseline.
	put(fx.baselines + "/SIM-8GPU.json", "{\"sku\": \"SIM-8GPU\"}");
	r = prepare_admission(fx.config(), "n1");
	assert_contains(r.status().message(), "SIM-8GPU.json: field 'gpu_count': missing");
	// A malformed AdmissionMounts: refused before any check runs.
	put(fx.baselines + "/SIM-8GPU.json", slurp(src_path("etc/baselines/SIM-8GPU.json")));
	std::string conf = slurp(fx.conf);
	put(fx.conf, conf + "AdmissionMounts=/ckpt\n");
	r = prepare_admission(fx.config(), "n1");
	assert_false(r.ok());
	assert_contains(r.status().message(), "AdmissionMounts (");
	assert_contains(r.status().message(), "'/ckpt' is not PATH:TYPE");
	put(fx.conf, conf);
	// No boot id.
	AdmitFixture fx2;
	fx2.profile("n1", "healthy");
	r = prepare_admission(fx2.config(), "n1");
	assert_contains(r.status().message(), "boot id");
}

static void cli_exit_2_names_file_and_field_and_records_nothing(void **)
{
	AdmitFixture fx;
	fx.boot("n1", "boot-A");
	std::string text = slurp(src_path("etc/sim-profiles/healthy.json"));
	text.replace(text.find("\"mem_bw_gbs\": 4291.5"), strlen("\"mem_bw_gbs\": 4291.5"),
	             "\"mem_bw_gbs\": \"lots\"");
	put(fx.profiles + "/n1.json", text);
	Run r = run_admit("--conf " + fx.conf + " --node n1 --record");
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, (fx.profiles + "/n1.json: field 'gpus[0].mem_bw_gbs'").c_str());
	assert_contains(r.out, "\"code\":\"BAD_INPUT\"");
	assert_true(access(fx.record("n1").c_str(), F_OK) != 0);

	// A bad onramp.conf names its line and key.
	put(fx.dir + "/bad.conf", "GpuBackend=sim\nNcclBusBwFraction=2\n");
	r = run_admit("--conf " + fx.dir + "/bad.conf --node n1");
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "bad.conf:2: key 'NcclBusBwFraction'");
	// Unknown check names and options.
	fx.profile("n1", "healthy");
	r = run_admit("--conf " + fx.conf + " --node n1 --checks inventory,gpu");
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "unknown check 'gpu'");
	r = run_admit("--conf " + fx.conf + " --node n1 --bogus");
	assert_int_equal(r.rc, 2);
	// $ONRAMP_CONF is the default configuration.
	setenv("ONRAMP_CONF", fx.conf.c_str(), 1);
	r = run_admit("--node n1 --checks inventory --json-only");
	unsetenv("ONRAMP_CONF");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.err.c_str(), "");
}

static void every_config_key_is_documented(void **)
{
	std::string man = slurp(src_path("doc/man/onramp.conf.5"));
	assert_false(man.empty());
	// Each key its own paragraph (.TP), never run into the one before.
	for (const auto &k : config_schema())
		assert_contains(man, (std::string(".TP\n.BI ") + k.name + "=").c_str());
	std::string admit = slurp(src_path("doc/man/onramp-admit.8"));
	for (const char *code : {"NO_GPU",
	                         "GPU_COUNT",
	                         "GPU_MODEL",
	                         "VERSION_MISMATCH",
	                         "ECC_UNCORRECTED",
	                         "ROW_REMAP",
	                         "XID_CRITICAL",
	                         "NVLINK_DOWN",
	                         "MEM_BW_LOW",
	                         "NCCL_BW_LOW",
	                         "NCCL_CORRUPT",
	                         "PAIR_BW_LOW",
	                         "PAIR_INCONCLUSIVE",
	                         "PORT_DOWN",
	                         "PORT_RATE_LOW",
	                         "PORT_FLAPPING",
	                         "PORT_MISSING",
	                         "AFFINITY_MISMATCH",
	                         "MOUNT_MISSING",
	                         "MOUNT_TYPE",
	                         "MOUNT_NOT_WRITABLE",
	                         "MOUNT_FULL",
	                         "CKPT_BW_LOW",
	                         "SERVICE_INACTIVE",
	                         "CLOCK_UNSYNC",
	                         "CLOCK_OFFSET",
	                         "KERNEL_CMDLINE",
	                         "SYSCTL_MISMATCH",
	                         "NOT_AVAILABLE",
	                         "DCGM_SM_STRESS",
	                         "CHECK_TIMEOUT",
	                         "CHECK_ERROR",
	                         "BAD_INPUT",
	                         "INCONCLUSIVE_<CHECK>",
	                         "INCONCLUSIVE_NCCL",
	                         "SITE_<NAME>",
	                         "NHC"})
		assert_contains(admit, code);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(shipped_baselines_parse),
	    cmocka_unit_test(baseline_errors_name_file_and_field),
	    cmocka_unit_test(profile_errors_name_file_and_field),
	    cmocka_unit_test(prepare_reports_bad_input),
	    cmocka_unit_test(cli_exit_2_names_file_and_field_and_records_nothing),
	    cmocka_unit_test(every_config_key_is_documented),
	};
	return cmocka_run_group_tests_name("admit_inputs", tests, NULL, NULL);
}
