#include "rewire/live.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "atomic_file.hpp"
#include "hostlist.hpp"
#include "log.hpp"
#include "submit.hpp"

namespace onramp {
namespace {

void wait_a_while(const RewireWait &w, double s)
{
	if (w.sleep)
		w.sleep(s);
	else
		std::this_thread::sleep_for(
		    std::chrono::milliseconds(static_cast<int64_t>(s * 1000)));
}

// Whether JobSubmitPlugins (comma-separated, blanks allowed) lists onramp.
bool lists_onramp(const std::string &plugins)
{
	for (auto p : slurm::split(plugins, ',')) {
		size_t b = p.find_first_not_of(" \t"), e = p.find_last_not_of(" \t");
		p = b == std::string::npos ? "" : p.substr(b, e - b + 1);
		if (p == "onramp" || p == "job_submit/onramp")
			return true;
	}
	return false;
}

} // namespace

Result<std::vector<CrossingJob>> rewire_jobs_across(slurm::SlurmClient &c, const TopologyConf &topo,
                                                    const std::set<std::string> &cut)
{
	auto leaf_of = topology_leaf_of(topo);
	if (!leaf_of.ok())
		return leaf_of.status();
	auto jobs = c.jobs();
	if (!jobs.ok())
		return jobs.status();
	std::vector<CrossingJob> out;
	for (const auto &j : jobs.value()) {
		if (!j.running() || j.nodes.empty())
			continue;
		auto hosts = hostlist_expand(j.nodes, strprintf("job %u: node list", j.id));
		if (!hosts.ok())
			return hosts.status();
		std::set<std::string> leaves;
		bool touches = false;
		for (const auto &h : hosts.value()) {
			auto l = leaf_of->find(h);
			if (l == leaf_of->end())
				continue;
			leaves.insert(l->second);
			touches = touches || cut.count(l->second);
		}
		if (touches && leaves.size() > 1)
			out.push_back({j.id, j.nodes});
	}
	std::sort(out.begin(), out.end(),
	          [](const CrossingJob &a, const CrossingJob &b) { return a.id < b.id; });
	return out;
}

Status rewire_confirm_table(slurm::SlurmClient &c, const std::string &window_id,
                            const std::set<std::string> &leaves, bool cut, const RewireWait &w)
{
	for (int i = 0; i < w.tries; i++) {
		if (i > 0)
			wait_a_while(w, w.every_s);
		auto table = c.switch_table();
		if (!table.ok())
			return table.status();
		auto connected = slurm::connected_leaves(table.value());
		if (!connected.ok())
			return connected.status();
		bool all = true;
		for (const auto &l : leaves)
			all = all && (connected->count(l) != 0) != cut;
		if (all)
			return Status::Ok();
	}
	return Status::Error(strprintf("slurmctld's switch table does not show window %s as %s "
	                               "after reconfigure (see its log)",
	                               window_id.c_str(), cut ? "cut" : "whole"));
}

Status rewire_settle_submit(slurm::SlurmClient &c, const std::string &plan_path,
                            const RewireWait &w, std::string *note)
{
	auto conf = c.ctl_conf();
	if (!conf.ok())
		return conf.status();
	if (!lists_onramp(conf->job_submit_plugins))
		return Status::Ok();
	const std::string ack = conf->state_save_location + "/onramp_job_submit.loaded";
	if (conf->state_save_location.empty() || !read_file(ack, 1 << 20).ok()) {
		if (note)
			*note = "cannot read " + ack +
			        " (not on the controller?); giving job_submit/onramp 2 s";
		wait_a_while(w, 2);
		return Status::Ok();
	}
	for (int i = 0; i < w.tries; i++) {
		if (i > 0)
			wait_a_while(w, w.every_s);
		const std::string want = file_stamp(plan_path);
		auto text = read_file(ack, 1 << 20);
		if (!text.ok())
			continue; // being replaced (written atomically): look again
		auto lines = slurm::split(text.value(), '\n');
		bool listed = false;
		for (size_t k = 1; k < lines.size(); k++)
			listed = listed || lines[k] == want;
		if (!listed)
			continue;
		if (lines[0] == "status loaded")
			return Status::Ok();
		const std::string kept = "status kept ";
		return Status::Error("job_submit/onramp kept its previous policy: " +
		                     (lines[0].compare(0, kept.size(), kept) == 0
		                          ? lines[0].substr(kept.size())
		                          : lines[0]));
	}
	return Status::Error(strprintf("job_submit/onramp did not take up %s within %.0f s (see "
	                               "slurmctld's log)",
	                               plan_path.c_str(), w.tries * w.every_s));
}

Result<std::vector<uint32_t>> rewire_release_held(slurm::SlurmClient &c,
                                                  const std::string &window_id,
                                                  std::vector<std::string> *failed)
{
	auto jobs = c.jobs();
	if (!jobs.ok())
		return jobs.status();
	std::vector<uint32_t> out;
	for (const auto &j : jobs.value()) {
		if (!j.pending() || !rewire_held_by(j.admin_comment, window_id))
			continue;
		if (!j.held)
			continue; // already released
		if (j.held_by_admin) {
			// Its user released onramp's hold and an admin held it
			// again: the admin's hold, not the window's, to lift.
			log_info("job %u: held by an admin since; not released at the end of "
			         "rewire window %s",
			         j.id, window_id.c_str());
			continue;
		}
		Status st = c.release(j.id);
		if (st.ok()) {
			out.push_back(j.id);
		} else {
			log_error("%s", st.message().c_str());
			if (failed)
				failed->push_back(st.message());
		}
	}
	std::sort(out.begin(), out.end());
	return out;
}

} // namespace onramp
