// The 2-node test's blame rule: a good node is never drained for a bad
// peer, a bad node fails after two distinct peers, one failing peer is
// inconclusive. Pure decisions first, then sim runs with the shipped
// bad-peer profile.
#include "unit.hpp"

#include <arpa/inet.h>
#include <chrono>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
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
	// A run with no number blames nobody, not even that peer.
	PairAttempt none;
	none.peer = "p3";
	none.why = "srun: error: Unable to allocate resources";
	std::vector<PairAttempt> mixed = {none, at("p4", 41.0)};
	PairDecision m = decide_pair(mixed, 40);
	assert_int_equal(m.status, CheckStatus::Pass);
	assert_int_equal(m.suspects.size(), 0);
	assert_contains(m.detail, "with p4; no result with p3 (srun: error");
}

static PairAttempt unmeasured(const char *peer, const char *why)
{
	PairAttempt a;
	a.peer = peer;
	a.why = why;
	return a;
}

// Two pairs whose rendezvous nobody finished (four idle connections held
// the one-at-a-time server) were two "failures" with distinct peers: a
// healthy node drained as PAIR_BW_LOW. Nothing measured is inconclusive
// (exit 2, not recorded, never drained), and the next peer is tried.
static void unmeasured_pairs_are_inconclusive_never_pair_bw_low(void **)
{
	std::vector<PairAttempt> a = {
	    unmeasured("p1", "no authenticated peer on port 40001 in time"),
	    unmeasured("p2", "pair launch exited with status 1 and gave no result")};
	assert_false(pair_decided(a, 40)); // a third peer is still worth a try
	PairDecision d = decide_pair(a, 40);
	assert_int_equal(d.status, CheckStatus::Error);
	assert_string_equal(d.code.c_str(), "PAIR_INCONCLUSIVE");
	assert_true(d.inconclusive());
	assert_int_equal(d.suspects.size(), 0);
	assert_string_equal(d.detail.c_str(),
	                    "nccl_pair: not measured; no result with p1 (no authenticated peer "
	                    "on port 40001 in time), p2 (pair launch exited with status 1 and "
	                    "gave no result)");
	// One measured failure and one unmeasured: still one peer's word.
	a[0] = at("p1", 12.0);
	d = decide_pair(a, 40);
	assert_true(d.inconclusive());
	assert_contains(d.detail, "failed only with p1 (12.0 GB/s)");
	assert_contains(d.detail, "; no result with p2 (pair launch exited");
	// Two measured failures still fail, whatever else was unmeasured.
	a.push_back(at("p3", 11.0));
	d = decide_pair(a, 40);
	assert_string_equal(d.code.c_str(), "PAIR_BW_LOW");
	assert_contains(d.detail, "p1 (12.0 GB/s), p3 (11.0 GB/s); no result with p2");
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
	assert_contains(c.detail, "with good1; suspect peer bad1 (12.0 GB/s); 8 rails >= 40.0 GB/s "
	                          "[SIMULATED]");
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
	// Recorded as such: not admitted, not failed.
	assert_true(record_verdict(fx.config(), v.value()).ok());
	assert_string_equal(read_record(fx.record(v->node)).value().status.c_str(), "INCONCLUSIVE");

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

// A TCP port on 127.0.0.1 that was free a moment ago.
static int free_port()
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s, reinterpret_cast<struct sockaddr *>(&a), sizeof a), 0);
	socklen_t len = sizeof a;
	getsockname(s, reinterpret_cast<struct sockaddr *>(&a), &len);
	close(s);
	return ntohs(a.sin_port);
}

// A stranger's raw connection to 127.0.0.1:port (retried while the server
// starts); -1 when none.
static int raw_connect(int port)
{
	for (int i = 0; i < 100; i++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {};
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a.sin_port = htons(static_cast<uint16_t>(port));
		if (connect(s, reinterpret_cast<struct sockaddr *>(&a), sizeof a) == 0)
			return s;
		close(s);
		usleep(20000);
	}
	return -1;
}

