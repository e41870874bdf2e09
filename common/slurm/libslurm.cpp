// SlurmClient on libslurm's public API. The only file of onramp's tools
// that calls libslurm; what differs between Slurm versions is marked
// "VERSION:" below (checked against 22.05; see the notes for 24.11+).
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <sys/wait.h>

#include "config.hpp"
#include "hostlist.hpp"
#include "log.hpp"
#include "number.hpp"
#include "proc.hpp"
#include "rewire/topology.hpp"
#include "slurm/client.hpp"

namespace onramp {
namespace slurm {

void init_libslurm()
{
	static std::once_flag once;
	std::call_once(once, [] { slurm_init(nullptr); });
}

namespace {

// VERSION: how a job is named to libslurm. From 25.11 job_desc_msg_t
// carries the job's id in step_id; from 26.05 slurm_load_job,
// slurm_kill_job and slurm_requeue take a slurm_step_id_t.
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
slurm_step_id_t job_ref(uint32_t id)
{
	slurm_step_id_t s = SLURM_STEP_ID_INITIALIZER;
	s.job_id = id;
	return s;
}
#else
uint32_t job_ref(uint32_t id)
{
	return id;
}
#endif

void set_job_id(job_desc_msg_t &m, uint32_t id)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
	m.step_id.job_id = id;
#else
	m.job_id = id;
#endif
}

void free_conf(slurm_conf_t *conf)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
	slurm_free_conf(conf);
#else
	slurm_free_ctl_conf(conf);
#endif
}

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
extern "C" void slurm_xfree_ptr(void *ptr); // libslurm's xfree_ptr (not in slurm.h)
#endif

// VERSION: the name slurm_create_reservation returns is strdup()'d up to
// 25.11 (free) and xstrdup()'d from 26.05 (slurm.h: "caller must xfree";
// free() of it aborts: xmalloc's memory starts before the pointer).
void free_resv_name(char *name)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
	slurm_xfree_ptr(name);
#else
	free(name);
#endif
}

std::string str(const char *s)
{
	return s ? s : "";
}

// scontrol's name of a job state (22.05's job_state_string: a state flag
// first, else the base state).
std::string job_state_name(uint32_t s)
{
	static const struct {
		uint32_t flag;
		const char *name;
	} flags[] = {{JOB_COMPLETING, "COMPLETING"},
	             {JOB_STAGE_OUT, "STAGE_OUT"},
	             {JOB_CONFIGURING, "CONFIGURING"},
	             {JOB_RESIZING, "RESIZING"},
	             {JOB_REQUEUE, "REQUEUED"},
	             {JOB_REQUEUE_FED, "REQUEUE_FED"},
	             {JOB_REQUEUE_HOLD, "REQUEUE_HOLD"},
	             {JOB_SPECIAL_EXIT, "SPECIAL_EXIT"},
	             {JOB_STOPPED, "STOPPED"},
	             {JOB_REVOKED, "REVOKED"},
	             {JOB_RESV_DEL_HOLD, "RESV_DEL_HOLD"},
	             {JOB_SIGNALING, "SIGNALING"}};
	for (const auto &f : flags)
		if (s & f.flag)
			return f.name;
	static const char *const base[] = {"PENDING",   "RUNNING",   "SUSPENDED", "COMPLETED",
	                                   "CANCELLED", "FAILED",    "TIMEOUT",   "NODE_FAIL",
	                                   "PREEMPTED", "BOOT_FAIL", "DEADLINE",  "OUT_OF_MEMORY"};
	uint32_t b = s & JOB_STATE_BASE;
	return b < sizeof(base) / sizeof(base[0]) ? base[b] : "?";
}

