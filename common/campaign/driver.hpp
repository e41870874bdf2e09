// The expansion campaign driver: the state machine of "onrampctl expand"
// (see onrampctl(8)); onramp-campaign is its command line.
//
// A campaign reboots its new nodes wave by wave (common/campaign/planner:
// at most MaxWaveFraction of a rack per wave), lets admission judge each
// node, and stops at the first wave below MinWavePassRate. Every step is
// journaled (common/campaign/journal.hpp, <StateDir>/onramp.db, one
// transaction per step) before or right after it happens; per node:
//   planned     in its wave, not touched yet
//   rebooting   journaled (with the time) just BEFORE the reboot is issued
//               ("scontrol reboot ASAP nextstate=RESUME", reason
//               "onramp: expand ID wave K")
//   booted      Slurm shows it up, not DOWN, booted at or after that time
//   admitting   waiting for admission's verdict; an admission is started
//               for the nodes that came back together ("onrampctl admit"),
//               and once more after kick_after_s when none is queued
//   admitted    AdmittedFeature active, no admission reservation, no DRAIN
//   drained     DRAIN with "onramp:CODE: detail" (CODE journaled), or an
//               admin's reason (ADMIN_DRAIN)
//   boot_timeout not back boot_timeout s after the reboot: drained
//               "onramp:BOOT_TIMEOUT: ...", reservation released
// A node with no outcome admit_timeout_s after admitting stays in its
// admission reservation; the wave is closed without it (not admitted).
//
// Contract:
// - Every Slurm access goes through slurm::SlurmClient; one look at the
//   nodes and one at the reservations per poll, whatever the wave's size.
// - Resume is safe after a crash at any point: run_waves() continues each
//   wave from the journal. A node journaled rebooting is rebooted again
//   only when Slurm shows no reboot underway AND it has not booted since
//   the journaled time: no node is rebooted twice for one campaign step.
//   Admitted nodes are never touched again; drained and boot_timeout nodes
//   of an earlier run (the admin fixed them and ran expand again) are
//   admitted on their current boot, not rebooted.
// - A wave below the pass rate pauses the campaign (the status names the
//   nodes) and no later wave starts. Running the campaign again resumes it.
// - One driver per campaign at a time: the caller holds the campaign's lock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "campaign/journal.hpp"
#include "config.hpp"
#include "flow.hpp"
#include "slurm/client.hpp"
#include "status.hpp"

namespace onramp {
namespace campaign {

using onramp::Clock;     // common/flow.hpp
using onramp::CrashHook; // common/flow.hpp

// Starting admissions is onramp's own business, not Slurm's.
class Admission {
public:
	virtual ~Admission() = default;
	// Start one admission of nodes (judged against distinct known-good
	// peers) and return at once; its verdict shows in Slurm.
	virtual void start(const std::vector<std::string> &nodes) = 0;
};

// "onrampctl admit --timeout S --lock-wait W NODES" in a session of its
// own, output appended to log (argv only; see proc.hpp).
class SpawnAdmission : public Admission {
public:
	static constexpr int kAdmitLockWaitS = 120;
	// log: where the admissions' output is appended (rotated past
	// log_max_bytes: detach_process).
	SpawnAdmission(std::string onrampctl, int64_t timeout_s, std::string log,
	               int64_t log_max_bytes)
	    : onrampctl_(std::move(onrampctl)), timeout_s_(timeout_s), log_(std::move(log)),
	      log_max_bytes_(log_max_bytes)
	{}
	void start(const std::vector<std::string> &nodes) override;

private:
	std::string onrampctl_;
	int64_t timeout_s_;
	std::string log_;
	int64_t log_max_bytes_;
};

struct Settings {
	std::string feature = "onramp_admitted"; // AdmittedFeature
	std::string reservation;                 // AdmissionReservation (prefix of <R>_<node>)
	std::string reservation_users = "root";  // who may use a reservation made here
	int64_t admit_timeout_s = 1800;
	int64_t kick_after_s = 60;
	double poll_s = 1;
	// A cross-rack pair job's whole wait: its 10 min time limit and
	// 5 min to be scheduled; then it is cancelled, the pair inconclusive.
	int64_t pair_wait_s = 900;
	// A smoke job's submission refused is tried again for this long (a
	// controller restarted from older state shows AdmittedFeature on no
	// node until the nodes register again: "Invalid feature
	// specification"); then the rack fails.
	int64_t submit_retry_s = 60;
};

// Settings from onramp.conf (AdmittedFeature, AdmissionReservation), the
// reservation open to root and SlurmUser (who submit admission jobs).
Settings settings_from(const Config &cfg, slurm::SlurmClient &slurm);

// After the waves: a cross-rack pair test per planned pair (an
// admission-style job in its own MAINT reservation, 10 minutes), then one
// smoke job per rack on its admitted new nodes (with AdmittedFeature, so
// Slurm itself must find them usable), all racks at once. A smoke job
// journaled running is waited for, not submitted again.
struct Validation {
	std::string admit;                 // onramp-admit (the pair job runs it)
	std::string smoke_job;             // onramp-smoke-job
	std::string smoke_command;         // ExpandSmokeCommand ("": its default)
	int64_t smoke_timeout_s = 1800;    // ExpandSmokeTimeout
	std::string account;               // AdmissionAccount
	std::vector<std::string> job_args; // AdmissionExclusive/-Gres as sbatch options
	std::string out_dir;               // where the jobs write their output
};
Validation validation_from(const Config &cfg, const std::string &admit,
                           const std::string &smoke_job);

// What "plan" asks for.
struct PlanRequest {
	std::string id;
	std::vector<std::string> nodes;
	double fraction = 0.2, min_pass = 0.8;
	int64_t boot_timeout = 600;
};

// The first wave not yet passed (done: none left).
struct WaveView {
	bool done = false;
	int wave = 0;
	std::vector<NodeRow> nodes;
};

enum class Outcome { Done, Paused };

class Driver {
public:
	Driver(Journal &journal, slurm::SlurmClient &slurm, Admission &admission,
	       const Settings &settings, Clock &clock, CrashHook &hook)
	    : j_(journal), s_(slurm), admission_(admission), set_(settings), clock_(clock),
	      hook_(hook)
	{}