// Everything the server sends a stranger who writes junk: never the id.
static std::string drain(int s, const std::string &junk)
{
	std::string got;
	if (!junk.empty() && write(s, junk.data(), junk.size()) < 0)
		return got;
	char buf[4096];
	struct pollfd pfd = {s, POLLIN, 0};
	while (poll(&pfd, 1, 5000) > 0) {
		ssize_t n = read(s, buf, sizeof buf);
		if (n <= 0)
			break;
		got.append(buf, static_cast<size_t>(n));
	}
	return got;
}

static void rendezvous_gives_the_id_only_to_the_holder_of_the_secret(void **)
{
	int port = free_port();
	std::string secret = new_pair_secret(), id;
	assert_int_equal(secret.size(), 64);
	assert_string_not_equal(secret.c_str(), new_pair_secret().c_str());
	for (int i = 0; i < 128; i++)
		id += static_cast<char>('A' + i % 26);
	Status served = Status::Error("not run");
	std::thread server(
	    [&] { served = pair_serve_id("127.0.0.1", port, secret, id, 30, "127.0.0.1"); });
	// A stranger connects first and says nothing: it holds the server for
	// at most the handshake time, never for good.
	int silent = raw_connect(port);
	assert_true(silent >= 0);
	// A second stranger answers the challenge with junk.
	int junk = raw_connect(port);
	assert_true(junk >= 0);
	// One with the wrong secret is refused and gets nothing.
	auto wrong = pair_fetch_id("127.0.0.1", port, std::string(64, '0'), 3);
	assert_false(wrong.ok());
	// The real peer gets the id, though strangers came first.
	auto real = pair_fetch_id("127.0.0.1", port, secret, 20);
	server.join();
	assert_true(served.ok());
	assert_true(real.ok());
	assert_true(real.value() == id);
	std::string seen = drain(junk, std::string(64, 'x')) + drain(silent, "");
	assert_true(seen.find(id.substr(0, 16)) == std::string::npos);
	close(silent);
	close(junk);
}

static void a_server_without_the_secret_hands_out_nothing(void **)
{
	// A stranger took the port first and plays the protocol without the
	// secret: the peer takes no id from it.
	int port = free_port();
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(static_cast<uint16_t>(port));
	assert_int_equal(bind(ls, reinterpret_cast<struct sockaddr *>(&a), sizeof a), 0);
	assert_int_equal(listen(ls, 4), 0);
	std::thread rogue([&] {
		int c = accept(ls, nullptr, nullptr);
		if (c < 0)
			return;
		std::string hello = "ORP1" + std::string(32, 'n');
		char buf[64];
		if (write(c, hello.data(), hello.size()) > 0 && read(c, buf, sizeof buf) > 0) {
			std::string answer(32 + 128, 'j');
			(void)!write(c, answer.data(), answer.size());
		}
		close(c);
	});
	auto got = pair_fetch_id("127.0.0.1", port, new_pair_secret(), 1);
	rogue.join();
	close(ls);
	assert_false(got.ok());
	assert_contains(got.status().message(), "does not hold the attempt's secret");
	// A server and a peer with different secrets never agree.
	std::string id(128, 'Z');
	Status served = Status::Error("not run");
	port = free_port();
	std::thread other([&] {
		served = pair_serve_id("127.0.0.1", port, new_pair_secret(), id, 3, "localhost");
	});
	assert_false(pair_fetch_id("127.0.0.1", port, new_pair_secret(), 2).ok());
	other.join();
	assert_false(served.ok());
	// No secret, no rendezvous.
	assert_false(pair_serve_id("127.0.0.1", port, "", id, 1, "127.0.0.1").ok());
	assert_false(pair_fetch_id("127.0.0.1", port, "", 1).ok());
}

