// The admission orchestrator: what "onrampctl admit NODES" does, as library
// code over the one Slurm client (common/slurm), so a unit test drives it
// against FakeSlurm in milliseconds.
//
// Contract, per node, in the order given:
//  1. A node drained with a reason onramp did not write is refused (exit 2):
//     admission jobs cannot run there and onramp never resumes it.
//  2. The node's lock (hooks.lock) must be free, else the node is skipped: an
//     admission is already running. Admission jobs named
//     "onramp-admit:NODE" that root or SlurmUser submitted, left by a run
//     that died, are cancelled (a user's job of that name is not).
//  3. Reserve: the node's reservation <AdmissionReservation>_NODE (MAINT,
//     IGNORE_JOBS, root and SlurmUser only) is created unless it exists. A
//     node onramp drained is then resumed inside it.
//  4. Pick peers: up to two admitted (AdmittedFeature active), idle,
//     responding, undrained nodes other than the node; peers not lent to a
//     reservation first, rotated by the node's ordinal in this run so that
//     concurrent admissions spread over them; reserved ones when too few
//     are free. The peers join the reservation for the pair test only.
//     When admitted nodes exist but none is usable now, or nodes do not
//     respond (a slurmctld restart: their features are not known yet), the
//     run waits up to peer_wait_s for a peer. When no admitted node exists at all (a first
//     bring-up, every node lost its admission at once), up to two other
//     nodes of this run are paired with it instead (pick_untested_peers),
//     passed as --untested-peers: a pass with one admits the node, a
//     failure with one blames nobody (the node stays fenced,
//     PAIR_INCONCLUSIVE). Each of those nodes is itself tested by its own
//     admission job. The admission job always requires a pair test
//     (onramp-admit --require-pair): with no peer at all the node stays
//     fenced in its reservation, never admitted.
//  5. Launch the admission job (onramp-admission-job on the node, --peers
//     when any) in the reservation.
//     A reservation left wider than the node by an earlier run that died
//     (its peers still in it) is shrunk back to the node first.
//  6. Wait until every job ended or timeout_s + 60 s passed. With !wait the
//     caller gets "submitted" at once and, when hooks.detach moves the run
//     into a process of its own, that process waits and judges as below, so
//     the peers go back to production and the verdict lands on every path.
//     Judge each: COMPLETED with exit 0 admits (reservation deleted, an
//     onramp drain resumed); exit 1 fails (drained with the job's
//     AdminComment, "onramp:ADMIT_FAILED: ..." when it has none;
//     reservation deleted); anything else could not judge (the node stays in
//     its reservation, undrained). A job still running at the deadline is
//     cancelled and could not judge.
//  7. Durable (with wait): slurmctld saves its state seconds after a change,
//     and a controller that crashes or fails over before then comes back
//     without it, so a deleted reservation (MAINT, a year long) reappears
//     and a drain disappears. Until hooks.saved says slurmctld saved its
//     reservations (and, after a drain, its nodes) later than the last
//     change, or save_wait_s passed, the run re-reads them: a reservation
//     it deleted that is back is deleted again, a drain it set that is gone
//     is set again (each logged), and the wait starts over. Only when
//     slurmctld's start time (CtlConf::boot_time) differs from the one
//     read when the run began: under the same controller such a change is
//     someone's newer decision (an admin's resume, a campaign admitting
//     the node again) and is left alone. A save that cannot be confirmed
//     is logged, the exit status unchanged.
// Invariants: a reservation this run widened with peers is shrunk back to
// the node on every path (submit failure, verdict, timeout); a drain reason
// onramp did not write is never overwritten or cleared (slurm::drain_node,
// slurm::resume_node).
//
// Returns the exit status: 0 every node admitted (or skipped), 1 a node
// failed, 2 a node could not be judged or was refused (the worst wins).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "slurm/client.hpp"

