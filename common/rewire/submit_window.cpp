// Rewiring windows in job_submit/onramp (see common/submit.hpp).
//
// While a window is active (RewirePlan), a multi-node job without --switches
// gets --switches=<fewest leaves that can hold it>@<RewireSwitchesWait>; a
// job that set --switches keeps its count and its wait is capped; a job
// larger than the largest connected part of the cut fabric is held (22.05
// would reject it at submission) until `onrampctl rewire finish`.
//
// A job's node count is the fewest nodes it can run on, whatever asked for
// them: -N, -n with --ntasks-per-node, -n x -c against the largest node, -w.
// An update of a pending job is judged as the submission of the job it
// makes: Switches=0 gets the default back, a job grown past the connected
// part is held and marked, and a release of such a job waits for the end.
#include <algorithm>

#include "hostlist.hpp"
#include "log.hpp"
#include "onramp.h"
#include "rewire/window.hpp"
#include "submit.hpp"

namespace onramp {
namespace {

struct RewireView {
	std::string window_id;
	std::vector<uint32_t> all_leaves;   // node counts, largest first
	std::vector<uint32_t> uncut_leaves; // node counts, largest first
	uint32_t connected_max = 0;         // nodes of the largest connected part
	uint32_t wait_cap = 0;              // seconds
};

} // namespace

std::string rewire_hold_reason(const std::string &window_id)
{
	return ONRAMP_REASON_PREFIX " held until rewire window " + window_id + " finishes";
}

std::string rewire_hold_marker(const std::string &window_id)
{
	return ONRAMP_REASON_PREFIX "rewire-held window=" + window_id;
}

bool rewire_held_by(const std::string &admin_comment, const std::string &window_id)
{
	const std::string mark = rewire_hold_marker(window_id);
	for (size_t p = 0; p <= admin_comment.size();) {
		size_t end = admin_comment.find("; ", p);
		if (admin_comment.compare(p, end == std::string::npos ? std::string::npos : end - p,
		                          mark) == 0)
			return true;
		if (end == std::string::npos)
			break;
		p = end + 2;
	}
	return false;
}

namespace {

// What decides how many nodes a job needs and which --switches it has.
struct Shape {
	uint32_t min_nodes = 0, max_nodes = 0, num_tasks = 0, ntasks_per_node = 0;
	uint32_t cpus_per_task = 0;
	bool overcommit = false;
	std::string req_nodes;
	uint32_t req_switch = 0, wait4switch = 0;
};

Shape submitted(const JobView &j)
{
	Shape s;
	s.min_nodes = j.min_nodes;
	s.max_nodes = j.max_nodes;
	s.num_tasks = j.num_tasks;
	s.ntasks_per_node = j.ntasks_per_node;
	s.cpus_per_task = j.cpus_per_task;
	s.overcommit = j.overcommit;
	s.req_nodes = j.req_nodes;
	s.req_switch = j.req_switch;
	s.wait4switch = j.wait4switch;
	return s;
}

// A pending job as it will be after the change: each field the change
// gives, the job's current value for the others.
Shape modified(const JobView &c)
{
	auto pick = [](uint32_t change, uint32_t now) { return change ? change : now; };
	Shape s;
	s.min_nodes = pick(c.min_nodes, c.current_min_nodes);
	s.max_nodes = pick(c.max_nodes, c.current_max_nodes);
	s.num_tasks = pick(c.num_tasks, c.current_num_tasks);
	s.ntasks_per_node = pick(c.ntasks_per_node, c.current_ntasks_per_node);
	s.cpus_per_task = pick(c.cpus_per_task, c.current_cpus_per_task);
	s.overcommit = c.overcommit || c.current_overcommit;
	s.req_nodes = c.req_nodes_set ? c.req_nodes : c.current_req_nodes;
	s.req_switch = c.req_switch_set ? c.req_switch : c.current_req_switch;
	s.wait4switch = pick(c.wait4switch, c.current_wait4switch);
	return s;
}

// Whether a change touches what the window's policy judges.
bool changes_shape(const JobView &c)
{
	return c.min_nodes || c.max_nodes || c.num_tasks || c.ntasks_per_node || c.cpus_per_task ||
	       c.req_nodes_set || c.req_switch_set || c.wait4switch;
}

uint64_t ceil_div(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

// The fewest nodes the job can run on: the most of -N, -n over
// --ntasks-per-node, -n x -c over the largest node's CPUs (not with -O,
// whose tasks may share a CPU) and the nodes -w names; never more than the
// job's maximum when it gives one (-N1 -n8 stays one node).
uint32_t nodes_needed(const Shape &s, uint32_t node_cpus_max)
{
	uint64_t n = std::max(s.min_nodes, 1u);
	if (s.num_tasks && s.ntasks_per_node)
		n = std::max(n, ceil_div(s.num_tasks, s.ntasks_per_node));
	if (s.num_tasks && node_cpus_max && !s.overcommit)
		n = std::max(n, ceil_div(uint64_t(s.num_tasks) * std::max(s.cpus_per_task, 1u),
		                         node_cpus_max));
	if (!s.req_nodes.empty()) {
		auto c = hostlist_count(s.req_nodes);
		if (c.ok()) // an invalid list is slurmctld's to reject
			n = std::max<uint64_t>(n, c.value());
	}
	if (s.max_nodes && s.max_nodes >= std::max(s.min_nodes, 1u))
		n = std::min<uint64_t>(n, s.max_nodes);
	return static_cast<uint32_t>(std::min<uint64_t>(n, UINT32_MAX));
}

} // namespace

void rewire_decide(const PolicyState &st, const JobView &job, bool modify, Decision *d)
{
	if (!st.rewire)
		return;
	// A modify is judged as a submission of the job as it will be, while it
	// is pending (a running job keeps its nodes) and only when the change
	// touches its shape or releases it.
	if (modify && (!job.current_pending || !(changes_shape(job) || job.release)))
		return;
	const auto *v = static_cast<const RewireView *>(st.rewire.get());
	const Shape s = modify ? modified(job) : submitted(job);
	uint32_t nodes = nodes_needed(s, job.node_cpus_max);
	if (nodes <= 1 && s.max_nodes <= 1)
		return; // single-node jobs are untouched
	std::string who = job.job_id ? strprintf("job %u", job.job_id)
	                             : strprintf("submission by uid %u", job.submit_uid);
	std::string add;
	if (nodes > v->connected_max) {
		std::string why =
		    strprintf("%s: %u nodes exceed the %u the fabric connects "
		              "during rewire window %s",
		              who.c_str(), nodes, v->connected_max, v->window_id.c_str());
		if (modify && job.release && !job.submit_is_admin) {
			// Released now, it could never start; `onrampctl rewire finish`
			// releases the jobs the window held.
			d->reject = true;
			d->message =
			    "onramp: " + why + "; it can be released when the window finishes";
			return;
		}
		if (modify && job.current_held) {
			// Held already: by this window (marked), or by its user or an
			// admin, whose hold it stays (unmarked, as a --hold submission).
			add = why + "; stays held";
		} else {
			d->hold = true;
			d->hold_reason = rewire_hold_reason(v->window_id);
			// A job its submitter holds (--hold) stays theirs to release:
			// unmarked, rewire finish leaves it held.
			if (!job.user_hold)
				d->admin_comment_append = rewire_hold_marker(v->window_id);
			add = why + "; held";
		}
	} else if (s.req_switch) {
		uint32_t wait = s.wait4switch ? std::min(s.wait4switch, v->wait_cap) : v->wait_cap;
		d->wait4switch = wait;
		add = strprintf("%s: rewire window %s: keeps --switches=%u, wait %us", who.c_str(),
		                v->window_id.c_str(), s.req_switch, wait);
	} else {
		uint32_t k = 0;
		if (!v->all_leaves.empty() && nodes <= v->all_leaves.front()) {
			k = 1;
		} else {
			uint32_t sum = 0;
			for (uint32_t n : v->uncut_leaves) {
				sum += n;
				k++;
				if (sum >= nodes)
					break;
			}
		}
		d->req_switch = k;
		d->wait4switch = v->wait_cap;
		// A change that removes --switches (Switches=0) gets the default
		// back, as a submission without it would.
		add = strprintf("%s: rewire window %s: --switches=%u@%us for %u nodes%s",
		                who.c_str(), v->window_id.c_str(), k, v->wait_cap, nodes,
		                modify && job.req_switch_set ? " (the change removed --switches)"
		                                             : "");
	}
	d->message += (d->message.empty() ? "" : "; ") + add;
}

Status rewire_load(const Config &cfg, std::shared_ptr<const void> *out)
{
	out->reset();
	if (!cfg.is_set("RewirePlan"))
		return Status::Ok();
	auto m = rewire_model_load(cfg, default_topology_path(cfg), nullptr);
	if (!m.ok())
		return m.status();
	if (m->active_id.empty())
		return Status::Ok();
	auto names = topology_node_names(m->topo);
	if (!names.ok())
		return names.status();
	auto t = build_switch_table(m->topo, names.value(), m->cut);
	if (!t.ok())
		return t.status();
	auto v = std::make_shared<RewireView>();
	v->window_id = m->active_id;
	v->wait_cap = static_cast<uint32_t>(cfg.seconds("RewireSwitchesWait"));
	for (const auto &r : t->sw) {
		v->connected_max = std::max<uint32_t>(v->connected_max, r.node_index.size());
		if (r.level != 0)
			continue;
		v->all_leaves.push_back(r.node_index.size());
		if (!m->cut.count(r.name))
			v->uncut_leaves.push_back(r.node_index.size());
	}
	std::sort(v->all_leaves.rbegin(), v->all_leaves.rend());
	std::sort(v->uncut_leaves.rbegin(), v->uncut_leaves.rend());
	*out = std::shared_ptr<const void>(v);
	return Status::Ok();
}

} // namespace onramp
