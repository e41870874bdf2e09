#include "fleet/localise.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "fleet/robust.hpp"
#include "hostlist.hpp"
#include "log.hpp"

namespace onramp {
namespace fleet {

namespace {
const std::vector<std::string> kNone;
const std::string kNoLeaf;
} // namespace

uint64_t fnv1a64(const std::string &s)
{
	uint64_t h = 1469598103934665603ull;
	for (unsigned char c : s) {
		h ^= c;
		h *= 1099511628211ull;
	}
	return h;
}

Result<FabricView> FabricView::from(const TopologyConf &topo, const Fabric *fabric)
{
	auto names = topology_node_names(topo);
	if (!names.ok())
		return names.status();
	auto table = build_switch_table(topo, names.value());
	if (!table.ok())
		return table.status();
	FabricView v;
	std::map<std::string, std::vector<std::string>> parents;
	for (const auto &s : table->sw)
		for (uint16_t c : s.children)
			if (table->sw[c].level == 0)
				parents[table->sw[c].name].push_back(s.name);
	for (const auto &s : table->sw) {
		if (s.level != 0)
			continue;
		std::vector<std::string> nodes;
		for (int k : s.node_index)
			nodes.push_back(names.value()[static_cast<size_t>(k)]);
		std::vector<std::string> spines;
		if (fabric)
			for (const Uplink *u : fabric->of_leaf(s.name))
				spines.push_back(u->spine);
		else
			spines = parents[s.name];
		v.add_leaf(s.name, nodes, spines);
	}
	return v;
}

void FabricView::add_leaf(const std::string &leaf, const std::vector<std::string> &nodes,
                          const std::vector<std::string> &spines)
{
	if (!nodes_.count(leaf))
		leaves_.push_back(leaf);
	for (const auto &n : nodes) {
		leaf_[n] = leaf;
		nodes_[leaf].push_back(n);
	}
	auto &s = spines_[leaf];
	s.insert(s.end(), spines.begin(), spines.end());
	std::sort(s.begin(), s.end());
	s.erase(std::unique(s.begin(), s.end()), s.end());
}

const std::string &FabricView::leaf_of(const std::string &node) const
{
	auto it = leaf_.find(node);
	return it == leaf_.end() ? kNoLeaf : it->second;
}

const std::vector<std::string> &FabricView::nodes_of(const std::string &leaf) const
{
	auto it = nodes_.find(leaf);
	return it == nodes_.end() ? kNone : it->second;
}

const std::vector<std::string> &FabricView::spines_of(const std::string &leaf) const
{
	auto it = spines_.find(leaf);
	return it == spines_.end() ? kNone : it->second;
}

std::vector<std::string> FabricView::common_spines(const std::string &l1,
                                                   const std::string &l2) const
{
	const auto &a = spines_of(l1), &b = spines_of(l2);
	std::vector<std::string> out;
	std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
	return out;
}

std::string FabricView::route(const std::string &a, const std::string &b) const
{
	const std::string &la = leaf_of(a), &lb = leaf_of(b);
	if (la.empty() || lb.empty() || la == lb)
		return "";
	auto common = common_spines(la, lb);
	if (common.empty())
		return "";
	std::string key = std::min(a, b) + "|" + std::max(a, b);
	return common[fnv1a64(key) % common.size()];
}

std::vector<std::string> FabricView::spines() const
{
	std::set<std::string> s;
	for (const auto &[leaf, sp] : spines_)
		s.insert(sp.begin(), sp.end());
	return {s.begin(), s.end()};
}

Result<std::unique_ptr<FabricModel>> load_fabric_model(const Config &cfg,
                                                       const std::string &topo_path)
{
	std::unique_ptr<FabricModel> m(new FabricModel);
	auto topo = topology_load(topo_path);
	if (!topo.ok())
		return topo.status();
	m->topo = std::move(topo.value());
	if (cfg.is_set("FabricFile")) {
		auto f = fabric_load(cfg.str("FabricFile"), m->topo);
		if (!f.ok())
			return f.status();
		m->fabric.reset(new Fabric(std::move(f.value())));
	}
	auto v = FabricView::from(m->topo, m->fabric.get());
	if (!v.ok())
		return v.status();
	m->view = std::move(v.value());
	return m;
}

const char *kind_name(Kind k)
{
	switch (k) {
	case Kind::Node:
		return "node";
	case Kind::Uplink:
		return "uplink";
	case Kind::Link:
		return "link";
	case Kind::Spine:
		return "spine";
	}
	return "?";
}

namespace {

struct Comp {
	Kind kind;
	std::string name;
};

// The component paths of the pairs, deduplicated per unordered pair (the
// median of repeated measurements).
struct Model {
	std::vector<Comp> comps;
	std::map<std::string, int> index;
	std::vector<PairResult> pairs;
	std::vector<std::vector<int>> path;

