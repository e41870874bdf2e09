// Hostlists through libslurm: expansion, compression, bad input.
#include "unit.hpp"

#include "hostlist.hpp"

using namespace onramp;

static void expand_ranges_and_lists(void **)
{
	auto r = hostlist_expand("node[1-3,7],gpu[01-02]");
	assert_true(r.ok());
	std::vector<std::string> want = {"node1", "node2", "node3", "node7", "gpu01", "gpu02"};
	assert_true(r.value() == want);
}

static void compress_sorts_and_dedups(void **)
{
	assert_string_equal(
	    hostlist_compress({"node3", "node1", "node2", "node2", "node10"}).c_str(),
	    "node[1-3,10]");
	assert_string_equal(hostlist_compress({}).c_str(), "");
}

// The distinct hosts of a list, without expanding it.
static void count_without_expanding(void **)
{
	assert_int_equal(hostlist_count("node[1-4],node[3-6],node1").value(), 6);
	assert_int_equal(hostlist_count("a[00001-65536],b[1-65536]").value(), 131072);
	assert_false(hostlist_count("").ok());
	assert_false(hostlist_count("node[4-1]").ok());
	assert_false(hostlist_count("node[1-4").ok());
}

static void bad_input_is_named(void **)
{
	const char *bad[] = {"", "node[1-3", "node1-3]", "node[[1]]", "node 1", "node;rm"};
	for (const char *b : bad) {
		auto r = hostlist_expand(b);
		assert_false(r.ok());
		assert_contains(r.status().message(), "hostlist");
	}
}

// Found by fuzz_hostlist: libslurm accepts "node[1-4,]" (and leaks); onramp
// refuses empty names and ranges that are not N or N-M before calling it.
static void empty_names_and_ranges_are_refused_before_libslurm(void **)
{
	for (const char *b :
	     {"node[1-4,]", "node[,1]", "node[]", "node[-3]", "node[1-]", "node[a-b]", "node[1--2]",
	      "node[5-4]", "node[1234567890123456789]", "a,,b", ",a", "a,", "r[1-2]n[3,]",
	      "r[1-2]n[3]", "n[1-44444444]", "n[2-414240]"}) {
		auto r = hostlist_expand(b);
		assert_false(r.ok());
		assert_contains(r.status().message(), b);
	}
	auto r = hostlist_expand("n[3,5-7],gpu7");
	assert_true(r.ok());
	assert_int_equal(r->size(), 5);
}

static void large_round_trip(void **)
{
	auto r = hostlist_expand("n[00001-25000]");
	assert_true(r.ok());
	assert_int_equal(r.value().size(), 25000);
	assert_string_equal(hostlist_compress(r.value()).c_str(), "n[00001-25000]");
}

// A ranged string longer than any first buffer (every other host: no ranges).
static void long_compress_is_whole(void **)
{
	std::vector<std::string> hosts;
	std::string want = "n[";
	for (int i = 0; i < 4000; i += 2) {
		char h[16];
		snprintf(h, sizeof(h), "%04d", i);
		hosts.push_back(std::string("n") + h);
		want += (i ? "," : "") + std::string(h);
	}
	want += "]";
	assert_string_equal(hostlist_compress(hosts).c_str(), want.c_str());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(expand_ranges_and_lists),
	    cmocka_unit_test(compress_sorts_and_dedups),
	    cmocka_unit_test(count_without_expanding),
	    cmocka_unit_test(bad_input_is_named),
	    cmocka_unit_test(empty_names_and_ranges_are_refused_before_libslurm),
	    cmocka_unit_test(large_round_trip),
	    cmocka_unit_test(long_compress_is_whole),
	};
	return cmocka_run_group_tests_name("hostlist", tests, NULL, NULL);
}
