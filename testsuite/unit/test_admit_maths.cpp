// Bandwidth maths (nccl-tests definitions), best-of-N, the NCCL judgement
// and the Slurm reason string.
#include "unit.hpp"

#include <cmath>

#include "admit/bandwidth.hpp"
#include "admit/checks.hpp"
#include "admit/record.hpp"

using namespace onramp::admit;

static void close_to(double a, double b)
{
	if (std::fabs(a - b) > 1e-9 * std::max(1.0, std::fabs(b))) {
		print_error("%.12g != %.12g\n", a, b);
		fail();
	}
}

static void bus_factor_is_2_n_minus_1_over_n(void **)
{
	close_to(allreduce_bus_factor(8), 1.75);
	close_to(allreduce_bus_factor(2), 1.0);
	close_to(allreduce_bus_factor(4), 1.5);
	close_to(allreduce_bus_factor(1), 0.0);
	close_to(allreduce_bus_factor(0), 0.0);
}

static void algbw_and_busbw_use_gb_of_1e9(void **)
{
	close_to(algbw_gbs(1000000000, 1.0), 1.0);
	close_to(algbw_gbs(1ull << 30, 0.5), 2.147483648);
	close_to(algbw_gbs(100, 0), 0);
	// 1 GiB in 4.3 ms over 8 GPUs: algbw 249.7 GB/s, busbw x1.75.
	double alg = algbw_gbs(1ull << 30, 0.0043);
	close_to(allreduce_busbw_gbs(1ull << 30, 0.0043, 8), alg * 1.75);
	assert_true(allreduce_busbw_gbs(1ull << 30, 0.0043, 8) > 436.98);
	assert_true(allreduce_busbw_gbs(1ull << 30, 0.0043, 8) < 436.99);
	// The inverse used by the simulator.
	double t = allreduce_seconds_for(1ull << 30, 443.5, 8);
	close_to(allreduce_busbw_gbs(1ull << 30, t, 8), 443.5);
	assert_true(std::isinf(allreduce_seconds_for(1, 0, 8)));
}

static void copy_bandwidth_counts_read_and_write(void **)
{
	// 20 copies of 1 GB in 10 ms: 20 GB moved each way.
	close_to(copy_bw_gbs(1000000000, 20, 0.01), 4000.0);
	close_to(copy_bw_gbs(1000000000, 0, 0.01), 0.0);
}

static void best_of_keeps_every_sample(void **)
{
	BestOf b = best_of({298.7, 301.2, NAN, 300.1});
	assert_true(b.valid);
	close_to(b.best, 301.2);
	assert_int_equal(b.samples.size(), 4);
	close_to(b.samples[0], 298.7);
	close_to(b.samples[3], 300.1);
	assert_false(best_of({}).valid);
	assert_false(best_of({NAN}).valid);
}

static NcclRun run_of(const std::vector<double> &busbw, uint64_t wrong = 0)
{
	NcclRun r;
	r.nranks = 8;
	r.bytes = 1ull << 30;
	r.iterations = 20;
	for (double b : busbw)
		r.samples.push_back(NcclSample{allreduce_seconds_for(r.bytes, b, 8), wrong});
	return r;
}

static void nccl_judgement_best_of_n(void **)
{
	CheckResult ok = evaluate_nccl(run_of({380.0, 441.2, 385.0}), 387.9, 8);
	assert_int_equal(ok.status, CheckStatus::Pass);
	close_to(ok.value, 441.2);
	assert_int_equal(ok.samples.size(), 3);
	close_to(ok.samples[0], 380.0);
	close_to(ok.samples[2], 385.0);

	CheckResult low = evaluate_nccl(run_of({301.2, 298.7, 300.1}), 387.9, 8);
	assert_int_equal(low.status, CheckStatus::Fail);
	assert_string_equal(low.code.c_str(), "NCCL_BW_LOW");
	assert_string_equal(low.detail.c_str(),
	                    "nccl_allreduce busbw 301.2 GB/s < 387.9 GB/s (best of 3)");
	close_to(low.threshold, 387.9);
	assert_string_equal(low.unit.c_str(), "GB/s");

	// Fast but wrong is corrupt, not slow and not a pass.
	CheckResult bad = evaluate_nccl(run_of({441.2, 446.0, 443.5}, 5), 387.9, 8);
	assert_string_equal(bad.code.c_str(), "NCCL_CORRUPT");
	assert_int_equal(bad.status, CheckStatus::Fail);
}