Job to_job(const slurm_job_info_t &j)
{
	Job o;
	o.id = j.job_id;
	o.state = job_state_name(j.job_state);
	o.nodes = str(j.nodes);
	o.name = str(j.name);
	o.comment = str(j.comment);
	o.admin_comment = str(j.admin_comment);
	o.features = str(j.features);
	o.work_dir = str(j.work_dir);
	o.std_out = str(j.std_out);
	o.std_err = str(j.std_err);
	o.restarts = j.restart_cnt;
	o.start_time = static_cast<int64_t>(j.start_time);
	o.requeue = j.requeue != 0;
	o.batch = j.batch_flag != 0;
	o.uid = static_cast<uid_t>(j.user_id);
	o.exit_status = static_cast<int>((j.exit_code >> 8) & 0xff);
	o.state_desc = str(j.state_desc);
	o.held = j.priority == 0;
	o.held_by_admin = o.held && j.state_reason == WAIT_HELD;
	if (j.req_switch != NO_VAL && j.req_switch != 0) {
		o.req_switch = j.req_switch;
		o.wait4switch = j.wait4switch == NO_VAL ? 0 : j.wait4switch;
	}
	o.gid = static_cast<gid_t>(j.group_id);
	if (j.array_task_id != NO_VAL) {
		o.array_job_id = j.array_job_id;
		o.array_task_id = j.array_task_id;
	}
	if (j.exit_code != NO_VAL) {
		int ec = static_cast<int>(j.exit_code);
		o.exit_status = WIFEXITED(ec) ? WEXITSTATUS(ec) : 0;
		o.exit_signal = WIFSIGNALED(ec) ? WTERMSIG(ec) : 0;
	}
	return o;
}

Node to_node(const node_info_t &n)
{
	Node o;
	o.name = str(n.name);
	o.reason = str(n.reason);
	o.drain = (n.node_state & NODE_STATE_DRAIN) != 0;
	o.features_active = str(n.features_act);
	o.features_available = str(n.features);
	o.reboot_pending =
	    (n.node_state & (NODE_STATE_REBOOT_REQUESTED | NODE_STATE_REBOOT_ISSUED)) != 0;
	o.down = (n.node_state & NODE_STATE_BASE) == NODE_STATE_DOWN ||
	         (n.node_state & NODE_STATE_NO_RESPOND) != 0;
	o.boot_time = static_cast<int64_t>(n.boot_time);
	static const char *const base[] = {"UNKNOWN", "DOWN",  "IDLE",  "ALLOCATED",
	                                   "ERROR",   "MIXED", "FUTURE"};
	uint32_t b = n.node_state & NODE_STATE_BASE;
	o.state = b < sizeof(base) / sizeof(base[0]) ? base[b] : "UNKNOWN";
	o.reserved = (n.node_state & (NODE_STATE_RES | NODE_STATE_MAINT)) != 0;
	o.responding = (n.node_state & NODE_STATE_NO_RESPOND) == 0;
	return o;
}

// Whether libslurm's error says slurmctld did not answer (down, restarting,
// failing over), as opposed to an answer that refused the request.
bool unreachable(int err)
{
	switch (err) {
	case SLURM_COMMUNICATIONS_CONNECTION_ERROR:
	case SLURM_COMMUNICATIONS_SEND_ERROR:
	case SLURM_COMMUNICATIONS_RECEIVE_ERROR:
	case SLURM_COMMUNICATIONS_SHUTDOWN_ERROR:
	case SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR:
	case SLURMCTLD_COMMUNICATIONS_SEND_ERROR:
	case SLURMCTLD_COMMUNICATIONS_RECEIVE_ERROR:
	case SLURMCTLD_COMMUNICATIONS_SHUTDOWN_ERROR:
	case SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT:
	case SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT:
	case ESLURM_IN_STANDBY_MODE:
	case ESLURM_IN_STANDBY_USE_BACKUP:
	case ECONNREFUSED:
	case ETIMEDOUT:
		return true;
	default:
		return false;
	}
}

class LibSlurm : public SlurmClient {
public:
	LibSlurm(double timeout_s, bool total) : total_(total)
	{
		backoff_.timeout_s = timeout_s;
		budget_end_ = std::chrono::steady_clock::now() +
		              std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
	}

