// The one way onramp talks to Slurm from outside the daemons (tools,
// prolog, epilog, onramp-admit, flow drivers): jobs, nodes, topology,
// drain/resume under onramp's reason prefix, retry while slurmctld does not
// answer. libslurm's public API (<slurm/slurm.h>) wherever it has the call;
// every field a user can write (comment, job name, paths) arrives as a
// field, never as text to parse. Never linked into a plugin: an RPC from
// inside slurmctld deadlocks it (testsuite/integration/build.bats checks
// the plugins' imports).
//
// SlurmClient is an interface: libslurm_client() is the real one, FakeSlurm
// (common/slurm/fake.hpp, unit tests only) a simulated cluster.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

#include "status.hpp"

namespace onramp {
namespace slurm {

// Every node reason onramp writes starts with it ("onramp:<CODE>: detail");
// a reason without it is an admin's and is never overwritten or cleared.
extern const char *const kReasonPrefix; // "onramp:"

// A job as slurmctld holds it (slurm_load_job): structured fields only.
struct Job {
	uint32_t id = 0;
	// Base state as Slurm names it: "PENDING", "RUNNING", "COMPLETED"...
	std::string state;
	std::string nodes; // hostlist expression, "" when none
	std::string name, comment, admin_comment, features, work_dir, std_out, std_err;
	uint32_t restarts = 0;
	// When its current run began (epoch seconds; for a pending job Slurm's
	// expected start, 0 when none).
	int64_t start_time = 0;
	bool requeue = false; // may be requeued (--requeue)
	bool batch = false;   // a batch job
	uid_t uid = 0;
	gid_t gid = 0;
	uint32_t array_job_id = 0;  // 0 when not an array task
	uint32_t array_task_id = 0; // valid when array_job_id != 0
	int exit_status = 0;        // the batch script's exit status (ExitCode's first part)
	int exit_signal = 0;        // the signal that ended it (ExitCode's second part)
	std::string state_desc;     // why it is pending or failed, "" when Slurm says none
	// At priority 0: scontrol hold, --hold, or a job_submit plugin's hold.
	// Slurm records a job_submit hold as a user's (JobHeldUser: it takes
	// the request's priority as the user's), so the reason does not say
	// who held it.
	bool held = false;
	// Held by an admin's `scontrol hold` (JobHeldAdmin), not by its user or
	// a job_submit plugin.
	bool held_by_admin = false;
	// --switches: at most req_switch leaf switches, waited for up to
	// wait4switch seconds (0, 0 when the job asks for none).
	uint32_t req_switch = 0;
	uint32_t wait4switch = 0;
	bool running() const { return state == "RUNNING" || state == "CONFIGURING"; }
	bool pending() const { return state == "PENDING"; }
	// Ended (completed, failed, cancelled, timed out...).
	bool finished() const;
};

struct Node {
	std::string name;
	std::string reason; // "" when none
	bool drain = false; // the DRAIN flag is set
	std::string features_active, features_available;
	bool reboot_pending = false; // a reboot is requested or issued
	bool down = false;           // DOWN or not responding
	int64_t boot_time = 0;       // when slurmd last booted (epoch s), 0 unknown
	// Base state as Slurm names it: "IDLE", "ALLOCATED", "MIXED", "DOWN"...
	std::string state;
	bool reserved = false;  // in a reservation now (RESERVED or MAINT)
	bool responding = true; // not NO_RESPOND
};

// A partition (slurm_load_partitions).
struct Partition {
	std::string name;
	bool up = false;   // UP: takes and schedules jobs
	std::string nodes; // hostlist expression, "" when none
};

// An advanced reservation (slurm_load_reservations).
struct Reservation {
	std::string name;
	std::string nodes; // hostlist expression
};

// One record of the switch table slurmctld uses now (what "scontrol show
// topology" prints): names and hostlists from topology.conf, as the
// topology plugin built them.
struct Switch {
	std::string name;
	int level = 0;        // 0: a leaf
	std::string nodes;    // hostlist expression of every node below it
	std::string switches; // children (hostlist expression), "" for a leaf
};

// What onramp's tools read of slurmctld's configuration
// (slurm_load_ctl_conf).
struct CtlConf {
	std::string job_submit_plugins;  // JobSubmitPlugins as configured ("lua,onramp")
	std::string state_save_location; // StateSaveLocation
	uid_t slurm_user_uid = 0;        // SlurmUser
	std::string slurm_user_name;     // SlurmUser's name as slurmctld resolved it
	std::string cluster_name;        // ClusterName
	// When the answering slurmctld last started (seconds since the epoch):
	// it changes when slurmctld restarts, re-executes (23.11+ reconfigure)
	// or a backup takes over, the moments its state can go back in time.
	int64_t boot_time = 0;
	uint32_t controllers = 0; // how many SlurmctldHost (2 or more: a backup controller)
};

// An event trigger (strigger): its id and program line.
struct Trigger {
	uint32_t id = 0;
	std::string program;
};

// A batch job to submit (every job onramp submits: admission, pair and
// smoke jobs). command runs as the batch script's one line, each word
// quoted (no shell parses data), so a program runs by its path on the node.
// Empty strings and time_limit_min 0 leave Slurm's defaults.
struct BatchJob {
	std::string name, account, reservation, nodes, output;
	std::string constraint; // --constraint (a feature the nodes must have)
	int num_nodes = 1;
	int time_limit_min = 0;
	std::vector<std::string> options; // further sbatch options ("--exclusive")
	std::vector<std::string> command;
};

// The sbatch arguments of b (after "sbatch --parsable"): -J, -A,
// --reservation, options, -N, -w, --constraint, -t, -o, --wrap with each
// word of command single-quoted.
std::vector<std::string> sbatch_args(const BatchJob &b);

// What update_job changes; unset fields stay as they are.
struct JobUpdate {
	std::optional<std::string> admin_comment;
	std::optional<std::string> features;  // "" clears
	std::optional<std::string> exc_nodes; // hostlist expression
	std::optional<uint32_t> req_switch;   // at most this many leaf switches
	std::optional<uint32_t> wait4switch;  // seconds to wait for them
};

// Whom a signal reaches: job steps only (scancel --signal), the batch
// shell only (--batch), or the batch shell and all steps (--full). On a
// cgroup-tracked cluster (proctrack/cgroup) steps and full reach every
// process of those steps' cgroups, also those that left the batch shell's
// process group (libslurm.cpp: onramp-signal-cgroup as a step of the job).
enum class SignalScope { Steps, Batch, Full };

class SlurmClient {
public:
	virtual ~SlurmClient() = default;
	// The job, std::nullopt when slurmctld does not know it (purged or
	// never existed); error when slurmctld cannot be asked.
	virtual Result<std::optional<Job>> job(uint32_t id) = 0;
	// Every job slurmctld holds.
	virtual Result<std::vector<Job>> jobs() = 0;
	virtual Result<std::optional<Node>> node(const std::string &name) = 0;
	virtual Result<std::vector<Node>> nodes() = 0;
	virtual Result<std::vector<Partition>> partitions() = 0;
	virtual Status update_job(uint32_t id, const JobUpdate &u) = 0;
	// Hold (priority 0) / release a pending job.
	virtual Status hold(uint32_t id) = 0;
	virtual Status release(uint32_t id) = 0;
	// Requeue a running batch job and hold it (scontrol requeuehold).
	virtual Status requeue_hold(uint32_t id) = 0;
	virtual Status signal_job(uint32_t id, int sig, SignalScope scope) = 0;
	// End a pending or running job (scancel JOB).
	virtual Status cancel(uint32_t id) = 0;
	// Set DRAIN with reason / clear it (RESUME). Low level: use drain_node()
	// and resume_node(), which never touch an admin's reason.
	virtual Status set_drain(const std::string &node, const std::string &reason) = 0;
	virtual Status set_resume(const std::string &node) = 0;
	virtual Status set_features_active(const std::string &node,
	                                   const std::string &features) = 0;
	// Leaf switch (topology level 0) of each node; empty without a tree
	// topology.
	virtual Result<std::map<std::string, std::string>> node_leaves() = 0;
	// SlurmUser's uid (slurm_load_ctl_conf).
	virtual Result<uid_t> slurm_user_uid() = 0;
	virtual Result<CtlConf> ctl_conf() = 0;
	// The switch table in force in slurmctld; empty without a tree
	// topology.
	virtual Result<std::vector<Switch>> switch_table() = 0;
	// The names of the reservations slurmctld holds.
	virtual Result<std::set<std::string>> reservations() = 0;
	// The reservation, std::nullopt when there is none by that name.
	virtual Result<std::optional<Reservation>> reservation(const std::string &name) = 0;
	// A maintenance reservation (MAINT, IGNORE_JOBS) of r.nodes from now,
	// without end, for users (comma-separated names).
	virtual Status create_reservation(const Reservation &r, const std::string &users) = 0;
	Status create_reservation(const std::string &name, const std::string &nodes,
	                          const std::string &users)
	{
		return create_reservation(Reservation{name, nodes}, users);
	}
	// Make the reservation hold exactly nodes.
	virtual Status set_reservation_nodes(const std::string &name, const std::string &nodes) = 0;
	virtual Status delete_reservation(const std::string &name) = 0;
	// Reboot nodes (a hostlist) as soon as they are idle, back in service
	// afterwards, with reason: "scontrol reboot ASAP nextstate=RESUME".
	virtual Status reboot_nodes(const std::string &nodes, const std::string &reason) = 0;
	// Submit a batch job; the real client runs "sbatch --parsable" with
	// sbatch_args(b) by argv (sbatch's own option handling and environment:
	// libslurm's submit call needs the whole environment, the script and
	// every option's translation built by hand, and free sbatch options
	// such as --gres cannot be mapped onto its fields). Error: sbatch's
	// message.
	virtual Result<uint32_t> submit(const BatchJob &b) = 0;
	// Every event trigger (slurm_get_triggers).
	virtual Result<std::vector<Trigger>> triggers() = 0;
};

// The real client. Each call that cannot reach slurmctld (libslurm's
// communication errors, a controller in standby) is retried with backoff
// (0.5 s doubling up to 5 s) for up to ctld_timeout_s (MigrateCtldTimeout),
// so a restart or failover of slurmctld only delays the caller.
// total: ctld_timeout_s is the budget of all calls together (a program
// that must end soon, like the epilog), not of each.
std::unique_ptr<SlurmClient> libslurm_client(double ctld_timeout_s = 600, bool total = false);

// libslurm reads its configuration once before its first call (required
// from 23.02: without it the first RPC dereferences unset plugin
// operations). The real client calls it; so must any other user of
// libslurm's API. Tools only: never inside a daemon.
void init_libslurm();

// The process's client (a libslurm client with the default timeout, made
// on first use) unless set_default_client() replaced it (tests).
SlurmClient &default_client();
void set_default_client(std::unique_ptr<SlurmClient> c);
// The default client waits at most s seconds for slurmctld over all its
// calls together; once spent, each call is tried once.
void set_default_ctld_budget(double s);

// Call attempt until it reports that slurmctld answered (true) or
// timeout_s has passed; between attempts sleep first_s doubling up to
// max_s (through sleep, so a fake clock can stand in). Returns whether
// slurmctld answered at last. timeout_s 0: one attempt, nothing logged.
struct Backoff {
	double timeout_s = 600, first_s = 0.5, max_s = 5;
	std::function<void(double)> sleep; // default: really sleep
};
bool retry_while_unreachable(const Backoff &b, const std::function<bool()> &attempt,
                             const char *what);

// ---- over any client

// uid 0, or SlurmUser's uid (from Slurm's configuration).
bool is_admin(SlurmClient &c, uid_t uid);

// A hostlist expression checked against the nodes slurmctld knows.
struct NodeSet {
	std::vector<std::string> nodes;   // expanded, in order, each once
	std::string hostlist;             // nodes compressed ("node[1-4,7]")
	std::vector<std::string> unknown; // those slurmctld does not know, in order
};
// Expand expr with libslurm's hostlist functions (common/hostlist.hpp: its
// limits refuse "node[1-99999999]"); unknown stays empty. Error naming expr:
// a bad expression or one that names no node.
Result<NodeSet> expand_nodes(const std::string &expr);
// Set set->unknown to every node of set->nodes that slurmctld does not
// know (one nodes() call). Error: slurmctld's.
Status find_unknown(SlurmClient &c, NodeSet *set);
// The nodes of expr, each known to slurmctld; an error names a bad
// expression or every unknown node ("unknown node(s): node8 node9").
Result<std::vector<std::string>> known_nodes(SlurmClient &c, const std::string &expr);

// Drain node with reason (which must start with kReasonPrefix) unless it
// carries a reason onramp did not write: an admin's reason is never
// overwritten (*kept set, Ok returned). A node whose state cannot be read
// is drained (fails closed).
Status drain_node(SlurmClient &c, const std::string &node, const std::string &reason,
                  bool *kept = nullptr);
// Resume node only while its reason starts with prefix (itself starting
// with kReasonPrefix): a reason onramp did not write, or another flow's,
// is left alone (*left set, Ok returned).
Status resume_node(SlurmClient &c, const std::string &node, const std::string &prefix,
                   bool *left = nullptr);
// Make node's active features carry feature or not.
Status set_active_feature(SlurmClient &c, const std::string &node, const std::string &feature,
                          bool active);

// The records of "scontrol show topology" text ("SwitchName=S Level=N
// LinkSpeed=N Nodes=HL Switches=HL" per line): the real client's route to
// the switch table on Slurm 24.05+, whose libslurm cannot unpack it (see
// libslurm.cpp). Only names and hostlists of topology.conf appear there.
// Error naming the line that is not such a record.
Result<std::vector<Switch>> parse_switch_lines(const std::string &text);

// Leaf switches (level 0) of table that some switch names as a child: the
// leaves under a spine (a rewire window cuts a leaf off). Error naming the
// switch whose children do not expand.
Result<std::set<std::string>> connected_leaves(const std::vector<Switch> &table);

// f is one of a comma-separated feature list ("rack1,onramp_ok").
inline bool has_feature(const std::string &list, const std::string &f)
{
	return ("," + list + ",").find("," + f + ",") != std::string::npos;
}

// The items of text between seps, in order, empty ones included ("a,,b":
// "a", "", "b"; "": one empty item). join()'s inverse.
std::vector<std::string> split(const std::string &text, char sep);

// Whether a comma-separated feature list satisfies one term of a
// constraint's AND chain: a feature, or a '|' of features in parentheses
// or not ("(a100|h100)").
bool satisfies_term(const std::string &list, const std::string &term);

// v joined with commas (a node or feature list).
inline std::string join(const std::vector<std::string> &v)
{
	std::string out;
	for (const auto &s : v)
		out += (out.empty() ? "" : ",") + s;
	return out;
}

// Whether text starts with prefix.
inline bool has_prefix(const std::string &text, const std::string &prefix)
{
	return text.compare(0, prefix.size(), prefix) == 0;
}

} // namespace slurm

// The API of the former common/slurm_client.hpp (prolog, epilog,
// onramp-admit), on slurm::default_client().
Result<std::string> node_reason(const std::string &node);
Status drain_node(const std::string &node, const std::string &reason, bool *kept = nullptr);
Status set_active_feature(const std::string &node, const std::string &feature, bool active);
// Ask node's slurmd on this host to re-register (SIGHUP: it re-reads its
// configuration and reports its features again, so node_features/onramp's
// view of the admission record reaches slurmctld). With several slurmds on
// one host (multiple-slurmd) the one started with "-N node" is chosen.
Status reregister_slurmd(const std::string &node);

} // namespace onramp
