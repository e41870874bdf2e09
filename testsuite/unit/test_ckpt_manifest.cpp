// The checkpoint protocol (common/migrate/manifest.hpp): what a committed
// generation guarantees and what verification refuses.
#include "unit.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.hpp"
#include "migrate/manifest.hpp"
#include "migrate/onramp_ckpt.h"

using namespace onramp;

static void put(const std::string &dir, uint64_t gen, const std::string &rel,
                const std::string &data)
{
	std::string f = ckpt::generation_dir(dir, gen) + "/" + rel;
	assert_true(make_dirs(f.substr(0, f.rfind('/'))).ok());
	assert_true(write_file_atomic(f, data).ok());
}

// A generation with shards a.bin and sub/b.bin, committed at step.
static void make_gen(const std::string &dir, uint64_t gen, int64_t step)
{
	put(dir, gen, "a.bin", std::string(100000, 'a') + std::to_string(gen));
	put(dir, gen, "sub/b.bin", "b" + std::to_string(step));
	assert_true(ckpt::commit(dir, gen, step, {"a.bin", "sub/b.bin"}, 2).ok());
}

static void round_trip(void **)
{
	std::string dir = unit_tmpdir();
	make_gen(dir, 1, 500);
	auto m = ckpt::verify(dir, 1);
	assert_true(m.ok());
	assert_int_equal(m->step, 500);
	assert_int_equal(m->generation, 1);
	assert_int_equal(m->shards.size(), 2);
	assert_string_equal(m->shards[1].path.c_str(), "sub/b.bin");
	assert_int_equal(m->shards[1].size, 4);
	// sha256("b500")
	std::string hex;
	uint64_t size;
	assert_true(ckpt::sha256_file(dir + "/1/sub/b.bin", &hex, &size).ok());
	assert_string_equal(m->shards[1].sha256.c_str(), hex.c_str());
	assert_true(m->time_ms > 0);
	// No temporary file is left beside the manifest.
	assert_int_equal(access((dir + "/1/manifest.json").c_str(), R_OK), 0);
	// The same through the C API.
	int64_t step = 0;
	char err[256];
	assert_int_equal(onramp_ckpt_verify(dir.c_str(), 1, &step, err, sizeof(err)), 0);
	assert_int_equal(step, 500);
	uint64_t g = 0;
	assert_int_equal(onramp_ckpt_begin(dir.c_str(), &g, err, sizeof(err)), 0);
	assert_int_equal(g, 2);
}

static void corrupted_shard_is_named(void **)
{
	std::string dir = unit_tmpdir();
	make_gen(dir, 3, 10);
	put(dir, 3, "sub/b.bin", "b11"); // same size as "b10", other bytes
	auto m = ckpt::verify(dir, 3);
	assert_false(m.ok());
	assert_contains(m.status().message(), "shard sub/b.bin");
	assert_contains(m.status().message(), "SHA-256 mismatch");
	put(dir, 3, "sub/b.bin", "b10 and more");
	assert_contains(ckpt::verify(dir, 3).status().message(), "manifest says 3");
}

static void missing_shard_is_named(void **)
{
	std::string dir = unit_tmpdir();
	make_gen(dir, 1, 10);
	assert_int_equal(unlink((dir + "/1/a.bin").c_str()), 0);
	auto m = ckpt::verify(dir, 1);
	assert_false(m.ok());
	assert_contains(m.status().message(), "shard a.bin");
	// A commit naming a missing shard writes no manifest.
	put(dir, 2, "a.bin", "x");
	assert_false(ckpt::commit(dir, 2, 1, {"a.bin", "nope.bin"}).ok());
	assert_int_not_equal(access((dir + "/2/manifest.json").c_str(), F_OK), 0);
}

static void paths_never_escape(void **)
{
	for (const char *bad : {"/etc/passwd", "../x", "a/../../x", "", "a//b", "./a", "a/.."})
		assert_false(ckpt::check_relative_path(bad).ok());
	assert_true(ckpt::check_relative_path("rank0/model.pt").ok());

	std::string dir = unit_tmpdir(), outside = unit_tmpdir();
	assert_true(write_file_atomic(outside + "/secret", "s").ok());
	assert_true(make_dirs(dir + "/1").ok());
	assert_int_equal(symlink((outside + "/secret").c_str(), (dir + "/1/link").c_str()), 0);
	auto c = ckpt::commit(dir, 1, 1, {"link"});
	assert_false(c.ok());
	assert_contains(c.status().message(), "outside the checkpoint directory");
	// A symlink inside the checkpoint directory is fine.
	put(dir, 1, "real", "r");
	assert_int_equal(symlink((dir + "/1/real").c_str(), (dir + "/1/inner").c_str()), 0);
	assert_true(ckpt::commit(dir, 1, 1, {"inner"}).ok());
	// A manifest written by someone else naming an escaping path.
	assert_true(write_file_atomic(
	                dir + "/1/manifest.json",
	                "{\"format\":\"onramp-checkpoint/1\",\"generation\":1,\"step\":1,"
	                "\"time\":\"t\",\"time_ms\":1,\"shards\":[{\"path\":\"../../etc/passwd\","
	                "\"size\":1,\"sha256\":\"" +
	                    std::string(64, 'a') + "\"}]}")
	                .ok());
	auto v = ckpt::verify(dir, 1);
	assert_false(v.ok());
	assert_contains(v.status().message(), "shards[0].path");
	assert_contains(v.status().message(), "'..'");
}

