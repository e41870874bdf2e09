// The migration driver: moves running checkpointing jobs to other nodes
// (the core of "onrampctl migrate", see onrampctl(8) and
// onramp-checkpoint(7)); onramp-migrate is its command line.
//
// Per job, every step is journaled (common/migrate/journal.hpp: SQLite,
// WAL, synchronous=FULL, one transaction per step) in <StateDir>/migrate.db
// before the next one starts:
//   PLANNED     row inserted (one active migration per job: a unique index),
//               job marked AdminComment "onramp:migrating ..."
//   DRAINED     source nodes drained "onramp:MIGRATE: job J -> TARGET"
//   SIGNALLING  signal_ms journaled just before the signal is sent (a resume
//               from here sends it again)
//   SIGNALLED   the checkpoint signal sent at signal_ms (slurm_kill_job with
//               the scope of "scancel --signal=SIG [--full|--batch] J"), as
//               the job's "onramp:signal=" comment says (else onramp.conf)
//   CHECKPOINTED a generation newer than the signal committed its manifest
//   VERIFIED    every shard verified (else: the previous verified generation
//               when the job already exited, abort when it still runs)
//   HELD        requeued and held (slurm_requeue JOB_REQUEUE_HOLD; or hold
//               when it requeued itself)
//   STEERED     ExcNodeList=source nodes, Features=the job's own
//               constraint's terms the target satisfies AND TARGET (or
//               ExcNodeList=every node but the target nodes, Features=those
//               terms; see steer_features),
//               Switches=leaves it had @ half the confirm timeout (in
//               minutes, at least 1). The job's own constraint is the one it
//               had before its first migration (journaled as old_features),
//               so a rollback restores it and moves do not pile targets up.
//   RELEASED    released
//   DONE        running on the target, restart count risen, resumed.json
//               names the generation; marker removed
//   ABORTED     drain undone, marker removed, the job keeps running
//
// Contract:
// - Every Slurm access goes through slurm::SlurmClient (structured fields:
//   nothing a user writes into a job is parsed). Every action is safe to
//   repeat after a crash: resume() continues each active row from its
//   journaled state and ends in DONE or ABORTED.
// - A job is never left held: a failed steer releases it unsteered.
// - Only nodes whose reason this flow wrote ("onramp:MIGRATE:") are
//   drained-for and resumed by it; an admin's reason or another onramp
//   flow's is left alone. Of two migrations sharing a source node, the last
//   to finish resumes it (a lock file in <StateDir>/locks serialises these
//   decisions between threads and processes).
// - One driver per migration at a time (a per-job lock file); a second
//   driver skips it.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config.hpp"
#include "flow.hpp"
#include "migrate/journal.hpp"
#include "migrate/manifest.hpp"
#include "slurm/client.hpp"
#include "status.hpp"

namespace onramp {
namespace migrate {

// The Features a migration steers a job with: the terms of the job's own
// constraint own ("" for none; its top-level AND chain, or one top-level
// OR) that some candidate node satisfies (candidates: the feature lists of
// the target nodes, or of the nodes with the target feature), AND the
// target feature (target_nodes: the kept terms alone). A term no target
// node carries (the rack the job was placed on) is the placement the move
// replaces and is dropped; a hardware term (a GPU type) stays. A
// constraint Slurm cannot extend (matching OR, counts, OR beside
// parentheses) is replaced whole, as is a term no candidate satisfies:
// both are appended to *dropped.
std::string steer_features(const std::string &own, const std::string &target, bool target_nodes,
                           const std::vector<std::string> &candidates, std::string *dropped);

using onramp::Clock;     // common/flow.hpp
using onramp::CrashHook; // common/flow.hpp

// Test hooks of the integration tests (unset in production, where it does
// nothing): ONRAMP_MIGRATE_CRASH_BEFORE=STATE exits with status 99 after
// the actions that lead to STATE but before STATE is journaled,
// ONRAMP_MIGRATE_CRASH_AFTER=STATE right after it is journaled;
// ONRAMP_MIGRATE_STOP_BEFORE/AFTER=STATE stop the process there (SIGSTOP)
// instead, for bench/fault-campaign to inject its fault at that boundary.
class EnvCrashHook : public CrashHook {
public:
	void before(const std::string &state) override;
	void after(const std::string &state) override;
};

// What "onramp-migrate migrate" asks for.
struct Request {
	std::string
	    jobs; // IDS: N, ARRAYID_TASK, or an array's id (its running tasks), ','-separated
	std::string from; // or NODES: every running job on them
	std::string to;   // FEATURE or NODES
	bool dry_run = false;
	bool rollback = false;                            // exempt from MigrateMaxPerJob
	int64_t grace_s = -1, ack_s = -1, confirm_s = -1; // -1: onramp.conf's
};

struct Plan {
	std::vector<Migration> planned;   // journaled PLANNED, to drive
	std::vector<std::string> dry_run; // one line per job (dry run)
	bool bad = false;                 // some job was refused (logged)
};

class Driver {
public:
	Driver(Journal &journal, slurm::SlurmClient &slurm, const Config &cfg, Clock &clock,
	       CrashHook &hook)
	    : j_(journal), s_(slurm), cfg_(cfg), clock_(clock), hook_(hook)
	{}

	// Resolve the request's jobs, check each (migratable, running, under
	// MigrateMaxPerJob, its own checkpoint directory) and journal it
	// PLANNED (or describe it, for a dry run). An error is a bad request
	// (*usage set: exit 2) or Slurm/the journal failing.
	Result<Plan> plan(const Request &r, bool *usage);
	// Drive m from its journaled state to DONE or ABORTED; true when DONE
	// without error. m.state/m.error say where it ended.
	bool drive(Migration &m);
	// Drive each in its own thread; true when all ended DONE without error.
	bool drive_all(std::vector<Migration> &ms);

private:
	bool drive_locked(Migration &m);
	Status save(Migration &m, const std::string &state, const std::string &msg);
	bool step(Migration &m, const std::string &state, const std::string &msg);
	bool aborted(Migration &m, const std::string &why);
	std::string drain_sources(Migration &m);
	bool redo_lost(Migration &m, const std::string &lost);
	void undo_drain(Migration &m);
	void restore_marker(Migration &m);
	std::set<std::string> nodes_held_by_others(int64_t id);
	std::optional<slurm::Job> job(uint32_t id);
	ckpt::VerifyLimits user_limits(uid_t uid) const;
	Status resolve_job_ids(const std::string &entry, std::vector<uint32_t> *ids);
	Journal &j_;
	slurm::SlurmClient &s_;
	const Config &cfg_;
	Clock &clock_;
	CrashHook &hook_;
};

// The reason prefix of nodes drained for a migration.
extern const char *const kMigrateReasonPrefix; // "onramp:MIGRATE:"

} // namespace migrate
} // namespace onramp