	int id(Kind k, const std::string &name)
	{
		std::string key = std::string(kind_name(k)) + ":" + name;
		auto it = index.find(key);
		if (it != index.end())
			return it->second;
		comps.push_back({k, name});
		index[key] = static_cast<int>(comps.size() - 1);
		return static_cast<int>(comps.size() - 1);
	}
};

Model build(const std::vector<PairResult> &in, const FabricView &view)
{
	std::map<std::pair<std::string, std::string>, std::vector<double>> seen;
	for (const auto &p : in) {
		// No number is no evidence: neither slow (it would blame a healthy
		// link as 0 GB/s) nor fast.
		if (p.a == p.b || !std::isfinite(p.busbw_gbs))
			continue;
		seen[{std::min(p.a, p.b), std::max(p.a, p.b)}].push_back(p.busbw_gbs);
	}
	Model m;
	for (const auto &[ab, bws] : seen) {
		const auto &[a, b] = ab;
		m.pairs.push_back({a, b, median(bws)});
		std::vector<int> path = {m.id(Kind::Node, a), m.id(Kind::Node, b)};
		std::string spine = view.route(a, b);
		if (!spine.empty()) {
			for (const std::string *l : {&view.leaf_of(a), &view.leaf_of(b)}) {
				path.push_back(m.id(Kind::Uplink, *l));
				path.push_back(m.id(Kind::Link, *l + "/" + spine));
			}
			path.push_back(m.id(Kind::Spine, spine));
		}
		m.path.push_back(path);
	}
	return m;
}

// Link components outrank nodes on ties: a node is never blamed for what a
// link explains as well.
int rank_of(Kind k)
{
	return k == Kind::Node ? 0 : k == Kind::Link ? 1 : k == Kind::Uplink ? 2 : 3;
}

// An uplink component and a link of the same leaf.
bool same_leaf_links(const Comp &x, const Comp &y)
{
	if (x.kind == Kind::Link && y.kind == Kind::Uplink)
		return x.name.rfind(y.name + "/", 0) == 0;
	if (y.kind == Kind::Link && x.kind == Kind::Uplink)
		return y.name.rfind(x.name + "/", 0) == 0;
	return false;
}

} // namespace

Diagnosis localise(const std::vector<PairResult> &pairs, const FabricView &view,
                   const LocaliseOptions &opt)
{
	Diagnosis d;
	d.view = &view;
	Model m = build(pairs, view);
	d.pairs = m.pairs.size();
	d.good_gbs = opt.good_gbs;
	if (d.good_gbs <= 0) {
		std::vector<double> all;
		for (const auto &p : m.pairs)
			all.push_back(p.busbw_gbs);
		d.good_gbs = all.empty() ? 0 : median(all) * (1 - opt.margin);
	}
	size_t n = m.pairs.size(), nc = m.comps.size();
	std::vector<char> slow(n), explained(n, 0), blamed(nc, 0);
	for (size_t i = 0; i < n; i++) {
		slow[i] = !(m.pairs[i].busbw_gbs >= d.good_gbs);
		d.slow += slow[i];
	}
	for (;;) {
		std::vector<size_t> su(nc, 0), fast(nc, 0);
		for (size_t i = 0; i < n; i++)
			for (int c : m.path[i]) {
				if (!slow[i])
					fast[c]++;
				else if (!explained[i])
					su[c]++;
			}
		auto candidate = [&](size_t c) {
			return !blamed[c] && su[c] >= opt.min_evidence &&
			       su[c] >= kMinSlowRatio * static_cast<double>(su[c] + fast[c]);
		};
		int best = -1;
		for (size_t c = 0; c < nc; c++) {
			if (!candidate(c))
				continue;
			if (best < 0 || su[c] > su[best] ||
			    (su[c] == su[best] &&
			     rank_of(m.comps[c].kind) > rank_of(m.comps[best].kind)))
				best = static_cast<int>(c);
		}
		if (best < 0)
			break;
		blamed[best] = 1;
		Suspect s;
		s.kind = m.comps[best].kind;
		s.name = m.comps[best].name;
		s.slow = su[best];
		s.fast = fast[best];
		std::vector<size_t> mine;
		for (size_t i = 0; i < n; i++)
			if (slow[i] && !explained[i] &&
			    std::count(m.path[i].begin(), m.path[i].end(), best)) {
				mine.push_back(i);
				s.evidence.push_back(m.pairs[i]);
			}
		// Ambiguous when another candidate lies on every one of these
		// pairs: the evidence cannot tell the two apart. A leaf's uplinks
		// and one of its links are not told apart when the leaf has one
		// spine: either way the leaf's uplinks are to blame.
		bool ambiguous = false;
		for (size_t c = 0; c < nc && !ambiguous; c++) {
			if (static_cast<int>(c) == best || !candidate(c) || su[c] != su[best] ||
			    same_leaf_links(m.comps[c], m.comps[best]))
				continue;
			ambiguous = std::all_of(mine.begin(), mine.end(), [&](size_t i) {
				return std::count(m.path[i].begin(), m.path[i].end(),
				                  static_cast<int>(c)) > 0;
			});
		}
		double ratio = static_cast<double>(s.slow) / static_cast<double>(s.slow + s.fast);
		s.confidence = ratio * (1 - 1.0 / static_cast<double>(s.slow + 1));
		if (ambiguous)
			s.confidence /= 2;
		for (size_t i : mine)
			explained[i] = 1;
		d.suspects.push_back(std::move(s));
	}
	for (size_t i = 0; i < n; i++)
		if (slow[i] && !explained[i])
			d.unexplained.push_back(m.pairs[i]);
	return d;
}

bool Diagnosis::blames_node(const std::string &node) const
{
	return std::any_of(suspects.begin(), suspects.end(), [&](const Suspect &s) {
		return s.kind == Kind::Node && s.name == node;
	});
}

const Suspect *Diagnosis::explaining(const std::string &a, const std::string &b) const
{
	for (const auto &s : suspects)
		for (const auto &e : s.evidence)
			if ((e.a == a && e.b == b) || (e.a == b && e.b == a))
				return &s;
	return nullptr;
}

bool Diagnosis::clears(const std::string &node) const
{
	if (blames_node(node))
		return false;
	for (const auto &p : unexplained)
		if (p.a == node || p.b == node)
			return false;
	bool any = false;
	for (const auto &s : suspects)
		for (const auto &e : s.evidence) {
			if (e.a != node && e.b != node)
				continue;
			if (s.kind == Kind::Node || s.confidence < 0.5)
				return false;
			any = true;
		}
	return any;
}

bool cleared_independently(const std::vector<PairResult> &pairs, const FabricView &view,
                           const LocaliseOptions &opt, const std::string &node, std::string *why)
{
	Diagnosis d = localise(pairs, view, opt);
	if (!d.clears(node)) {
		*why = d.summary();
		return false;
	}
	// The node's slow pairs are what is to be explained; they cannot also
	// be the evidence. Its healthy pairs stay: they speak for its peers.
	// A pair is slow or healthy as a whole (the median of its samples, as
	// localise judged it): a fast sample from before the fault, of a pair
	// now slow, is not kept as the node's "healthy" evidence against the
	// link.
	std::set<std::pair<std::string, std::string>> slow_of_node;
	auto key = [](const PairResult &p) {
		return std::make_pair(std::min(p.a, p.b), std::max(p.a, p.b));
	};
	for (const auto &s : d.suspects)
		for (const auto &e : s.evidence)
			if (e.a == node || e.b == node)
				slow_of_node.insert(key(e));
	std::vector<PairResult> others;
	for (const auto &p : pairs)
		if ((p.a != node && p.b != node) || !slow_of_node.count(key(p)))
			others.push_back(p);
	LocaliseOptions same = opt;
	same.good_gbs = d.good_gbs;
	Diagnosis ind = localise(others, view, same);
	for (const auto &s : d.suspects) {
		bool mine =
		    std::any_of(s.evidence.begin(), s.evidence.end(),
		                [&](const PairResult &e) { return e.a == node || e.b == node; });
		if (!mine)
			continue;
		bool confirmed =
		    std::any_of(ind.suspects.begin(), ind.suspects.end(), [&](const Suspect &t) {
			    return t.kind == s.kind && t.name == s.name;
		    });
		if (!confirmed) {
			*why = strprintf("%s %s explains the node's slow pairs, but the other "
			                 "evidence alone does not blame it (%s)",
			                 kind_name(s.kind), s.name.c_str(), ind.summary().c_str());
			return false;
		}
	}
	*why = d.summary();
	return true;
}

std::string Diagnosis::summary() const
{
	if (suspects.empty())
		return unexplained.empty()
		           ? strprintf("no slow pair among %zu pairs", pairs)
		           : strprintf("nothing conclusive: %zu slow pairs of %zu, none blamed",
		                       unexplained.size(), pairs);
	std::string out;
	for (const auto &s : suspects)
		out += strprintf("%s%s %s (confidence %.2f, %zu slow / %zu fast pairs)",
		                 out.empty() ? "" : "; ", kind_name(s.kind), s.name.c_str(),
		                 s.confidence, s.slow, s.fast);
	if (!unexplained.empty())
		out += strprintf("; %zu slow pairs unexplained", unexplained.size());
	return out;
}

namespace {
Json pair_json(const PairResult &p)
{
	Json j = Json::object();
	j.set("a", p.a).set("b", p.b);
	if (std::isfinite(p.busbw_gbs))
		j.set("busbw_gbs", p.busbw_gbs);
	return j;
}
} // namespace

Json Diagnosis::to_json() const
{
	Json j = Json::object();
	j.set("pairs", static_cast<int64_t>(pairs)).set("slow", static_cast<int64_t>(slow));
	j.set("good_gbs", good_gbs).set("summary", summary());
	Json sus = Json::array();
	for (const auto &s : suspects) {
		Json o = Json::object();
		o.set("kind", kind_name(s.kind))
		    .set("name", s.name)
		    .set("confidence", s.confidence);
		o.set("slow", static_cast<int64_t>(s.slow))
		    .set("fast", static_cast<int64_t>(s.fast));
		Json ev = Json::array();
		for (const auto &e : s.evidence)
			ev.push(pair_json(e));
		o.set("evidence", ev);
		sus.push(o);
	}
	j.set("suspects", sus);
	Json un = Json::array();
	for (const auto &p : unexplained)
		un.push(pair_json(p));
	j.set("unexplained", un);
	return j;
}

} // namespace fleet
} // namespace onramp