// Four (here eight) idle connections from any user held the one-at-a-time
// rendezvous for 2 s each: the real peer's own handshake deadline passed
// before its turn, the pair was unmeasured. Served side by side, the idle
// ones cost the real peer nothing.
static void idle_strangers_do_not_starve_the_real_peer(void **)
{
	int port = free_port();
	std::string secret = new_pair_secret(), id(128, 'I');
	Status served = Status::Error("not run");
	std::thread server(
	    [&] { served = pair_serve_id("127.0.0.1", port, secret, id, 20, "127.0.0.1"); });
	std::vector<int> idle;
	for (int i = 0; i < 8; i++) {
		int s = raw_connect(port);
		assert_true(s >= 0);
		idle.push_back(s);
	}
	usleep(100000); // all of them accepted before the peer comes
	auto t0 = std::chrono::steady_clock::now();
	auto real = pair_fetch_id("127.0.0.1", port, secret, 5);
	double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	server.join();
	for (int s : idle)
		close(s);
	assert_true(real.ok());
	assert_true(real.value() == id);
	assert_true(served.ok());
	assert_true(took < kPairHandshakeS);
}

// A raw connection to 127.0.0.1:port from source address src.
static int connect_from(const char *src, int port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {};
	a.sin_family = AF_INET;
	inet_pton(AF_INET, src, &a.sin_addr);
	if (bind(s, reinterpret_cast<struct sockaddr *>(&a), sizeof a) != 0) {
		close(s);
		return -1;
	}
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(static_cast<uint16_t>(port));
	for (int i = 0; i < 100; i++) {
		if (connect(s, reinterpret_cast<struct sockaddr *>(&a), sizeof a) == 0)
			return s;
		usleep(20000);
	}
	close(s);
	return -1;
}

// Rank 0 accepts the peer node's addresses only: a connection from any
// other address is closed at once, before a challenge, and even the
// attempt's secret does not help it.
static void rendezvous_refuses_an_address_not_the_peers(void **)
{
	int port = free_port();
	std::string secret = new_pair_secret(), id(128, 'R');
	Status served = Status::Error("not run");
	std::thread server(
	    [&] { served = pair_serve_id("127.0.0.1", port, secret, id, 4, "127.0.0.2"); });
	int stranger = connect_from("127.0.0.1", port);
	assert_true(stranger >= 0);
	assert_string_equal(drain(stranger, "").c_str(), ""); // closed, no challenge
	close(stranger);
	int peer = connect_from("127.0.0.2", port);
	assert_true(peer >= 0);
	char hello[4] = {0};
	struct pollfd pfd = {peer, POLLIN, 0};
	assert_true(poll(&pfd, 1, 3000) > 0);
	assert_int_equal(read(peer, hello, sizeof hello), 4);
	assert_memory_equal(hello, "ORP1", 4);
	close(peer);
	auto wrong_address = pair_fetch_id("127.0.0.1", port, secret, 2);
	server.join();
	assert_false(wrong_address.ok());
	assert_false(served.ok());
	assert_contains(served.message(), "not the peer 127.0.0.2");
	// Rank 1 connects from the address its own name resolves to, whatever
	// the kernel would pick: the check sees the address it expects.
	port = free_port();
	std::thread again(
	    [&] { served = pair_serve_id("127.0.0.1", port, secret, id, 10, "127.0.0.2"); });
	auto right = pair_fetch_id("127.0.0.1", port, secret, 5, "127.0.0.2");
	again.join();
	assert_true(right.ok());
	assert_true(right.value() == id);
	assert_true(served.ok());
}