	Result<std::optional<Job>> job(uint32_t id) override
	{
		job_info_msg_t *msg = nullptr;
		int err = call("slurm_load_job",
		               [&] { return slurm_load_job(&msg, job_ref(id), SHOW_ALL); });
		if (err == ESLURM_INVALID_JOB_ID)
			return std::optional<Job>();
		if (err)
			return fail(err, strprintf("cannot read job %u", id));
		std::optional<Job> out;
		for (uint32_t i = 0; msg && i < msg->record_count; i++)
			if (msg->job_array[i].job_id == id)
				out = to_job(msg->job_array[i]);
		slurm_free_job_info_msg(msg);
		return out;
	}

	Result<std::vector<Job>> jobs() override
	{
		job_info_msg_t *msg = nullptr;
		int err =
		    call("slurm_load_jobs", [&] { return slurm_load_jobs(0, &msg, SHOW_ALL); });
		if (err)
			return fail(err, "cannot read the jobs");
		std::vector<Job> out;
		for (uint32_t i = 0; msg && i < msg->record_count; i++)
			out.push_back(to_job(msg->job_array[i]));
		slurm_free_job_info_msg(msg);
		return out;
	}

	Result<std::optional<Node>> node(const std::string &name) override
	{
		node_info_msg_t *msg = nullptr;
		std::string n = name;
		int err = call("slurm_load_node_single",
		               [&] { return slurm_load_node_single(&msg, &n[0], SHOW_ALL); });
		if (err == ESLURM_INVALID_NODE_NAME)
			return std::optional<Node>();
		if (err)
			return fail(err, "cannot read node " + name);
		std::optional<Node> out;
		for (uint32_t i = 0; msg && i < msg->record_count; i++)
			if (msg->node_array[i].name && name == msg->node_array[i].name)
				out = to_node(msg->node_array[i]);
		slurm_free_node_info_msg(msg);
		return out;
	}

	Result<std::vector<Node>> nodes() override
	{
		node_info_msg_t *msg = nullptr;
		int err =
		    call("slurm_load_node", [&] { return slurm_load_node(0, &msg, SHOW_ALL); });
		if (err)
			return fail(err, "cannot read the nodes");
		std::vector<Node> out;
		for (uint32_t i = 0; msg && i < msg->record_count; i++)
			if (msg->node_array[i].name)
				out.push_back(to_node(msg->node_array[i]));
		slurm_free_node_info_msg(msg);
		return out;
	}

	Result<std::vector<Partition>> partitions() override
	{
		partition_info_msg_t *msg = nullptr;
		int err = call("slurm_load_partitions",
		               [&] { return slurm_load_partitions(0, &msg, SHOW_ALL); });
		if (err)
			return fail(err, "cannot read the partitions");
		std::vector<Partition> out;
		for (uint32_t i = 0; msg && i < msg->record_count; i++) {
			const partition_info_t &p = msg->partition_array[i];
			if (p.name)
				out.push_back({p.name, p.state_up == PARTITION_UP, str(p.nodes)});
		}
		slurm_free_partition_info_msg(msg);
		return out;
	}

	Status update_job(uint32_t id, const JobUpdate &u) override
	{
		job_desc_msg_t m;
		slurm_init_job_desc_msg(&m);
		set_job_id(m, id);
		std::string ac = u.admin_comment.value_or(""), f = u.features.value_or(""),
		            x = u.exc_nodes.value_or("");
		if (u.admin_comment)
			m.admin_comment = &ac[0];
		if (u.features)
			m.features = &f[0];
		if (u.exc_nodes)
			m.exc_nodes = &x[0];
		if (u.req_switch)
			m.req_switch = *u.req_switch;
		if (u.wait4switch)
			m.wait4switch = *u.wait4switch;
		return update(m, strprintf("cannot update job %u", id));
	}

	Status hold(uint32_t id) override
	{
		job_desc_msg_t m;
		slurm_init_job_desc_msg(&m);
		set_job_id(m, id);
		m.priority = 0; // scontrol hold
		m.alloc_sid = 0;
		return update(m, strprintf("cannot hold job %u", id));
	}

