#include "rewire/window.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.hpp"
#include "hostlist.hpp"
#include "json.hpp"
#include "log.hpp"
#include "number.hpp"

namespace onramp {

std::vector<const Uplink *> Fabric::of_leaf(const std::string &leaf) const
{
	std::vector<const Uplink *> out;
	for (const auto &u : uplinks)
		if (u.leaf == leaf)
			out.push_back(&u);
	return out;
}

static bool is_leaf(const TopologyConf &topo, const std::string &name)
{
	int i = topo.find(name);
	return i >= 0 && !topo.switches[i].nodes.empty();
}

Result<Fabric> fabric_parse(const std::string &text, const std::string &origin,
                            const TopologyConf &topo)
{
	auto j = json_parse(text, origin);
	if (!j.ok())
		return j.status();
	JsonReader r(origin);
	Fabric f;
	f.origin = origin;
	const json_t *root = j->get();
	if (!r.expect_object(root, ""))
		return r.status();
	r.only_keys(root, "", {"spines", "uplinks"});
	f.spines = r.str_list(root, "", "spines", true);
	const json_t *ups = r.arr(root, "", "uplinks");
	if (r.failed())
		return r.status();
	std::set<std::string> spines(f.spines.begin(), f.spines.end());
	for (size_t i = 0; i < f.spines.size(); i++)
		if (std::count(f.spines.begin(), f.spines.end(), f.spines[i]) > 1)
			r.error(JsonReader::index("spines", i),
			        "spine '" + f.spines[i] + "' repeated");
	size_t i;
	const json_t *u;
	json_array_foreach(ups, i, u)
	{
		std::string p = JsonReader::index("uplinks", i);
		if (!r.expect_object(u, p))
			break;
		r.only_keys(u, p, {"leaf", "spine", "links", "speed_gbps"});
		Uplink up;
		up.leaf = r.str(u, p, "leaf");
		up.spine = r.str(u, p, "spine");
		up.links = static_cast<int>(r.integer_or(u, p, "links", 1));
		up.speed_gbps = r.num_or(u, p, "speed_gbps", 0);
		if (r.failed())
			break;
		if (!is_leaf(topo, up.leaf))
			r.error(JsonReader::join(p, "leaf"), "unknown leaf switch '" + up.leaf +
			                                         "' (not a leaf in " + topo.origin +
			                                         ")");
		else if (!spines.count(up.spine))
			r.error(JsonReader::join(p, "spine"),
			        "unknown spine '" + up.spine + "' (not listed in spines)");
		else if (up.links < 1)
			r.error(JsonReader::join(p, "links"), "must be at least 1");
		for (const auto &o : f.uplinks)
			if (o.leaf == up.leaf && o.spine == up.spine)
				r.error(p, "uplink " + up.leaf + "->" + up.spine + " repeated");
		f.uplinks.push_back(up);
	}
	if (r.failed())
		return r.status();
	return f;
}

Result<Fabric> fabric_load(const std::string &path, const TopologyConf &topo)
{
	auto text = read_file(path, 16u << 20);
	if (!text.ok())
		return text.status();
	return fabric_parse(text.value(), path, topo);
}

const char *window_state_name(WindowState s)
{
	switch (s) {
	case WindowState::Planned:
		return "planned";
	case WindowState::Active:
		return "active";
	case WindowState::Done:
		return "done";
	}
	return "?";
}

bool window_state_parse(const std::string &name, WindowState *out)
{
	for (WindowState s : {WindowState::Planned, WindowState::Active, WindowState::Done})
		if (name == window_state_name(s)) {
			*out = s;
			return true;
		}
	return false;
}

Result<time_t> parse_utc(const std::string &s)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	const char *end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end)
		return Status::Error("'" + s + "' is not a UTC time like 2026-11-29T10:00:00Z");
	return timegm(&tm);
}

