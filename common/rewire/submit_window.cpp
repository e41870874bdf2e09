// Rewiring windows in job_submit/onramp (see common/submit.hpp).
//
// While a window is active (RewirePlan), a multi-node job without --switches
// gets --switches=<fewest leaves that can hold it>@<RewireSwitchesWait>; a
// job that set --switches keeps its count and its wait is capped; a job
// larger than the largest connected part of the cut fabric is held (22.05
// would reject it at submission) until `onrampctl rewire finish`.
#include <algorithm>

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

void rewire_decide(const PolicyState &st, const JobView &job, bool modify, Decision *d)
{
	if (!st.rewire || modify)
		return;
	const auto *v = static_cast<const RewireView *>(st.rewire.get());
	uint32_t nodes = std::max(job.min_nodes, 1u);
	if (nodes <= 1 && job.max_nodes <= 1)
		return; // single-node jobs are untouched
	std::string who = job.job_id ? strprintf("job %u", job.job_id)
	                             : strprintf("submission by uid %u", job.submit_uid);
	std::string add;
	if (nodes > v->connected_max) {
		d->hold = true;
		d->hold_reason = rewire_hold_reason(v->window_id);
		// A job its submitter holds (--hold) stays theirs to release:
		// unmarked, rewire finish leaves it held.
		if (!job.user_hold)
			d->admin_comment_append = rewire_hold_marker(v->window_id);
		add = strprintf("%s: %u nodes exceed the %u the fabric connects during rewire "
		                "window %s; held",
		                who.c_str(), nodes, v->connected_max, v->window_id.c_str());
	} else if (job.req_switch) {
		uint32_t wait =
		    job.wait4switch ? std::min(job.wait4switch, v->wait_cap) : v->wait_cap;
		d->wait4switch = wait;
		add = strprintf("%s: rewire window %s: keeps --switches=%u, wait %us", who.c_str(),
		                v->window_id.c_str(), job.req_switch, wait);
	} else {
		uint32_t k = 0;
		if (!v->all_leaves.empty() && nodes <= v->all_leaves.front()) {
			k = 1;
		} else {
			uint32_t sum = 0;
			for (uint32_t s : v->uncut_leaves) {
				sum += s;
				k++;
				if (sum >= nodes)
					break;
			}
		}
		d->req_switch = k;
		d->wait4switch = v->wait_cap;
		add = strprintf("%s: rewire window %s: --switches=%u@%us for %u nodes", who.c_str(),
		                v->window_id.c_str(), k, v->wait_cap, nodes);
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