	Status release(uint32_t id) override
	{
		job_desc_msg_t m;
		slurm_init_job_desc_msg(&m);
		set_job_id(m, id);
		m.priority = INFINITE; // scontrol release
		return update(m, strprintf("cannot release job %u", id));
	}

	Status requeue_hold(uint32_t id) override
	{
		// VERSION: slurm_requeue(job_ref(id), JOB_REQUEUE_HOLD) in 22.05 up to 26.05.
		int err = call("slurm_requeue",
		               [&] { return slurm_requeue(job_ref(id), JOB_REQUEUE_HOLD); });
		return err ? fail(err, strprintf("cannot requeue job %u held", id)) : Status::Ok();
	}

	Status signal_job(uint32_t id, int sig, SignalScope scope) override
	{
		if (scope != SignalScope::Batch) {
			Status s = signal_cgroup(id, sig, scope);
			if (s.ok())
				return s;
			log_verbose("job %u: %s; signalling through slurmctld", id,
			            s.message().c_str());
		}
		// scancel's flags: none for the steps, KILL_JOB_BATCH for --batch,
		// KILL_FULL_JOB for --full.
		uint16_t flags = scope == SignalScope::Batch  ? KILL_JOB_BATCH
		                 : scope == SignalScope::Full ? KILL_FULL_JOB
		                                              : 0;
		int err = call("slurm_kill_job", [&] {
			return slurm_kill_job(job_ref(id), static_cast<uint16_t>(sig), flags);
		});
		return err ? fail(err, strprintf("cannot signal job %u", id)) : Status::Ok();
	}

	Status cancel(uint32_t id) override
	{
		int err =
		    call("slurm_kill_job", [&] { return slurm_kill_job(job_ref(id), SIGKILL, 0); });
		return err ? fail(err, strprintf("cannot cancel job %u", id)) : Status::Ok();
	}

	Status set_drain(const std::string &node, const std::string &reason) override
	{
		update_node_msg_t m;
		slurm_init_update_node_msg(&m);
		std::string n = node, r = reason;
		m.node_names = &n[0];
		m.node_state = NODE_STATE_DRAIN;
		m.reason = &r[0];
#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(26, 5, 0)
		m.reason_uid = getuid(); // VERSION: gone in 26.05 (slurmctld sets it)
#endif
		return update_node(m, "cannot drain node " + node);
	}

	Status set_resume(const std::string &node) override
	{
		update_node_msg_t m;
		slurm_init_update_node_msg(&m);
		std::string n = node;
		m.node_names = &n[0];
		m.node_state = NODE_RESUME;
		return update_node(m, "cannot resume node " + node);
	}

	Status set_features_active(const std::string &node, const std::string &features) override
	{
		update_node_msg_t m;
		slurm_init_update_node_msg(&m);
		std::string n = node, f = features;
		m.node_names = &n[0];
		m.features_act = &f[0];
		return update_node(m, "cannot update the active features of node " + node);
	}

