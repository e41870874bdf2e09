// The 2-node NCCL test (nccl_pair) between a node under admission and
// known-good peers.
//
// Blame rule: a failing pair may be the peer's fault. A failure is retried
// with a different peer before the node is blamed; the node passes if it
// passes with any peer (failing peers are named as suspects, never blamed),
// fails only after failing with two distinct peers, and is "inconclusive"
// (exit 2, never drained) when only one peer was available and it failed.
// An attempt that measured nothing (the rendezvous never completed, the
// launch failed or timed out) is no evidence against anyone: it is made
// once more with the same peer (kPairUnmeasuredRetries), then with the next
// peer, and when no attempt measured the decision is inconclusive, never
// PAIR_BW_LOW.
#pragma once

#include <string>
#include <vector>

#include "admit/backend.hpp"
#include "admit/verdict.hpp"
#include "config.hpp"
#include "status.hpp"

namespace onramp {
namespace admit {

struct PairAttempt {
	std::string peer;
	bool measured = false; // false: the run produced no number (why says)
	double busbw_gbs = 0;
	uint64_t wrong = 0; // elements with a wrong result
	std::string why;
};

struct PairDecision {
	CheckStatus status = CheckStatus::Error; // Pass, Fail, or Error (inconclusive)
	std::string code;                        // OK, PAIR_BW_LOW, NCCL_CORRUPT, PAIR_INCONCLUSIVE
	std::string detail;
	std::vector<std::string> suspects; // failing peers when the node passed
	bool inconclusive() const { return code == "PAIR_INCONCLUSIVE"; }
};

// Further attempts with the same peer after one that measured nothing.
constexpr int kPairUnmeasuredRetries = 1;
// Whether one attempt passes threshold_gbs.
bool pair_attempt_ok(const PairAttempt &a, double threshold_gbs);
// Decide from attempts made in order (see the blame rule above).
PairDecision decide_pair(const std::vector<PairAttempt> &attempts, double threshold_gbs);
// True when no further peer needs to be tried: a pass, or measured
// failures with two distinct peers.
bool pair_decided(const std::vector<PairAttempt> &attempts, double threshold_gbs);

// Real backend, rank 0 side: run PairLaunchCommand split into words
// (common/proc.hpp's split_command; %n: this node, %p: the peer, per word,
// no shell) followed by "<this program> pair-rank --conf <conf>
// --rendezvous <node>:<PairPort>", with a fresh secret for this attempt in
// the launch's environment (kPairSecretEnv; srun passes it to both ranks),
// and read rank 0's JSON line from its stdout.
Result<PairObs> run_pair_launch(const Config &cfg, const std::string &node,
                                const std::string &peer);

// The rendezvous of one attempt. Rank 0 serves the ncclUniqueId (128
// bytes) only to a peer that proves it holds the attempt's secret, and the
// peer accepts an id only from a server that proves the same:
//   server: "ORP1" nonce_s[32]
//   client: nonce_c[32] HMAC(secret, "onramp-pair client" nonce_s nonce_c)
//   server: HMAC(secret, "onramp-pair server" nonce_c nonce_s enc) enc[128]
// where enc is the id XOR an HMAC(secret, "onramp-pair key" i nonce_s
// nonce_c) keystream, so the id never crosses the wire in the clear. A
// connection that fails the handshake (a stranger, a stale rank) is closed
// after at most kPairHandshakeS and the server goes on listening; the peer
// retries until its deadline. The secret travels in the launched step's
// environment (readable only by its owner and root, never on a command
// line that ps shows to other users).
constexpr const char *kPairSecretEnv = "ONRAMP_PAIR_SECRET";
constexpr double kPairHandshakeS = 2.0;
// 64 hex digits from the kernel's random source; "" when it fails.
std::string new_pair_secret();
// Serve id (128 bytes) on port, bound to bind_host's addresses (all
// addresses when bind_host is empty or none of them can be bound), until
// one authenticated peer got it or timeout_s passed.
Status pair_serve_id(const std::string &bind_host, int port, const std::string &secret,
                     const std::string &id, double timeout_s);
// Fetch the id from host:port, retrying until timeout_s passed.
Result<std::string> pair_fetch_id(const std::string &host, int port, const std::string &secret,
                                  double timeout_s);

// One rank of the real 2-node test: rank 0 creates the ncclUniqueId and
// serves it on host:port (pair_serve_id); rank 1 fetches it from host:port
// (retrying for up to connect_timeout_s). Then ncclAllReduce on device
// with the baseline's NCCL sizes.
struct PairRankOptions {
	int rank = 0;
	std::string host;
	int port = 0;
	std::string secret; // the attempt's (kPairSecretEnv); required
	int device = 0;
	double connect_timeout_s = 120;
	uint64_t bytes = 1ull << 30;
	int warmup = 5, iterations = 20, best_of = 3;
};
Result<PairObs> run_pair_rank(const PairRankOptions &opt);

// "host:port" -> host, port; an error for anything else.
Status parse_rendezvous(const std::string &text, std::string *host, int *port);

// The options of this rank inside its srun step: rendezvous ("" : the
// step's first node and PairPort), rank (<0: 0 on the rendezvous host, else
// 1), device (<0: SLURM_LOCALID), the secret from kPairSecretEnv, the NCCL
// sizes from the node's baseline. An error means could not judge.
Result<PairRankOptions> pair_rank_options(const Config &cfg, const std::string &node,
                                          const std::string &rendezvous, int rank, int device);

} // namespace admit
} // namespace onramp
