#include "campaign/layers.hpp"

#include <algorithm>

#include "hostlist.hpp"

namespace onramp {
namespace campaign {

const char *const kLayerNames[] = {"node",        "network",    "platform",
                                   "application", "operations", nullptr};

namespace {

std::string lower(std::string s)
{
	std::transform(s.begin(), s.end(), s.begin(), ::tolower);
	return s;
}

bool has_item(const std::string &list, const std::string &item)
{
	return ("," + list + ",").find("," + item + ",") != std::string::npos;
}

// Why an admitted node cannot take production jobs, "" when it can.
std::string platform_block(const NodeRow &n, const LayerFacts &f)
{
	auto s = f.slurm.find(n.node);
	if (s == f.slurm.end())
		return "unknown to slurmctld";
	std::string st = lower(s->second.state);
	for (const char *bad : {"drain", "down", "maint", "reserved", "reboot", "fail"})
		if (st.find(bad) != std::string::npos)
			return "state " + s->second.state;
	if (!has_item(s->second.features, f.feature))
		return "feature " + f.feature + " not active";
	bool up = false;
	for (const auto &[p, u] : s->second.partitions)
		up = up || u;
	if (!up)
		return s->second.partitions.empty() ? "in no partition" : "in no UP partition";
	return "";
}

void network(Layer &l, const std::vector<const NodeRow *> &nodes,
             const std::set<std::string> &racks, const LayerFacts &f)
{
	std::set<std::string> mine;
	for (auto *n : nodes) {
		mine.insert(n->node);
		if (n->code.rfind("PORT_", 0) == 0 || n->code.rfind("PAIR_", 0) == 0)
			l.blocked_by.push_back(n->node + ": " + n->code);
	}
	if (f.have_topology) {
		for (const auto &rk : racks) {
			auto leaf = f.leaves.find(rk);
			if (leaf == f.leaves.end()) {
				l.blocked_by.push_back("rack " + rk +
				                       ": not in slurmctld's switch table");
				continue;
			}
			if (!leaf->second.connected)
				l.blocked_by.push_back(
				    "rack " + rk +
				    ": cut off from the spine in slurmctld's switch "
				    "table (rewire window?)");
			for (auto *n : nodes)
				if (n->rack == rk && !leaf->second.nodes.count(n->node))
					l.blocked_by.push_back(n->node + ": not under " + rk +
					                       " in slurmctld's switch table");
		}
	}
	std::set<std::string> covered;
	bool any = false;
	for (const auto &p : f.pairs) {
		any = true;
		if (p.result == "pass") {
			covered.insert(p.rack);
			covered.insert(p.peer_rack);
		} else if (!p.result.empty() && (mine.count(p.node) || mine.count(p.peer))) {
			l.blocked_by.push_back(p.node + "<->" + p.peer + ": pair " + p.result +
			                       (p.detail.empty() ? "" : " (" + p.detail + ")"));
		}
	}
	if (f.campaign_racks > 1)
		for (const auto &rk : racks)
			if (!covered.count(rk))
				l.blocked_by.push_back("rack " + rk +
				                       (any ? ": no passing cross-rack pair"
				                            : ": cross-rack pairs not run yet"));
	if (!f.have_topology)
		l.note = "switch table not checked";
	if (!f.fabric_diagnosis.empty())
		l.note += (l.note.empty() ? "" : "; ") + std::string("fabric diagnosis: ") +
		          f.fabric_diagnosis;
}

void application(Layer &l, const std::vector<const NodeRow *> &nodes,
                 const std::set<std::string> &racks, const LayerFacts &f)
{
	for (const auto &rk : racks) {
		const SmokeRow *s = nullptr;
		for (const auto &x : f.smokes)
			if (x.rack == rk)
				s = &x;
		bool admitted = false;
		for (auto *n : nodes)
			admitted = admitted || (n->rack == rk && n->state == "admitted");
		if (!s && !admitted) {
			l.blocked_by.push_back("rack " + rk +
			                       ": no admitted new node to run a smoke "
			                       "job on");
			continue;
		}
		if (!s) {
			l.blocked_by.push_back("rack " + rk +
			                       ": no smoke job yet (runs after the "
			                       "last wave and the cross-rack pairs)");
			continue;
		}
		std::string job = s->job.empty() ? "" : " " + s->job;
		if (s->result == "pass")
			continue;
		if (s->result == "fail")
			l.blocked_by.push_back("rack " + rk + ": smoke job" + job + " on " +
			                       s->nodes + " failed: " + s->detail);
		else if (s->result == "running")
			l.blocked_by.push_back("rack " + rk + ": smoke job" + job + " on " +
			                       s->nodes + " not finished");
		else
			l.blocked_by.push_back("rack " + rk + ": smoke job on " + s->nodes +
			                       " not run yet");
	}
}

void operations(Layer &l, const std::vector<const NodeRow *> &nodes, const LayerFacts &f)
{
	bool unknown = f.exporter.empty() || f.rules.empty();
	if (!f.exporter.empty() && f.exporter != "ok")
		l.blocked_by.push_back("metrics exporter: " + f.exporter);
	if (!f.rules.empty() && f.rules != "ok")
		l.blocked_by.push_back("alert rules: " + f.rules);
	if (!f.textfile_dir.empty()) {
		for (auto *n : nodes)
			if (n->state == "admitted" && !f.textfiles.count(n->node))
				l.blocked_by.push_back(n->node + ": no onramp-" + n->node +
				                       ".prom in " + f.textfile_dir);
	} else {
		l.note = "MetricsTextfileDir not set: node textfiles not checked";
	}
	if (unknown && l.blocked_by.empty()) {
		l.ok = -1;
		l.note = "exporter or alert rules not checked";
	}
}

} // namespace

std::vector<Layer> compute_layers(const std::vector<const NodeRow *> &nodes,
                                  const std::set<std::string> &racks, const LayerFacts &f)
{
	std::vector<Layer> out;
	for (int i = 0; kLayerNames[i]; i++) {
		Layer l;
		l.name = kLayerNames[i];
		l.ok = 1;
		if (l.name == "node") {
			for (auto *n : nodes)
				if (n->state != "admitted")
					l.blocked_by.push_back(
					    n->node + ": " +
					    (n->code.empty() ? n->state : n->code));
		} else if (l.name == "network") {
			network(l, nodes, racks, f);
		} else if (l.name == "platform") {
			if (!f.have_slurm) {
				l.ok = -1;
				l.note = "no Slurm state given";
			}
			for (auto *n : nodes) {
				if (!f.have_slurm || n->state != "admitted")
					continue;
				std::string why = platform_block(*n, f);
				if (!why.empty())
					l.blocked_by.push_back(n->node + ": " + why);
			}
		} else if (l.name == "application") {
			application(l, nodes, racks, f);
		} else {
			operations(l, nodes, f);
		}
		if (!l.blocked_by.empty())
			l.ok = 0;
		out.push_back(std::move(l));
	}
	return out;
}

Result<std::map<std::string, SlurmNode>>
slurm_nodes(const std::vector<slurm::Node> &nodes, const std::vector<slurm::Partition> &partitions)
{
	std::map<std::string, SlurmNode> out;
	for (const auto &n : nodes) {
		SlurmNode &s = out[n.name];
		s.state = n.state;
		const std::pair<bool, const char *> flags[] = {{n.drain, "+DRAIN"},
		                                               {n.reserved, "+RESERVED"},
		                                               {n.reboot_pending, "+REBOOT"},
		                                               {!n.responding, "+NOT_RESPONDING"}};
		for (const auto &f : flags)
			if (f.first)
				s.state += f.second;
		s.features = n.features_active;
	}
	for (const auto &p : partitions) {
		if (p.nodes.empty())
			continue;
		auto hosts = hostlist_expand(p.nodes, "partition " + p.name + ": nodes");
		if (!hosts.ok())
			return hosts.status();
		for (const auto &h : hosts.value()) {
			auto n = out.find(h);
			if (n != out.end())
				n->second.partitions[p.name] = p.up;
		}
	}
	return out;
}

Result<std::map<std::string, LiveLeaf>> live_leaves(const std::vector<slurm::Switch> &table)
{
	auto connected = slurm::connected_leaves(table);
	if (!connected.ok())
		return connected.status();
	std::map<std::string, LiveLeaf> out;
	for (const auto &sw : table) {
		if (sw.level != 0)
			continue;
		LiveLeaf &lf = out[sw.name];
		lf.connected = connected->count(sw.name) > 0;
		if (sw.nodes.empty())
			continue;
		auto hosts =
		    hostlist_expand(sw.nodes, "switch table: switch " + sw.name + ": nodes");
		if (!hosts.ok())
			return hosts.status();
		lf.nodes.insert(hosts->begin(), hosts->end());
	}
	return out;
}

std::string diagnose_pairs(const std::vector<PairRow> &pairs, const fleet::FabricView &view)
{
	std::vector<fleet::PairResult> run;
	for (const auto &p : pairs)
		if (!p.result.empty())
			run.push_back({p.node, p.peer, p.result == "pass" ? 1.0 : 0.0});
	if (run.empty())
		return "";
	fleet::LocaliseOptions opt;
	opt.good_gbs = 0.5; // a pass/fail outcome, not a bandwidth
	return fleet::localise(run, view, opt).summary();
}

} // namespace campaign
} // namespace onramp