	Result<std::map<std::string, std::string>> node_leaves() override
	{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0)
		// VERSION: from 24.05 slurm_load_topo's reply carries the plugin's
		// data, which libslurm unpacks by loading topology/tree in the
		// client (24.11: dlopen fails, undefined symbol topo_conf, and the
		// call with it); from 25.05 the reply is only that data, and
		// slurm_load_topo_config makes slurmctld serialize its topology
		// with a serializer plugin (fatal in slurmctld when none is built).
		// Leaf membership is read from the topology.conf that
		// topology/onramp reads, by onramp's one parser; none (or not a
		// tree) is no leaves.
		auto conf = topology_load(default_topology_path());
		if (!conf.ok())
			return std::map<std::string, std::string>{};
		return topology_leaf_of(conf.value());
#else
		auto table = switch_table();
		if (!table.ok())
			return table.status();
		std::map<std::string, std::string> out;
		for (const auto &t : table.value()) {
			if (t.level != 0 || t.nodes.empty())
				continue;
			auto hosts = hostlist_expand(t.nodes);
			if (!hosts.ok())
				return Status::Error(strprintf("topology: switch %s: %s",
				                               t.name.c_str(),
				                               hosts.status().message().c_str()));
			for (const auto &h : hosts.value())
				out[h] = t.name;
		}
		return out;
#endif
	}

	Result<uid_t> slurm_user_uid() override
	{
		auto c = ctl_conf();
		if (!c.ok())
			return c.status();
		return c->slurm_user_uid;
	}

	Result<CtlConf> ctl_conf() override
	{
		slurm_conf_t *conf = nullptr;
		int err =
		    call("slurm_load_ctl_conf", [&] { return slurm_load_ctl_conf(0, &conf); });
		if (err)
			return fail(err, "cannot read Slurm's configuration");
		CtlConf out{str(conf->job_submit_plugins),
		            str(conf->state_save_location),
		            static_cast<uid_t>(conf->slurm_user_id),
		            str(conf->slurm_user_name),
		            str(conf->cluster_name),
		            static_cast<int64_t>(conf->boot_time),
		            static_cast<uint32_t>(conf->control_cnt)};
		free_conf(conf);
		return out;
	}

	Result<std::vector<Switch>> switch_table() override
	{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0)
		// VERSION: libslurm cannot unpack the table from 24.05 (see
		// node_leaves); scontrol can, by argv. Its text holds only the
		// names and hostlists of topology.conf, nothing a user writes.
		ProcOptions po;
		po.timeout_s = 60;
		po.separate_stderr = true;
		// SLURM_TOPO_LEN cuts every record at that many characters.
		po.env = {"SLURM_TOPO_LEN"};
		ProcResult r = run_argv({"scontrol", "show", "topology"}, po);
		if (r.rc != 0)
			return Status::Error(
			    "cannot read the switch table: scontrol show topology: " +
			    (r.err.empty() ? strprintf("exit %d", r.rc) : r.err));
		if (r.out.find("SwitchName=") == std::string::npos)
			return std::vector<Switch>{}; // "No topology information available"
		return parse_switch_lines(r.out);
#else
		// VERSION: 22.05 fills topo_info_response_msg_t's topo_array.
		topo_info_response_msg_t *msg = nullptr;
		int err = call("slurm_load_topo", [&] { return slurm_load_topo(&msg); });
		if (err)
			return fail(err, "cannot read the switch table");
		std::vector<Switch> out;
		for (uint32_t i = 0; msg && i < msg->record_count; i++) {
			const topo_info_t &t = msg->topo_array[i];
			out.push_back({str(t.name), t.level, str(t.nodes), str(t.switches)});
		}
		slurm_free_topo_info_msg(msg);
		return out;
