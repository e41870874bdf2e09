#include "campaign/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <set>
#include <vector>

#include <sys/stat.h>

#include "admit/record.hpp"
#include "atomic_file.hpp"
#include "campaign/layers.hpp"
#include "campaign/planner.hpp"
#include "fleet/localise.hpp"
#include "log.hpp"
#include "rewire/topology.hpp"

namespace onramp {
namespace campaign {

namespace {

std::string dash_or(const std::string &s)
{
	return s.empty() ? "-" : s;
}
std::string iso(int64_t t)
{
	return admit::iso_time(t);
}

// The facts the layered view needs beyond the journal: Slurm's view (files
// the orchestrator wrote), the operations checks, and the pairs and smoke
// jobs of the campaign.
struct Facts {
	LayerFacts base;
	std::map<std::string, int> sizes;
	const Config *cfg = nullptr;                // for the nodes' admission records
	std::shared_ptr<fleet::FabricModel> fabric; // null without topology.conf
};

// The checks of the node's admission record when it was written at or after
// since (this campaign's attempt): name, status, code, seconds, value and
// threshold; a null Json when there is none (yet). An unreadable record is
// reported in "error".
Json admission_checks(const Config &cfg, const std::string &node, int64_t since)
{
	bool missing = false;
	auto rec = admit::read_record(admit::record_path(cfg, node), &missing);
	if (!rec.ok())
		return missing ? Json() : Json::object().set("error", rec.status().message());
	int64_t t = admit::parse_iso_time(rec->time);
	if (t < since)
		return Json();
	Json o = Json::object();
	o.set("time", rec->time).set("status", rec->status).set("code", rec->code);
	Json cs = Json::array();
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(rec->verdict.get(), "checks"), i, c)
	{
		auto str = [&](const char *k) {
			const char *v = json_string_value(json_object_get(c, k));
			return std::string(v ? v : "");
		};
		Json x = Json::object();
		x.set("name", str("name")).set("status", str("status")).set("code", str("code"));
		x.set("duration_s", json_number_value(json_object_get(c, "duration_s")));
		x.set("value", json_number_value(json_object_get(c, "value")));
		x.set("threshold", json_number_value(json_object_get(c, "threshold")));
		x.set("unit", str("unit"));
		cs.push(x);
	}
	o.set("checks", cs);
	return o;
}

std::string check_rules(const std::string &path)
{
	if (path.empty())
		return "AlertRulesFile not set";
	auto t = read_file(path, 4u << 20);
	if (!t.ok())
		return t.status().message(); // names the file
	if (t->find("alert:") == std::string::npos)
		return path + ": no alert rules in it";
	return "ok";
}

Facts gather_facts(const ReportInputs &a, const Config &cfg)
{
	Facts f;
	f.cfg = &cfg;
	std::map<std::string, std::string> leaf_of;
	load_racks(a.topology, cfg, &leaf_of, &f.sizes); // optional here: caps shown when readable
	f.base.feature = cfg.str("AdmittedFeature");
	if (a.slurm) {
		// What cannot be read stays unknown (the layer says so), as
		// without a cluster.
		auto nodes = a.slurm->nodes();
		auto parts = a.slurm->partitions();
		Result<std::map<std::string, SlurmNode>> facts =
		    !nodes.ok()   ? nodes.status()
		    : !parts.ok() ? parts.status()
		                  : slurm_nodes(nodes.value(), parts.value());
		if (facts.ok()) {
			f.base.have_slurm = true;
			f.base.slurm = facts.value();
		} else {
			log_warn("%s", facts.status().message().c_str());
		}
		auto table = a.slurm->switch_table();
		Result<std::map<std::string, LiveLeaf>> leaves =
		    table.ok() ? live_leaves(table.value()) : table.status();
		if (leaves.ok()) {
			f.base.have_topology = true;
			f.base.leaves = leaves.value();
		} else {
			log_warn("%s", leaves.status().message().c_str());
		}
	}
	f.base.exporter = a.exporter;
	f.base.rules = check_rules(cfg.str("AlertRulesFile"));
	f.base.textfile_dir = cfg.str("MetricsTextfileDir");
	auto fabric = fleet::load_fabric_model(cfg, a.topology.empty() ? default_topology_path(cfg)
	                                                               : a.topology);
	if (fabric.ok()) // optional: the network layer's fabric diagnosis
		f.fabric = std::move(fabric.value());
	return f;
}

Json layers_json(const std::vector<Layer> &layers)
{
	Json o = Json::object();
	for (const auto &l : layers) {
		Json x = Json::object();
		if (l.ok < 0)
			x.set_null("ok");
		else
			x.set_bool("ok", l.ok == 1);
		Json b = Json::array();
		for (const auto &why : l.blocked_by)
			b.push(why);
		x.set("blocked_by", b);
		if (!l.note.empty())
			x.set("note", l.note);
		o.set(l.name.c_str(), x);
	}
	return o;
}

Json campaign_report(Journal &j, const CampaignRow &c, const ReportInputs &a, const Facts &facts)
{
	auto nodes = j.nodes(c.id);
	auto waves = j.waves(c.id);
	auto events = j.events(c.id);
	auto pairs = j.pairs(c.id);
	auto smokes = j.smokes(c.id);
	Json r = Json::object();
	r.set("id", c.id).set("nodes", c.nodes).set("state", c.state).set("status", c.status);
	r.set("wave_fraction", c.fraction).set("min_pass_rate", c.min_pass);
	r.set("boot_timeout_s", c.boot_timeout).set("budget_s", a.budget);
	if (!nodes.ok() || !waves.ok() || !events.ok() || !pairs.ok() || !smokes.ok()) {
		r.set("error", "journal unreadable");
		return r;
	}
	int64_t t = static_cast<int64_t>(time(nullptr));
	auto counts = [](const std::vector<const NodeRow *> &list) {
		Json o = Json::object();
		std::map<std::string, int> m;
		for (auto *n : list)
			m[n->state]++;
		for (const auto &[s, k] : m)
			o.set(s.c_str(), k);
		return o;
	};
	std::vector<const NodeRow *> all;
	std::set<std::string> all_racks;
	std::map<int, std::vector<const NodeRow *>> by_wave;
	std::map<int, std::set<std::string>> wave_racks;
	std::map<std::string, std::vector<const NodeRow *>> by_rack;
	for (const auto &n : nodes.value()) {
		all.push_back(&n);
		all_racks.insert(n.rack);
		by_wave[n.wave].push_back(&n);
		wave_racks[n.wave].insert(n.rack);
		by_rack[n.rack].push_back(&n);
	}
	LayerFacts lf = facts.base;
	lf.campaign_racks = static_cast<int>(by_rack.size());
	lf.pairs = pairs.value();
	if (facts.fabric)
		lf.fabric_diagnosis = diagnose_pairs(lf.pairs, facts.fabric->view);
	lf.smokes = smokes.value();
	if (!lf.textfile_dir.empty())
		for (const auto &n : nodes.value()) {
			struct stat sb;
			if (stat((lf.textfile_dir + "/onramp-" + n.node + ".prom").c_str(), &sb) ==
			    0)
				lf.textfiles.insert(n.node);
		}
	r.set("counts", counts(all));
	Json wj = Json::array();
	for (const auto &w : waves.value()) {
		Json o = Json::object();
		o.set("wave", w.wave).set("state", w.state).set("counts", counts(by_wave[w.wave]));
		if (w.opened)
			o.set("opened", iso(w.opened));
		if (w.closed)
			o.set("closed", iso(w.closed));
		o.set("layers",
		      layers_json(compute_layers(by_wave[w.wave], wave_racks[w.wave], lf)));
		wj.push(o);
	}
	r.set("waves", wj);
	// Most nodes of each rack in reboot/admission at once, from the timeline.
	std::map<std::string, std::string> rack_of;
	for (const auto &n : nodes.value())
		rack_of[n.node] = n.rack;
	std::map<std::string, int> inflight, peak;
	std::set<std::string> busy;
	for (const auto &e : events.value()) {
		const std::string &rk = rack_of[e.node];
		bool was = busy.count(e.node) > 0;
		bool is = e.state == "rebooting" || e.state == "booted" || e.state == "admitting";
		if (is && !was) {
			busy.insert(e.node);
			peak[rk] = std::max(peak[rk], ++inflight[rk]);
		} else if (!is && was) {
			busy.erase(e.node);
			inflight[rk]--;
		}
	}
	Json rj = Json::array();
	for (const auto &[rack, list] : by_rack) {
		Json o = Json::object();
		o.set("rack", rack).set("counts", counts(list)).set("max_in_flight", peak[rack]);
		auto sz = facts.sizes.find(rack);
		if (sz != facts.sizes.end())
			o.set("size", sz->second).set("cap", rack_cap(sz->second, c.fraction));
		for (const auto &sm : lf.smokes)
			if (sm.rack == rack) {
				Json x = Json::object();
				x.set("nodes", sm.nodes).set("job", sm.job);
				x.set("result", sm.result.empty() ? "pending" : sm.result);
				x.set("detail", sm.detail);
				o.set("smoke", x);
			}
		o.set("layers", layers_json(compute_layers(list, {rack}, lf)));
		rj.push(o);
	}
	r.set("racks", rj);
	Json nj = Json::array();
	int over = 0;
	for (const auto &n : nodes.value()) {
		Json o = Json::object();
		o.set("node", n.node).set("rack", n.rack).set("wave", n.wave).set("state", n.state);
		if (!n.code.empty())
			o.set("code", n.code).set("detail", n.detail);
		o.set("reboots", n.reboots);
		Json tl = Json::object();
		for (int i = 0; kNodeStates[i]; i++) {
			auto it = n.times.find(kNodeStates[i]);
			if (it != n.times.end())
				tl.set(kNodeStates[i], iso(it->second));
		}
		o.set("timeline", tl);
		auto start = n.times.find("rebooting");
		if (facts.cfg && start != n.times.end()) {
			Json adm = admission_checks(*facts.cfg, n.node, start->second);
			if (adm)
				o.set("admission", adm);
		}
		if (start != n.times.end()) {
			int64_t end = t;
			if (final_node_state(n.state) && n.times.count(n.state))
				end = n.times.at(n.state);
			o.set("elapsed_s", end - start->second);
			bool over_budget = end - start->second > a.budget;
			o.set_bool("over_budget", over_budget);
			over += over_budget;
		}
		nj.push(o);
	}
	r.set("nodes_detail", nj).set("over_budget", over);
	Json pj = Json::array();
	std::set<std::string> racks_paired;
	int ppass = 0, pfail = 0, ppending = 0;
	for (const auto &p : pairs.value()) {
		Json o = Json::object();
		o.set("node", p.node)
		    .set("rack", p.rack)
		    .set("peer", p.peer)
		    .set("peer_rack", p.peer_rack);
		o.set("result", p.result.empty() ? "pending" : p.result);
		if (!p.detail.empty())
			o.set("detail", p.detail);
		pj.push(o);
		if (p.result == "pass") {
			ppass++;
			racks_paired.insert(p.rack);
			racks_paired.insert(p.peer_rack);
		} else if (p.result.empty()) {
			ppending++;
		} else {
			pfail++;
		}
	}
	r.set("pairs", pj);
	Json racks_cov = Json::array();
	for (const auto &rk : racks_paired)
		racks_cov.push(rk);
	Json layers = layers_json(compute_layers(all, all_racks, lf));
	Json net = Json::adopt(json_incref(json_object_get(layers.get(), "network")));
	net.set("pairs_passed", ppass).set("pairs_failed", pfail).set("pairs_pending", ppending);
	net.set("racks_covered", racks_cov);
	r.set("layers", layers);
	return r;
}

void print_status_one(const Json &r)
{
	const json_t *o = r.get();
	auto s = [&](const json_t *x, const char *k) {
		const json_t *v = json_object_get(x, k);
		if (json_is_string(v))
			return std::string(json_string_value(v));
		if (json_is_integer(v))
			return std::to_string(json_integer_value(v));
		if (json_is_real(v))
			return strprintf("%g", json_real_value(v));
		if (json_is_boolean(v))
			return std::string(json_is_true(v) ? "yes" : "no");
		if (json_is_null(v))
			return std::string("n/a");
		return std::string();
	};
	auto counts = [&](const json_t *x) {
		std::string out;
		const char *k;
		json_t *v;
		json_object_foreach(const_cast<json_t *>(json_object_get(x, "counts")), k, v) out +=
		    strprintf("%s%s=%lld", out.empty() ? "" : " ", k,
		              static_cast<long long>(json_integer_value(v)));
		return out;
	};
	printf("campaign %s: %s  nodes %s  fraction %s  min pass %s\n", s(o, "id").c_str(),
	       s(o, "state").c_str(), s(o, "nodes").c_str(), s(o, "wave_fraction").c_str(),
	       s(o, "min_pass_rate").c_str());
	if (!s(o, "status").empty())
		printf("  status: %s\n", s(o, "status").c_str());
	printf("  nodes: %s  (over the %ss budget: %s)\n", counts(o).c_str(),
	       s(o, "budget_s").c_str(), s(o, "over_budget").c_str());
	size_t i;
	json_t *x;
	json_array_foreach(json_object_get(o, "waves"), i, x) printf(
	    "  wave %s %-7s %s\n", s(x, "wave").c_str(), s(x, "state").c_str(), counts(x).c_str());
	json_array_foreach(json_object_get(o, "racks"), i, x)
	    printf("  rack %-8s %s  max in flight %s (cap %s)\n", s(x, "rack").c_str(),
	           counts(x).c_str(), s(x, "max_in_flight").c_str(), s(x, "cap").c_str());
	printf("  %-10s %-8s %-4s %-12s %-8s %s\n", "NODE", "RACK", "WAVE", "STATE", "ELAPSED",
	       "CODE / TIMELINE");
	json_array_foreach(json_object_get(o, "nodes_detail"), i, x)
	{
		std::string tl;
		const char *k;
		json_t *v;
		json_object_foreach(json_object_get(x, "timeline"), k, v) tl +=
		    strprintf(" %s@%s", k, json_string_value(v) + 11);
		std::string el = s(x, "elapsed_s");
		if (s(x, "over_budget") == "yes")
			el += "!";
		printf("  %-10s %-8s %-4s %-12s %-8s %s%s\n", s(x, "node").c_str(),
		       s(x, "rack").c_str(), s(x, "wave").c_str(), s(x, "state").c_str(),
		       el.empty() ? "-" : el.c_str(),
		       s(x, "code").empty() ? "" : (s(x, "code") + ":").c_str(), tl.c_str());
		json_t *adm = json_object_get(x, "admission");
		std::string cl;
		size_t ci;
		json_t *c;
		json_array_foreach(json_object_get(adm, "checks"), ci, c) cl +=
		    strprintf(" %s=%s(%.1fs)", s(c, "name").c_str(), s(c, "status").c_str(),
		              json_number_value(json_object_get(c, "duration_s")));
		if (!cl.empty()) {
			std::string at = s(adm, "time");
			printf("  %-10s checks done@%s:%s\n", "",
			       at.size() > 11 ? at.substr(11).c_str() : at.c_str(), cl.c_str());
		} else if (!s(adm, "error").empty())
			printf("  %-10s checks: %s\n", "", s(adm, "error").c_str());
	}
	json_array_foreach(json_object_get(o, "pairs"), i, x)
	    printf("  pair %s(%s) <-> %s(%s): %s %s\n", s(x, "node").c_str(), s(x, "rack").c_str(),
	           s(x, "peer").c_str(), s(x, "peer_rack").c_str(), s(x, "result").c_str(),
	           s(x, "detail").c_str());
	const char *k;
	json_t *l;
	json_object_foreach(json_object_get(o, "layers"), k, l)
	{
		std::string b;
		size_t j;
		json_t *y;
		json_array_foreach(json_object_get(l, "blocked_by"), j, y) b +=
		    (b.empty() ? "" : "; ") + std::string(json_string_value(y));
		printf("  layer %-11s ok=%s%s%s\n", k, s(l, "ok").c_str(),
		       b.empty() ? "" : "  blocked by: ",
		       b.empty() ? s(l, "note").c_str() : b.c_str());
	}
}

// onrampctl report: the five layers per campaign, rack and wave, and what
// blocks each.
void print_report_one(const Json &r)
{
	const json_t *o = r.get();
	auto str = [](const json_t *x, const char *k) {
		const json_t *v = json_object_get(x, k);
		return std::string(json_is_string(v) ? json_string_value(v) : "");
	};
	auto cell = [](const json_t *layers, const char *name) {
		const json_t *ok = json_object_get(json_object_get(layers, name), "ok");
		return json_is_true(ok) ? "ok" : json_is_false(ok) ? "BLOCKED" : "n/a";
	};
	printf("campaign %s: %s\n", str(o, "id").c_str(), str(o, "state").c_str());
	if (!str(o, "status").empty())
		printf("  status: %s\n", str(o, "status").c_str());
	std::vector<std::pair<std::string, const json_t *>> cols = {
	    {"campaign", json_object_get(o, "layers")}};
	size_t i;
	json_t *x;
	json_array_foreach(json_object_get(o, "racks"), i, x)
	    cols.push_back({str(x, "rack"), json_object_get(x, "layers")});
	json_array_foreach(json_object_get(o, "waves"), i, x) cols.push_back(
	    {strprintf("wave%lld",
	               static_cast<long long>(json_integer_value(json_object_get(x, "wave")))),
	     json_object_get(x, "layers")});
	printf("  %-12s", "LAYER");
	for (const auto &c : cols)
		printf(" %-9s", c.first.c_str());
	printf("\n");
	for (int k = 0; kLayerNames[k]; k++) {
		printf("  %-12s", kLayerNames[k]);
		for (const auto &c : cols)
			printf(" %-9s", cell(c.second, kLayerNames[k]));
		printf("\n");
	}
	json_array_foreach(json_object_get(o, "racks"), i, x)
	{
		const json_t *sm = json_object_get(x, "smoke");
		if (sm)
			printf("  smoke %s: %s (job %s on %s)%s%s\n", str(x, "rack").c_str(),
			       str(sm, "result").c_str(), dash_or(str(sm, "job")).c_str(),
			       str(sm, "nodes").c_str(), str(sm, "detail").empty() ? "" : ": ",
			       str(sm, "detail").c_str());
	}
	const json_t *layers = json_object_get(o, "layers");
	for (int k = 0; kLayerNames[k]; k++) {
		const json_t *l = json_object_get(layers, kLayerNames[k]);
		size_t n;
		json_t *y;
		json_array_foreach(json_object_get(l, "blocked_by"), n, y)
		    printf("  %s blocked: %s\n", kLayerNames[k], json_string_value(y));
		if (!str(l, "note").empty())
			printf("  %s note: %s\n", kLayerNames[k], str(l, "note").c_str());
	}
}
std::string hms(double s)
{
	long t = std::lround(s);
	if (t >= 3600)
		return strprintf("%ldh%02ldm%02lds", t / 3600, t / 60 % 60, t % 60);
	if (t >= 60)
		return strprintf("%ldm%02lds", t / 60, t % 60);
	return strprintf("%lds", t);
}

template <typename F> void each_campaign(const Json &campaigns, F print_one)
{
	size_t i;
	json_t *x;
	json_array_foreach(json_object_get(campaigns.get(), "campaigns"), i, x)
	    print_one(Json::adopt(json_incref(x)));
	if (json_array_size(json_object_get(campaigns.get(), "campaigns")) == 0)
		printf("no expansion campaigns\n");
}

} // namespace

Status load_racks(const std::string &topology, const Config &cfg,
                  std::map<std::string, std::string> *leaf_of, std::map<std::string, int> *sizes)
{
	std::string path = topology.empty() ? default_topology_path(cfg) : topology;
	auto text = read_file(path);
	if (!text.ok())
		return Status::Error("racks come from topology.conf's leaf switches: " +
		                     text.status().message());
	auto m = parse_topology(text.value(), path);
	if (!m.ok())
		return m.status();
	*leaf_of = m.value();
	for (const auto &[n, r] : *leaf_of)
		(*sizes)[r]++;
	return Status::Ok();
}

Result<Json> status_report(Journal &j, const std::string &id, const ReportInputs &in,
                           const Config &cfg, bool *unknown)
{
	*unknown = false;
	std::vector<CampaignRow> list;
	if (!id.empty()) {
		bool found = false;
		auto c = j.campaign(id, &found);
		if (!c.ok())
			return c.status();
		if (!found) {
			*unknown = true;
			return Status::Error("no campaign '" + id + "'");
		}
		list.push_back(c.value());
	} else {
		auto all = j.campaigns();
		if (!all.ok())
			return all.status();
		list = all.value();
	}
	Facts facts = gather_facts(in, cfg);
	Json out = Json::array();
	for (const auto &c : list)
		out.push(campaign_report(j, c, in, facts));
	Json root = Json::object();
	root.set("campaigns", out);
	return root;
}

void print_status(const Json &campaigns)
{
	each_campaign(campaigns, print_status_one);
}

void print_report(const Json &campaigns)
{
	each_campaign(campaigns, print_report_one);
}

void print_simulation(const SimParams &p, const SimResult &s, bool json)
{
	if (json) {
		printf(
		    "{\"nodes\": %d, \"racks\": %d, \"rack_size_min\": %d, \"rack_size_max\": %d, "
		    "\"wave_fraction\": %g, \"min_pass_rate\": %g, \"reboot_minutes\": \"%s\", "
		    "\"test_minutes\": \"%s\", \"failure_rate\": %g, \"boot_timeout_s\": %g, "
		    "\"fix_minutes\": %g, \"seed\": %llu,\n",
		    p.nodes, p.racks, s.rack_min, s.rack_max, p.fraction, p.min_pass,
		    p.reboot.str().c_str(), p.test.str().c_str(), p.failure_rate,
		    p.boot_timeout * 60, p.fix_minutes, static_cast<unsigned long long>(p.seed));
		printf(" \"planned_waves\": %d, \"predicted_s\": %.1f, \"ideal_s\": %.1f, "
		       "\"stopped\": %s, "
		       "\"pauses\": %d, \"admitted\": %d, \"failed\": %d, \"boot_timeouts\": %d,\n"
		       " \"waves\": [",
		       s.planned_waves, s.total, s.ideal, s.stopped ? "true" : "false", s.pauses,
		       s.admitted, s.failed, s.boot_timeouts);
		for (size_t i = 0; i < s.waves.size(); i++) {
			const SimWave &w = s.waves[i];
			printf("%s\n  {\"wave\": %d, \"nodes\": %d, \"racks\": %d, "
			       "\"max_per_rack\": %d, "
			       "\"admitted\": %d, \"failed\": %d, \"boot_timeouts\": %d, "
			       "\"pass_rate\": %.4f, "
			       "\"start_s\": %.1f, \"end_s\": %.1f, \"node_mean_s\": %.1f, "
			       "\"node_p50_s\": %.1f, "
			       "\"node_p95_s\": %.1f, \"node_max_s\": %.1f, \"paused\": %s, "
			       "\"fix_s\": %.1f}",
			       i ? "," : "", w.wave, w.nodes, w.racks, w.max_per_rack, w.admitted,
			       w.failed, w.boot_timeouts, w.pass_rate(), w.start, w.end,
			       w.node_mean, w.node_p50, w.node_p95, w.node_max,
			       w.paused ? "true" : "false", w.fix);
		}
		printf("\n ]}\n");
	} else {
		printf("simulate: %d nodes in %d racks of %d-%d, wave fraction %g -> %d waves; "
		       "reboot %s min, test %s min, failure rate %g, seed %llu\n",
		       p.nodes, p.racks, s.rack_min, s.rack_max, p.fraction, s.planned_waves,
		       p.reboot.str().c_str(), p.test.str().c_str(), p.failure_rate,
		       static_cast<unsigned long long>(p.seed));
		printf("%-5s %7s %6s %7s %7s %6s %6s %10s %10s %9s %9s %9s\n", "wave", "nodes",
		       "racks", "max/rk", "passed", "failed", "boot_t", "start", "end", "node p50",
		       "node p95", "node max");
		for (const SimWave &w : s.waves) {
			printf("%-5d %7d %6d %7d %7d %6d %6d %10s %10s %9s %9s %9s%s\n", w.wave,
			       w.nodes, w.racks, w.max_per_rack, w.admitted, w.failed,
			       w.boot_timeouts, hms(w.start).c_str(), hms(w.end).c_str(),
			       hms(w.node_p50).c_str(), hms(w.node_p95).c_str(),
			       hms(w.node_max).c_str(),
			       !w.paused ? ""
			       : s.stopped && &w == &s.waves.back()
			           ? strprintf("  PAUSED (pass rate %.3f < %g)", w.pass_rate(),
			                       p.min_pass)
			                 .c_str()
			           : strprintf("  paused, +%s fix", hms(w.fix).c_str()).c_str());
		}
		printf("admitted %d, failed %d, boot timeouts %d, pauses %d\n", s.admitted,
		       s.failed, s.boot_timeouts, s.pauses);
		if (s.stopped)
			printf("campaign PAUSED at wave %d after %s (%.0f s); give --fix-minutes M "
			       "to model "
			       "the admin fix and continue\n",
			       s.waves.back().wave, hms(s.total).c_str(), s.total);
		else
			printf("predicted total: %s (%.0f s); ideal waves x (mean reboot + mean "
			       "test): %s "
			       "(ratio %.3f)\n",
			       hms(s.total).c_str(), s.total, hms(s.ideal).c_str(),
			       s.ideal > 0 ? s.total / s.ideal : 0.0);
	}
}

} // namespace campaign
} // namespace onramp
