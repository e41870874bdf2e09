#include "rewire/topology.hpp"

#include "config.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

#include "atomic_file.hpp"
#include "hostlist.hpp"
#include "log.hpp"

namespace onramp {

int TopologyConf::find(const std::string &name) const
{
	for (size_t i = 0; i < switches.size(); i++)
		if (switches[i].name == name)
			return static_cast<int>(i);
	return -1;
}

namespace {} // namespace

Result<TopologyConf> topology_parse(const std::string &text, const std::string &origin)
{
	TopologyConf conf;
	conf.origin = origin;
	size_t pos = 0;
	int lineno = 0;
	while (pos < text.size()) {
		// Join continuation lines; errors name the first line.
		std::string line;
		int first = lineno + 1;
		for (;;) {
			size_t nl = text.find('\n', pos);
			std::string part = text.substr(
			    pos, nl == std::string::npos ? std::string::npos : nl - pos);
			pos = nl == std::string::npos ? text.size() : nl + 1;
			lineno++;
			while (!part.empty() && part.back() == '\r')
				part.pop_back(); // as Slurm's reader strips a CRLF end
			if (!part.empty() && part.back() == '\\' && pos < text.size()) {
				part.pop_back(); // joined as Slurm's parser joins them
				line += part;
				continue;
			}
			line += part;
			break;
		}
		auto where = [&](const std::string &msg) {
			return Status::Error(
			    strprintf("%s:%d: %s", origin.c_str(), first, msg.c_str()));
		};
		// Slurm ends lines at LF only: a lone CR would make two lines here
		// and one there.
		if (line.find('\r') != std::string::npos)
			return where("a carriage return inside a line (CR-only line ends?): "
			             "slurmctld reads this file by LF line ends");
		std::vector<std::string> toks;
		Status st = tokenize_conf_line(line, toks);
		if (!st.ok())
			return where(st.message());
		if (toks.empty())
			continue;
		TopoSwitchConf sw;
		sw.line = first;
		bool have_speed = false, have_nodes = false, have_switches = false;
		for (size_t i = 0; i < toks.size(); i++) {
			size_t eq = toks[i].find('=');
			if (eq == std::string::npos || eq == 0)
				return where("'" + toks[i] + "' is not of the form Key=Value");
			std::string key = toks[i].substr(0, eq), val = toks[i].substr(eq + 1);
			if (i == 0) {
				if (strcasecmp(key.c_str(), "SwitchName"))
					return where("a line must begin with SwitchName=, not '" +
					             key + "='");
				if (val.empty())
					return where("SwitchName= is empty");
				sw.name = val;
				continue;
			}
			if (!strcasecmp(key.c_str(), "LinkSpeed") && !have_speed) {
				errno = 0;
				char *end = nullptr;
				unsigned long v = strtoul(val.c_str(), &end, 10);
				if (errno || end == val.c_str() || *end || v > 0xffffffffUL ||
				    val[0] == '-')
					return where("switch " + sw.name + ": LinkSpeed '" + val +
					             "' is not an unsigned integer");
				sw.link_speed = static_cast<uint32_t>(v);
				have_speed = true;
			} else if (!strcasecmp(key.c_str(), "Nodes") && !have_nodes) {
				sw.nodes = val;
				have_nodes = true;
			} else if (!strcasecmp(key.c_str(), "Switches") && !have_switches) {
				sw.switches = val;
				have_switches = true;
			} else if (!strcasecmp(key.c_str(), "LinkSpeed") ||
			           !strcasecmp(key.c_str(), "Nodes") ||
			           !strcasecmp(key.c_str(), "Switches")) {
				return where("switch " + sw.name + ": " + key + "= repeated");
			} else {
				return where("switch " + sw.name + ": unknown key '" + key + "'");
			}
		}
		if (!sw.nodes.empty() && !sw.switches.empty())
			return where("switch " + sw.name + " has both child switches and nodes");
		if (sw.nodes.empty() && sw.switches.empty())
			return where("switch " + sw.name + " has neither child switches nor nodes");
		conf.switches.push_back(std::move(sw));
	}
	return conf;
}

Result<TopologyConf> topology_load(const std::string &path)
{
	auto text = read_file(path, 64u << 20);
	if (!text.ok())
		return text.status();
	return topology_parse(text.value(), path);
}

namespace {

// fn(leaf, node) for every node of every leaf switch, in file order; stops at
// the first error. A bad Nodes= names the file, line and switch.
template <typename Fn> Status for_each_leaf_node(const TopologyConf &conf, Fn fn)
{
	for (const auto &s : conf.switches) {
		if (s.nodes.empty())
			continue;
		auto names = hostlist_expand(s.nodes);
		if (!names.ok())
			return Status::Error(strprintf("%s:%d: switch %s: Nodes=: %s",
			                               conf.origin.c_str(), s.line, s.name.c_str(),
			                               names.status().message().c_str()));
		for (const auto &n : names.value()) {
			Status st = fn(s, n);
			if (!st.ok())
				return st;
		}
	}
	return Status::Ok();
}

} // namespace

Result<std::vector<std::string>> topology_node_names(const TopologyConf &conf)
{
	std::vector<std::string> out;
	std::unordered_map<std::string, int> seen;
	Status st = for_each_leaf_node(conf, [&](const TopoSwitchConf &, const std::string &n) {
		if (seen.emplace(n, 1).second)
			out.push_back(n);
		return Status::Ok();
	});
	if (!st.ok())
		return st;
	return out;
}

Result<std::map<std::string, std::string>> topology_leaf_of(const TopologyConf &conf)
{
	std::map<std::string, std::string> leaf_of;
	Status st = for_each_leaf_node(conf, [&](const TopoSwitchConf &s, const std::string &n) {
		auto ins = leaf_of.emplace(n, s.name);
		if (!ins.second && ins.first->second != s.name)
			return Status::Error(
			    strprintf("%s:%d: switch %s: node %s is already under leaf switch %s",
			              conf.origin.c_str(), s.line, s.name.c_str(), n.c_str(),
			              ins.first->second.c_str()));
		return Status::Ok();
	});
	if (!st.ok())
		return st;
	return leaf_of;
}

std::string default_topology_path(const Config &cfg)
{
	return topology_admin_path(topology_path_beside(cfg.origin()));
}

std::string default_topology_path()
{
	return topology_admin_path(topology_path_beside(default_conf_path()));
}

std::string topology_saved_path(const std::string &path)
{
	return path + ".onramp-orig";
}

std::string topology_admin_path(const std::string &path)
{
	struct stat sb;
	std::string saved = topology_saved_path(path);
	return lstat(saved.c_str(), &sb) == 0 ? saved : path;
}

namespace {

std::string dir_of(const std::string &path)
{
	auto pos = path.rfind('/');
	return pos == std::string::npos ? "." : pos == 0 ? "/" : path.substr(0, pos);
}

Status errno_error(const char *what, const std::string &path)
{
	return Status::Error(strprintf("%s %s: %s", what, path.c_str(), strerror(errno)));
}

} // namespace

Status topology_install_derived(const std::string &path, const std::set<std::string> &cut,
                                const std::string &window)
{
	std::string saved = topology_saved_path(path);
	struct stat sb;
	if (lstat(saved.c_str(), &sb) != 0) {
		if (errno != ENOENT)
			return errno_error("cannot stat", saved);
		// The same inode under a second name: nothing of the admin's file
		// (owner, mode, a symlink) changes, and rename() puts it back.
		if (link(path.c_str(), saved.c_str()) != 0)
			return errno_error("cannot keep the admin's file as", saved);
		Status st = fsync_dir(dir_of(path));
		if (!st.ok())
			return st;
	}
	auto conf = topology_load(saved);
	if (!conf.ok())
		return conf.status();
	auto text = topology_derive(conf.value(), cut);
	if (!text.ok())
		return text.status();
	if (stat(saved.c_str(), &sb) != 0)
		return errno_error("cannot stat", saved);
	return write_file_atomic(
	    path,
	    "# onramp rewire window " + window + "; the admin's file is " + saved +
	        " (edit that one): it comes back when the window ends.\n" + text.value(),
	    sb.st_mode & 07777);
}

Status topology_restore_admin(const std::string &path)
{
	std::string saved = topology_saved_path(path);
	struct stat s1, s2;
	if (lstat(saved.c_str(), &s1) != 0)
		return errno == ENOENT ? Status::Ok() : errno_error("cannot stat", saved);
	// A crash between the link and the first install left both names on
	// one inode, where rename() would do nothing.
	bool same =
	    lstat(path.c_str(), &s2) == 0 && s1.st_dev == s2.st_dev && s1.st_ino == s2.st_ino;
	if (same ? unlink(saved.c_str()) != 0 : rename(saved.c_str(), path.c_str()) != 0)
		return errno_error("cannot put back the admin's file", saved);
	return fsync_dir(dir_of(path));
}

std::string topology_path_beside(const std::string &conf_path)
{
	const char *e = getenv("ONRAMP_TOPOLOGY_CONF");
	if (e && *e)
		return e;
	auto pos = conf_path.rfind('/');
	return (pos == std::string::npos ? std::string(".") : conf_path.substr(0, pos)) +
	       "/topology.conf";
}

Result<SwitchTable> build_switch_table(const TopologyConf &conf,
                                       const std::vector<std::string> &nodes,
                                       const std::set<std::string> &cut)
{
	const size_t n = conf.switches.size();
	auto where = [&](const TopoSwitchConf &s, const std::string &msg) {
		return Status::Error(
		    strprintf("%s:%d: %s", conf.origin.c_str(), s.line, msg.c_str()));
	};
	if (n == 0)
		return Status::Error(conf.origin + ": no switches configured");
	if (n > 0xfffe)
		return Status::Error(conf.origin + ": too many switches");
	std::unordered_map<std::string, int> by_name;
	for (size_t i = 0; i < n; i++)
		if (!by_name.emplace(conf.switches[i].name, static_cast<int>(i)).second)
			return where(conf.switches[i], "switch " + conf.switches[i].name +
			                                   " has already been defined");
	for (const auto &c : cut) {
		auto it = by_name.find(c);
		if (it == by_name.end() || conf.switches[it->second].nodes.empty())
			return Status::Error("cannot cut '" + c + "': not a leaf switch of " +
			                     conf.origin);
	}

	SwitchTable t;
	t.sw.resize(n);
	std::vector<std::vector<uint16_t>> all_children(n);
	bool any_leaf = false;
	for (size_t i = 0; i < n; i++) {
		const auto &s = conf.switches[i];
		auto &r = t.sw[i];
		r.name = s.name;
		r.link_speed = s.link_speed;
		r.nodes = s.nodes;
		r.switches = s.switches;
		r.level = s.nodes.empty() ? -1 : 0;
		any_leaf |= !s.nodes.empty();
		if (s.switches.empty())
			continue;
		auto kids = hostlist_expand(s.switches);
		if (!kids.ok())
			return where(s, "switch " + s.name +
			                    ": Switches=: " + kids.status().message());
		for (const auto &k : kids.value()) {
			auto it = by_name.find(k);
			if (it == by_name.end() || it->second == static_cast<int>(i))
				return where(s,
				             "switch " + s.name + " has invalid child (" + k + ")");
			all_children[i].push_back(static_cast<uint16_t>(it->second));
		}
	}
	if (!any_leaf)
		return Status::Error(conf.origin + ": switches contain no nodes");

	// Levels from the uncut tree (a window never changes a switch's level).
	for (int depth = 1;; depth++) {
		bool resolved = true;
		for (size_t i = 0; i < n; i++) {
			if (t.sw[i].level != -1)
				continue;
			int lvl = -1;
			for (uint16_t c : all_children[i]) {
				if (t.sw[c].level == -1) {
					lvl = -1;
					resolved = false;
					break;
				}
				lvl = std::max(lvl, t.sw[c].level + 1);
			}
			t.sw[i].level = lvl;
		}
		if (resolved)
			break;
		if (depth > 20)
			return Status::Error(conf.origin + ": switch configuration is not a tree");
	}

	// Children with the cut applied; parent as tree sets it.
	for (size_t i = 0; i < n; i++) {
		bool changed = false;
		std::vector<std::string> kept;
		for (uint16_t c : all_children[i]) {
			if (cut.count(t.sw[c].name)) {
				changed = true;
				continue;
			}
			t.sw[i].children.push_back(c);
			kept.push_back(t.sw[c].name);
		}
		if (changed)
			t.sw[i].switches = hostlist_compress(kept);
	}
	for (size_t i = 0; i < n; i++)
		for (uint16_t c : t.sw[i].children)
			t.sw[c].parent = static_cast<int>(i);

	// Node sets: leaves from Nodes=, others the union of their children.
	std::unordered_map<std::string, int> node_idx;
	node_idx.reserve(nodes.size() * 2);
	size_t real_nodes = 0;
	for (size_t i = 0; i < nodes.size(); i++)
		if (!nodes[i].empty()) {
			node_idx.emplace(nodes[i], static_cast<int>(i));
			real_nodes++;
		}
	std::vector<int> leaf_count(nodes.size(), 0);
	std::vector<std::string> invalid;
	for (size_t i = 0; i < n; i++) {
		const auto &s = conf.switches[i];
		if (s.nodes.empty())
			continue;
		auto names = hostlist_expand(s.nodes);
		if (!names.ok())
			return where(s, "invalid node name (" + s.nodes + ") in switch config (" +
			                    s.name + "): " + names.status().message());
		std::vector<char> in(nodes.size(), 0);
		for (const auto &nm : names.value()) {
			auto it = node_idx.find(nm);
			if (it == node_idx.end()) {
				invalid.push_back(nm);
				continue;
			}
			in[it->second] = 1;
		}
		for (size_t k = 0; k < nodes.size(); k++)
			if (in[k]) {
				t.sw[i].node_index.push_back(static_cast<int>(k));
				leaf_count[k]++;
			}
	}
	for (int lvl = 1; lvl <= 64; lvl++) {
		bool any = false;
		for (size_t i = 0; i < n; i++) {
			if (t.sw[i].level != lvl)
				continue;
			any = true;
			std::vector<char> in(nodes.size(), 0);
			for (uint16_t c : t.sw[i].children)
				for (int k : t.sw[c].node_index)
					in[k] = 1;
			for (size_t k = 0; k < nodes.size(); k++)
				if (in[k])
					t.sw[i].node_index.push_back(static_cast<int>(k));
		}
		if (!any)
			break;
	}
	for (const auto &r : t.sw)
		t.levels = std::max(t.levels, r.level);

	std::vector<std::string> lacking, multi;
	for (size_t k = 0; k < nodes.size(); k++) {
		if (nodes[k].empty())
			continue;
		if (leaf_count[k] == 0)
			lacking.push_back(nodes[k]);
		else if (leaf_count[k] > 1)
			multi.push_back(nodes[k]);
	}
	if (!lacking.empty())
		t.warnings.push_back(strprintf("switches lack access to %zu nodes: %s",
		                               lacking.size(), hostlist_compress(lacking).c_str()));
	if (!invalid.empty())
		t.warnings.push_back("Invalid hostnames in switch configuration: " +
		                     hostlist_compress(invalid));
	if (!multi.empty())
		t.warnings.push_back("Multiple leaf switches contain nodes: " +
		                     hostlist_compress(multi));
	for (const auto &r : t.sw)
		if (r.node_index.size() == real_nodes && real_nodes == nodes.size())
			t.have_root = true;

	// Distances: shortest paths over parent/child links (what tree's
	// Floyd-Warshall computes), by one BFS per switch.
	std::vector<std::vector<uint16_t>> adj(n);
	for (size_t i = 0; i < n; i++)
		for (uint16_t c : t.sw[i].children) {
			adj[i].push_back(c);
			adj[c].push_back(static_cast<uint16_t>(i));
		}
	for (size_t i = 0; i < n; i++) {
		auto &d = t.sw[i].dist;
		d.assign(n, kTopoInfinite);
		d[i] = 0;
		std::deque<uint16_t> q{static_cast<uint16_t>(i)};
		while (!q.empty()) {
			uint16_t u = q.front();
			q.pop_front();
			for (uint16_t v : adj[u])
				if (d[v] == kTopoInfinite) {
					d[v] = d[u] + 1;
					q.push_back(v);
				}
		}
	}

	// Descendants, in the order tree's _find_desc_switches produces.
	auto merge = [](std::vector<uint16_t> &a, const std::vector<uint16_t> &b) {
		size_t init = a.size();
		for (uint16_t x : b)
			if (std::find(a.begin(), a.begin() + init, x) == a.begin() + init)
				a.push_back(x);
	};
	for (int lvl = 1; lvl <= t.levels; lvl++)
		for (size_t j = 0; j < n; j++) {
			if (t.sw[j].level != lvl)
				continue;
			merge(t.sw[j].desc, t.sw[j].children);
			for (uint16_t c : t.sw[j].children)
				merge(t.sw[j].desc, t.sw[c].desc);
		}
	return t;
}

std::map<std::string, std::string> topology_leaf_nodes(const TopologyConf &conf)
{
	std::map<std::string, std::string> m;
	for (const auto &s : conf.switches)
		if (!s.nodes.empty())
			m[s.name] = s.nodes;
	return m;
}

Result<std::string> topology_derive(const TopologyConf &conf, const std::set<std::string> &cut)
{
	for (const auto &l : cut) {
		int i = conf.find(l);
		if (i < 0 || conf.switches[static_cast<size_t>(i)].nodes.empty())
			return Status::Error(conf.origin + ": cannot cut '" + l +
			                     "': not a leaf switch (one with Nodes=)");
	}
	std::string out = "# Derived by onramp from " + conf.origin + " (do not edit)";
	if (!cut.empty())
		out += strprintf(": %zu leaf switch(es) cut", cut.size());
	out += "\n";
	for (const auto &s : conf.switches) {
		out += "SwitchName=" + s.name;
		if (s.link_speed != 1)
			out += strprintf(" LinkSpeed=%u", s.link_speed);
		if (!s.nodes.empty())
			out += " Nodes=" + s.nodes;
		if (!s.switches.empty()) {
			auto kids = hostlist_expand(s.switches);
			if (!kids.ok())
				return Status::Error(strprintf(
				    "%s:%d: switch %s: Switches=: %s", conf.origin.c_str(), s.line,
				    s.name.c_str(), kids.status().message().c_str()));
			std::vector<std::string> kept;
			for (const auto &k : kids.value())
				if (!cut.count(k))
					kept.push_back(k);
			if (kept.empty())
				return Status::Error(strprintf(
				    "%s:%d: switch %s: the cut leaves every child switch it has",
				    conf.origin.c_str(), s.line, s.name.c_str()));
			out += " Switches=" +
			       (kept.size() == kids->size() ? s.switches : hostlist_compress(kept));
		}
		out += "\n";
	}
	// What tree will read must parse and build like the cut table.
	auto again = topology_parse(out, conf.origin + " (derived)");
	if (!again.ok())
		return again.status();
	auto names = topology_node_names(again.value());
	if (!names.ok())
		return names.status();
	auto table = build_switch_table(again.value(), names.value());
	if (!table.ok())
		return table.status();
	return out;
}

} // namespace onramp