	// Create the campaign (its waves planned over leaf_of/sizes, rack of
	// each node and size of each rack) or resume it (paused -> running).
	// Returns "created ID N waves", "resumed ID" or "done ID". A request
	// that cannot be planned (unknown nodes, overlap with another campaign,
	// same id with other nodes, bad numbers) sets *refused.
	Result<std::string> plan(const PlanRequest &r,
	                         const std::map<std::string, std::string> &leaf_of,
	                         const std::map<std::string, int> &sizes, bool *refused);
	Result<WaveView> next_wave(const std::string &id);
	// Judge wave k: passed when its pass rate reaches min_pass, else the
	// wave fails and the campaign pauses (*why says why).
	Result<Outcome> close_wave(const std::string &id, int k, std::string *why);
	// Run wave k of the campaign from its journaled states to its close.
	Result<Outcome> run_wave(const std::string &id, const WaveView &w, std::string *why);
	// Every wave left, in order, until all passed or one pauses.
	Result<Outcome> run_waves(const std::string &id, std::string *why);
	// The pairs still to run; each one's result journaled.
	Status run_pairs(const std::string &id, const Validation &v);
	// The smoke jobs still to pass; paused when one failed.
	Result<Outcome> run_smokes(const std::string &id, const Validation &v, std::string *why);
	// The whole campaign from where the journal stands: waves, pairs,
	// smoke jobs, then done.
	Result<Outcome> run(const std::string &id, const Validation &v, std::string *why);

private:
	struct Snapshot;
	int64_t now() { return clock_.now_ms() / 1000; }
	Status snapshot(Snapshot *s);
	Status set_node(const std::string &id, const std::string &node, const std::string &state,
	                const std::string &code = "", const std::string &detail = "");
	std::string resv_of(const std::string &node) const;
	void readmit(const std::string &node);
	bool admission_queued(const std::string &node);
	// Admission reservations still held by admitted nodes with no
	// admission job queued are deleted (their borrowed peers with them).
	void release_stale_reservations(const std::string &id, const std::string &nodes);
	std::string pair_resv_prefix(const std::string &id) const;
	void release_pair_reservations(const std::string &id);
	// The job once it ended; nullopt when it is gone, or still not ended
	// after limit_s seconds (then cancelled, and *timed_out set).
	std::optional<slurm::Job> wait_job(uint32_t id, int64_t limit_s, bool *timed_out);
	void run_pair(const std::string &id, int i, const PairRow &p, const Validation &v);
	Journal &j_;
	slurm::SlurmClient &s_;
	Admission &admission_;
	const Settings &set_;
	Clock &clock_;
	CrashHook &hook_;
};

// After the waves. The cross-rack pairs still to run (planned once over
// the admitted nodes), and the smoke jobs still to pass (planned once per
// rack of admitted nodes).
Result<std::vector<PairRow>> pairs_to_run(Journal &j, const std::string &id);
Result<std::vector<SmokeRow>> smokes_to_run(Journal &j, const std::string &id);
// Done when every rack's smoke job passed; else the campaign pauses (*why).
Result<Outcome> close_smokes(Journal &j, const std::string &id, int64_t now, std::string *why);

} // namespace campaign
} // namespace onramp