std::string format_utc(time_t t)
{
	struct tm tm;
	gmtime_r(&t, &tm);
	char buf[32];
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

Status window_set_stage(Window *w, const std::string &index)
{
	auto n = parse_int(index, 0, static_cast<int64_t>(w->stages.size()) - 1);
	if (!n.ok())
		return Status::Error(
		    strprintf("stage '%s' is not an index of window %s's %zu stages", index.c_str(),
		              w->id.c_str(), w->stages.size()));
	w->stage = static_cast<int>(n.value());
	return Status::Ok();
}

std::string window_status_line(const Window &w)
{
	return strprintf("%s %s stage=%d%% leaves=%s start=%s end=%s reason=%s", w.id.c_str(),
	                 window_state_name(w.state),
	                 w.stages.empty() ? 0 : w.stages[static_cast<size_t>(w.stage)],
	                 hostlist_compress(w.leaves).c_str(), format_utc(w.start).c_str(),
	                 format_utc(w.end).c_str(), w.reason.c_str());
}

Status topology_sync_with_plan(const Config &cfg, const TopologyConf &topo, const Fabric *fabric,
                               const std::string &path)
{
	const bool has_plan = cfg.is_set("RewirePlan");
	const std::string plan_path = has_plan ? cfg.str("RewirePlan") : "";
	std::set<std::string> cut;
	Plan p;
	const Window *w = nullptr;
	if (has_plan && !(access(plan_path.c_str(), F_OK) != 0 && errno == ENOENT)) {
		auto plan = plan_load(plan_path, topo, fabric);
		if (!plan.ok())
			return plan.status();
		p = plan.value();
		w = p.active();
	}
	if (w)
		cut = window_cut(*w, topo, fabric);
	return cut.empty() ? topology_restore_admin(path)
	                   : topology_install_derived(path, cut, w->id);
}

const Window *Plan::active() const
{
	for (const auto &w : windows)
		if (w.state == WindowState::Active)
			return &w;
	return nullptr;
}

Window *Plan::find(const std::string &id)
{
	for (auto &w : windows)
		if (w.id == id)
			return &w;
	return nullptr;
}

std::set<std::string> window_cut(const Window &w, const TopologyConf &topo, const Fabric *fabric)
{
	std::set<std::string> cut(w.leaves.begin(), w.leaves.end());
	if (!fabric)
		return cut;
	std::set<std::string> touched;
	for (const auto &l : w.links)
		touched.insert(l.first);
	for (const auto &leaf : touched) {
		auto ups = fabric->of_leaf(leaf);
		bool all = !ups.empty();
		for (const auto *u : ups)
			if (std::find(w.links.begin(), w.links.end(),
			              std::make_pair(u->leaf, u->spine)) == w.links.end())
				all = false;
		if (all && is_leaf(topo, leaf))
			cut.insert(leaf);
	}
	return cut;
}

std::map<std::string, std::set<std::string>> leaf_uplinks(const TopologyConf &topo,
                                                          const Fabric *fabric)
{
	std::map<std::string, std::set<std::string>> up;
	for (const auto &s : topo.switches)
		if (!s.nodes.empty())
			up[s.name];
	if (fabric) {
		for (const auto &u : fabric->uplinks)
			up[u.leaf].insert(u.spine);
		return up;
	}
	for (const auto &s : topo.switches) {
		if (s.switches.empty())
			continue;
		auto kids = hostlist_expand(s.switches);
		if (kids.ok())
			for (const auto &k : kids.value())
				if (up.count(k))
					up[k].insert(s.name);
	}
	return up;
}

std::vector<std::string> fault_spines(const TopologyConf &topo, const Fabric *fabric)
{
	std::set<std::string> s;
	for (const auto &u : leaf_uplinks(topo, fabric))
		s.insert(u.second.begin(), u.second.end());
	return {s.begin(), s.end()};
}

std::vector<std::string> leaves_cut_by(const TopologyConf &topo, const Fabric *fabric,
                                       const std::set<std::string> &failed)
{
	std::vector<std::string> out;
	for (const auto &u : leaf_uplinks(topo, fabric)) {
		bool all = !u.second.empty() || failed.count(u.first);
		for (const auto &sp : u.second)
			all = all && failed.count(sp);
		if (failed.count(u.first) || all)
			out.push_back(u.first);
	}
	return out;
}

// Does the table still join two leaves through some switch?
static bool has_multi_leaf_path(const SwitchTable &t)
{
	for (const auto &r : t.sw) {
		if (r.level == 0)
			continue;
		int leaves = 0;
		for (uint16_t d : r.desc)
			if (t.sw[d].level == 0 && !t.sw[d].node_index.empty())
				leaves++;
		if (leaves >= 2)
			return true;
	}
	return false;
}

Status plan_validate(const Plan &plan, const TopologyConf &topo, const Fabric *fabric)
{
	const std::string &o = plan.origin;
	int active = 0;
	// Linear in the plan's length (topology/onramp validates it under
	// slurmctld's config lock, and finished windows accumulate).
	std::set<std::string> ids;
	std::vector<size_t> open; // unfinished windows, checked for overlaps below
	for (size_t i = 0; i < plan.windows.size(); i++) {
		const Window &w = plan.windows[i];
		std::string p = o + ": window '" + w.id + "'";
		if (w.id.empty())
			return Status::Error(strprintf("%s: windows[%zu]: empty id", o.c_str(), i));
		if (!ids.insert(w.id).second)
			return Status::Error(p + ": id repeated");
		if (w.end <= w.start)
			return Status::Error(p + ": end must be after start");
		if (w.leaves.empty() && w.links.empty())
			return Status::Error(p + ": names no leaf and no link under change");
		for (const auto &l : w.leaves)
			if (!is_leaf(topo, l))
				return Status::Error(p + ": leaves: unknown leaf switch '" + l +
				                     "' (not a leaf in " + topo.origin + ")");
		for (const auto &l : w.links) {
			if (!fabric)
				return Status::Error(
				    p + ": links " + l.first + "->" + l.second +
				    " need a fabric file (FabricFile in onramp.conf)");
			if (!is_leaf(topo, l.first))
				return Status::Error(p + ": links: unknown leaf switch '" +
				                     l.first + "' (not a leaf in " + topo.origin +
				                     ")");
			bool found = false;
			for (const auto *u : fabric->of_leaf(l.first))
				found |= u->spine == l.second;
			if (!found)
				return Status::Error(p + ": links: no uplink " + l.first + "->" +
				                     l.second + " in " + fabric->origin);
		}
		if (w.stages.empty() || w.stage < 0 || w.stage >= static_cast<int>(w.stages.size()))
			return Status::Error(p + ": stage out of range of stages");
		for (int s : w.stages)
			if (s < 0 || s > 100)
				return Status::Error(p + ": stages must be percentages 0..100");
		if (w.state == WindowState::Active)
			active++;
		if (w.state != WindowState::Done)
			open.push_back(i);
	}
	// Sorted by start, a window overlaps an earlier one iff it starts
	// before the latest end so far; the message names the later in the file.
	std::stable_sort(open.begin(), open.end(), [&](size_t a, size_t b) {
		return plan.windows[a].start < plan.windows[b].start;
	});
	const Window *latest = nullptr;
	size_t latest_i = 0;
	for (size_t i : open) {
		const Window &w = plan.windows[i];
		if (latest && w.start < latest->end) {
			const Window &later = i > latest_i ? w : *latest;
			const Window &x = i > latest_i ? *latest : w;
			return Status::Error(o + ": window '" + later.id + "': overlaps window '" +
			                     x.id + "' (" + format_utc(x.start) + " - " +
			                     format_utc(x.end) + ")");
		}
		if (!latest || w.end > latest->end) {
			latest = &w;
			latest_i = i;
		}
	}
	if (active > 1)
		return Status::Error(o + ": more than one window is active");
	if (const Window *w = plan.active()) {
		auto names = topology_node_names(topo);
		if (!names.ok())
			return names.status();
		auto t = build_switch_table(topo, names.value(), window_cut(*w, topo, fabric));
		if (!t.ok())
			return t.status();
		if (!has_multi_leaf_path(t.value()))
			return Status::Error(o + ": window '" + w->id +
			                     "' leaves no usable multi-leaf path (every switch "
			                     "above the leaves would be cut off)");
	}
	return Status::Ok();
}

Result<Plan> plan_parse(const std::string &text, const std::string &origin,
                        const TopologyConf &topo, const Fabric *fabric)
{
	auto j = json_parse(text, origin);
	if (!j.ok())
		return j.status();
	JsonReader r(origin);
	Plan plan;
	plan.origin = origin;
	const json_t *root = j->get();
	if (!r.expect_object(root, ""))
		return r.status();
	r.only_keys(root, "", {"windows"});
	const json_t *ws = r.arr(root, "", "windows");
	size_t i;
	const json_t *wj;
	json_array_foreach(ws, i, wj)
	{
		if (r.failed())
			break;
		std::string p = JsonReader::index("windows", i);
		if (!r.expect_object(wj, p))
			break;
		r.only_keys(wj, p,
		            {"id", "reason", "start", "end", "leaves", "links", "stages", "stage",
		             "state"});
		Window w;
		w.id = r.str(wj, p, "id");
		w.reason = r.str_or(wj, p, "reason", "");
		std::string start = r.str(wj, p, "start"), end = r.str(wj, p, "end");
		w.leaves = r.str_list(wj, p, "leaves");
		std::string state = r.str_or(wj, p, "state", "planned");
		w.stage = static_cast<int>(r.integer_or(wj, p, "stage", 0));
		if (r.failed())
			break;
		auto ts = parse_utc(start), te = parse_utc(end);
		if (!ts.ok()) {
			r.error(JsonReader::join(p, "start"), ts.status().message());
			break;
		}
		if (!te.ok()) {
			r.error(JsonReader::join(p, "end"), te.status().message());
			break;
		}
		w.start = ts.value();
		w.end = te.value();
		if (!window_state_parse(state, &w.state)) {
			r.error(JsonReader::join(p, "state"),
			        "'" + state + "' is not one of planned, active, done");
			break;
		}
		for (size_t k = 0; k < w.leaves.size(); k++)
			if (!is_leaf(topo, w.leaves[k]))
				r.error(JsonReader::index(JsonReader::join(p, "leaves"), k),
				        "unknown leaf switch '" + w.leaves[k] +
				            "' (not a leaf in " + topo.origin + ")");
		if (const json_t *ls = r.arr(wj, p, "links", false)) {
			size_t k;
			const json_t *lj;
			json_array_foreach(ls, k, lj)
			{
				std::string lp = JsonReader::index(JsonReader::join(p, "links"), k);
				if (!r.expect_object(lj, lp))
					break;
				r.only_keys(lj, lp, {"leaf", "spine"});
				w.links.emplace_back(r.str(lj, lp, "leaf"), r.str(lj, lp, "spine"));
			}
		}
		if (const json_t *ss = r.arr(wj, p, "stages", false)) {
			w.stages.clear();
			size_t k;
			const json_t *sj;
			json_array_foreach(ss, k, sj)
			{
				if (!json_is_integer(sj)) {
					r.error(JsonReader::index(JsonReader::join(p, "stages"), k),
					        "not an integer percentage");
					break;
				}
				w.stages.push_back(static_cast<int>(json_integer_value(sj)));
			}
		}
		plan.windows.push_back(std::move(w));
	}
	if (r.failed())
		return r.status();
	Status st = plan_validate(plan, topo, fabric);
	if (!st.ok())
		return st;
	return plan;
}

Result<Plan> plan_load(const std::string &path, const TopologyConf &topo, const Fabric *fabric)
{
	auto text = read_file(path, 16u << 20);
	if (!text.ok())
		return text.status();
	return plan_parse(text.value(), path, topo, fabric);
}

std::string plan_dump(const Plan &plan)
{
	Json root = Json::object();
	Json ws = Json::array();
	for (const auto &w : plan.windows) {
		Json o = Json::object();
		o.set("id", w.id);
		o.set("reason", w.reason);
		o.set("start", format_utc(w.start));
		o.set("end", format_utc(w.end));
		Json leaves = Json::array();
		for (const auto &l : w.leaves)
			leaves.push(l);
		o.set("leaves", leaves);
		Json links = Json::array();
		for (const auto &l : w.links) {
			Json lo = Json::object();
			lo.set("leaf", l.first);
			lo.set("spine", l.second);
			links.push(lo);
		}
		o.set("links", links);
		Json st = Json::array();
		for (int s : w.stages)
			st.push(Json::adopt(json_integer(s)));
		o.set("stages", st);
		o.set("stage", w.stage);
		o.set("state", window_state_name(w.state));
		ws.push(o);
	}
	root.set("windows", ws);
	return root.dump(true) + "\n";
}

Result<RewireModel> rewire_model_load(const Config &cfg, const std::string &topo_path,
                                      bool *plan_error)
{
	if (plan_error)
		*plan_error = false;
	RewireModel m;
	auto topo = topology_load(topo_path);
	if (!topo.ok())
		return topo.status();
	m.topo = std::move(topo.value());
	auto fail = [&](const Status &st) -> Result<RewireModel> {
		if (plan_error)
			*plan_error = true;
		return st;
	};
	if (cfg.is_set("FabricFile")) {
		auto f = fabric_load(cfg.str("FabricFile"), m.topo);
		if (!f.ok())
			return fail(
			    Status::Error(cfg.where("FabricFile") + ": " + f.status().message()));
		m.fabric = std::make_shared<const Fabric>(std::move(f.value()));
	}
	if (cfg.is_set("RewirePlan")) {
		const std::string path = cfg.str("RewirePlan");
		auto text = read_file(path, 16u << 20);
		// A plan that does not exist yet is an empty plan; one that
		// cannot be read (a symlink loop, a directory, a FIFO) is an error.
		struct stat sb;
		if (text.ok()) {
			auto p = plan_parse(text.value(), path, m.topo, m.fabric.get());
			if (!p.ok())
				return fail(p.status());
			m.plan = std::make_shared<const Plan>(std::move(p.value()));
		} else if (lstat(path.c_str(), &sb) == 0 || errno != ENOENT) {
			return fail(Status::Error(cfg.where("RewirePlan") + ": " +
			                          text.status().message()));
		} else {
			m.plan_missing = true;
		}
	}
	if (m.plan)
		if (const Window *w = m.plan->active()) {
			m.active_id = w->id;
			m.cut = window_cut(*w, m.topo, m.fabric.get());
		}
	return m;
}

} // namespace onramp
