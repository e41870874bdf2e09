// The checkpoint protocol (common/migrate/manifest.hpp): what a committed
// generation guarantees and what verification refuses.
#include "unit.hpp"

#include <atomic>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "atomic_file.hpp"
#include "config.hpp"
#include "json.hpp"
#include "migrate/manifest.hpp"
#include "migrate/onramp_ckpt.h"

using namespace onramp;

#define ZEROS "0000000000000000000000000000000000000000000000000000000000000000"

// A manifest for generation gen naming one shard (path, size, sha256).
static std::string manifest_text(uint64_t gen, const std::string &path, uint64_t size,
                                 const std::string &sha,
                                 const std::string &time = "2026-01-01T12:00:00Z",
                                 const std::string &time_ms = "1767268800000")
{
	return "{\"format\":\"onramp-checkpoint/1\",\"generation\":" + std::to_string(gen) +
	       ",\"step\":1,\"time\":\"" + time + "\",\"time_ms\":" + time_ms +
	       ",\"shards\":[{\"path\":\"" + path + "\",\"size\":" + std::to_string(size) +
	       ",\"sha256\":\"" + sha + "\"}]}";
}

static std::string sha_of(const std::string &path)
{
	std::string hex;
	uint64_t size = 0;
	assert_true(ckpt::sha256_file(path, &hex, &size).ok());
	return hex;
}

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
	assert_contains(c.status().message(), "is a symlink");
	// No symlink at all, even one that stays inside: what is hashed must be
	// the file the manifest names.
	put(dir, 1, "real", "r");
	assert_int_equal(symlink((dir + "/1/real").c_str(), (dir + "/1/inner").c_str()), 0);
	assert_contains(ckpt::commit(dir, 1, 1, {"inner"}).status().message(), "is a symlink");
	assert_true(ckpt::commit(dir, 1, 1, {"real"}).ok());
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
	    {"{\"format\":\"onramp-checkpoint/1\",\"generation\":2,\"step\":1,"
	     "\"time\":\"2026-01-01T12:00:00Z\",\"time_ms\":1767268800000,"
	     "\"shards\":[{\"path\":\"a.bin\",\"size\":1,\"sha256\":\"" ZEROS "\"}]}",
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

// The walk is bounded: at most kLatestMaxTried committed generations are
// verified (before, every torn generation got a full budget of its own).
static void latest_tries_a_bounded_number_of_generations(void **)
{
	std::string dir = unit_tmpdir();
	for (int g = 1; g <= 2 + ckpt::kLatestMaxTried; g++)
		make_gen(dir, g, 100 * g);
	for (int g = 3; g <= 2 + ckpt::kLatestMaxTried; g++)
		put(dir, g, "a.bin", "torn");
	std::vector<std::string> skipped;
	auto m = ckpt::latest(dir, ckpt::VerifyLimits(), &skipped);
	assert_false(m.ok());
	assert_contains(m.status().message(), "among the newest 4 committed ones");
	assert_int_equal(skipped.size(), ckpt::kLatestMaxTried);
	make_gen(dir, 3 + ckpt::kLatestMaxTried, 700); // a good newer one
	assert_int_equal(ckpt::latest(dir, ckpt::VerifyLimits())->generation,
	                 3 + ckpt::kLatestMaxTried);
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

// A manifest.json that is a symlink is never read through (it pointed at
// /etc/passwd, whose first token came back in the error, and at /dev/zero,
// read up to the cap); a FIFO neither blocks nor is read.
static void special_manifests_are_refused_unread(void **)
{
	alarm(30); // a blocking open or read fails the test instead of hanging it
	std::string dir = unit_tmpdir();
	make_gen(dir, 1, 5);
	std::string man = dir + "/1/manifest.json";
	for (const char *target : {"/etc/passwd", "/dev/zero"}) {
		assert_int_equal(unlink(man.c_str()), 0);
		assert_int_equal(symlink(target, man.c_str()), 0);
		auto v = ckpt::verify(dir, 1);
		assert_false(v.ok());
		assert_contains(v.status().message(), "manifest.json is a symlink");
		assert_true(v.status().message().find("root") == std::string::npos);
		assert_contains(ckpt::read_manifest(dir, 1).status().message(), "is a symlink");
	}
	assert_int_equal(unlink(man.c_str()), 0);
	assert_int_equal(mkfifo(man.c_str(), 0644), 0);
	auto v = ckpt::verify(dir, 1);
	assert_contains(v.status().message(), "manifest.json is not a regular file");
	assert_false(ckpt::latest(dir).ok());
	// A shard that is a FIFO, a directory or a device.
	std::string dir2 = unit_tmpdir();
	make_gen(dir2, 1, 5);
	assert_int_equal(unlink((dir2 + "/1/a.bin").c_str()), 0);
	assert_int_equal(mkfifo((dir2 + "/1/a.bin").c_str(), 0644), 0);
	assert_contains(ckpt::verify(dir2, 1).status().message(), "'a.bin' is not a regular file");
	assert_int_equal(unlink((dir2 + "/1/a.bin").c_str()), 0);
	assert_int_equal(symlink("/dev/null", (dir2 + "/1/a.bin").c_str()), 0);
	assert_contains(ckpt::verify(dir2, 1).status().message(), "'a.bin' is a symlink");
	// A directory on the way that is a symlink.
	assert_int_equal(rename((dir2 + "/1/sub").c_str(), (dir2 + "/realsub").c_str()), 0);
	assert_int_equal(symlink((dir2 + "/realsub").c_str(), (dir2 + "/1/sub").c_str()), 0);
	assert_int_equal(unlink((dir2 + "/1/a.bin").c_str()), 0);
	put(dir2, 1, "a.bin", std::string(100000, 'a') + "1");
	assert_contains(ckpt::verify(dir2, 1).status().message(), "'sub' is a symlink");
	alarm(0);
}

// scan(): the generations newest first, each with its commit; what is not
// a numeric directory is no generation; a missing directory holds none, a
// directory that is none is an error naming it.
static void scan_lists_generations_and_their_commits(void **)
{
	std::string dir = unit_tmpdir();
	ckpt::VerifyLimits me; // as root, the user given: no child
	me.uid = geteuid();
	auto none = ckpt::scan(dir + "/absent", me);
	assert_true(none.ok());
	assert_true(none->empty());
	make_gen(dir, 1, 100);
	make_gen(dir, 10, 1000);
	assert_true(make_dirs(dir + "/11").ok());                                  // begun
	assert_true(write_file_atomic(dir + "/12", "a file").ok());                // no directory
	assert_int_equal(symlink((dir + "/1").c_str(), (dir + "/13").c_str()), 0); // a symlink
	assert_true(make_dirs(dir + "/x7").ok());
	assert_int_equal(mkfifo((dir + "/11/manifest.json.tmp").c_str(), 0644), 0);
	auto g = ckpt::scan(dir, me);
	assert_true(g.ok());
	assert_int_equal(g->size(), 3);
	assert_int_equal(g->at(0).number, 11);
	assert_false(g->at(0).committed);
	assert_int_equal(g->at(1).number, 10);
	assert_true(g->at(1).committed);
	assert_int_equal(g->at(2).number, 1);
	assert_true(g->at(2).committed);
	auto bad = ckpt::scan(dir + "/12", me);
	assert_false(bad.ok());
	assert_contains(bad.status().message(), (dir + "/12: Not a directory").c_str());
	// latest() says why it found nothing.
	auto l = ckpt::latest(dir + "/12", me);
	assert_false(l.ok());
	assert_contains(l.status().message(), (dir + "/12: Not a directory").c_str());
}

// resumed.json is read as a manifest is: never through a symlink (to a file
// its user may not read), never blocking on a FIFO, its fields checked.
static void resumed_json_is_read_like_a_manifest(void **)
{
	alarm(30); // a blocking open or read fails the test instead of hanging it
	std::string dir = unit_tmpdir();
	std::string res = dir + "/resumed.json";
	ckpt::Resumed r;
	r.generation = 3;
	r.step = 30;
	r.restart_count = 1;
	assert_true(ckpt::mark_resumed(dir, r).ok());
	auto got = ckpt::read_resumed(dir);
	assert_true(got.ok());
	assert_int_equal(got->generation, 3);
	assert_int_equal(got->step, 30);
	assert_int_equal(got->restart_count, 1);
	assert_true(got->time_ms > 0);
	assert_int_equal(unlink(res.c_str()), 0);
	assert_int_equal(symlink("/etc/passwd", res.c_str()), 0);
	assert_contains(ckpt::read_resumed(dir).status().message(),
	                (res + " is a symlink").c_str());
	assert_int_equal(unlink(res.c_str()), 0);
	assert_int_equal(mkfifo(res.c_str(), 0644), 0);
	assert_contains(ckpt::read_resumed(dir).status().message(),
	                (res + " is not a regular file").c_str());
	assert_int_equal(unlink(res.c_str()), 0);
	assert_true(write_file_atomic(res, "{\"generation\": -2, \"step\": 1}").ok());
	assert_contains(ckpt::read_resumed(dir).status().message(),
	                "field 'generation': must not be negative");
	alarm(0);
}

// Garbage or impossible times, a negative time_ms and an empty shard list are
// refused, naming the file and the field.
static void manifest_times_and_empty_lists_are_checked(void **)
{
	std::string dir = unit_tmpdir();
	make_gen(dir, 1, 5);
	struct Case {
		std::string text;
		const char *want;
	} cases[] = {
	    {manifest_text(1, "a.bin", 1, ZEROS, "yesterday"),
	     "field 'time': 'yesterday' is not a UTC"},
	    {manifest_text(1, "a.bin", 1, ZEROS, "2026-02-31T12:00:00Z"),
	     "field 'time': '2026-02-31"},
	    {manifest_text(1, "a.bin", 1, ZEROS, "2026-01-01T25:00:00Z"),
	     "field 'time': '2026-01-01T25"},
	    {manifest_text(1, "a.bin", 1, ZEROS, "2026-01-01T12:00:00Z", "5"), "is not time_ms 5"},
	    {manifest_text(1, "a.bin", 1, ZEROS, "1970-01-01T00:00:00Z", "-1"),
	     "field 'time_ms': must not be negative"},
	    {"{\"format\":\"onramp-checkpoint/1\",\"generation\":1,\"step\":1,"
	     "\"time\":\"2026-01-01T12:00:00Z\",\"time_ms\":1767268800000,\"shards\":[]}",
	     "field 'shards': is empty"},
	};
	for (const auto &c : cases) {
		assert_true(write_file_atomic(dir + "/1/manifest.json", c.text).ok());
		auto m = ckpt::verify(dir, 1);
		assert_false(m.ok());
		assert_contains(m.status().message(), "/1/manifest.json");
		assert_contains(m.status().message(), c.want);
	}
}

// Duplicate paths are found with a set: 200,000 shards (the old pairwise
// check took minutes) are judged in seconds.
static void duplicate_check_is_not_quadratic(void **)
{
	alarm(60);
	std::string text = "{\"format\":\"onramp-checkpoint/1\",\"generation\":1,\"step\":1,"
	                   "\"time\":\"2026-01-01T12:00:00Z\",\"time_ms\":1767268800000,"
	                   "\"shards\":[";
	const int n = 200000;
	for (int i = 0; i <= n; i++)
		text += std::string(i ? "," : "") + "{\"path\":\"s" +
		        std::to_string(i == n ? 7 : i) + "\",\"size\":1,\"sha256\":\"" ZEROS "\"}";
	text += "]}";
	auto j = json_parse(text, "big.json");
	assert_true(j.ok());
	auto t0 = std::chrono::steady_clock::now();
	auto m = ckpt::Manifest::from_json(j->get(), "big.json");
	double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	assert_false(m.ok());
	assert_contains(m.status().message(), "field 'shards[200000].path': 's7' is listed twice");
	assert_true(s < 20);
	alarm(0);
}

// A sparse shard whose size matches the manifest is refused by the budget
// before a byte is hashed (8 TiB: ext4's files stop at 16 TiB; the default
// budget is 4 TiB), and hashing stops at the deadline.
static void budget_and_deadline_bound_the_work(void **)
{
	alarm(60);
	std::string dir = unit_tmpdir();
	assert_true(make_dirs(dir + "/1").ok());
	int fd = open((dir + "/1/huge.bin").c_str(), O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	const uint64_t huge = 8ull << 40;
	assert_int_equal(ftruncate(fd, static_cast<off_t>(huge)), 0);
	close(fd);
	assert_true(
	    write_file_atomic(dir + "/1/manifest.json", manifest_text(1, "huge.bin", huge, ZEROS))
	        .ok());
	auto v = ckpt::verify(dir, 1);
	assert_false(v.ok());
	assert_contains(v.status().message(), "CheckpointVerifyMaxGiB");
	// A smaller budget, a smaller file.
	assert_int_equal(truncate((dir + "/1/huge.bin").c_str(), 2 << 20), 0);
	assert_true(write_file_atomic(dir + "/1/manifest.json",
	                              manifest_text(1, "huge.bin", 2 << 20, ZEROS))
	                .ok());
	ckpt::VerifyLimits lim;
	lim.max_bytes = 1 << 20;
	assert_contains(ckpt::verify(dir, 1, lim).status().message(), "CheckpointVerifyMaxGiB");
	// The deadline: 1 GiB (sparse) cannot be hashed in 1 ms.
	assert_int_equal(truncate((dir + "/1/huge.bin").c_str(), 1 << 30), 0);
	assert_true(write_file_atomic(dir + "/1/manifest.json",
	                              manifest_text(1, "huge.bin", 1 << 30, ZEROS))
	                .ok());
	lim = ckpt::VerifyLimits();
	lim.timeout_ms = 1;
	assert_contains(ckpt::verify(dir, 1, lim).status().message(), "CheckpointVerifyTimeout");
	// The keys' values from onramp.conf.
	auto cfg = Config::parse("CheckpointVerifyMaxGiB=2\nCheckpointVerifyTimeout=90s\n", "t");
	assert_true(cfg.ok());
	lim = ckpt::verify_limits(cfg.value());
	assert_true(lim.max_bytes == (2ull << 30));
	assert_int_equal(lim.timeout_ms, 90000);
	alarm(0);
}

// A loop swaps the shard between a file and a symlink to a file outside
// while verification runs: the outside file's contents are never accepted
// (the realpath-then-open check accepted them in 239 of 1,500 runs).
static void a_racing_symlink_never_verifies(void **)
{
	std::string dir = unit_tmpdir(), outside = unit_tmpdir();
	std::string secret = std::string(4096, 's');
	assert_true(write_file_atomic(outside + "/secret", secret).ok());
	put(dir, 1, "keep.bin", std::string(4096, 'k'));
	std::string g = dir + "/1/";
	assert_int_equal(link((g + "keep.bin").c_str(), (g + "a.bin").c_str()), 0);
	// What the attacker wants accepted: the outside file's size and hash.
	assert_true(
	    write_file_atomic(g + "manifest.json",
	                      manifest_text(1, "a.bin", secret.size(), sha_of(outside + "/secret")))
	        .ok());
	std::atomic<bool> stop{false};
	std::thread swapper([&]() {
		while (!stop) {
			(void)unlink((g + "t1").c_str());
			(void)symlink((outside + "/secret").c_str(), (g + "t1").c_str());
			(void)rename((g + "t1").c_str(), (g + "a.bin").c_str());
			(void)unlink((g + "t2").c_str());
			(void)link((g + "keep.bin").c_str(), (g + "t2").c_str());
			(void)rename((g + "t2").c_str(), (g + "a.bin").c_str());
		}
	});
	int accepted = 0, runs = 0;
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
	for (; runs < 1500 && std::chrono::steady_clock::now() < end; runs++)
		accepted += ckpt::verify(dir, 1, 1).ok();
	stop = true;
	swapper.join();
	print_message("race: %d of %d verifications accepted the outside file\n", accepted, runs);
	assert_int_equal(accepted, 0);
	assert_true(runs >= 100);
}

static const uid_t nobody = 65534;

// Root only: a committed generation 1 in a fresh directory, every file of it
// nobody's; "" when not root (the test is skipped).
static std::string nobodys_generation()
{
	if (geteuid() != 0) {
		print_message("skipped: needs root\n");
		return "";
	}
	std::string dir = unit_tmpdir();
	assert_int_equal(chmod(dir.c_str(), 0755), 0);
	make_gen(dir, 1, 5);
	for (const char *p : {"", "/1", "/1/a.bin", "/1/sub", "/1/sub/b.bin", "/1/manifest.json"})
		assert_int_equal(chown((dir + p).c_str(), nobody, nobody), 0);
	return dir;
}

// As root, the files are read with the user's privileges and must be his:
// a shard he cannot read himself fails, and so does a file of someone else
// in his directory (a hard link to root's file, say).
static void root_hashes_as_the_user(void **)
{
	std::string dir = nobodys_generation();
	if (dir.empty())
		return;
	ckpt::VerifyLimits lim;
	lim.uid = nobody;
	assert_true(ckpt::verify(dir, 1, lim).ok());
	assert_true(ckpt::verify(dir, 1).ok()); // the generation's owner by default
	// Root could read this shard; its owner cannot.
	assert_int_equal(chmod((dir + "/1/a.bin").c_str(), 0), 0);
	auto v = ckpt::verify(dir, 1, lim);
	assert_false(v.ok());
	assert_contains(v.status().message(), "'a.bin': Permission denied");
	assert_contains(ckpt::verify(dir, 1).status().message(), "Permission denied");
	assert_int_equal(chmod((dir + "/1/a.bin").c_str(), 0644), 0);
	// A file owned by someone else.
	assert_int_equal(chown((dir + "/1/sub/b.bin").c_str(), 0, 0), 0);
	assert_contains(ckpt::verify(dir, 1, lim).status().message(),
	                "'sub/b.bin' is owned by uid 0, not by uid 65534");
	// The job's uid given, the directory someone else's.
	lim.uid = 4242;
	assert_contains(ckpt::verify(dir, 1, lim).status().message(),
	                "is owned by uid 65534, not by uid 4242");
}

// As root every look into the user's directory is his: a checkpoint under
// a directory only root may enter (reached through the user's own symlink,
// say) is not listed, its manifest and resumed.json are not read, and
// resumed.json must be his. Before, root listed the directory, read both
// files with its own privileges and took a resumed.json of anyone's.
static void root_looks_as_the_user(void **)
{
	alarm(60);
	std::string dir = nobodys_generation();
	if (dir.empty())
		return;
	ckpt::VerifyLimits lim;
	lim.uid = nobody;
	std::string res = dir + "/resumed.json";
	ckpt::Resumed r;
	r.generation = 1;
	assert_true(ckpt::mark_resumed(dir, r).ok());
	assert_int_equal(chown(res.c_str(), nobody, nobody), 0);
	auto g = ckpt::scan(dir, lim);
	assert_true(g.ok());
	assert_int_equal(g->size(), 1);
	assert_true(g->at(0).committed);
	assert_int_equal(ckpt::read_manifest(dir, 1, lim)->step, 5);
	assert_int_equal(ckpt::read_resumed(dir, lim)->generation, 1);
	assert_int_equal(ckpt::read_resumed(dir)->generation, 1); // dir's owner by default
	// A resumed.json of someone else's (root's) in his directory.
	assert_int_equal(chown(res.c_str(), 0, 0), 0);
	for (const auto &v : {ckpt::read_resumed(dir, lim), ckpt::read_resumed(dir)})
		assert_contains(v.status().message(),
		                (res + " is owned by uid 0, not by uid 65534").c_str());
	// A FIFO: refused by the child, no reader left blocked.
	assert_int_equal(unlink(res.c_str()), 0);
	assert_int_equal(mkfifo(res.c_str(), 0644), 0);
	assert_int_equal(chown(res.c_str(), nobody, nobody), 0);
	assert_contains(ckpt::read_resumed(dir, lim).status().message(),
	                (res + " is not a regular file").c_str());
	// His symlink into a directory only root may enter.
	std::string priv = unit_tmpdir();
	assert_int_equal(chmod(priv.c_str(), 0700), 0);
	assert_int_equal(rename(dir.c_str(), (priv + "/ckpt").c_str()), 0);
	assert_int_equal(symlink((priv + "/ckpt").c_str(), dir.c_str()), 0);
	assert_int_equal(lchown(dir.c_str(), nobody, nobody), 0);
	assert_int_equal(unlink((priv + "/ckpt/resumed.json").c_str()), 0);
	assert_true(ckpt::mark_resumed(priv + "/ckpt", r).ok());
	assert_int_equal(chown((priv + "/ckpt/resumed.json").c_str(), nobody, nobody), 0);
	assert_contains(ckpt::scan(dir, lim).status().message(),
	                (dir + ": Permission denied").c_str());
	assert_contains(ckpt::read_manifest(dir, 1, lim).status().message(),
	                (dir + ": Permission denied").c_str());
	assert_contains(ckpt::read_resumed(dir, lim).status().message(),
	                (dir + ": Permission denied").c_str());
	assert_contains(ckpt::latest(dir, lim).status().message(), "Permission denied");
	alarm(0);
}

// As root a look that gets no answer (the user's file system stalls: a
// verifier that never answers stands for it) ends at its deadline with an
// error naming the path; the child is killed. Before, root listed and read
// the directory itself, with no deadline.
static void root_looks_end_at_their_deadline(void **)
{
	std::string dir = nobodys_generation();
	if (dir.empty())
		return;
	alarm(60); // a look without a deadline fails the test instead of hanging it
	ckpt::set_verifier("/proc/self/exe"); // this program: see main()
	ckpt::VerifyLimits lim;
	lim.uid = nobody;
	lim.look_timeout_ms = 300;
	lim.timeout_ms = 300;
	auto g = ckpt::scan(dir, lim);
	auto man = ckpt::read_manifest(dir, 1, lim);
	auto res = ckpt::read_resumed(dir, lim);
	auto l = ckpt::latest(dir, lim);
	ckpt::set_verifier(ONRAMP_BUILDDIR "/contrib/tools/onramp-ckpt");
	assert_contains(g.status().message(), (dir + ": no answer within 300 ms").c_str());
	assert_contains(man.status().message(),
	                (dir + "/1/manifest.json: no answer within 300 ms").c_str());
	assert_contains(res.status().message(),
	                (dir + "/resumed.json: no answer within 300 ms").c_str());
	assert_contains(l.status().message(), (dir + ": no answer within 300 ms").c_str());
	assert_true(ckpt::scan(dir, lim).ok()); // the real verifier answers
	alarm(0);
}

// The verifying program is reached by root and run by the user: a build
// tree under a directory only root may enter still works.
static void root_runs_a_verifier_the_user_cannot_reach(void **)
{
	std::string dir = nobodys_generation();
	if (dir.empty())
		return;
	std::string priv = unit_tmpdir();
	assert_int_equal(chmod(priv.c_str(), 0700), 0);
	std::string copy = priv + "/onramp-ckpt";
	std::string cmd = "cp " ONRAMP_BUILDDIR "/contrib/tools/onramp-ckpt " + copy;
	assert_int_equal(system(cmd.c_str()), 0);
	ckpt::set_verifier(copy);
	ckpt::VerifyLimits lim;
	lim.uid = nobody;
	auto v = ckpt::verify(dir, 1, lim);
	ckpt::set_verifier(ONRAMP_BUILDDIR "/contrib/tools/onramp-ckpt");
	if (!v.ok())
		print_message("%s\n", v.status().message().c_str());
	assert_true(v.ok());
}

// Root verifies in a child while other threads of the caller run (the
// migration driver moves every job in its own thread): a thread that holds
// one of libc's locks (here mktime's, which a manifest's time needs) when
// the child is forked must not leave the child waiting on it forever. Each
// verification has 2 s; one that hangs fails with "deadline passed".
static void root_verifies_beside_busy_threads(void **)
{
	std::string dir = nobodys_generation();
	if (dir.empty())
		return;
	ckpt::VerifyLimits lim;
	lim.uid = nobody;
	lim.timeout_ms = 2000;
	std::atomic<bool> stop{false};
	std::vector<std::thread> busy;
	for (int t = 0; t < 3; t++)
		busy.emplace_back([&stop]() {
			while (!stop) {
				struct tm tm = {};
				tm.tm_year = 126;
				tm.tm_mday = 1;
				(void)mktime(&tm);
				time_t now = time(nullptr);
				(void)localtime_r(&now, &tm);
			}
		});
	int runs = 0, failed = 0;
	std::string first;
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(15);
	for (; runs < 400 && !failed && std::chrono::steady_clock::now() < end; runs++) {
		auto v = ckpt::verify(dir, 1, lim);
		if (!v.ok()) {
			failed++;
			first = v.status().message();
		}
	}
	stop = true;
	for (auto &t : busy)
		t.join();
	print_message("%d verifications beside busy threads, %d failed%s%s\n", runs, failed,
	              failed ? ": " : "", first.c_str());
	assert_int_equal(failed, 0);
	assert_true(runs >= 20);
}

int main(int argc, char **argv)
{
	// Run as root's verifier by root_looks_end_at_their_deadline: a look
	// that never answers.
	if (argc > 1 && strcmp(argv[1], "look-child") == 0) {
		for (;;)
			pause();
	}
	// Root's verifications run the onramp-ckpt just built.
	ckpt::set_verifier(ONRAMP_BUILDDIR "/contrib/tools/onramp-ckpt");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(round_trip),
	    cmocka_unit_test(corrupted_shard_is_named),
	    cmocka_unit_test(missing_shard_is_named),
	    cmocka_unit_test(paths_never_escape),
	    cmocka_unit_test(malformed_manifest_names_the_field),
	    cmocka_unit_test(latest_picks_the_newest_verified),
	    cmocka_unit_test(latest_tries_a_bounded_number_of_generations),
	    cmocka_unit_test(prune_keeps_the_newest_verified),
	    cmocka_unit_test(special_manifests_are_refused_unread),
	    cmocka_unit_test(scan_lists_generations_and_their_commits),
	    cmocka_unit_test(resumed_json_is_read_like_a_manifest),
	    cmocka_unit_test(manifest_times_and_empty_lists_are_checked),
	    cmocka_unit_test(duplicate_check_is_not_quadratic),
	    cmocka_unit_test(budget_and_deadline_bound_the_work),
	    cmocka_unit_test(a_racing_symlink_never_verifies),
	    cmocka_unit_test(root_hashes_as_the_user),
	    cmocka_unit_test(root_looks_as_the_user),
	    cmocka_unit_test(root_looks_end_at_their_deadline),
	    cmocka_unit_test(root_runs_a_verifier_the_user_cannot_reach),
	    cmocka_unit_test(root_verifies_beside_busy_threads),
	};
	return cmocka_run_group_tests_name("ckpt_manifest", tests, NULL, NULL);
}