static void pair_launch_runs_words_without_a_shell_and_passes_the_secret(void **)
{
	std::string dir = unit_tmpdir();
	// The launch command records the words it was given and prints rank
	// 0's line with the length of the secret it found in its environment.
	put(dir + "/launch.sh",
	    "#!/bin/sh\nprintf '%s\\n' \"$@\" >" + dir +
	        "/args\nprintf %s \"$ONRAMP_PAIR_SECRET\" >" + dir +
	        "/secret\nprintf '%s %s' \"$ONRAMP_PAIR_PORT\" \"$ONRAMP_PAIR_PEER\" >" + dir +
	        "/port\necho '{\"rank\":1,\"measured\":true,\"busbw_gbs\":1}'\n"
	        "echo \"{\\\"rank\\\":0,\\\"measured\\\":true,"
	        "\\\"busbw_gbs\\\":${#ONRAMP_PAIR_SECRET}}\"\n");
	chmod((dir + "/launch.sh").c_str(), 0755);
	AdmitFixture fx("sim", "PairLaunchCommand=\"" + dir + "/launch.sh --peer=%p x%ny\"\n");
	std::string hostile = "p1;touch " + dir + "/pwned";
	auto obs = run_pair_launch(fx.config(), "n1", hostile);
	assert_true(obs.ok());
	assert_true(obs->measured);
	assert_true(obs->busbw_gbs == 64); // a 64-digit secret reached the launch
	std::string words = slurp(dir + "/args");
	assert_contains(words, ("--peer=" + hostile + "\nxn1y\n").c_str());
	// The rendezvous names the host; the port (PairPort=0: a free one for
	// this attempt) and the peer travel in the environment.
	assert_contains(words,
	                ("\npair-rank\n--conf\n" + fx.conf + "\n--rendezvous\nn1\n").c_str());
	std::string port = slurp(dir + "/port");
	int p = atoi(port.c_str());
	assert_true(p > 0 && p < 65536);
	assert_string_equal(port.c_str(), (std::to_string(p) + " " + hostile).c_str());
	assert_true(access((dir + "/pwned").c_str(), F_OK) != 0);
	// The secret is on no command line.
	std::string secret = slurp(dir + "/secret");
	assert_int_equal(secret.size(), 64);
	assert_true(words.find(secret) == std::string::npos);
	// A launch command that cannot be split is named with its key and line.
	AdmitFixture bad("sim", "PairLaunchCommand=\"srun 'unterminated\"\n");
	auto e = run_pair_launch(bad.config(), "n1", "p1");
	assert_false(e.ok());
	assert_contains(e.status().message(), "PairLaunchCommand (");
}

// Inside the step each rank finds the attempt's port and peer in its
// environment: the rendezvous names no port, PairPort=0 names none either.
static void pair_rank_takes_the_port_and_the_peer_from_the_step(void **)
{
	AdmitFixture fx("real");
	unsetenv("SLURM_STEP_NODELIST");
	unsetenv("SLURM_JOB_NODELIST");
	setenv(kPairSecretEnv, "00ff", 1);
	setenv(kPairPortEnv, "41234", 1);
	setenv(kPairPeerEnv, "n2", 1);
	auto o = pair_rank_options(fx.config(), "n1", "n1", -1, 0);
	assert_true(o.ok());
	assert_int_equal(o->port, 41234);
	assert_int_equal(o->rank, 0);
	assert_string_equal(o->peer.c_str(), "n2");
	// A port on the rendezvous wins (PairPort=N sites, older launchers).
	o = pair_rank_options(fx.config(), "n1", "n1:29517", -1, 0);
	assert_int_equal(o->port, 29517);
	// Junk in the environment is refused, not read as a port.
	setenv(kPairPortEnv, "41234;x", 1);
	o = pair_rank_options(fx.config(), "n1", "n1", -1, 0);
	assert_false(o.ok());
	assert_contains(o.status().message(), "ONRAMP_PAIR_PORT");
	// No port anywhere (PairPort=0 is the default) is an error, never port 0.
	unsetenv(kPairPortEnv);
	o = pair_rank_options(fx.config(), "n1", "n1", -1, 0);
	assert_false(o.ok());
	// Without a named peer rank 0 takes the step's other node.
	setenv(kPairPortEnv, "41234", 1);
	unsetenv(kPairPeerEnv);
	setenv("SLURM_STEP_NODELIST", "n[1-2]", 1);
	o = pair_rank_options(fx.config(), "n1", "", -1, 0);
	assert_true(o.ok());
	assert_string_equal(o->host.c_str(), "n1");
	assert_string_equal(o->peer.c_str(), "n2");
	unsetenv("SLURM_STEP_NODELIST");
	unsetenv(kPairPortEnv);
	unsetenv(kPairSecretEnv);
}