// One rank: busbw = algbw * 2(n-1)/n is 0 whatever the speed, so a
// one-GPU SKU neither fails as slow nor passes on a number; the sums are
// still checked, and a GPU missing from a many-GPU SKU's run fails.
static void nccl_one_rank_measures_nothing(void **)
{
	NcclRun one;
	one.nranks = 1;
	one.bytes = 1ull << 30;
	one.iterations = 20;
	one.samples = {NcclSample{0.0005, 0}, NcclSample{0.0004, 0}};
	close_to(allreduce_busbw_gbs(one.bytes, one.samples[0].seconds, 1), 0.0);
	CheckResult r = evaluate_nccl(one, 387.9, 1);
	assert_int_equal(r.status, CheckStatus::Skip);
	assert_string_equal(r.code.c_str(), "SKIPPED");
	assert_true(std::isnan(r.value)); // no 0 GB/s that reads as a measurement
	assert_int_equal(r.samples.size(), 0);
	assert_contains(r.detail, "one-rank all-reduce moves no data");
	assert_contains(r.to_json().dump(), "\"nranks\":1");

	one.samples[1].wrong = 3;
	r = evaluate_nccl(one, 387.9, 1);
	assert_string_equal(r.code.c_str(), "NCCL_CORRUPT");
	assert_int_equal(r.status, CheckStatus::Fail);

	one.samples[1].wrong = 0;
	r = evaluate_nccl(one, 387.9, 8); // CUDA_VISIBLE_DEVICES=0 on an 8-GPU node
	assert_string_equal(r.code.c_str(), "GPU_COUNT");
	assert_contains(r.detail, "ran over 1 GPUs, the SKU has 8");

	NcclRun none;
	assert_string_equal(evaluate_nccl(none, 387.9, 1).code.c_str(), "NO_GPU");
}

// Two GPUs: bus factor 1, busbw = algbw; judged like eight.
static void nccl_two_ranks_busbw_equals_algbw(void **)
{
	NcclRun two;
	two.nranks = 2;
	two.bytes = 1000000000;
	two.iterations = 1;
	two.samples = {NcclSample{0.01, 0}};
	CheckResult r = evaluate_nccl(two, 50, 2);
	close_to(r.value, 100.0);
	assert_int_equal(r.status, CheckStatus::Pass);
	r = evaluate_nccl(two, 150, 2);
	assert_string_equal(r.code.c_str(), "NCCL_BW_LOW");
}

// The mem_bw check against the plain-copy reference and the peak.
static void copy_bandwidth_fractions(void **)
{
	close_to(bandwidth_fraction(4300, 4800), 4300.0 / 4800);
	close_to(bandwidth_fraction(4200, 4300), 4200.0 / 4300);
	assert_true(std::isnan(bandwidth_fraction(4300, 0)));
	assert_true(std::isnan(bandwidth_fraction(4300, NAN)));
	assert_true(std::isnan(bandwidth_fraction(NAN, 4300)));
	// Both sides in the same units: 20 copies of 4 GiB, events 40 ms and
	// the wall clock 41 ms, give 0.9756 whatever the byte count.
	double ev = copy_bw_gbs(4ull << 30, 20, 0.040), wall = copy_bw_gbs(4ull << 30, 20, 0.041);
	close_to(bandwidth_fraction(ev, wall), 0.041 / 0.040);
	close_to(ev, 2.0 * (4ull << 30) * 20 / 0.040 / 1e9);

	MemBwObs obs;
	obs.gbs = {4300, 3000};
	obs.plain_copy_gbs = {4250};
	CheckResult r = evaluate_mem_bw(obs, 3840, 4800);
	assert_string_equal(r.code.c_str(), "MEM_BW_LOW");
	assert_contains(r.detail, "GPU 1 3000.0 GB/s");
	std::string j = r.to_json().dump();
	assert_contains(j, "\"peak_gbs\":4800");
	assert_contains(j, "\"plain_copy_gbs\":4250");
	assert_contains(j, "\"plain_copy_gbs\":null"); // GPU 1: not measured
	assert_contains(j, "\"fraction_of_peak\":0.625");
}

