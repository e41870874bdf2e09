// The topology part of the C API (onramp.h). No exception leaves here.
#include <cstring>
#include <unistd.h>

#include "ctx.hpp"
#include "log.hpp"
#include "onramp.h"
#include "rewire/window.hpp"

struct onramp_topo {
	onramp::SwitchTable table;
	bool window = false; // built with an active rewire window
};

extern "C" onramp_topo_t *onramp_topo_build(const char *conf_path, const char *topo_path,
                                            const char *const *node_names, int node_cnt,
                                            int previous, char *msg, size_t msglen)
{
	using namespace onramp;
	copy_out("", msg, msglen);
	try {
		if (!conf_path || !topo_path) {
			copy_out("no configuration path", msg, msglen);
			return nullptr;
		}
		std::vector<std::string> nodes(node_cnt > 0 ? node_cnt : 0);
		for (int i = 0; i < node_cnt; i++)
			if (node_names && node_names[i])
				nodes[i] = node_names[i];
		// A missing onramp.conf (ENOENT, not a file that cannot be read)
		// means no window: the plain tree.
		bool have_previous = (previous & ONRAMP_TOPO_PREVIOUS) != 0;
		bool previous_window = (previous & ONRAMP_TOPO_PREVIOUS_WINDOW) != 0;
		bool plan_error = false, conf_missing = path_missing(conf_path);
		// What a refused build leaves: the table in force, or (at the first
		// build, e.g. slurmctld restarted on a bad topology.conf) none.
		const std::string kept =
		    have_previous ? "; keeping the switch table in force"
		                  : "; no switch table is in force: slurmctld schedules without "
		                    "topology until topology.conf is fixed";
		std::string note;
		Result<RewireModel> m = Status::Error("");
		auto c = conf_missing ? Config::parse("", conf_path) : Config::load(conf_path);
		if (!c.ok()) {
			plan_error = true;
			m = c.status();
		} else {
			m = rewire_model_load(c.value(), topo_path, &plan_error);
		}
		// A window in force is never dropped because its files vanished:
		// only a plan that says so (or a good onramp.conf without one) ends it.
		// Nor because onramp.conf came out empty (truncated, or one comment
		// line of a file whose line ends were not read): no key at all.
		if (m.ok() && previous_window && (conf_missing || m->plan_missing)) {
			plan_error = true;
			m = Status::Error(
			    (conf_missing ? std::string(conf_path)
			                  : c->where("RewirePlan") + ": " + c->str("RewirePlan")) +
			    ": missing while a rewire window is in force");
		} else if (m.ok() && previous_window && !c->any_set()) {
			plan_error = true;
			m = Status::Error(std::string(conf_path) +
			                  ": sets no key while a rewire window is in force");
		}
		std::set<std::string> cut;
		TopologyConf topo;
		bool window = false;
		if (!m.ok()) {
			if (!plan_error || have_previous) {
				copy_out(m.status().message() + kept, msg, msglen);
				return nullptr;
			}
			auto t = topology_load(topo_path);
			if (!t.ok()) {
				copy_out(t.status().message() + kept, msg, msglen);
				return nullptr;
			}
			topo = std::move(t.value());
			note = m.status().message() +
			       "; no previous switch table: using topology.conf without any window";
		} else {
			topo = std::move(m->topo);
			cut = m->cut;
			if (!m->active_id.empty()) {
				window = true;
				std::string leaves;
				for (const auto &c : cut)
					leaves += (leaves.empty() ? "" : ",") + c;
				note = "rewire window " + m->active_id +
				       " active: leaves cut from the spine: " +
				       (leaves.empty() ? std::string("none") : leaves);
			} else if (previous_window) {
				// A window ends only this way; say so, and why.
				note = "rewire window ended: " +
				       (c->is_set("RewirePlan")
				            ? c->where("RewirePlan") + " " + c->str("RewirePlan") +
				                  " has no active window"
				            : std::string(conf_path) + " sets no RewirePlan") +
				       "; every leaf joined to the spine again";
			}
		}
		auto t = build_switch_table(topo, nodes, cut);
		if (!t.ok()) {
			copy_out(t.status().message() + kept, msg, msglen);
			return nullptr;
		}
		for (const auto &w : t->warnings)
			log_error("topology/onramp: WARNING: %s", w.c_str());
		copy_out(note, msg, msglen);
		auto *r = new onramp_topo;
		r->table = std::move(t.value());
		r->window = window;
		return r;
	} catch (const std::exception &e) {
		copy_out(std::string("internal error: ") + e.what() +
		             "; keeping the switch table in force",
		         msg, msglen);
	} catch (...) {
		copy_out("internal error; keeping the switch table in force", msg, msglen);
	}
	return nullptr;
}

extern "C" int onramp_topo_switch_count(const onramp_topo_t *t)
{
	return t ? static_cast<int>(t->table.sw.size()) : 0;
}

extern "C" int onramp_topo_levels(const onramp_topo_t *t)
{
	return t ? t->table.levels : 0;
}

extern "C" int onramp_topo_window_active(const onramp_topo_t *t)
{
	return t && t->window;
}

extern "C" int onramp_topo_have_root(const onramp_topo_t *t)
{
	return t && t->table.have_root;
}

extern "C" int onramp_topo_get_switch(const onramp_topo_t *t, int i, onramp_topo_switch_t *out)
{
	if (!t || !out || i < 0 || i >= static_cast<int>(t->table.sw.size()))
		return -1;
	const auto &r = t->table.sw[i];
	out->name = r.name.c_str();
	out->level = r.level;
	out->link_speed = r.link_speed;
	out->nodes = r.nodes.c_str();
	out->switches = r.switches.c_str();
	out->parent = r.parent;
	out->num_children = static_cast<int>(r.children.size());
	out->children = r.children.data();
	out->num_desc = static_cast<int>(r.desc.size());
	out->desc = r.desc.data();
	out->dist = r.dist.data();
	out->num_nodes = static_cast<int>(r.node_index.size());
	out->node_index = r.node_index.data();
	return 0;
}

extern "C" void onramp_topo_free(onramp_topo_t *t)
{
	delete t;
}