// A launch that fails (srun refused, the peer's rank never started) gave
// no number twice with each of two peers: PAIR_BW_LOW on a healthy node.
// Each unmeasured attempt is made once more, and the verdict is
// inconclusive: exit 2, nothing recorded, nothing drained.
static void a_failing_launch_is_retried_and_inconclusive(void **)
{
	std::string dir = unit_tmpdir();
	put(dir + "/launch.sh", "#!/bin/sh\necho \"$1\" >>" + dir +
	                            "/calls\necho 'srun: error: Unable to allocate "
	                            "resources' >&2\nexit 1\n");
	chmod((dir + "/launch.sh").c_str(), 0755);
	AdmitFixture fx("real", "PairLaunchCommand=\"" + dir + "/launch.sh %p\"\n");
	fx.boot("new", "boot-new");
	auto in = prepare_admission(fx.config(), "new");
	assert_true(in.ok());
	auto v = run_pair_admission(*in.value(), {"p1", "p2"}, AdmitOptions());
	assert_true(v.ok());
	assert_true(v->inconclusive);
	assert_string_equal(v->status().c_str(), "INCONCLUSIVE");
	assert_string_equal(v->code().c_str(), "PAIR_INCONCLUSIVE");
	assert_contains(v->checks.front().detail,
	                "not measured; no result with p1 (pair launch exited with status 1");
	assert_string_equal(slurp(dir + "/calls").c_str(), "p1\np1\np2\np2\n");
	// "pair" alone never records an inconclusive verdict.
	assert_int_equal(
	    run_admit("pair --conf " + fx.conf + " --node new --peers p[1-2] --record").rc, 2);
	assert_false(read_record(fx.record("new")).ok());
}

static RailAttempt rail(const char *peer, int gpu, double gbs, uint64_t wrong = 0)
{
	RailAttempt a;
	a.peer = peer;
	a.obs.gpu = gpu;
	a.obs.hca = "mlx5_" + std::to_string(gpu);
	a.obs.port = 1;
	a.obs.measured = true;
	a.obs.busbw_gbs = gbs;
	a.obs.wrong = wrong;
	return a;
}

