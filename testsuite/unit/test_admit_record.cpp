// The admission record and judge(): admitted only for a PASS record of the
// current boot and the current baseline; the C API and revocation.
#include "unit.hpp"

#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admit/record.hpp"
#include "admit_fixture.hpp"
#include "onramp.h"

using namespace onramp;
using namespace onramp::admit;

static Record pass_record(AdmitFixture &fx, const std::string &node, const std::string &boot)
{
	auto digest = file_digest(fx.baselines + "/SIM-8GPU.json");
	assert_true(digest.ok());
	Record r;
	r.node = node;
	r.boot_id = boot;
	r.baseline_digest = digest.value();
	r.status = kRecordPass;
	r.code = "OK";
	r.detail = "7 checks passed";
	r.time = "2025-05-01T12:00:00Z";
	r.verdict = Json::object();
	r.verdict.set("status", "PASS");
	return r;
}

static void sha256_known_answer_and_cache(void **)
{
	assert_string_equal(sha256_hex("abc").c_str(),
	                    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	std::string dir = unit_tmpdir(), f = dir + "/b.json";
	put(f, "abc");
	assert_string_equal(file_digest(f).value().c_str(), sha256_hex("abc").c_str());
	put(f, "abd"); // new inode, same size: must not come from the cache
	assert_string_equal(file_digest(f).value().c_str(), sha256_hex("abd").c_str());
	assert_false(file_digest(dir + "/missing.json").ok());
}

static void record_and_baseline_paths(void **)
{
	AdmitFixture fx;
	Config c = fx.config();
	assert_string_equal(record_path(c, "n1").c_str(), fx.record("n1").c_str());
	assert_string_equal(baseline_path(c).value().c_str(),
	                    (fx.baselines + "/SIM-8GPU.json").c_str());
	auto no_sku = Config::parse("GpuBackend=sim\n", "x.conf");
	assert_contains(baseline_path(no_sku.value()).status().message(), "'Sku' is not set");
}

static void record_round_trip_and_validation(void **)
{
	AdmitFixture fx;
	fx.boot("n1", "boot-A\n");
	Record r = pass_record(fx, "n1", "boot-A");
	assert_true(write_record(fx.record("n1"), r).ok());
	auto back = read_record(fx.record("n1"));
	assert_true(back.ok());
	assert_string_equal(back->status.c_str(), "PASS");
	assert_string_equal(back->baseline_digest.c_str(), r.baseline_digest.c_str());
	put(fx.record("n2"), "{\"node\":\"n2\",\"boot_id\":\"b\",\"baseline_digest\":\"d\","
	                     "\"status\":\"MAYBE\",\"code\":\"OK\"}");
	auto bad = read_record(fx.record("n2"));
	assert_false(bad.ok());
	assert_contains(bad.status().message(), "field 'status'");
	bool missing = false;
	assert_false(read_record(fx.record("n3"), &missing).ok());
	assert_true(missing);
}

// The SKU baseline edited in place (same inode, same size, later mtime).
static void edit_baseline_in_place(AdmitFixture &fx)
{
	std::string bpath = fx.baselines + "/SIM-8GPU.json";
	std::string text = slurp(bpath);
	size_t pos = text.find("431");
	assert_true(pos != std::string::npos);
	text.replace(pos, 3, "432");
	FILE *f = fopen(bpath.c_str(), "r+");
	assert_non_null(f);
	fwrite(text.data(), 1, text.size(), f);
	fclose(f);
	struct timespec ts[2] = {{0, UTIME_NOW}, {time(nullptr) + 5, 0}};
	utimensat(AT_FDCWD, bpath.c_str(), ts, 0);
}

static void judge_requires_pass_same_boot_same_baseline(void **)
{
	AdmitFixture fx;
	Config c = fx.config();
	std::string why;
	fx.boot("n1", "  boot-A \n");
	assert_int_equal(judge(c, "n1", &why), Judgement::NotAdmitted);
	assert_string_equal(why.c_str(), "no admission record");

	assert_true(write_record(fx.record("n1"), pass_record(fx, "n1", "boot-A")).ok());
	assert_int_equal(judge(c, "n1", &why), Judgement::Admitted);

	// Reboot: a new boot id.
	fx.boot("n1", "boot-B\n");
	assert_int_equal(judge(c, "n1", &why), Judgement::NotAdmitted);
	assert_string_equal(why.c_str(), "boot changed since admission");
	fx.boot("n1", "boot-A\n");
	assert_int_equal(judge(c, "n1", &why), Judgement::Admitted);

	edit_baseline_in_place(fx);
	assert_int_equal(judge(c, "n1", &why), Judgement::BaselineChanged);
	assert_string_equal(why.c_str(), "baseline changed since admission");

	// A FAIL record for the current boot and baseline.
	Record failed = pass_record(fx, "n1", "boot-A");
	failed.status = kRecordFail;
	failed.code = "NCCL_BW_LOW";
	failed.detail = "nccl_allreduce busbw 301.2 GB/s < 387.9 GB/s (best of 3)";
	assert_true(write_record(fx.record("n1"), failed).ok());
	assert_int_equal(judge(c, "n1", &why), Judgement::NotAdmitted);
	assert_string_equal(why.c_str(), "admission FAIL NCCL_BW_LOW: nccl_allreduce busbw 301.2 "
	                                 "GB/s < 387.9 GB/s (best of 3)");

	// A record copied from another node does not count.
	assert_true(write_record(fx.record("n1"), pass_record(fx, "n9", "boot-A")).ok());
	assert_int_equal(judge(c, "n1", &why), Judgement::NotAdmitted);
	assert_contains(why, "is for node n9");
}

static void judge_cannot_judge_without_inputs(void **)
{
	AdmitFixture fx;
	Config c = fx.config();
	std::string why;
	// No boot id file.
	put(fx.record("n1"), pass_record(fx, "n1", "boot-A").to_json().dump());
	assert_int_equal(judge(c, "n1", &why), Judgement::Unknown);
	assert_contains(why, "boot id");
	fx.boot("n1", "boot-A");
	// Unreadable record.
	put(fx.record("n1"), "{not json");
	assert_int_equal(judge(c, "n1", &why), Judgement::Unknown);
	assert_contains(why, "admission.json");
	// Baseline gone.
	put(fx.record("n1"), pass_record(fx, "n1", "boot-A").to_json().dump());
	unlink((fx.baselines + "/SIM-8GPU.json").c_str());
	assert_int_equal(judge(c, "n1", &why), Judgement::Unknown);
	assert_contains(why, "SIM-8GPU.json");
}

static void revoke_keeps_verdict_and_blocks(void **)
{
	AdmitFixture fx;
	Config c = fx.config();
	fx.boot("n1", "boot-A");
	assert_true(write_record(fx.record("n1"), pass_record(fx, "n1", "boot-A")).ok());
	assert_true(revoke_record(c, "n1", "XID_CRITICAL", "XID 79 on 0000:3b:00.0").ok());
	auto r = read_record(fx.record("n1"));
	assert_true(r.ok());
	assert_string_equal(r->status.c_str(), "REVOKED");
	assert_string_equal(r->code.c_str(), "XID_CRITICAL");
	assert_non_null(json_object_get(r->verdict.get(), "status"));
	std::string why;
	assert_int_equal(judge(c, "n1", &why), Judgement::NotAdmitted);
	assert_string_equal(why.c_str(), "admission REVOKED XID_CRITICAL: XID 79 on 0000:3b:00.0");
	// Revoking a node without a record still leaves it not admitted.
	fx.boot("n2", "boot-Z");
	assert_true(revoke_record(c, "n2", "XID_CRITICAL", "x").ok());
	assert_int_equal(judge(c, "n2", &why), Judgement::NotAdmitted);
}

static mode_t mode_of(const std::string &path)
{
	struct stat sb;
	assert_int_equal(stat(path.c_str(), &sb), 0);
	return sb.st_mode & 07777;
}

// The record holds the node's hardware inventory: 0640 even with umask 0,
// in a NodeStateDir made 0750; a record or directory left world-readable
// by an older onramp is tightened when next written.
static void record_is_not_world_readable(void **)
{
	mode_t old = umask(0);
	AdmitFixture fx;
	Config c = fx.config();
	fx.boot("n1", "boot-A");
	assert_true(write_record(fx.record("n1"), pass_record(fx, "n1", "boot-A")).ok());
	assert_int_equal(mode_of(fx.record("n1")), 0640);
	assert_int_equal(mode_of(fx.state_dir + "/n1"), 0750);
	assert_int_equal(chmod(fx.record("n1").c_str(), 0644), 0);
	assert_int_equal(chmod((fx.state_dir + "/n1").c_str(), 0755), 0);
	assert_true(revoke_record(c, "n1", "XID_CRITICAL", "x").ok());
	assert_int_equal(mode_of(fx.record("n1")), 0640);
	assert_int_equal(mode_of(fx.state_dir + "/n1"), 0750);
	umask(old);
}

// Write verdict.<id>.json in n1's verdicts/ with text, age_s old.
static std::string put_verdict(AdmitFixture &fx, const std::string &id, const std::string &text,
                               int age_s)
{
	std::string f = fx.state_dir + "/n1/verdicts/verdict." + id + ".json";
	put(f, text);
	struct timespec t[2];
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= age_s;
	t[1] = t[0];
	assert_int_equal(utimensat(AT_FDCWD, f.c_str(), t, AT_SYMLINK_NOFOLLOW), 0);
	return f;
}

// VerdictsKept newest verdicts stay, and the one the record holds however
// old; unreadable-as-JSON old ones and those past the count go; other
// names and symlinks stay, their targets untouched.
static void prune_verdicts_keeps_the_newest_and_the_recorded_one(void **)
{
	AdmitFixture fx("sim", "VerdictsKept=2\n");
	Config c = fx.config();
	fx.boot("n1", "boot-A");
	Record r = pass_record(fx, "n1", "boot-A");
	r.verdict.set("time", "2025-05-01T12:00:00Z");
	assert_true(write_record(fx.record("n1"), r).ok());
	std::string held = put_verdict(fx, "100", r.verdict.dump(true) + "\n", 5000);
	put_verdict(fx, "101", "{\"status\": \"FAIL\"}\n", 4000);
	put_verdict(fx, "102", "not json", 3000);
	put_verdict(fx, "103", "{\"status\": \"PASS\"}\n", 200);
	put_verdict(fx, "104", "{\"status\": \"PASS\"}\n", 100);
	std::string vdir = fx.state_dir + "/n1/verdicts", victim = fx.dir + "/victim.json";
	put(victim, r.verdict.dump());
	assert_int_equal(symlink(victim.c_str(), (vdir + "/verdict.999.json").c_str()), 0);
	put(vdir + "/README", "an admin's note");
	auto n = prune_verdicts(c, "n1");
	assert_true(n.ok());
	assert_int_equal(n.value(), 2);
	auto left = list_dir(vdir);
	std::vector<std::string> want = {"README", "verdict.100.json", "verdict.103.json",
	                                 "verdict.104.json", "verdict.999.json"};
	assert_true(left == want);
	assert_int_equal(mode_of(held), 0640);
	assert_int_equal(mode_of(victim), 0644);
	assert_string_equal(slurp(victim).c_str(), r.verdict.dump().c_str());
	// Once the record holds another verdict, the old one goes too.
	r.verdict = Json::object();
	r.verdict.set("status", "PASS").set("time", "2025-05-02T12:00:00Z");
	assert_true(write_record(fx.record("n1"), r).ok());
	assert_int_equal(prune_verdicts(c, "n1").value(), 1);
	assert_int_equal(access(held.c_str(), F_OK), -1);
}

static void c_api_admission_check(void **)
{
	AdmitFixture fx;
	char err[256] = "", why[128] = "";
	onramp_ctx_t *ctx = onramp_ctx_create(fx.conf.c_str(), "test", err, sizeof err);
	assert_non_null(ctx);
	fx.boot("n1", "boot-A");
	assert_int_equal(onramp_admission_check(ctx, "n1", why, sizeof why), 0);
	assert_string_equal(why, "no admission record");
	assert_true(write_record(fx.record("n1"), pass_record(fx, "n1", "boot-A")).ok());
	assert_int_equal(onramp_admission_check(ctx, "n1", why, sizeof why), 1);
	fx.boot("n1", "boot-B");
	assert_int_equal(onramp_admission_check(ctx, "n1", why, sizeof why), 0);
	assert_string_equal(why, "boot changed since admission");
	assert_int_equal(onramp_admission_check(ctx, "nX", why, sizeof why), 0);
	// Admitted under a baseline edited since: 2, which the fence spares.
	fx.boot("n1", "boot-A");
	edit_baseline_in_place(fx);
	assert_int_equal(onramp_admission_check(ctx, "n1", why, sizeof why), 2);
	assert_string_equal(why, "baseline changed since admission");
	put(fx.record("n1"), "[]");
	assert_int_equal(onramp_admission_check(ctx, "n1", why, sizeof why), -1);
	assert_int_equal(onramp_admission_check(ctx, nullptr, why, sizeof why), -1);
	assert_int_equal(onramp_admission_check(nullptr, "n1", why, sizeof why), -1);
	char tiny[8];
	onramp_admission_check(ctx, "n1", tiny, sizeof tiny);
	assert_int_equal(strlen(tiny), 7);
	onramp_ctx_destroy(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(sha256_known_answer_and_cache),
	    cmocka_unit_test(record_and_baseline_paths),
	    cmocka_unit_test(record_round_trip_and_validation),
	    cmocka_unit_test(judge_requires_pass_same_boot_same_baseline),
	    cmocka_unit_test(judge_cannot_judge_without_inputs),
	    cmocka_unit_test(revoke_keeps_verdict_and_blocks),
	    cmocka_unit_test(c_api_admission_check),
	    cmocka_unit_test(record_is_not_world_readable),
	    cmocka_unit_test(prune_verdicts_keeps_the_newest_and_the_recorded_one),
	};
	return cmocka_run_group_tests_name("admit_record", tests, NULL, NULL);
}
