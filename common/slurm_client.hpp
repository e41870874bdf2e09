// Talking to slurmctld from onramp's tools (prolog, epilog, onramp-admit)
// through libslurm's public API. Never used inside a daemon: a plugin
// calling back into slurmctld deadlocks.
#pragma once

#include <mutex>
#include <string>

#include <slurm/slurm.h>

#include "status.hpp"

namespace onramp {

// libslurm's configuration, read once before the first API call (from 23.02
// libslurm requires it: without it the first RPC dereferences unset plugin
// operations). Tools only: never inside a daemon.
inline void slurm_client_init()
{
	static std::once_flag once;
	std::call_once(once, [] { slurm_init(nullptr); });
}

// The node's current reason ("" when none). Error when it cannot be read.
Result<std::string> node_reason(const std::string &node);

// Drain node with reason ("onramp:<CODE>: <detail>"), unless the node
// already carries a reason onramp did not write: an admin's reason is never
// overwritten (then *kept is set and Ok returned). Fails closed: a node
// whose state cannot be read is drained.
Status drain_node(const std::string &node, const std::string &reason, bool *kept = nullptr);

// Make slurmctld's copy of node's active features carry feature (active)
// or not, at once. slurmd's next registration reports the same from the
// node's own admission record (node_features/onramp), which stays the
// source of truth.
Status set_active_feature(const std::string &node, const std::string &feature, bool active);

// Ask node's slurmd on this host to re-register (SIGHUP: it re-reads its
// configuration and reports its features again, so node_features/onramp's
// view of the admission record reaches slurmctld). With several slurmds on
// one host (multiple-slurmd) the one started with "-N node" is chosen.
Status reregister_slurmd(const std::string &node);

} // namespace onramp