// The per-rail pass judges each rail by the pair's blame rule: a weak rail
// fails naming node, HCA, port and GPU only after two peers; one peer, or
// nothing measured, is inconclusive; a rail that passed with any peer passes.
static void rails_are_judged_one_by_one_with_the_blame_rule(void **)
{
	// Every rail passes.
	RailDecision d = decide_rails("n3", {rail("p1", 0, 46), rail("p1", 1, 47)}, 40);
	assert_int_equal(d.status, CheckStatus::Pass);
	assert_string_equal(d.code.c_str(), "OK");
	assert_contains(d.detail, "2 rails >= 40.0 GB/s");
	// Rail 5 weak with two peers: RAIL_BW_LOW naming node, HCA, port, GPU.
	std::vector<RailAttempt> a = {rail("p1", 4, 46), rail("p1", 5, 11.2), rail("p2", 4, 46),
	                              rail("p2", 5, 10.9)};
	assert_true(rails_decided(a, 40));
	d = decide_rails("n3", a, 40);
	assert_int_equal(d.status, CheckStatus::Fail);
	assert_string_equal(d.code.c_str(), "RAIL_BW_LOW");
	assert_string_equal(d.detail.c_str(),
	                    "n3 mlx5_5 port 1 (GPU 5) 11.2 GB/s < 40.0 GB/s with p1, p2");
	assert_int_equal(d.failed_gpus.size(), 1);
	assert_int_equal(d.failed_gpus[0], 5);
	// Weak with one peer only: undecided, a second peer is wanted ...
	a = {rail("p1", 4, 46), rail("p1", 5, 11.2)};
	assert_false(rails_decided(a, 40));
	d = decide_rails("n3", a, 40);
	assert_true(d.inconclusive());
	assert_int_equal(d.status, CheckStatus::Error);
	assert_contains(d.detail, "mlx5_5 port 1 (GPU 5) 11.2 GB/s with p1 only");
	// ... and the peer's rail was the weak one when it passes with the next.
	a.push_back(rail("p2", 5, 45));
	a.push_back(rail("p2", 4, 45));
	assert_true(rails_decided(a, 40));
	assert_int_equal(decide_rails("n3", a, 40).status, CheckStatus::Pass);
	// A rail that measured nothing is no evidence: inconclusive, why named.
	RailAttempt none = rail("p1", 2, 0);
	none.obs.measured = false;
	none.obs.why = "rendezvous timed out";
	d = decide_rails("n3", {rail("p1", 1, 46), none, rail("p2", 1, 46), none}, 40);
	assert_true(d.inconclusive());
	assert_contains(d.detail, "GPU 2) not measured: rendezvous timed out");
	// Wrong results with two peers fail the rail too, said as such.
	d = decide_rails("n3", {rail("p1", 0, 46, 7), rail("p2", 0, 46, 7)}, 40);
	assert_string_equal(d.code.c_str(), "RAIL_BW_LOW");
	assert_contains(d.detail, "(GPU 0) 7 wrong results with p1, p2");
	// No attempt at all is never a pass.
	assert_true(decide_rails("n3", {}, 40).inconclusive());
}

// The sim backend models the all-GPU run (the slowest GPU of either node)
// and each rail (GPU g over its affine HCA port on both nodes).
static void sim_all_gpu_run_and_rails(void **)
{
	AdmitFixture fx;
	fx.profile("good1", "healthy");
	fx.profile("good2", "healthy");
	fx.profile("new", "healthy");
	fx.profile("weak", "weak-rail");
	fx.profile("weakpeer", "weak-rail");
	fx.profile("slow", "slow-gpu-pair");

	// Healthy: the all-GPU run and 8 rails pass, recorded in the data.
	auto v = pair(fx, "new", {"good1", "good2"});
	assert_true(v.ok());
	assert_string_equal(v->status().c_str(), "PASS");
	const CheckResult &c = v->checks.front();
	assert_contains(c.detail, "8 rails >= 40.0 GB/s");
	assert_contains(c.to_json().dump(), "\"nranks\":16");
	assert_contains(c.to_json().dump(), "\"hca\":\"mlx5_5\"");

	// A weak rail: the all-GPU run passes, rail 5 fails with two peers.
	v = pair(fx, "weak", {"good1", "good2"});
	assert_true(v.ok());
	assert_string_equal(v->status().c_str(), "FAIL");
	assert_string_equal(v->code().c_str(), "RAIL_BW_LOW");
	assert_contains(v->detail(),
	                "weak mlx5_5 port 1 (GPU 5) 11.2 GB/s < 40.0 GB/s with good1, good2");

	// The same weak rail on the peer: the node passes with the next peer.
	v = pair(fx, "new", {"weakpeer", "good1"});
	assert_string_equal(v->status().c_str(), "PASS");
	// ... and with no other peer it is inconclusive, never failed.
	v = pair(fx, "new", {"weakpeer"});
	assert_true(v->inconclusive);
	assert_string_equal(v->code().c_str(), "PAIR_INCONCLUSIVE");

	// A backend that lists fewer rails than the SKU's GPUs tested too few.
	auto half = json_parse(slurp(src_path("etc/sim-profiles/healthy.json")), "healthy");
	assert_true(half.ok());
	while (json_array_size(json_object_get(half->get(), "gpus")) > 4)
		json_array_remove(json_object_get(half->get(), "gpus"), 4);
	put(fx.profiles + "/half.json", half->dump());
	v = pair(fx, "half", {"good1", "good2"});
	assert_true(v->inconclusive);
	assert_contains(v->detail(), "per-rail pass: only 4 of 8 rails measured");

	// One GPU slow in the all-GPU run: PAIR_BW_LOW naming it.
	v = pair(fx, "slow", {"good1", "good2"});
	assert_string_equal(v->status().c_str(), "FAIL");
	assert_string_equal(v->code().c_str(), "PAIR_BW_LOW");
	assert_contains(v->detail(),
	                "with 2 peers (slowest: slow GPU 3): good1 (20.0 GB/s), good2");
}

