// job_submit/onramp's policy, independent of Slurm's structures. The C shim
// copies the fields it needs into a JobView, asks decide_submit() or
// decide_modify(), and applies the Decision's edits to the job.
//
// The policy has three parts, each in its flow's directory:
//  - the admission-path guard (here): the admission reservations
//    (AdmissionReservation, optionally suffixed "_<node>") and the
//    AdmissionAccount are for Slurm admins and SlurmUser only; a job under
//    the admission account may run only inside an admission reservation;
//  - rewiring windows (common/rewire/): rack-affinity --switches defaults
//    and held submissions while a window is active;
//  - migration (common/migrate/): opted-in jobs made requeueable with a
//    warning signal; modifications refused while a migration is in flight.
// Everything here runs under slurmctld's locks: no I/O, no blocking. State
// the parts need (windows, leaf sizes) is loaded off that path into a
// PolicyState when the configuration is (re)loaded.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config.hpp"
#include "migrate/migrate.hpp"
#include "status.hpp"

namespace onramp {

struct JobView {
	uint32_t job_id = 0; // 0 at submission (no id yet)
	uint32_t submit_uid = 0;
	uint32_t user_id = 0;
	bool submit_is_admin = false; // root, SlurmUser or AdminLevel=Admin
	std::string account, qos, partition, reservation, name, features;
	uint32_t min_nodes = 0, max_nodes = 0; // 0: not given
	uint32_t req_switch = 0;               // --switches count, 0: not given
	uint32_t wait4switch = 0;              // seconds, 0: not given
	uint32_t time_limit = 0;               // minutes, 0: not given
	int requeue = -1;                      // -1: not given, 0 no, 1 yes
	uint16_t warn_signal = 0;              // 0: none
	uint16_t warn_time = 0;                // seconds before the end
	bool warn_batch = false;               // --signal=B: (batch shell only)
	bool batch = true;                     // has a batch script (sbatch)
	// Where a job that names no partition / QOS lands (resolved by the
	// shim: the default partition, the association's default QOS).
	std::string default_partition, default_qos;
	std::vector<std::string> spank_env; // "NAME=value" from SPANK plugins
	bool user_hold = false;             // submitted held by its submitter (--hold)
	// The rest of the job's shape, which decides how many nodes it needs
	// (0 / "": not given).
	uint32_t num_tasks = 0;       // -n
	uint32_t ntasks_per_node = 0; // --ntasks-per-node
	uint32_t cpus_per_task = 0;   // -c
	bool overcommit = false;      // -O: tasks may share a CPU
	std::string req_nodes;        // -w / ReqNodeList, a Slurm hostlist
	uint32_t node_cpus_max = 0;   // CPUs of the cluster's largest node, 0: unknown
	// job_modify only: what the change gives explicitly, even as 0 or ""
	// (Switches=0 removes --switches; ReqNodeList= clears the list).
	bool req_switch_set = false, req_nodes_set = false;
	bool release = false; // the change releases a held job
	// job_modify only: the job as it is now.
	std::string current_admin_comment;
	int current_requeue = -1;
	bool current_pending = false;
	bool current_held = false;      // priority 0
	bool current_user_held = false; // held by its user (scontrol hold, --hold)
	uint32_t current_min_nodes = 0, current_max_nodes = 0, current_num_tasks = 0;
	uint32_t current_ntasks_per_node = 0, current_cpus_per_task = 0;
	uint32_t current_req_switch = 0, current_wait4switch = 0;
	bool current_overcommit = false;
	std::string current_req_nodes;
};

struct Decision {
	bool reject = false;
	std::string message; // to the user when rejected, to the log otherwise

	// Edits to apply to the job (unset: leave as is).
	std::optional<uint32_t> req_switch, wait4switch;
	bool hold = false;       // submit held (priority 0)
	std::string hold_reason; // why, for the job's comment
	std::optional<int> requeue;
	std::optional<bool> open_append; // log files opened in append mode
	std::optional<uint16_t> warn_signal, warn_time;
	std::optional<migrate::SignalTarget> warn_target; // with warn_signal
	std::string comment_append;                       // text appended to the job's comment
	// Appended to the job's AdminComment, which only an admin or slurmctld
	// (this plugin) can write: the marks onramp's tools act on.
	std::string admin_comment_append;
	// "SIG@SECS": exported to a batch job's environment as ONRAMP_CKPT_SIGNAL
	// (the checkpoint signal the job will get, whatever the opt-in path).
	std::string ckpt_signal_env;
};

// State beyond onramp.conf that the policy consults, loaded off the submit
// path. Each flow adds its own member.
struct PolicyState {
	std::shared_ptr<const Config> cfg;
	std::shared_ptr<const void> rewire;  // common/rewire's view (window, leaves)
	std::shared_ptr<const void> migrate; // common/migrate's view
};

// Does name denote one of onramp's admission reservations?
bool is_admission_reservation(const Config &cfg, const std::string &name);

// REQUIRES: st.cfg set; does no I/O (runs under slurmctld's locks).
Decision decide_submit(const PolicyState &st, const JobView &job);
// For job_modify: job carries only the fields being changed (and the
// current_* fields: the job as it is).
Decision decide_modify(const PolicyState &st, const JobView &change);

// Load each flow's state for the policy (file I/O; never on the submit
// path). An error rejects the whole reload: the previous state stays in
// force and the caller logs the message, which names the file and item.
Status rewire_load(const Config &cfg, std::shared_ptr<const void> *out);
Status migrate_load(const Config &cfg, std::shared_ptr<const void> *out);

// Flow hooks, called by decide_submit/decide_modify after the admission
// guard when the job was not rejected; each may add edits or reject.
// Defined in their flows' directories.
void rewire_decide(const PolicyState &st, const JobView &job, bool modify, Decision *d);
void migrate_decide(const PolicyState &st, const JobView &job, bool modify, Decision *d);

// The hold reason (and comment, for the user) of jobs held during rewire
// window id.
std::string rewire_hold_reason(const std::string &window_id);
// The mark in the AdminComment of jobs held during rewire window id
// ("onramp:rewire-held window=ID"; not on a job its submitter holds with
// --hold): `onrampctl rewire finish` releases the jobs that carry it (never
// a job whose user-written comment or name carries the text: users cannot
// write AdminComment).
std::string rewire_hold_marker(const std::string &window_id);
// Whether admin_comment has that mark as one of its "; "-separated items.
bool rewire_held_by(const std::string &admin_comment, const std::string &window_id);

} // namespace onramp