static bool valid_utf8(const std::string &s)
{
	for (size_t i = 0; i < s.size();) {
		unsigned char c = static_cast<unsigned char>(s[i]);
		size_t n = c < 0x80         ? 1
		           : (c >> 5) == 6  ? 2
		           : (c >> 4) == 14 ? 3
		           : (c >> 3) == 30 ? 4
		                            : 0;
		if (n == 0 || i + n > s.size())
			return false;
		for (size_t k = 1; k < n; k++)
			if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80)
				return false;
		i += n;
	}
	return true;
}

static void reason_string_format_and_truncation(void **)
{
	assert_string_equal(reason_string("NCCL_BW_LOW", "busbw 301.2 GB/s").c_str(),
	                    "onramp:NCCL_BW_LOW: busbw 301.2 GB/s");
	assert_string_equal(reason_string("X", "a\nb\tc").c_str(), "onramp:X: a b c");
	std::string longd(200, 'x');
	std::string r = reason_string("PORT_DOWN", longd);
	assert_int_equal(r.size(), 99);
	assert_string_equal(r.substr(r.size() - 3).c_str(), "...");
	assert_int_equal(r.find("onramp:PORT_DOWN: xxx"), 0);
	// Multi-byte characters across the cut: every offset, never split.
	for (size_t pad = 0; pad < 4; pad++) {
		std::string d = std::string(pad, 'y');
		for (int i = 0; i < 60; i++)
			d += "\xe2\x86\x92\xc3\xa9"; // "→é"
		std::string rr = reason_string("XID_CRITICAL", d);
		assert_true(rr.size() <= 99);
		assert_true(rr.size() >= 95);
		assert_true(valid_utf8(rr));
	}
	// utf8_truncate: exact boundaries.
	assert_string_equal(utf8_truncate("ab\xc3\xa9", 3).c_str(), "ab");
	assert_string_equal(utf8_truncate("ab\xc3\xa9", 4).c_str(), "ab\xc3\xa9");
	assert_string_equal(utf8_truncate("\xe2\x86\x92", 2).c_str(), "");
	// Short reasons are left alone.
	assert_int_equal(reason_string("A", std::string(90, 'z')).size(), 99);
	std::string fits = reason_string("A", std::string(89, 'z'));
	assert_int_equal(fits.size(), 99);
	assert_string_equal(fits.substr(96).c_str(), "zzz");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(bus_factor_is_2_n_minus_1_over_n),
	    cmocka_unit_test(algbw_and_busbw_use_gb_of_1e9),
	    cmocka_unit_test(copy_bandwidth_counts_read_and_write),
	    cmocka_unit_test(best_of_keeps_every_sample),
	    cmocka_unit_test(nccl_judgement_best_of_n),
	    cmocka_unit_test(nccl_one_rank_measures_nothing),
	    cmocka_unit_test(nccl_two_ranks_busbw_equals_algbw),
	    cmocka_unit_test(copy_bandwidth_fractions),
	    cmocka_unit_test(reason_string_format_and_truncation),
	};
	return cmocka_run_group_tests_name("admit_maths", tests, NULL, NULL);
}