// The real backend's launches: the all-GPU run asks each pair-rank for
// every GPU; a rail run names its device and restricts NCCL to its HCA
// port through the step's environment.
static void pair_launch_all_gpus_and_one_rail(void **)
{
	std::string dir = unit_tmpdir();
	put(dir + "/launch.sh", "#!/bin/sh\nprintf '%s\\n' \"$@\" >" + dir +
	                            "/args\nprintf %s \"$NCCL_IB_HCA\" >" + dir +
	                            "/hca\necho '{\"rank\":0,\"measured\":true,"
	                            "\"busbw_gbs\":300,\"nranks\":16}'\n");
	chmod((dir + "/launch.sh").c_str(), 0755);
	AdmitFixture fx("real", "PairLaunchCommand=\"" + dir + "/launch.sh %p\"\n");
	auto obs = run_pair_launch(fx.config(), "n1", "p1");
	assert_true(obs.ok());
	assert_int_equal(obs->nranks, 16);
	assert_contains(slurp(dir + "/args"), "--rendezvous\nn1\n--all-gpus\n");
	assert_string_equal(slurp(dir + "/hca").c_str(), "");
	obs = run_pair_launch(fx.config(), "n1", "p1", 5, "=mlx5_5:1");
	assert_true(obs.ok());
	assert_contains(slurp(dir + "/args"), "--rendezvous\nn1\n--device\n5\n");
	assert_string_equal(slurp(dir + "/hca").c_str(), "=mlx5_5:1");
	// Inside the step, --all-gpus drives the baseline's gpu_count GPUs.
	setenv(kPairSecretEnv, "00ff", 1);
	setenv(kPairPortEnv, "41234", 1);
	setenv(kPairPeerEnv, "p1", 1);
	auto o = pair_rank_options(fx.config(), "n1", "n1", -1, -1, true);
	assert_true(o.ok());
	assert_int_equal(o->gpus, 8);
	o = pair_rank_options(fx.config(), "n1", "n1", -1, 3, false);
	assert_true(o.ok());
	assert_int_equal(o->gpus, 0);
	assert_int_equal(o->device, 3);
	unsetenv(kPairSecretEnv);
	unsetenv(kPairPortEnv);
	unsetenv(kPairPeerEnv);
}

// A node used to be admitted with no pair test at all when no admitted
// peer existed ("7 checks passed", no nccl_pair). With --require-pair (what
// the admission job passes) it stays fenced: PAIR_INCONCLUSIVE, exit 2,
// recorded INCONCLUSIVE (not admitted, not failed). Peers that are not admitted themselves
// (--untested-peers, a bring-up) admit it on a pass and never drain it.
static void assert_inconclusive_record(const std::string &path)
{
	auto rec = read_record(path);
	assert_true(rec.ok());
	assert_string_equal(rec->status.c_str(), "INCONCLUSIVE");
	assert_string_equal(rec->code.c_str(), "PAIR_INCONCLUSIVE");
}

