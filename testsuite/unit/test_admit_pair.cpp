// The 2-node test's blame rule: a good node is never drained for a bad
// peer, a bad node fails after two distinct peers, one failing peer is
// inconclusive. Pure decisions first, then sim runs with the shipped
// bad-peer profile.
#include "unit.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "admit/admission.hpp"
#include "admit/pair.hpp"
#include "admit/record.hpp"
#include "admit_fixture.hpp"

using namespace onramp;
using namespace onramp::admit;

static PairAttempt at(const char *peer, double gbs, uint64_t wrong = 0)
{
	PairAttempt a;
	a.peer = peer;
	a.measured = true;
	a.busbw_gbs = gbs;
	a.wrong = wrong;
	return a;
}

static void bad_peer_then_good_peer_passes_naming_the_suspect(void **)
{
	std::vector<PairAttempt> a = {at("p1", 12.0)};
	assert_false(pair_decided(a, 40));
	a.push_back(at("p2", 46.5));
	assert_true(pair_decided(a, 40));
	PairDecision d = decide_pair(a, 40);
	assert_int_equal(d.status, CheckStatus::Pass);
	assert_string_equal(d.code.c_str(), "OK");
	assert_int_equal(d.suspects.size(), 1);
	assert_string_equal(d.suspects[0].c_str(), "p1");
	assert_string_equal(d.detail.c_str(), "nccl_pair busbw 46.5 GB/s >= 40.0 GB/s with p2; "
	                                      "suspect peer p1 (12.0 GB/s)");
}

static void two_bad_peers_fail(void **)
{
	std::vector<PairAttempt> a = {at("p1", 12.0), at("p2", 11.0)};
	assert_true(pair_decided(a, 40));
	PairDecision d = decide_pair(a, 40);
	assert_int_equal(d.status, CheckStatus::Fail);
	assert_string_equal(d.code.c_str(), "PAIR_BW_LOW");
	assert_string_equal(
	    d.detail.c_str(),
	    "nccl_pair below 40.0 GB/s with 2 peers: p1 (12.0 GB/s), p2 (11.0 GB/s)");
	// The same peer twice is one peer: still inconclusive.
	std::vector<PairAttempt> same = {at("p1", 12.0), at("p1", 13.0)};
	assert_false(pair_decided(same, 40));
	assert_true(decide_pair(same, 40).inconclusive());
	// Wrong results with both peers: corrupt.
	std::vector<PairAttempt> bad = {at("p1", 45.0, 3), at("p2", 45.0, 1)};
	assert_string_equal(decide_pair(bad, 40).code.c_str(), "NCCL_CORRUPT");
	// A run with no number counts against that peer only.
	PairAttempt none;
	none.peer = "p3";
	none.why = "srun: error: Unable to allocate resources";
	std::vector<PairAttempt> mixed = {none, at("p4", 41.0)};
	PairDecision m = decide_pair(mixed, 40);
	assert_int_equal(m.status, CheckStatus::Pass);
	assert_contains(m.detail, "suspect peer p3 (no result: srun: error");
}

static void single_failing_peer_is_inconclusive(void **)
{
	PairDecision d = decide_pair({at("p1", 12.0)}, 40);
	assert_int_equal(d.status, CheckStatus::Error);
	assert_string_equal(d.code.c_str(), "PAIR_INCONCLUSIVE");
	assert_true(d.inconclusive());
	assert_contains(d.detail, "failed only with p1 (12.0 GB/s)");
	PairDecision none = decide_pair({}, 40);
	assert_true(none.inconclusive());
	// Exactly at the threshold passes.
	assert_int_equal(decide_pair({at("p1", 40.0)}, 40).status, CheckStatus::Pass);
}

static Result<Verdict> pair(AdmitFixture &fx, const std::string &node,
                            const std::vector<std::string> &peers)
{
	fx.boot(node, "boot-" + node);
	auto in = prepare_admission(fx.config(), node);
	assert_true(in.ok());
	return run_pair_admission(*in.value(), peers, AdmitOptions());
}

