// onramp-campaign: the journal and planner of expansion campaigns, for
// onrampctl-expand (the orchestration in bash). Every command is one short
// transaction on <StateDir>/onramp.db, so the orchestrator can be killed at
// any point and re-run.
//
//   onramp-campaign [--conf F] [--db F] [--topology F] COMMAND --id ID ...
//     --topology: default $ONRAMP_TOPOLOGY_CONF, else topology.conf beside
//     onramp.conf (where topology/onramp reads it)
//     plan --nodes HOSTLIST --fraction F --min-pass R --boot-timeout S
//         create the campaign (or resume it: paused -> running); prints
//         "created ID" or "resumed ID"
//     wave [--json]        the first wave not yet passed: "wave K" then
//                          "NODE STATE SINCE" lines; "done" when none is left
//                          (--json: {"wave": K, "nodes": [{"node", "state",
//                          "since"}]} or {"done": true})
//     node --node N --state S [--code C] [--detail D]
//     open-wave --wave K | close-wave --wave K
//         close-wave: exit 0 when the wave's pass rate >= min-pass, else
//         pauses the campaign and exits 3 (the status says why)
//     pairs                cross-rack pairs to run: "NODE RACK PEER PEER_RACK"
//     pair-result --node N --peer P --result pass|fail|inconclusive [--detail D]
//     finish               mark the campaign done
//     smoke                the application layer's smoke jobs still to pass,
//                          planned once per rack of admitted nodes:
//                          "RACK NODES JOB RESULT" ('-' for none)
//     smoke-result --rack R --result running|pass|fail [--job J] [--detail D]
//     smoke-close          exit 0 when every rack's smoke job passed, else
//                          pauses the campaign (why in the status), exit 3
//     status|report [--json] [--slurm-state FILE] [--slurm-topology FILE]
//         [--exporter ok|WHY] [--budget S]   (no --id: all campaigns)
//         FILE: sinfo -h -N -o '%N %T %b %P %a'; scontrol show topology.
//         report prints the five layers per campaign, rack and wave
//   onramp-campaign simulate --nodes N --racks R [--wave-fraction F]
//       [--min-pass R] [--reboot-minutes DIST] [--test-minutes DIST]
//       [--failure-rate P] [--boot-timeout S] [--fix-minutes M] [--seed S] [--json]
//         simulate a campaign (no journal, no cluster): waves, per-wave
//         stats and the predicted total time; exit 3 when a wave pauses
//         and no --fix-minutes is given
// Exit 0 ok, 1 error, 2 bad input (refused), 3 wave below the pass rate.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "admit/record.hpp"
#include "atomic_file.hpp"
#include "campaign/journal.hpp"
#include "campaign/layers.hpp"
#include "campaign/planner.hpp"
#include "campaign/simulate.hpp"
#include "config.hpp"
#include "hostlist.hpp"
#include "json.hpp"
#include "log.hpp"
#include "number.hpp"
#include "rewire/topology.hpp"

using namespace onramp;
using namespace onramp::campaign;