static void malformed_manifest_names_the_field(void **)
{
	std::string dir = unit_tmpdir();
	make_gen(dir, 1, 5);
	struct Case {
		const char *text, *want;
	} cases[] = {
	    {"{\"format\":\"onramp-checkpoint/1\",\"generation\":1,\"step\":\"x\",\"time\":\"t\","
	     "\"time_ms\":1,\"shards\":[]}",
	     "step"},
	    {"{\"format\":\"onramp-checkpoint/1\",\"generation\":1,\"step\":1,\"time\":\"t\","
	     "\"time_ms\":1,\"shards\":[{\"path\":\"a\",\"size\":1,\"sha256\":\"XYZ\"}]}",
	     "shards[0].sha256"},
	    {"{\"format\":\"onramp-checkpoint/1\",\"generation\":1,\"step\":1,\"time\":\"t\","
	     "\"time_ms\":1}",
	     "shards"},
	    {"{\"format\":\"other/2\",\"generation\":1,\"step\":1,\"time\":\"t\",\"time_ms\":1,"
	     "\"shards\":[]}",
	     "format"},
	    {"{\"format\":\"onramp-checkpoint/1\",\"generation\":2,\"step\":1,\"time\":\"t\","
	     "\"time_ms\":1,\"shards\":[]}",
	     "generation: 2 does not match"},
	    {"{not json", "manifest.json"},
	};
	for (const auto &c : cases) {
		assert_true(write_file_atomic(dir + "/1/manifest.json", c.text).ok());
		auto m = ckpt::verify(dir, 1);
		assert_false(m.ok());
		assert_contains(m.status().message(), c.want);
	}
}

static void latest_picks_the_newest_verified(void **)
{
	std::string dir = unit_tmpdir();
	assert_false(ckpt::latest(dir).ok());
	make_gen(dir, 1, 100);
	make_gen(dir, 2, 200);
	make_gen(dir, 10, 1000); // numeric, not lexical order
	assert_int_equal(ckpt::latest(dir)->generation, 10);
	put(dir, 10, "a.bin", "torn");            // corrupt the newest
	assert_true(make_dirs(dir + "/11").ok()); // begun, never committed
	std::vector<std::string> skipped;
	auto m = ckpt::latest(dir, &skipped);
	assert_true(m.ok());
	assert_int_equal(m->generation, 2);
	assert_int_equal(m->step, 200);
	assert_int_equal(skipped.size(), 1);
	assert_contains(skipped[0], "generation 10: shard a.bin");
	assert_int_equal(ckpt::next_generation(dir), 12);
}

static void prune_keeps_the_newest_verified(void **)
{
	std::string dir = unit_tmpdir();
	make_gen(dir, 1, 100);
	make_gen(dir, 2, 200);
	make_gen(dir, 3, 300);
	put(dir, 3, "a.bin", "torn"); // the newest does not verify
	// Everything is "old" an hour from now: 1 goes, 2 (newest verified)
	// and 3 (newer than it) stay.
	int64_t later = ckpt::read_manifest(dir, 3)->time_ms + 3600 * 1000;
	auto r = ckpt::prune(dir, 60, later);
	assert_true(r.ok());
	assert_int_equal(r->size(), 1);
	assert_int_equal(r->at(0), 1);
	assert_int_equal(access((dir + "/1").c_str(), F_OK), -1);
	assert_int_equal(ckpt::latest(dir)->generation, 2);
	// Inside the window nothing goes.
	make_gen(dir, 4, 400);
	r = ckpt::prune(dir, 7200, later);
	assert_true(r.ok());
	assert_int_equal(r->size(), 0);
	// A symlinked generation directory is not followed nor removed.
	std::string outside = unit_tmpdir();
	assert_true(write_file_atomic(outside + "/keep", "k").ok());
	assert_int_equal(symlink(outside.c_str(), (dir + "/0").c_str()), 0);
	r = ckpt::prune(dir, 0, later + 3600 * 1000);
	assert_true(r.ok());
	assert_int_equal(access((outside + "/keep").c_str(), F_OK), 0);
	assert_int_equal(ckpt::latest(dir)->generation, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(round_trip),
	    cmocka_unit_test(corrupted_shard_is_named),
	    cmocka_unit_test(missing_shard_is_named),
	    cmocka_unit_test(paths_never_escape),
	    cmocka_unit_test(malformed_manifest_names_the_field),
	    cmocka_unit_test(latest_picks_the_newest_verified),
	    cmocka_unit_test(prune_keeps_the_newest_verified),
	};
	return cmocka_run_group_tests_name("ckpt_manifest", tests, NULL, NULL);
}
