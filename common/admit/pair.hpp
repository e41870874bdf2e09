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
	std::string note; // the backend's word on the slowest part ("" none)
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

// The per-rail pass (run after the all-GPU test passed). Each rail (GPU g
// of both nodes, this node's affine HCA port) is judged by the pair's blame
// rule on its own: it passes when it passed with any peer, fails when it
// measured below threshold (or corrupt) with two distinct peers, and is
// undecided otherwise. A failed rail fails the node with RAIL_BW_LOW naming
// node, HCA, port and GPU, e.g.
//   node3 mlx5_5 port 1 (GPU 5) 11.2 GB/s < 40.0 GB/s with node1, node2
// (the best figure it reached); with no failed rail, an undecided one is
// PAIR_INCONCLUSIVE (the node stays fenced, never passed); else a pass.
struct RailAttempt {
	std::string peer;
	RailObs obs;
};
struct RailDecision {
	CheckStatus status = CheckStatus::Error; // Pass, Fail or Error (inconclusive)
	std::string code;                        // OK, RAIL_BW_LOW, PAIR_INCONCLUSIVE
	std::string detail;
	std::vector<int> failed_gpus; // the rails that failed, by GPU
	size_t rails = 0;             // distinct rails seen
	bool inconclusive() const { return code == "PAIR_INCONCLUSIVE"; }
};
bool rail_ok(const RailObs &r, double threshold_gbs);
RailDecision decide_rails(const std::string &node, const std::vector<RailAttempt> &attempts,
                          double threshold_gbs);
// True when every rail seen in attempts passed or failed (no further peer
// would change the decision).
bool rails_decided(const std::vector<RailAttempt> &attempts, double threshold_gbs);

// Real backend, rank 0 side: run PairLaunchCommand split into words
// (common/proc.hpp's split_command; %n: this node, %p: the peer, per word,
// no shell) followed by "<this program> pair-rank --conf <conf>
// --rendezvous <node>", with the attempt's fresh secret (kPairSecretEnv),
// its port (kPairPortEnv: PairPort, or with PairPort=0 a port free on this
// node now) and the peer's name (kPairPeerEnv) in the launch's environment
// (srun passes it to both ranks), and read rank 0's JSON line from its
// stdout. A launch that gives no number is an unmeasured attempt
// (measured false, why says), never a low one.
//
// device < 0: the all-GPU run (each pair-rank drives every GPU of its node,
// one NCCL rank per GPU, --all-gpus); else the per-rail run of that GPU
// with NCCL_IB_HCA set to ib_hca ("=mlx5_5:1": that port alone) in the
// launch's environment.
Result<PairObs> run_pair_launch(const Config &cfg, const std::string &node, const std::string &peer,
                                int device = -1, const std::string &ib_hca = "");

// The rendezvous of one attempt. Rank 0 serves the ncclUniqueId (128
// bytes) only to a peer that proves it holds the attempt's secret, and the
// peer accepts an id only from a server that proves the same:
//   server: "ORP1" nonce_s[32]
//   client: nonce_c[32] HMAC(secret, "onramp-pair client" nonce_s nonce_c)
//   server: HMAC(secret, "onramp-pair server" nonce_c nonce_s enc) enc[128]
// where enc is the id XOR an HMAC(secret, "onramp-pair key" i nonce_s
// nonce_c) keystream, so the id never crosses the wire in the clear.
// Connections are served at once, side by side (poll), at most
// kPairMaxConnections of them, each closed when it has not finished the
// handshake within kPairHandshakeS: idle or junk connections never starve
// the real peer. A connection from an address that is not one of the
// peer node's (as its name resolves) is refused at once and logged. The
// peer retries until its deadline. The secret, the port and the peer's
// name travel in the launched step's environment (readable only by its
// owner and root, never on a command line that ps shows to other users).
constexpr const char *kPairSecretEnv = "ONRAMP_PAIR_SECRET";
constexpr const char *kPairPortEnv = "ONRAMP_PAIR_PORT";
constexpr const char *kPairPeerEnv = "ONRAMP_PAIR_PEER";
constexpr double kPairHandshakeS = 2.0;
constexpr size_t kPairMaxConnections = 64;
// 64 hex digits from the kernel's random source; "" when it fails.
std::string new_pair_secret();
// A TCP port that was free on this host a moment ago (the kernel's
// ephemeral range); 0 when none could be had.
int pick_pair_port();
// Serve id (128 bytes) on port, bound to bind_host's addresses (all
// addresses when bind_host is empty or none of them can be bound), to
// connections from peer's addresses only, until one authenticated peer got
// it or timeout_s passed.
Status pair_serve_id(const std::string &bind_host, int port, const std::string &secret,
                     const std::string &id, double timeout_s, const std::string &peer);
// Fetch the id from host:port, retrying until timeout_s passed. With a
// source, connect from one of its addresses where one is this host's, so
// that rank 0's address check sees the address the peer's name resolves to
// (a multi-homed node) and not the kernel's choice.
Result<std::string> pair_fetch_id(const std::string &host, int port, const std::string &secret,
                                  double timeout_s, const std::string &source = "");

// One rank of the real 2-node test: rank 0 creates the ncclUniqueId and
// serves it on host:port (pair_serve_id); rank 1 fetches it from host:port
// (retrying for up to connect_timeout_s). Then ncclAllReduce on device
// with the baseline's NCCL sizes.
struct PairRankOptions {
	int rank = 0;
	std::string host;
	int port = 0;
	std::string secret; // the attempt's (kPairSecretEnv); required
	std::string peer;   // rank 0: the node whose connections are accepted
	std::string self;   // rank 1: this node, whose address it connects from
	int device = 0;
	int gpus = 0; // > 0: the all-GPU run, devices 0..gpus-1 (ranks rank*gpus + d)
	double connect_timeout_s = 120;
	uint64_t bytes = 1ull << 30;
	int warmup = 5, iterations = 20, best_of = 3;
};
Result<PairObs> run_pair_rank(const PairRankOptions &opt);

// "host:port" -> host, port; "host" -> host, port 0 (the step's
// kPairPortEnv); an error for anything else.
Status parse_rendezvous(const std::string &text, std::string *host, int *port);

// The options of this rank inside its srun step: rendezvous ("" : the
// step's first node; the port from kPairPortEnv, else PairPort), the peer
// (kPairPeerEnv, else the step's other node), rank (<0: 0 on the rendezvous host, else
// 1), device (<0: SLURM_LOCALID; all_gpus: every GPU the baseline counts,
// gpu_count of them), the secret from kPairSecretEnv, the NCCL
// sizes from the node's baseline. An error means could not judge.
Result<PairRankOptions> pair_rank_options(const Config &cfg, const std::string &node,
                                          const std::string &rendezvous, int rank, int device,
                                          bool all_gpus = false);

} // namespace admit
} // namespace onramp