#endif
	}

	using SlurmClient::create_reservation;

	// Every reservation (slurm_load_reservations).
	Result<std::vector<Reservation>> load_reservations()
	{
		reserve_info_msg_t *msg = nullptr;
		int err = call("slurm_load_reservations",
		               [&] { return slurm_load_reservations(0, &msg); });
		if (err)
			return fail(err, "cannot read the reservations");
		std::vector<Reservation> out;
		for (uint32_t i = 0; msg && i < msg->record_count; i++) {
			const reserve_info_t &r = msg->reservation_array[i];
			if (r.name)
				out.push_back(Reservation{r.name, str(r.node_list)});
		}
		slurm_free_reservation_info_msg(msg);
		return out;
	}

	Result<std::set<std::string>> reservations() override
	{
		auto all = load_reservations();
		if (!all.ok())
			return all.status();
		std::set<std::string> out;
		for (const auto &r : all.value())
			out.insert(r.name);
		return out;
	}

	Result<std::optional<Reservation>> reservation(const std::string &name) override
	{
		auto all = load_reservations();
		if (!all.ok())
			return all.status();
		for (const auto &r : all.value())
			if (r.name == name)
				return std::optional<Reservation>(r);
		return std::optional<Reservation>();
	}

	Status create_reservation(const Reservation &r, const std::string &users) override
	{
		resv_desc_msg_t m;
		slurm_init_resv_desc_msg(&m);
		std::string name = r.name, nodes = r.nodes, u = users;
		m.name = &name[0];
		m.node_list = &nodes[0];
		m.users = &u[0];
		m.start_time = time(nullptr);
		m.duration = INFINITE;
		m.flags = RESERVE_FLAG_MAINT | RESERVE_FLAG_IGN_JOBS;
		char *made = nullptr;
		int err = call("slurm_create_reservation", [&] {
			made = slurm_create_reservation(&m);
			return made ? SLURM_SUCCESS : SLURM_ERROR;
		});
		free_resv_name(made);
		return err ? fail(err, "cannot create reservation " + r.name) : Status::Ok();
	}

	Status set_reservation_nodes(const std::string &name, const std::string &nodes) override
	{
		resv_desc_msg_t m;
		slurm_init_resv_desc_msg(&m);
		std::string n = name, l = nodes;
		m.name = &n[0];
		m.node_list = &l[0];
		int err =
		    call("slurm_update_reservation", [&] { return slurm_update_reservation(&m); });
		return err ? fail(err, "cannot update reservation " + name) : Status::Ok();
	}

	Status delete_reservation(const std::string &name) override
	{
		reservation_name_msg_t m = {};
		std::string n = name;
		m.name = &n[0];
		int err =
		    call("slurm_delete_reservation", [&] { return slurm_delete_reservation(&m); });
		return err ? fail(err, "cannot delete reservation " + name) : Status::Ok();
	}

	Status reboot_nodes(const std::string &nodes, const std::string &reason) override
	{
		// Not in libslurm's public API (slurm_reboot_nodes and reboot_msg_t
		// are internal): scontrol by argv.
		ProcResult r = run_argv(
		    {"scontrol", "reboot", "ASAP", "nextstate=RESUME", "reason=" + reason, nodes},
		    ProcOptions{60, false, 1 << 20, nullptr, {}});
		if (r.rc != 0)
			return Status::Error("cannot reboot " + nodes + ": scontrol reboot: " +
			                     (r.out.empty() ? strprintf("exit %d", r.rc) : r.out));
		return Status::Ok();
	}

	Result<uint32_t> submit(const BatchJob &b) override
	{
		std::vector<std::string> argv = {"sbatch", "--parsable"};
		for (auto &a : sbatch_args(b))
			argv.push_back(std::move(a));
		ProcOptions po;
		po.timeout_s = 120;
		po.separate_stderr = true;
		ProcResult r = run_argv(argv, po);
		std::string id = r.out.substr(0, r.out.find(';'));
		auto v = parse_int(id, 1, UINT32_MAX);
		if (r.rc != 0 || !v.ok())
			return Status::Error(!r.err.empty()   ? r.err
			                     : !r.out.empty() ? r.out
			                                      : strprintf("sbatch exit %d", r.rc));
		return static_cast<uint32_t>(v.value());
	}

	Result<std::vector<Trigger>> triggers() override
	{
		trigger_info_msg_t *msg = nullptr;
		int err = call("slurm_get_triggers", [&] { return slurm_get_triggers(&msg); });
		if (err)
			return fail(err, "cannot read the triggers");
		std::vector<Trigger> out;
		for (uint32_t i = 0; msg && i < msg->record_count; i++)
			out.push_back(
			    {msg->trigger_array[i].trig_id, str(msg->trigger_array[i].program)});
		slurm_free_trigger_msg(msg);
		return out;
	}