static void no_admission_without_a_pair_test(void **)
{
	AdmitFixture fx;
	fx.profile("new", "healthy");
	fx.profile("u1", "healthy");
	fx.profile("b1", "bad-peer");
	fx.profile("b2", "bad-peer");
	fx.profile("badnew", "bad-peer");
	fx.boot("new", "x");
	fx.boot("badnew", "y");
	std::string c = "--conf " + fx.conf;
	auto r = run_admit(c + " --node new --record --require-pair");
	assert_int_equal(r.rc, 2);
	assert_contains(r.out, "PAIR_INCONCLUSIVE");
	assert_contains(r.out, "no tested peer");
	assert_inconclusive_record(fx.record("new"));
	// A partial run (--checks) records nothing anyway and is left alone.
	assert_int_equal(run_admit(c + " --node new --checks inventory --require-pair").rc, 0);
	// Untested peers that fail blame nobody, whatever their number.
	assert_int_equal(
	    run_admit(c + " --node new --record --require-pair --untested-peers b[1-2]").rc, 2);
	assert_inconclusive_record(fx.record("new"));
	assert_int_equal(
	    run_admit(c + " --node badnew --record --require-pair --untested-peers u1,new").rc, 2);
	assert_inconclusive_record(fx.record("badnew"));
	// A pass with an untested peer admits: both sides reached the busbw.
	assert_int_equal(
	    run_admit(c + " --node new --record --require-pair --untested-peers u1").rc, 0);
	auto rec = read_record(fx.record("new"));
	assert_true(rec.ok());
	assert_string_equal(rec->status.c_str(), "PASS");
	assert_contains(rec->detail, "with u1");
	// An untested peer only in the per-rail pass blames nobody either.
	fx.profile("weak", "weak-rail");
	fx.boot("weak", "z");
	auto w =
	    run_admit(c + " --node weak --record --require-pair --peers u1 --untested-peers new");
	assert_int_equal(w.rc, 2);
	assert_contains(w.out, "RAIL_BW_LOW not blamed on the node: tried with peers not admitted "
	                       "themselves (new)");
	auto wr = read_record(fx.record("weak"));
	assert_true(wr.ok());
	assert_string_equal(wr->status.c_str(), "INCONCLUSIVE");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(bad_peer_then_good_peer_passes_naming_the_suspect),
	    cmocka_unit_test(two_bad_peers_fail),
	    cmocka_unit_test(single_failing_peer_is_inconclusive),
	    cmocka_unit_test(unmeasured_pairs_are_inconclusive_never_pair_bw_low),
	    cmocka_unit_test(sim_pairs_use_the_slower_profile),
	    cmocka_unit_test(cli_pair_exit_codes_and_record),
	    cmocka_unit_test(pair_launch_runs_argv_not_a_shell),
	    cmocka_unit_test(rendezvous_gives_the_id_only_to_the_holder_of_the_secret),
	    cmocka_unit_test(a_server_without_the_secret_hands_out_nothing),
	    cmocka_unit_test(pair_launch_runs_words_without_a_shell_and_passes_the_secret),
	    cmocka_unit_test(idle_strangers_do_not_starve_the_real_peer),
	    cmocka_unit_test(rendezvous_refuses_an_address_not_the_peers),
	    cmocka_unit_test(a_failing_launch_is_retried_and_inconclusive),
	    cmocka_unit_test(pair_rank_takes_the_port_and_the_peer_from_the_step),
	    cmocka_unit_test(rails_are_judged_one_by_one_with_the_blame_rule),
	    cmocka_unit_test(sim_all_gpu_run_and_rails),
	    cmocka_unit_test(pair_launch_all_gpus_and_one_rail),
	    cmocka_unit_test(no_admission_without_a_pair_test),
	};
	return cmocka_run_group_tests_name("admit_pair", tests, NULL, NULL);
}