static void sim_pairs_use_the_slower_profile(void **)
{
	AdmitFixture fx;
	fx.profile("new", "healthy");
	fx.profile("good1", "healthy");
	fx.profile("good2", "healthy");
	fx.profile("bad1", "bad-peer");
	fx.profile("bad2", "bad-peer");
	fx.profile("badnew", "bad-peer");

	// A bad peer is retried with a good one: PASS, the bad one suspect.
	auto v = pair(fx, "new", {"new", "bad1", "good1", "good2"});
	assert_true(v.ok());
	assert_string_equal(v->status().c_str(), "PASS");
	const CheckResult &c = v->checks.front();
	assert_string_equal(c.name.c_str(), "nccl_pair");
	assert_true(c.value == 46.5);
	assert_true(c.threshold == 40.0);
	assert_contains(c.detail, "with good1; suspect peer bad1 (12.0 GB/s) [SIMULATED]");
	assert_contains(c.to_json().dump(), "\"suspect_peers\":[\"bad1\"]");
	assert_contains(c.to_json().dump(), "\"attempts\":[{\"peer\":\"bad1\"");
	// good2 was not needed.
	assert_true(c.to_json().dump().find("good2") == std::string::npos);

	// A bad node fails with two good peers.
	v = pair(fx, "badnew", {"good1", "good2"});
	assert_string_equal(v->status().c_str(), "FAIL");
	assert_string_equal(v->code().c_str(), "PAIR_BW_LOW");

	// Only one peer, and it is bad: could not judge.
	v = pair(fx, "new", {"bad1"});
	assert_true(v->inconclusive);
	assert_string_equal(v->status().c_str(), "INCONCLUSIVE");
	assert_string_equal(v->code().c_str(), "PAIR_INCONCLUSIVE");
	assert_false(record_verdict(fx.config(), v.value()).ok());

	// A malformed peer profile is our own bad input.
	put(fx.profiles + "/broken.json", "{\"sku\": 1}");
	v = pair(fx, "new", {"broken"});
	assert_false(v.ok());
	assert_contains(v.status().message(), "broken.json: field 'sku'");
}

static void cli_pair_exit_codes_and_record(void **)
{
	AdmitFixture fx;
	fx.profile("new", "healthy");
	fx.profile("g1", "healthy");
	fx.profile("g2", "healthy");
	fx.profile("b1", "bad-peer");
	fx.profile("b2", "bad-peer");
	fx.profile("badnew", "bad-peer");
	fx.boot("new", "x");
	fx.boot("badnew", "y");
	std::string c = "--conf " + fx.conf;
	assert_int_equal(run_admit("pair " + c + " --node new --peers b1,g[1-2]").rc, 0);
	assert_int_equal(run_admit("pair " + c + " --node new --peer b1").rc, 2);
	assert_int_equal(run_admit("pair " + c + " --node new --peers b[1-2]").rc, 1);
	assert_int_equal(run_admit("pair " + c + " --node new").rc, 2);
	// Local checks then the pair test in one run, recorded.
	assert_int_equal(run_admit(c + " --node badnew --peers g[1-2] --record").rc, 1);
	auto rec = read_record(fx.record("badnew"));
	assert_true(rec.ok());
	assert_string_equal(rec->code.c_str(), "PAIR_BW_LOW");
	// pair --record downgrades an existing PASS record on failure.
	assert_int_equal(run_admit(c + " --node new --record").rc, 0);
	assert_string_equal(read_record(fx.record("new"))->status.c_str(), "PASS");
	assert_int_equal(run_admit("pair " + c + " --node new --peers b1,b2 --record").rc, 1);
	rec = read_record(fx.record("new"));
	assert_string_equal(rec->status.c_str(), "FAIL");
	assert_string_equal(rec->code.c_str(), "PAIR_BW_LOW");
}

// PairLaunchCommand is split into words and run without a shell: a peer
// name with shell syntax reaches the launcher as one argument (with popen
// of the joined string, ";touch ..." ran).
static void pair_launch_runs_argv_not_a_shell(void **)
{
	std::string dir = unit_tmpdir();
	std::string script = dir + "/launch.sh";
	FILE *f = fopen(script.c_str(), "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\nprintf '{\"rank\":0,\"measured\":true,\"busbw_gbs\":7.5,"
	           "\"why\":\"%%s\"}\\n' \"$1\"\n");
	fclose(f);
	assert_int_equal(chmod(script.c_str(), 0755), 0);
	auto cfg = Config::parse("PairLaunchCommand=\"" + script + " %p\"\n", "t.conf");
	assert_true(cfg.ok());
	std::string peer = "n1;touch${IFS}" + dir + "/pwned";
	auto obs = run_pair_launch(cfg.value(), "n0", peer);
	assert_true(obs.ok());
	assert_true(obs->measured);
	assert_true(obs->busbw_gbs == 7.5);
	assert_string_equal(obs->why.c_str(), peer.c_str());
	assert_int_not_equal(access((dir + "/pwned").c_str(), F_OK), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(bad_peer_then_good_peer_passes_naming_the_suspect),
	    cmocka_unit_test(two_bad_peers_fail),
	    cmocka_unit_test(single_failing_peer_is_inconclusive),
	    cmocka_unit_test(sim_pairs_use_the_slower_profile),
	    cmocka_unit_test(cli_pair_exit_codes_and_record),
	    cmocka_unit_test(pair_launch_runs_argv_not_a_shell),
	};
	return cmocka_run_group_tests_name("admit_pair", tests, NULL, NULL);
}