namespace {

enum { kOk = 0, kError = 1, kRefused = 2, kBelowRate = 3 };

struct Args {
	std::string cmd, conf, db, topology, id, nodes, node, state, code, detail, peer, result,
	    slurm_state, slurm_topology, exporter, rack, job;
	double fraction = -1, min_pass = -1;
	int64_t boot_timeout = -1, budget = 45 * 60;
	int wave = 0;
	bool json = false;
};

int64_t now()
{
	return static_cast<int64_t>(time(nullptr));
}
std::string dash_or(const std::string &s)
{
	return s.empty() ? "-" : s;
}
std::string iso(int64_t t)
{
	return admit::iso_time(t);
}

int refuse(const std::string &msg)
{
	log_error("%s", msg.c_str());
	return kRefused;
}
int fail(const Status &st)
{
	log_error("%s", st.message().c_str());
	return kError;
}

// node -> rack and rack -> size, from topology.conf (--topology, else where
// topology/onramp reads it).
Status load_racks(const Args &a, const Config &cfg, std::map<std::string, std::string> *leaf_of,
                  std::map<std::string, int> *sizes)
{
	std::string path = a.topology.empty() ? default_topology_path(cfg) : a.topology;
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

int cmd_plan(Journal &j, const Args &a, const Config &cfg)
{
	Status st = check_fraction(a.fraction);
	if (!st.ok())
		return refuse(st.message() + " (--wave-fraction / MaxWaveFraction)");
	st = check_fraction(a.min_pass, "minimum wave pass rate");
	if (!st.ok())
		return refuse(st.message() + " (MinWavePassRate)");
	if (a.boot_timeout < 1)
		return refuse("boot timeout must be a positive number of seconds");
	auto hosts = hostlist_expand(a.nodes);
	if (!hosts.ok())
		return refuse("bad hostlist '" + a.nodes + "': " + hosts.status().message());
	std::map<std::string, std::string> leaf_of;
	std::map<std::string, int> sizes;
	if (!(st = load_racks(a, cfg, &leaf_of, &sizes)).ok())
		return fail(st);
	std::vector<Member> members;
	std::vector<std::string> unknown;
	for (const auto &h : hosts.value()) {
		auto it = leaf_of.find(h);
		if (it == leaf_of.end())
			unknown.push_back(h);
		else
			members.push_back({h, it->second});
	}
	if (!unknown.empty())
		return refuse("unknown node(s) " + hostlist_compress(unknown) +
		              ": not under any leaf switch of topology.conf");
	auto ov = j.overlaps(a.id, hosts.value());
	if (!ov.ok())
		return fail(ov.status());
	if (!ov->empty()) {
		std::string m;
		for (const auto &o : ov.value())
			m += (m.empty() ? "" : ", ") + o;
		return refuse("node(s) already in another campaign that is not done: " + m);
	}
	bool found = false;
	auto existing = j.campaign(a.id, &found);
	if (!existing.ok())
		return fail(existing.status());
	std::string list = hostlist_compress(hosts.value());
	if (found) {
		if (existing->nodes != list)
			return refuse("campaign " + a.id + " exists with nodes " + existing->nodes +
			              ", not " + list + "; pick another --name");
		if (existing->state == "done") {
			printf("done %s\n", a.id.c_str());
			return kOk;
		}
		if (existing->state != "running" &&
		    !(st = j.set_campaign(a.id, "running", "resumed", now())).ok())
			return fail(st);
		printf("resumed %s\n", a.id.c_str());
		return kOk;
	}
	auto waves = plan_waves(members, sizes, a.fraction);
	if (!waves.ok())
		return refuse(waves.status().message());
	CampaignRow c;
	c.id = a.id;
	c.nodes = list;
	c.fraction = a.fraction;
	c.min_pass = a.min_pass;
	c.boot_timeout = a.boot_timeout;
	auto r = j.create(c, waves.value(), now());
	if (!r.ok())
		return fail(r.status());
	printf("created %s %zu waves\n", a.id.c_str(), waves->size());
	return kOk;
}

int cmd_wave(Journal &j, const Args &a)
{
	auto waves = j.waves(a.id);
	auto nodes = j.nodes(a.id);
	if (!waves.ok() || !nodes.ok())
		return fail(!waves.ok() ? waves.status() : nodes.status());
	for (const auto &w : waves.value()) {
		if (w.state == "passed")
			continue;
		Json list = Json::array();
		if (!a.json)
			printf("wave %d\n", w.wave);
		for (const auto &n : nodes.value()) {
			if (n.wave != w.wave)
				continue;
			const int64_t since = n.times.count(n.state) ? n.times.at(n.state) : 0;
			if (!a.json)
				printf("%s %s %lld\n", n.node.c_str(), n.state.c_str(),
				       static_cast<long long>(since));
			list.push(Json::object()
			              .set("node", n.node)
			              .set("state", n.state)
			              .set("since", since));
		}
		if (a.json)
			printf(
			    "%s\n",
			    Json::object().set("wave", w.wave).set("nodes", list).dump().c_str());
		return kOk;
	}
	printf(a.json ? "{\"done\": true}\n" : "done\n");
	return kOk;
}

int cmd_close_wave(Journal &j, const Args &a)
{
	bool found = false;
	auto c = j.campaign(a.id, &found);
	auto nodes = j.nodes(a.id);
	if (!c.ok() || !nodes.ok())
		return fail(!c.ok() ? c.status() : nodes.status());
	int total = 0, passed = 0;
	std::string failed;
	for (const auto &n : nodes.value()) {
		if (n.wave != a.wave)
			continue;
		total++;
		if (n.state == "admitted")
			passed++;
		else
			failed += (failed.empty() ? "" : ", ") + n.node + " " +
			          (n.code.empty() ? n.state : n.code);
	}
	if (total == 0)
		return refuse(strprintf("campaign %s has no wave %d", a.id.c_str(), a.wave));
	double rate = static_cast<double>(passed) / total;
	Status st;
	if (rate + 1e-9 >= c->min_pass) {
		st = j.set_wave(a.id, a.wave, "passed", now());
		printf("wave %d passed %d/%d\n", a.wave, passed, total);
		return st.ok() ? kOk : fail(st);
	}
	std::string why =
	    strprintf("paused: wave %d pass rate %d/%d = %.2f < MinWavePassRate %.2f; "
	              "not admitted: %s; fix the node(s) and run expand again",
	              a.wave, passed, total, rate, c->min_pass, failed.c_str());
	if (!(st = j.set_wave(a.id, a.wave, "failed", now())).ok() ||
	    !(st = j.set_campaign(a.id, "paused", why, now())).ok())
		return fail(st);
	printf("%s\n", why.c_str());
	return kBelowRate;
}

int cmd_pairs(Journal &j, const Args &a)
{
	auto nodes = j.nodes(a.id);
	auto pairs = j.pairs(a.id);
	if (!nodes.ok() || !pairs.ok())
		return fail(!nodes.ok() ? nodes.status() : pairs.status());
	if (pairs->empty()) {
		std::vector<Member> admitted;
		for (const auto &n : nodes.value())
			if (n.state == "admitted")
				admitted.push_back({n.node, n.rack});
		for (const auto &p : plan_pairs(admitted)) {
			Status st = j.add_pair(a.id, p);
			if (!st.ok())
				return fail(st);
		}
		pairs = j.pairs(a.id);
		if (!pairs.ok())
			return fail(pairs.status());
	}
	for (const auto &p : pairs.value())
		if (p.result.empty())
			printf("%s %s %s %s\n", p.node.c_str(), p.rack.c_str(), p.peer.c_str(),
			       p.peer_rack.c_str());
	return kOk;
}

// The application layer's smoke jobs: one per rack with admitted nodes,
// planned once. Prints "RACK NODES JOB RESULT" ('-' for none) for each rack
// whose smoke job has not passed.
int cmd_smoke(Journal &j, const Args &a)
{
	auto nodes = j.nodes(a.id);
	auto smokes = j.smokes(a.id);
	if (!nodes.ok() || !smokes.ok())
		return fail(!nodes.ok() ? nodes.status() : smokes.status());
	if (smokes->empty()) {
		std::map<std::string, std::vector<std::string>> by_rack;
		for (const auto &n : nodes.value())
			if (n.state == "admitted")
				by_rack[n.rack].push_back(n.node);
		for (const auto &[rack, list] : by_rack) {
			Status st = j.add_smoke(a.id, rack, hostlist_compress(list));
			if (!st.ok())
				return fail(st);
		}
		smokes = j.smokes(a.id);
		if (!smokes.ok())
			return fail(smokes.status());
	}
	for (const auto &s : smokes.value())
		if (s.result != "pass")
			printf("%s %s %s %s\n", s.rack.c_str(), s.nodes.c_str(),
			       dash_or(s.job).c_str(), dash_or(s.result).c_str());
	return kOk;
}

// Exit 0 when every rack's smoke job passed; else pauses the campaign with
// the failures and exits 3.
int cmd_smoke_close(Journal &j, const Args &a)
{
	auto smokes = j.smokes(a.id);
	if (!smokes.ok())
		return fail(smokes.status());
	std::string failed;
	for (const auto &s : smokes.value())
		if (s.result != "pass")
			failed += (failed.empty() ? "" : "; ") + s.rack + " (job " +
			          dash_or(s.job) + ": " +
			          (s.detail.empty() ? dash_or(s.result) : s.detail) + ")";
	if (failed.empty())
		return kOk;
	std::string why = "paused: application smoke job failed on rack " + failed +
	                  "; fix it and run expand again";
	Status st = j.set_campaign(a.id, "paused", why, now());
	if (!st.ok())
		return fail(st);
	printf("%s\n", why.c_str());
	return kBelowRate;
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

Facts gather_facts(const Args &a, const Config &cfg)
{
	Facts f;
	f.cfg = &cfg;
	std::map<std::string, std::string> leaf_of;
	load_racks(a, cfg, &leaf_of, &f.sizes); // optional here: caps shown when readable
	f.base.feature = cfg.str("AdmittedFeature");
	if (!a.slurm_state.empty()) {
		auto t = read_file(a.slurm_state);
		if (t.ok()) {
			f.base.have_slurm = true;
			f.base.slurm = parse_sinfo(t.value());
		}
	}
	if (!a.slurm_topology.empty()) {
		auto t = read_file(a.slurm_topology);
		if (t.ok()) {
			f.base.have_topology = true;
			f.base.leaves = parse_live_topology(t.value());
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

Json campaign_report(Journal &j, const CampaignRow &c, const Args &a, const Facts &facts)
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
	int64_t t = now();
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

void print_text(const Json &r)
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
void print_report(const Json &r)
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

int cmd_status(Journal &j, const Args &a, const Config &cfg)
{
	std::vector<CampaignRow> list;
	if (!a.id.empty()) {
		bool found = false;
		auto c = j.campaign(a.id, &found);
		if (!c.ok())
			return fail(c.status());
		if (!found)
			return refuse("no campaign '" + a.id + "'");
		list.push_back(c.value());
	} else {
		auto all = j.campaigns();
		if (!all.ok())
			return fail(all.status());
		list = all.value();
	}
	Facts facts = gather_facts(a, cfg);
	Json out = Json::array();
	for (const auto &c : list)
		out.push(campaign_report(j, c, a, facts));
	if (a.json) {
		Json root = Json::object();
		root.set("campaigns", out);
		printf("%s\n", root.dump(true).c_str());
	} else {
		if (list.empty())
			printf("no expansion campaigns\n");
		size_t i;
		json_t *x;
		json_array_foreach(out.get(), i, x)
		{
			if (a.cmd == "report")
				print_report(Json::adopt(json_incref(x)));
			else
				print_text(Json::adopt(json_incref(x)));
		}
	}
	return kOk;
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

int cmd_simulate(int argc, char **argv)
{
	SimParams p;
	bool json = false;
	for (int i = 0; i < argc; i++) {
		std::string o = argv[i];
		if (o == "-h" || o == "--help") {
			printf("usage: onrampctl simulate --nodes N --racks R [--wave-fraction F] "
			       "[--min-pass-rate R]\n"
			       "         [--reboot-minutes DIST] [--test-minutes DIST] "
			       "[--failure-rate P]\n"
			       "         [--boot-timeout S] [--fix-minutes M] [--seed S] [--json]\n"
			       "DIST: C | const(C) | normal(MEAN,SD) | uniform(A,B), in minutes\n");
			return kOk;
		}
		if (o == "--json") {
			json = true;
			continue;
		}
		if (i + 1 >= argc)
			return refuse(o + " needs a value");
		std::string v = argv[++i];
		auto num = parse_number(v);
		const bool isnum = num.ok();
		const double d = isnum ? num.value() : 0;
		auto integer = [&](int *x) -> bool {
			auto n = parse_int(v, 0, 100000000);
			if (n.ok())
				*x = static_cast<int>(n.value());
			return n.ok();
		};
		bool ok = true;
		if (o == "--nodes")
			ok = integer(&p.nodes);
		else if (o == "--racks")
			ok = integer(&p.racks);
		else if (o == "--wave-fraction" || o == "--fraction")
			ok = isnum, p.fraction = d;
		else if (o == "--min-pass-rate" || o == "--min-pass")
			ok = isnum, p.min_pass = d;
		else if (o == "--failure-rate")
			ok = isnum, p.failure_rate = d;
		else if (o == "--boot-timeout")
			ok = isnum && d > 0, p.boot_timeout = d / 60;
		else if (o == "--fix-minutes")
			ok = isnum && d >= 0, p.fix_minutes = d;
		else if (o == "--seed") {
			auto n = parse_int(v, 0);
			ok = n.ok();
			p.seed = n.ok() ? static_cast<uint64_t>(n.value()) : 0;
		} else if (o == "--reboot-minutes" || o == "--test-minutes") {
			auto dist = parse_dist(v, o.c_str(), o == "--reboot-minutes");
			if (!dist.ok())
				return refuse(dist.status().message());
			(o == "--reboot-minutes" ? p.reboot : p.test) = dist.value();
		} else
			return refuse("simulate: unknown option '" + o + "'");
		if (!ok)
			return refuse(o + ": bad value '" + v + "'");
	}
	if (p.nodes == 0 || p.racks == 0)
		return refuse("simulate: --nodes and --racks are required (positive integers)");
	auto r = simulate(p);
	if (!r.ok())
		return refuse(r.status().message());
	const SimResult &s = r.value();
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
	return s.stopped ? kBelowRate : kOk;
}

int usage(FILE *f)
{
	fprintf(f, "usage: onramp-campaign [--conf F] [--db F] [--topology F] "
	           "plan|wave|node|open-wave|close-wave|pairs|pair-result|smoke|smoke-result|"
	           "smoke-close|finish|status|report --id ID ...\n"
	           "       onramp-campaign simulate --nodes N --racks R ... (simulate --help)\n"
	           "see the comment at the top of contrib/tools/onramp-campaign.cpp\n");
	return f == stdout ? kOk : kRefused;
}

} // namespace

int main(int argc, char **argv)
{
	log_set_program("onramp-campaign");
	if (argc > 1 && strcmp(argv[1], "simulate") == 0)
		return cmd_simulate(argc - 2, argv + 2);
	Args a;
	a.conf = default_conf_path();
	for (int i = 1; i < argc; i++) {
		std::string o = argv[i];
		auto val = [&]() -> std::string {
			if (i + 1 >= argc) {
				log_error("%s needs a value", o.c_str());
				exit(kRefused);
			}
			return argv[++i];
		};
		// Strict numbers: "--wave 1.9" or "--budget 12abc" are refused, never
		// truncated to another number.
		auto num = [&](double *d) {
			auto r = parse_number(val());
			if (!r.ok()) {
				log_error("%s: %s", o.c_str(), r.status().message().c_str());
				exit(kRefused);
			}
			*d = r.value();
		};
		auto integer = [&](int64_t lo, int64_t hi) -> int64_t {
			auto r = parse_int(val(), lo, hi);
			if (!r.ok()) {
				log_error("%s: %s", o.c_str(), r.status().message().c_str());
				exit(kRefused);
			}
			return r.value();
		};
		if (o == "--conf")
			a.conf = val();
		else if (o == "--db")
			a.db = val();
		else if (o == "--topology")
			a.topology = val();
		else if (o == "--id")
			a.id = val();
		else if (o == "--nodes")
			a.nodes = val();
		else if (o == "--node")
			a.node = val();
		else if (o == "--state")
			a.state = val();
		else if (o == "--code")
			a.code = val();
		else if (o == "--detail")
			a.detail = val();
		else if (o == "--peer")
			a.peer = val();
		else if (o == "--result")
			a.result = val();
		else if (o == "--slurm-state")
			a.slurm_state = val();
		else if (o == "--slurm-topology")
			a.slurm_topology = val();
		else if (o == "--exporter")
			a.exporter = val();
		else if (o == "--rack")
			a.rack = val();
		else if (o == "--job")
			a.job = val();
		else if (o == "--fraction")
			num(&a.fraction);
		else if (o == "--min-pass")
			num(&a.min_pass);
		else if (o == "--boot-timeout")
			a.boot_timeout = integer(INT64_MIN, INT64_MAX);
		else if (o == "--budget")
			a.budget = integer(INT64_MIN, INT64_MAX);
		else if (o == "--wave")
			a.wave = static_cast<int>(integer(0, INT32_MAX));
		else if (o == "--json")
			a.json = true;
		else if (o == "-h" || o == "--help")
			return usage(stdout);
		else if (!o.empty() && o[0] == '-')
			return refuse("unknown option '" + o + "'");
		else if (a.cmd.empty())
			a.cmd = o;
		else
			return refuse("unexpected argument '" + o + "'");
	}
	if (a.cmd.empty())
		return usage(stderr);
	if (a.id.empty() && a.cmd != "status" && a.cmd != "report")
		return refuse(a.cmd + ": --id is required");
	auto cfg = Config::load(a.conf);
	if (!cfg.ok())
		return fail(cfg.status());
	if (a.fraction < 0)
		a.fraction = cfg->number("MaxWaveFraction");
	if (a.min_pass < 0)
		a.min_pass = cfg->number("MinWavePassRate");
	if (a.db.empty()) {
		std::string dir = cfg->str("StateDir");
		Status st = make_dirs(dir, 0755);
		if (!st.ok())
			return fail(st);
		a.db = dir + "/onramp.db";
	}
	auto jr = Journal::open(a.db);
	if (!jr.ok())
		return fail(jr.status());
	Journal &j = *jr.value();
	Status st;
	if (a.cmd == "plan")
		return cmd_plan(j, a, cfg.value());
	if (a.cmd == "wave")
		return cmd_wave(j, a);
	if (a.cmd == "node") {
		if (a.node.empty() || a.state.empty())
			return refuse("node: --node and --state are required");
		st = j.set_node(a.id, a.node, a.state, a.code, a.detail, now());
	} else if (a.cmd == "open-wave") {
		st = j.set_wave(a.id, a.wave, "open", now());
	} else if (a.cmd == "close-wave") {
		return cmd_close_wave(j, a);
	} else if (a.cmd == "pairs") {
		return cmd_pairs(j, a);
	} else if (a.cmd == "pair-result") {
		if (a.result != "pass" && a.result != "fail" && a.result != "inconclusive")
			return refuse("pair-result: --result must be pass, fail or inconclusive");
		st = j.set_pair(a.id, a.node, a.peer, a.result, a.detail, now());
	} else if (a.cmd == "smoke") {
		return cmd_smoke(j, a);
	} else if (a.cmd == "smoke-result") {
		if (a.rack.empty() ||
		    (a.result != "running" && a.result != "pass" && a.result != "fail"))
			return refuse(
			    "smoke-result: --rack and --result running|pass|fail are required");
		st = j.set_smoke(a.id, a.rack, a.job, a.result, a.detail, now());
	} else if (a.cmd == "smoke-close") {
		return cmd_smoke_close(j, a);
	} else if (a.cmd == "finish") {
		st = j.set_campaign(a.id, "done", a.detail.empty() ? "done" : a.detail, now());
	} else if (a.cmd == "status" || a.cmd == "report") {
		return cmd_status(j, a, cfg.value());
	} else {
		return refuse("unknown command '" + a.cmd + "'");
	}
	return st.ok() ? kOk : fail(st);
}
