// The 2-node NCCL test (nccl_pair) between a node under admission and
// known-good peers.
//
// Blame rule: a failing pair may be the peer's fault. A failure is retried
// with a different peer before the node is blamed; the node passes if it
// passes with any peer (failing peers are named as suspects, never blamed),
// fails only after failing with two distinct peers, and is "inconclusive"
// (exit 2, never drained) when only one peer was available and it failed.
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

// Whether one attempt passes threshold_gbs.
bool pair_attempt_ok(const PairAttempt &a, double threshold_gbs);
// Decide from attempts made in order (see the blame rule above).
PairDecision decide_pair(const std::vector<PairAttempt> &attempts, double threshold_gbs);
// True when no further peer needs to be tried: a pass, or failures with
// two distinct peers.
bool pair_decided(const std::vector<PairAttempt> &attempts, double threshold_gbs);

// Real backend, rank 0 side: run PairLaunchCommand (%n: this node, %p:
// peer) followed by "<this program> pair-rank --conf <conf> --rendezvous
// <node>:<PairPort>" and read rank 0's JSON line from its stdout.
Result<PairObs> run_pair_launch(const Config &cfg, const std::string &node,
                                const std::string &peer);

// One rank of the real 2-node test: rank 0 creates the ncclUniqueId and
// serves it on port (all addresses); rank 1 connects to host:port (retrying
// for up to connect_timeout_s) and reads it. Then ncclAllReduce on device
// with the baseline's NCCL sizes.
struct PairRankOptions {
	int rank = 0;
	std::string host;
	int port = 0;
	int device = 0;
	double connect_timeout_s = 120;
	uint64_t bytes = 1ull << 30;
	int warmup = 5, iterations = 20, best_of = 3;
};
Result<PairObs> run_pair_rank(const PairRankOptions &opt);

// "host:port" -> host, port; an error for anything else.
Status parse_rendezvous(const std::string &text, std::string *host, int *port);

} // namespace admit
} // namespace onramp
