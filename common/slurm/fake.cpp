#include "slurm/fake.hpp"

#include "hostlist.hpp"
#include "log.hpp"

namespace onramp {
namespace slurm {

namespace {
const char *scope_name(SignalScope s)
{
	return s == SignalScope::Batch ? "batch" : s == SignalScope::Full ? "full" : "steps";
}
std::set<std::string> expand_set(const std::string &hl)
{
	std::set<std::string> out;
	auto r = hostlist_expand(hl);
	if (r.ok())
		out.insert(r->begin(), r->end());
	return out;
}
} // namespace

FakeSlurm::FakeJob &FakeSlurm::add_job(uint32_t id, const std::string &nodes,
                                       const std::string &comment)
{
	FakeJob &j = jobs_[id];
	j.job.id = id;
	j.job.state = "RUNNING";
	j.job.nodes = nodes;
	j.job.comment = comment;
	j.job.requeue = true;
	j.job.batch = true;
	j.job.uid = 1000;
	j.num_nodes = static_cast<int>(expand_set(nodes).size());
	return j;
}

void FakeSlurm::add_node(const std::string &name, const std::string &features,
                         const std::string &leaf)
{
	Node &n = nodes_[name];
	n.name = name;
	n.features_active = n.features_available = features;
	n.state = "IDLE";
	if (!leaf.empty())
		leaves_[name] = leaf;
}

bool FakeSlurm::answer(const char *what, Status *st)
{
	Backoff b;
	b.timeout_s = ctld_timeout_s;
	b.sleep = [this](double s) { waited_s += s; };
	bool up = retry_while_unreachable(
	    b,
	    [this] {
		    if (down_forever)
			    return false;
		    if (down_calls > 0) {
			    down_calls--;
			    return false;
		    }
		    return true;
	    },
	    what);
	if (!up)
		*st = Status::Error(std::string(what) + ": Unable to contact slurm controller");
	return up;
}

Result<std::optional<Job>> FakeSlurm::job(uint32_t id)
{
	Status st;
	if (!answer("slurm_load_job", &st))
		return st;
	auto it = jobs_.find(id);
	if (it == jobs_.end())
		return std::optional<Job>();
	if (on_poll)
		on_poll(it->second);
	return std::optional<Job>(it->second.job);
}

Result<std::vector<Job>> FakeSlurm::jobs()
{
	Status st;
	if (!answer("slurm_load_jobs", &st))
		return st;
	std::vector<Job> out;
	for (const auto &j : jobs_)
		out.push_back(j.second.job);
	return out;
}

Result<std::optional<Node>> FakeSlurm::node(const std::string &name)
{
	Status st;
	if (!answer("slurm_load_node", &st))
		return st;
	auto it = nodes_.find(name);
	if (it == nodes_.end())
		return std::optional<Node>();
	return std::optional<Node>(it->second);
}

Result<std::vector<Node>> FakeSlurm::nodes()
{
	Status st;
	if (!answer("slurm_load_node", &st))
		return st;
	std::vector<Node> out;
	for (const auto &n : nodes_)
		out.push_back(n.second);
	return out;
}

Result<std::vector<Partition>> FakeSlurm::partitions()
{
	Status st;
	if (!answer("slurm_load_partitions", &st))
		return st;
	return partitions_;
}

Status FakeSlurm::update_job(uint32_t id, const JobUpdate &u)
{
	Status st;
	if (!answer("slurm_update_job", &st))
		return st;
	auto it = jobs_.find(id);
	if (it == jobs_.end())
		return Status::Error(
		    strprintf("cannot update job %u: Invalid job id specified", id));
	FakeJob &j = it->second;
	std::string what = strprintf("update %u", id);
	if (u.admin_comment) {
		j.job.admin_comment = *u.admin_comment;
		what += " admin_comment=" + *u.admin_comment;
	}
	if (u.features || u.exc_nodes || u.req_switch) {
		if (!j.job.pending())
			return Status::Error(strprintf("cannot update job %u: Job is no longer "
			                               "pending execution",
			                               id));
		if (u.features) {
			j.job.features = *u.features;
			what += " features=" + *u.features;
		}
		if (u.exc_nodes) {
			j.exc_nodes = *u.exc_nodes;
			what += " exc_nodes=" + *u.exc_nodes;
		}
		if (u.req_switch)
			j.job.req_switch = *u.req_switch;
		if (u.wait4switch)
			j.job.wait4switch = *u.wait4switch;
	}
	actions.push_back(what);
	return Status::Ok();
}

Status FakeSlurm::hold(uint32_t id)
{
	Status st;
	if (!answer("slurm_update_job", &st))
		return st;
	auto it = jobs_.find(id);
	if (it == jobs_.end() || !it->second.job.pending())
		return Status::Error(strprintf("cannot hold job %u: Job is no longer pending", id));
	it->second.job.held = true;
	actions.push_back(strprintf("hold %u", id));
	return Status::Ok();
}

namespace {

// Whether a node's features satisfy a constraint of '&'-joined terms, each
// a feature or a parenthesised '|' of features (what onramp steers with).
bool satisfies(const std::string &features, const std::string &constraint)
{
	if (constraint.empty())
		return true;
	for (const auto &term : split(constraint, '&'))
		if (!satisfies_term(features, term))
			return false;
	return true;
}

} // namespace

void FakeSlurm::start(FakeJob &j)
{
	// The first num_nodes nodes with the features, not excluded, not
	// drained.
	auto exc = expand_set(j.exc_nodes);
	std::vector<std::string> pick;
	for (const auto &n : nodes_) {
		if ((int)pick.size() == j.num_nodes)
			break;
		if (exc.count(n.first) || n.second.drain)
			continue;
		if (!satisfies(n.second.features_active, j.job.features))
			continue;
		pick.push_back(n.first);
	}
	if ((int)pick.size() < j.num_nodes)
		return; // stays pending
	j.job.nodes = hostlist_compress(pick);
	j.job.state = "RUNNING";
	if (on_start)
		on_start(j);
}

Status FakeSlurm::release(uint32_t id)
{
	Status st;
	if (!answer("slurm_update_job", &st))
		return st;
	auto it = jobs_.find(id);
	if (it == jobs_.end())
		return Status::Error(strprintf("cannot release job %u: Invalid job id", id));
	actions.push_back(strprintf("release %u", id));
	if (!it->second.job.held)
		return Status::Error(strprintf("cannot release job %u: Job is not held", id));
	it->second.job.held = false;
	if (it->second.job.pending())
		start(it->second);
	return Status::Ok();
}

Status FakeSlurm::requeue_hold(uint32_t id)
{
	Status st;
	if (!answer("slurm_requeue", &st))
		return st;
	auto it = jobs_.find(id);
	if (it == jobs_.end() || !it->second.job.running())
		return Status::Error(strprintf("cannot requeue job %u held: Job is pending or "
		                               "finished",
		                               id));
	FakeJob &j = it->second;
	j.job.state = "PENDING";
	j.job.nodes.clear();
	j.job.restarts++;
	j.job.held = true;
	actions.push_back(strprintf("requeuehold %u", id));
	return Status::Ok();
}

Status FakeSlurm::signal_job(uint32_t id, int sig, SignalScope scope)
{
	Status st;
	if (!answer("slurm_kill_job", &st))
		return st;
	auto it = jobs_.find(id);
	if (it == jobs_.end() || !it->second.job.running())
		return Status::Error(
		    strprintf("cannot signal job %u: Job/step already completing or "
		              "completed",
		              id));
	actions.push_back(strprintf("signal %u %d %s", id, sig, scope_name(scope)));
	if (on_signal)
		on_signal(it->second, sig);
	return Status::Ok();
}

Status FakeSlurm::cancel(uint32_t id)
{
	Status st;
	if (!answer("slurm_kill_job", &st))
		return st;
	auto it = jobs_.find(id);
	if (it == jobs_.end() || it->second.job.finished())
		return Status::Error(strprintf("cannot cancel job %u: Job/step already completing "
		                               "or completed",
		                               id));
	it->second.job.state = "CANCELLED";
	actions.push_back(strprintf("cancel %u", id));
	return Status::Ok();
}

Status FakeSlurm::set_drain(const std::string &node, const std::string &reason)
{
	Status st;
	if (!answer("slurm_update_node", &st))
		return st;
	auto it = nodes_.find(node);
	if (it == nodes_.end())
		return Status::Error("cannot drain node " + node + ": Invalid node name specified");
	it->second.drain = true;
	it->second.reason = reason;
	actions.push_back("drain " + node);
	return Status::Ok();
}

Status FakeSlurm::set_resume(const std::string &node)
{
	Status st;
	if (!answer("slurm_update_node", &st))
		return st;
	auto it = nodes_.find(node);
	if (it == nodes_.end())
		return Status::Error("cannot resume node " + node +
		                     ": Invalid node name specified");
	it->second.drain = false;
	it->second.reason.clear();
	actions.push_back("resume " + node);
	return Status::Ok();
}

Status FakeSlurm::set_features_active(const std::string &node, const std::string &features)
{
	Status st;
	if (!answer("slurm_update_node", &st))
		return st;
	auto it = nodes_.find(node);
	if (it == nodes_.end())
		return Status::Error("unknown node " + node);
	it->second.features_active = features;
	actions.push_back("features " + node + " " + features);
	return Status::Ok();
}

Result<std::map<std::string, std::string>> FakeSlurm::node_leaves()
{
	Status st;
	if (!answer("slurm_load_topo", &st))
		return st;
	return leaves_;
}

Result<uid_t> FakeSlurm::slurm_user_uid()
{
	Status st;
	if (!answer("slurm_load_ctl_conf", &st))
		return st;
	return slurm_user;
}

Result<CtlConf> FakeSlurm::ctl_conf()
{
	Status st;
	if (!answer("slurm_load_ctl_conf", &st))
		return st;
	CtlConf c = conf_;
	c.slurm_user_uid = slurm_user;
	return c;
}

Result<std::vector<Switch>> FakeSlurm::switch_table()
{
	Status st;
	if (!answer("slurm_load_topo", &st))
		return st;
	return switches_;
}

Result<std::set<std::string>> FakeSlurm::reservations()
{
	Status st;
	if (!answer("slurm_load_reservations", &st))
		return st;
	std::set<std::string> out;
	for (const auto &r : resvs_)
		out.insert(r.first);
	return out;
}

Result<std::optional<Reservation>> FakeSlurm::reservation(const std::string &name)
{
	Status st;
	if (!answer("slurm_load_reservations", &st))
		return st;
	auto it = resvs_.find(name);
	if (it == resvs_.end())
		return std::optional<Reservation>();
	return std::optional<Reservation>(it->second);
}

Status FakeSlurm::create_reservation(const Reservation &r, const std::string &users)
{
	Status st;
	if (!answer("slurm_create_reservation", &st))
		return st;
	if (resvs_.count(r.name))
		return Status::Error("cannot create reservation " + r.name + ": Duplicate name");
	resvs_[r.name] = r;
	actions.push_back("reserve " + r.name + " " + r.nodes + " users=" + users);
	return Status::Ok();
}

Status FakeSlurm::set_reservation_nodes(const std::string &name, const std::string &nodes)
{
	Status st;
	if (!answer("slurm_update_reservation", &st))
		return st;
	auto it = resvs_.find(name);
	if (it == resvs_.end())
		return Status::Error("cannot update reservation " + name + ": Invalid reservation");
	it->second.nodes = nodes;
	actions.push_back("resv " + name + " " + nodes);
	return Status::Ok();
}

Status FakeSlurm::delete_reservation(const std::string &name)
{
	Status st;
	if (!answer("slurm_delete_reservation", &st))
		return st;
	if (!resvs_.erase(name))
		return Status::Error("cannot delete reservation " + name + ": Invalid reservation");
	actions.push_back("unreserve " + name);
	return Status::Ok();
}

Status FakeSlurm::reboot_nodes(const std::string &nodes, const std::string &reason)
{
	Status st;
	if (!answer("scontrol reboot", &st))
		return st;
	for (const auto &n : expand_set(nodes)) {
		auto it = nodes_.find(n);
		if (it == nodes_.end())
			return Status::Error("cannot reboot " + n +
			                     ": Invalid node name specified");
	}
	for (const auto &n : expand_set(nodes)) {
		Node &node = nodes_[n];
		node.reboot_pending = true;
		actions.push_back("reboot " + n + " " + reason);
		if (on_reboot)
			on_reboot(node);
	}
	return Status::Ok();
}

Result<uint32_t> FakeSlurm::submit(const BatchJob &b)
{
	Status st;
	if (!answer("sbatch", &st))
		return st;
	if (!submit_error.empty())
		return Status::Error(submit_error);
	if (refuse_submit) {
		std::string why = refuse_submit(b);
		if (!why.empty())
			return Status::Error(why);
	}
	uint32_t id = next_job++;
	FakeJob &j = jobs_[id];
	j.job.id = id;
	j.job.state = "PENDING";
	j.job.name = b.name;
	j.job.batch = true;
	j.num_nodes = b.num_nodes;
	submitted.push_back(b);
	actions.push_back("submit " + j.job.name);
	if (on_submit)
		on_submit(j, b);
	return id;
}

Result<std::vector<Trigger>> FakeSlurm::triggers()
{
	Status st;
	if (!answer("slurm_get_triggers", &st))
		return st;
	return triggers_;
}

} // namespace slurm
} // namespace onramp
