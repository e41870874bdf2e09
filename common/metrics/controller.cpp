// The controller side of onramp's metrics: slurmctld's nodes, the
// topology, rewire windows, campaigns and migrations (collect.hpp).
#include <map>
#include <memory>
#include <set>
#include <unistd.h>

#include "atomic_file.hpp"
#include "campaign/journal.hpp"
#include "hostlist.hpp"
#include "log.hpp"
#include "metrics/collect.hpp"
#include "migrate/journal.hpp"
#include "rewire/window.hpp"
#include "slurm/client.hpp"

namespace onramp {
namespace metrics {

void collect_nodes(Exposition &e, const Config &cfg, slurm::SlurmClient &c)
{
	e.family("onramp_nodes", "gauge", "Nodes by admission state as slurmctld sees them.");
	auto nodes = c.nodes();
	if (!nodes.ok()) {
		e.read_error("slurmctld", nodes.status().message());
		return;
	}
	// Nodes in their admission reservation (<AdmissionReservation>_<node>).
	std::set<std::string> reserved;
	auto resv = c.reservations();
	if (resv.ok()) {
		std::string base = cfg.str("AdmissionReservation") + "_";
		for (const auto &n : resv.value())
			if (slurm::has_prefix(n, base))
				reserved.insert(n.substr(base.size()));
	} else {
		e.read_error("slurmctld", resv.status().message());
	}
	std::map<std::string, int> count = {{"admitted", 0},
	                                    {"under_admission", 0},
	                                    {"drained_by_onramp", 0},
	                                    {"drained_other", 0},
	                                    {"not_admitted", 0}};
	std::string feat = cfg.str("AdmittedFeature");
	for (const auto &n : nodes.value()) {
		if (reserved.count(n.name))
			count["under_admission"]++;
		else if (n.drain && slurm::has_prefix(n.reason, slurm::kReasonPrefix))
			count["drained_by_onramp"]++;
		else if (n.drain)
			count["drained_other"]++;
		else if (slurm::has_feature(n.features_active, feat))
			count["admitted"]++;
		else
			count["not_admitted"]++;
	}
	for (const auto &s : count)
		e.sample("onramp_nodes", {{"state", s.first}}, s.second);
}

void collect_topology(Exposition &e, const Config &cfg)
{
	e.family("onramp_node_leaf", "gauge",
	         "1 for each node and the leaf switch it hangs under.");
	e.family("onramp_leaf_uplink_capacity_bytes_per_second", "gauge",
	         "A leaf's uplink capacity from the fabric file (links x speed).");
	e.family("onramp_rewire_window_active", "gauge", "1 for the rewire window in force.");
	e.family("onramp_rewire_windows", "gauge", "Rewire windows by state.");
	auto topo = topology_load(default_topology_path(cfg));
	if (!topo.ok()) {
		e.read_error("topology", topo.status().message());
		return;
	}
	for (const auto &s : topo->switches) {
		if (s.nodes.empty())
			continue;
		auto hosts = hostlist_expand(s.nodes);
		if (hosts.ok())
			for (const auto &h : hosts.value())
				e.sample("onramp_node_leaf", {{"node", h}, {"leaf", s.name}}, 1);
	}
	std::shared_ptr<Fabric> fabric;
	if (cfg.is_set("FabricFile")) {
		auto f = fabric_load(cfg.str("FabricFile"), topo.value());
		if (f.ok()) {
			std::map<std::string, double> cap;
			for (const auto &u : f->uplinks)
				cap[u.leaf] += u.links * u.speed_gbps * 1e9 / 8;
			for (const auto &c : cap)
				e.sample("onramp_leaf_uplink_capacity_bytes_per_second",
				         {{"leaf", c.first}}, c.second);
			fabric = std::make_shared<Fabric>(f.value());
		} else {
			e.read_error("fabric", f.status().message());
		}
	}
	if (!cfg.is_set("RewirePlan"))
		return;
	auto p = plan_load(cfg.str("RewirePlan"), topo.value(), fabric.get());
	if (!p.ok()) {
		e.read_error("rewire_plan", p.status().message());
		return;
	}
	std::map<std::string, int> states = {{"planned", 0}, {"active", 0}, {"done", 0}};
	for (const auto &w : p->windows) {
		states[window_state_name(w.state)]++;
		if (w.state == WindowState::Active)
			e.sample("onramp_rewire_window_active", {{"window", w.id}}, 1);
	}
	for (const auto &s : states)
		e.sample("onramp_rewire_windows", {{"state", s.first}}, s.second);
}

void collect_campaigns(Exposition &e, const Config &cfg, double now)
{
	e.family("onramp_campaign_nodes", "gauge",
	         "Nodes of an expansion campaign by wave and state.");
	e.family("onramp_campaign_state", "gauge", "1 for each campaign's current state.");
	e.family("onramp_campaign_node_in_flight_seconds", "gauge",
	         "How long a campaign node has been between reboot and a final state.");
	std::string path = cfg.str("StateDir") + "/onramp.db";
	if (access(path.c_str(), R_OK) != 0)
		return; // no campaign or migration yet
	auto j = campaign::Journal::open_readonly(path);
	if (!j.ok()) {
		e.read_error("journal", j.status().message());
		return;
	}
	auto campaigns = j.value()->campaigns();
	if (!campaigns.ok()) {
		e.read_error("journal", path + ": " + campaigns.status().message());
		return;
	}
	for (const auto &c : campaigns.value()) {
		e.sample("onramp_campaign_state", {{"campaign", c.id}, {"state", c.state}}, 1);
		auto nodes = j.value()->nodes(c.id);
		if (!nodes.ok()) {
			e.read_error("journal", path + ": " + nodes.status().message());
			continue;
		}
		std::map<std::pair<int, std::string>, int> by_wave_state;
		for (const auto &n : nodes.value()) {
			by_wave_state[{n.wave, n.state}]++;
			auto reboot = n.times.find("rebooting");
			if (reboot != n.times.end() && !campaign::final_node_state(n.state) &&
			    n.state != "planned")
				e.sample("onramp_campaign_node_in_flight_seconds",
				         {{"campaign", c.id}, {"node", n.node}},
				         now - double(reboot->second));
		}
		for (const auto &[ws, count] : by_wave_state)
			e.sample("onramp_campaign_nodes",
			         {{"campaign", c.id},
			          {"wave", std::to_string(ws.first)},
			          {"state", ws.second}},
			         count);
	}
}

void collect_migrations(Exposition &e, const Config &cfg)
{
	e.family("onramp_migrations", "gauge", "Migrations by state.");
	// The Slurm job is "job_id": "job" is Prometheus' own target label.
	e.family("onramp_migration_duration_seconds", "gauge",
	         "From a migration's first journaled step to its last (so far).");
	std::string path = cfg.str("StateDir") + "/migrate.db";
	if (access(path.c_str(), R_OK) != 0)
		return;
	auto jr = migrate::Journal::open_read_only(path);
	if (!jr.ok()) {
		e.read_error("journal", jr.status().message());
		return;
	}
	auto counts = jr.value()->count_by_state();
	auto spans = jr.value()->spans();
	if (!counts.ok() || !spans.ok()) {
		e.read_error("journal", (counts.ok() ? spans.status() : counts.status()).message());
		return;
	}
	for (const auto &c : counts.value())
		e.sample("onramp_migrations", {{"state", c.first}}, static_cast<double>(c.second));
	for (const auto &sp : spans.value())
		e.sample("onramp_migration_duration_seconds",
		         {{"migration", std::to_string(sp.id)},
		          {"job_id", std::to_string(sp.job)},
		          {"state", sp.state}},
		         sp.seconds);
}

void merge_textfiles(Exposition &e, const std::string &dir)
{
	for (const auto &f : list_dir(dir)) {
		if (f.size() < 5 || f.compare(f.size() - 5, 5, ".prom"))
			continue;
		auto t = read_file(dir + "/" + f, 16u << 20);
		if (t.ok())
			e.merge_text(t.value(), dir + "/" + f);
		else
			e.read_error(dir + "/" + f, t.status().message());
	}
}

std::string controller_text(const Config &cfg, slurm::SlurmClient &c,
                            const std::string &textfile_dir, double now)
{
	Exposition e;
	collect_nodes(e, cfg, c);
	collect_topology(e, cfg);
	collect_campaigns(e, cfg, now);
	collect_migrations(e, cfg);
	if (!textfile_dir.empty())
		merge_textfiles(e, textfile_dir);
	for (const auto &m : e.errors())
		log_warn("%s", m.c_str());
	return e.text();
}

} // namespace metrics
} // namespace onramp