namespace onramp {
namespace admit {

struct OrchestrateOptions {
	std::string feature;                  // AdmittedFeature
	std::string account;                  // AdmissionAccount
	std::string resv_base;                // AdmissionReservation
	std::string output_dir;               // where admission jobs write (StateDir/admit)
	std::string job_program;              // onramp-admission-job
	std::vector<std::string> job_options; // --exclusive, --gres=...
	std::string users = "root";           // who may use the reservations
	int timeout_s = 1800;
	bool wait = true;
	int peers_wanted = 2;
	// How long to wait for an admitted node that is not usable as a peer
	// right now (not responding after a slurmctld restart, busy) when no
	// other admitted peer is free.
	int peer_wait_s = 60; // AdmissionPeerWait
	double poll_s = 1;
	int save_wait_s = 60; // 7.: how long to wait for slurmctld's save
};

struct OrchestrateHooks {
	// Seconds on a monotonic clock, and sleeping; the defaults are real.
	std::function<double()> now;
	std::function<void(double)> sleep;
	// Take node's admission lock for the rest of the process; false when
	// another run holds it. Default: always free.
	std::function<bool(const std::string &node)> lock;
	// Seconds since the epoch (the clock of the state files' mtimes).
	std::function<double()> wall;
	// Whether slurmctld has saved every one of files (in StateSaveLocation:
	// "resv_state", "node_state") since wall time `since`; nullopt when
	// it cannot tell (StateSaveLocation not readable from here). Default:
	// the files' mtimes, StateSaveLocation from slurmctld's configuration.
	std::function<std::optional<bool>(double since, const std::vector<std::string> &files)>
	    saved;
	// With !wait, once the jobs are submitted: move the rest of the run
	// into a detached process. True in that process (which goes on to wait
	// and judge), false in the caller (which returns at once). Default:
	// none, the run returns without judging (peers stay until a later run).
	std::function<bool()> detach;
};

// One node's outcome, for --json.
struct NodeOutcome {
	std::string node;
	// "admitted", "failed", "unjudged", "timeout", "refused", "skipped",
	// "not-submitted", "submitted" (no wait)
	std::string result;
	uint32_t job = 0;
	std::vector<std::string> peers;
	std::string reason;
};

// The peers for node among nodes (see 4. above); ordinal: how many nodes
// of this run were launched before it.
std::vector<std::string> pick_peers(const std::vector<slurm::Node> &nodes, const std::string &node,
                                    const std::string &feature, int ordinal, int want);

// For node, when no admitted peer exists: up to want of run_nodes (this
// run's nodes, in the order given) other than node, known to slurmctld and
// not drained with a reason onramp did not write (responding or not: a node
// of the run may be re-registering after its own admission, and the job
// waits for it); rotated by ordinal like pick_peers.
std::vector<std::string> pick_untested_peers(const std::vector<slurm::Node> &nodes,
                                             const std::string &node,
                                             const std::vector<std::string> &run_nodes, int ordinal,
                                             int want);

std::string reservation_name(const std::string &resv_base, const std::string &node);

// SlurmUser's name ("root" when it cannot be read), and the users of an
// admission reservation: root, and SlurmUser when it is another user.
std::string slurm_user_name(slurm::SlurmClient &c);
std::string reservation_users(slurm::SlurmClient &c);

// Step 3 alone (onramp-reboot, the campaign): node's admission reservation
// resv, created for users unless it exists. false (logged) when it cannot.
bool reserve_node(slurm::SlurmClient &c, const std::string &resv, const std::string &node,
                  const std::string &users);
// Resume node if it is drained or down with a reason onramp wrote; an
// admin's reason is left alone (logged).
void resume_if_ours(slurm::SlurmClient &c, const std::string &node);

int orchestrate_admission(slurm::SlurmClient &c, const OrchestrateOptions &o,
                          const std::vector<std::string> &nodes, const OrchestrateHooks &hooks,
                          std::vector<NodeOutcome> *outcomes = nullptr);

} // namespace admit
} // namespace onramp
