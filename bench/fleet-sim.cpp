// fleet-sim: the simulated fleet behind bench/fleet-diagnose (no Slurm).
//
//   fleet-sim generate --dir D [--leaves L] [--nodes-per-leaf N] [--spines S]
//                      [--seed X] [--node-faults F] [--uplink-faults F]
//                      [--spine-faults F] [--noise SD] [--budget B]
//     writes D/topology.conf, D/fabric.json, D/onramp.conf, D/pairs.json (the
//     probe plan measured: 48 GB/s x (1 + noise) x the factor of every faulty
//     component on the pair's path) and D/truth.json (the planted faults:
//     round(F x count) of each kind, at least one, at random).
//   fleet-sim score --dir D DIAGNOSIS.json
//     precision and recall of the diagnosis against D/truth.json, per kind
//     and in all; healthy nodes blamed. One JSON line.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "atomic_file.hpp"
#include "fleet/probe.hpp"
#include "json.hpp"
#include "log.hpp"

using namespace onramp;
using namespace onramp::fleet;

namespace {

struct Opts {
	std::string dir;
	int leaves = 50, per_leaf = 40, spines = 16;
	unsigned seed = 42;
	double node_faults = 0.03, uplink_faults = 0.04, spine_faults = 0.0625, noise = 0.02;
	long budget = 0;
};

int generate(const Opts &o)
{
	std::mt19937_64 rng(o.seed);
	std::uniform_real_distribution<double> u(0, 1);
	std::normal_distribution<double> noise(0, o.noise);
	FabricView v;
	std::string topo = "# fleet-sim: " + std::to_string(o.leaves * o.per_leaf) + " nodes\n";
	Json uplinks = Json::array(), spines = Json::array();
	std::vector<std::string> sp;
	for (int s = 1; s <= o.spines; s++) {
		sp.push_back(strprintf("spine%d", s));
		spines.push(sp.back());
	}
	for (int l = 1; l <= o.leaves; l++) {
		std::string leaf = strprintf("leaf%d", l);
		std::vector<std::string> nodes;
		for (int i = 1; i <= o.per_leaf; i++)
			nodes.push_back(strprintf("n%05d", (l - 1) * o.per_leaf + i));
		v.add_leaf(leaf, nodes, sp);
		topo += strprintf("SwitchName=%s Nodes=n[%05d-%05d]\n", leaf.c_str(),
		                  (l - 1) * o.per_leaf + 1, l * o.per_leaf);
		for (const auto &s : sp) {
			Json up = Json::object();
			up.set("leaf", leaf)
			    .set("spine", s)
			    .set("links", 4)
			    .set("speed_gbps", 400.0);
			uplinks.push(up);
		}
	}
	for (const auto &s : sp)
		topo += strprintf("SwitchName=%s Switches=leaf[1-%d]\n", s.c_str(), o.leaves);
	// Plant faults: exactly round(fraction x count) components of each kind
	// (at least one when the fraction is not 0), chosen at random, each
	// slowed by a factor drawn for it (fail-slow, not dead).
	std::map<std::string, double> factor; // "node:n00001" -> 0.8
	Json truth = Json::array();
	auto plant = [&](const char *kind, std::vector<std::string> names, double fraction,
	                 double lo, double hi) {
		size_t k =
		    static_cast<size_t>(std::lround(fraction * static_cast<double>(names.size())));
		if (fraction > 0 && k == 0)
			k = 1;
		std::shuffle(names.begin(), names.end(), rng);
		for (size_t i = 0; i < k && i < names.size(); i++) {
			double f = lo + (hi - lo) * u(rng);
			factor[std::string(kind) + ":" + names[i]] = f;
			Json t = Json::object();
			t.set("kind", kind).set("name", names[i]).set("factor", f);
			truth.push(t);
		}
	};
	std::vector<std::string> all_nodes;
	for (const auto &l : v.leaves())
		for (const auto &n : v.nodes_of(l))
			all_nodes.push_back(n);
	plant("node", all_nodes, o.node_faults, 0.70, 0.92);
	plant("uplink", v.leaves(), o.uplink_faults, 0.50, 0.85);
	plant("spine", sp, o.spine_faults, 0.50, 0.85);
	auto f = [&](const char *kind, const std::string &name) {
		auto it = factor.find(std::string(kind) + ":" + name);
		return it == factor.end() ? 1.0 : it->second;
	};
	ProbePlan plan = plan_probes(v, {}, static_cast<size_t>(o.budget));
	Json pairs = Json::array();
	for (const auto &[a, b] : plan.pairs) {
		double bw = 48.0 * (1 + noise(rng)) * f("node", a) * f("node", b);
		std::string s = v.route(a, b);
		if (!s.empty())
			bw *= f("spine", s) * f("uplink", v.leaf_of(a)) * f("uplink", v.leaf_of(b));
		Json p = Json::object();
		p.set("a", a).set("b", b).set("busbw_gbs", bw);
		pairs.push(p);
	}
	Json fabric = Json::object();
	fabric.set("spines", spines).set("uplinks", uplinks);
	Json meta = Json::object();
	meta.set("nodes", static_cast<int64_t>(o.leaves * o.per_leaf));
	meta.set("probe_pairs", static_cast<int64_t>(plan.pairs.size()));
	meta.set("all_pairs", static_cast<int64_t>(plan.all_pairs));
	meta.set("faults", truth);
	std::string conf = "StateDir=" + o.dir + "/state\nFabricFile=" + o.dir + "/fabric.json\n";
	for (const auto &[name, text] :
	     std::vector<std::pair<std::string, std::string>>{{"topology.conf", topo},
	                                                      {"fabric.json", fabric.dump(true)},
	                                                      {"onramp.conf", conf},
	                                                      {"pairs.json", pairs.dump()},
	                                                      {"truth.json", meta.dump(true)}}) {
		Status st = write_file_atomic(o.dir + "/" + name, text + "\n");
		if (!st.ok()) {
			fprintf(stderr, "fleet-sim: %s\n", st.message().c_str());
			return 2;
		}
	}
	return 0;
}

int score(const Opts &o, const std::string &diag_path)
{
	auto truth = json_load_file(o.dir + "/truth.json");
	auto diag = json_load_file(diag_path);
	if (!truth.ok() || !diag.ok()) {
		fprintf(stderr, "fleet-sim: %s\n",
		        (!truth.ok() ? truth.status() : diag.status()).message().c_str());
		return 2;
	}
	std::set<std::string> planted, blamed;
	size_t i;
	const json_t *t;
	json_array_foreach(json_object_get(truth->get(), "faults"), i, t)
	    planted.insert(std::string(json_string_value(json_object_get(t, "kind"))) + ":" +
	                   json_string_value(json_object_get(t, "name")));
	json_array_foreach(json_object_get(diag->get(), "suspects"), i, t)
	    blamed.insert(std::string(json_string_value(json_object_get(t, "kind"))) + ":" +
	                  json_string_value(json_object_get(t, "name")));
	Json out = Json::object();
	size_t hit = 0, healthy_nodes = 0;
	for (const auto &b : blamed) {
		hit += planted.count(b);
		healthy_nodes += !planted.count(b) && b.rfind("node:", 0) == 0;
	}
	for (const char *kind : {"node", "uplink", "spine"}) {
		size_t p = 0, b = 0, h = 0;
		std::string pre = std::string(kind) + ":";
		for (const auto &x : planted)
			p += x.rfind(pre, 0) == 0;
		for (const auto &x : blamed)
			if (x.rfind(pre, 0) == 0) {
				b++;
				h += planted.count(x);
			}
		Json k = Json::object();
		k.set("planted", static_cast<int64_t>(p)).set("blamed", static_cast<int64_t>(b));
		k.set("correct", static_cast<int64_t>(h));
		out.set(kind, k);
	}
	out.set("precision", blamed.empty() ? 1.0 : double(hit) / double(blamed.size()));
	out.set("recall", planted.empty() ? 1.0 : double(hit) / double(planted.size()));
	out.set("healthy_nodes_blamed", static_cast<int64_t>(healthy_nodes));
	out.set("blamed_other", static_cast<int64_t>(blamed.size() - hit));
	printf("%s\n", out.dump().c_str());
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2)
		return fprintf(stderr, "usage: fleet-sim generate|score --dir D ...\n"), 2;
	std::string mode = argv[1], diag;
	Opts o;
	for (int i = 2; i < argc; i++) {
		std::string a = argv[i];
		auto next = [&]() -> const char * { return i + 1 < argc ? argv[++i] : ""; };
		if (a == "--dir")
			o.dir = next();
		else if (a == "--leaves")
			o.leaves = atoi(next());
		else if (a == "--nodes-per-leaf")
			o.per_leaf = atoi(next());
		else if (a == "--spines")
			o.spines = atoi(next());
		else if (a == "--seed")
			o.seed = static_cast<unsigned>(strtoul(next(), nullptr, 10));
		else if (a == "--node-faults")
			o.node_faults = atof(next());
		else if (a == "--uplink-faults")
			o.uplink_faults = atof(next());
		else if (a == "--spine-faults")
			o.spine_faults = atof(next());
		else if (a == "--noise")
			o.noise = atof(next());
		else if (a == "--budget")
			o.budget = atol(next());
		else if (mode == "score" && diag.empty())
			diag = a;
		else
			return fprintf(stderr, "fleet-sim: unknown argument '%s'\n", a.c_str()), 2;
	}
	if (o.dir.empty() || o.leaves < 2 || o.per_leaf < 2 || o.spines < 1)
		return fprintf(stderr, "fleet-sim: --dir, >= 2 leaves of >= 2 nodes, >= 1 spine\n"),
		       2;
	if (mode == "generate")
		return generate(o);
	if (mode == "score" && !diag.empty())
		return score(o, diag);
	return fprintf(stderr, "usage: fleet-sim generate|score --dir D ...\n"), 2;
}