private:
	// Slurm signals the batch shell's process group (--full: killpg) or,
	// with proctrack/cgroup, only slurmstepd's direct children: a process
	// that left them (setsid) misses the checkpoint signal. On a
	// cgroup-tracked cluster, $ONRAMP_SIGNAL_HELPER (onramp-signal-cgroup,
	// set by onrampctl) runs as a step of the job on each of its nodes, as
	// the job's user, and signals every process of the job's cgroup. Error
	// when that does not apply or fails (the caller signals through
	// slurmctld instead).
	Status signal_cgroup(uint32_t id, int sig, SignalScope scope)
	{
		const char *helper = getenv("ONRAMP_SIGNAL_HELPER");
		if (!helper || !*helper)
			return Status::Error("no ONRAMP_SIGNAL_HELPER");
		slurm_conf_t *conf = nullptr;
		if (call("slurm_load_ctl_conf", [&] { return slurm_load_ctl_conf(0, &conf); }))
			return Status::Error("cannot read Slurm's configuration");
		bool cgroup =
		    conf->proctrack_type && strcmp(conf->proctrack_type, "proctrack/cgroup") == 0;
		free_conf(conf);
		if (!cgroup)
			return Status::Error("not cgroup-tracked");
		auto j = job(id);
		if (!j.ok() || !j.value() || !j.value()->running() || j.value()->nodes.empty())
			return Status::Error("not running");
		auto hosts = hostlist_expand(j.value()->nodes);
		if (!hosts.ok() || hosts.value().empty())
			return Status::Error("no nodes");
		std::string n = std::to_string(hosts.value().size());
		std::string uid = std::to_string(j.value()->uid);
		std::string gid = std::to_string(j.value()->gid);
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 11, 0)
		// VERSION: srun's --uid/--gid are gone by 24.11 (sbatch's only,
		// slurm_opt.c): srun itself runs as the job's user.
		std::vector<std::string> argv = {"setpriv", "--reuid=" + uid, "--regid=" + gid,
		                                 "--init-groups", "srun"};
#else
		std::vector<std::string> argv = {"srun", "--uid=" + uid, "--gid=" + gid};
#endif
		argv.insert(argv.end(),
		            {"--jobid=" + std::to_string(id), "--overlap", "--nodes=" + n,
		             "--ntasks=" + n, "--ntasks-per-node=1", "--mem=0", "--immediate=30",
		             "--job-name=onramp-signal", "--quiet", helper, std::to_string(sig),
		             scope == SignalScope::Full ? "full" : "steps"});
		ProcOptions opt;
		opt.timeout_s = 60;
		opt.separate_stderr = true;
		ProcResult r = run_argv(argv, opt);
		if (r.rc != 0)
			return Status::Error(strprintf("%s failed (exit %d): %s",
			                               argv_str(argv).c_str(), r.rc,
			                               r.err.c_str()));
		log_info("job %u: signal %d sent to every process of its cgroup (%s)", id, sig,
		         scope == SignalScope::Full ? "batch step and job steps" : "job steps");
		return Status::Ok();
	}

	// Run rpc (returns SLURM_SUCCESS or sets libslurm's errno), retrying
	// while slurmctld does not answer. Returns 0 or libslurm's errno.
	template <typename F> int call(const char *what, F rpc)
	{
		int err = 0;
		Backoff b = backoff_;
		if (total_)
			b.timeout_s =
			    std::max(0.0, std::chrono::duration<double>(
			                      budget_end_ - std::chrono::steady_clock::now())
			                      .count());
		retry_while_unreachable(
		    b,
		    [&] {
			    init_libslurm();
			    err = rpc() == SLURM_SUCCESS ? 0 : errno;
			    return !unreachable(err);
		    },
		    what);
		return err;
	}
	Status fail(int err, const std::string &what)
	{
		return Status::Error(what + ": " + slurm_strerror(err));
	}
	Status update(job_desc_msg_t &m, const std::string &what)
	{
		int err = call("slurm_update_job", [&] { return slurm_update_job(&m); });
		return err ? fail(err, what) : Status::Ok();
	}
	Status update_node(update_node_msg_t &m, const std::string &what)
	{
		int err = call("slurm_update_node", [&] { return slurm_update_node(&m); });
		return err ? fail(err, what) : Status::Ok();
	}
	Backoff backoff_;
	bool total_ = false;
	std::chrono::steady_clock::time_point budget_end_;
};

} // namespace

std::unique_ptr<SlurmClient> libslurm_client(double ctld_timeout_s, bool total)
{
	return std::unique_ptr<SlurmClient>(new LibSlurm(ctld_timeout_s, total));
}

} // namespace slurm
} // namespace onramp
