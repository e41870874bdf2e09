#include "slurm/client.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <climits>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "admin.hpp"
#include "atomic_file.hpp"
#include "hostlist.hpp"
#include "log.hpp"
#include "onramp.h"

namespace onramp {
namespace slurm {

const char *const kReasonPrefix = ONRAMP_REASON_PREFIX;

bool Job::finished() const
{
	static const char *const kEnded[] = {"COMPLETED", "FAILED",    "CANCELLED",
	                                     "TIMEOUT",   "NODE_FAIL", "PREEMPTED",
	                                     "BOOT_FAIL", "DEADLINE",  "OUT_OF_MEMORY"};
	for (const char *e : kEnded)
		if (state == e)
			return true;
	return false;
}

namespace {
std::unique_ptr<SlurmClient> &default_slot()
{
	static std::unique_ptr<SlurmClient> c;
	return c;
}
} // namespace

SlurmClient &default_client()
{
	auto &c = default_slot();
	if (!c)
		c = libslurm_client();
	return *c;
}

void set_default_ctld_budget(double s)
{
	default_slot() = libslurm_client(s, true);
}

void set_default_client(std::unique_ptr<SlurmClient> c)
{
	default_slot() = std::move(c);
}

bool retry_while_unreachable(const Backoff &b, const std::function<bool()> &attempt,
                             const char *what)
{
	if (attempt())
		return true;
	if (b.timeout_s <= 0)
		return false; // asked once: the caller reports the error
	auto sleep = b.sleep ? b.sleep : [](double s) {
		std::this_thread::sleep_for(
		    std::chrono::milliseconds(static_cast<int64_t>(s * 1000)));
	};
	log_warn("slurmctld does not answer (%s); retrying for up to %.0fs", what, b.timeout_s);
	// Really sleeping, the attempts count too (each can take libslurm's
	// own connect retries); a test's sleep stands in for the clock.
	const auto t0 = std::chrono::steady_clock::now();
	double waited = 0, wait = b.first_s;
	while (waited < b.timeout_s) {
		sleep(std::min(wait, b.timeout_s - waited));
		if (b.sleep)
			waited += wait;
		else
			waited =
			    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
			        .count();
		wait = std::min(wait * 2, b.max_s);
		if (attempt()) {
			log_info("slurmctld answers again (%s)", what);
			return true;
		}
	}
	log_error("slurmctld did not answer %s within %.0fs", what, b.timeout_s);
	return false;
}

bool is_admin(SlurmClient &c, uid_t uid)
{
	if (is_slurm_admin(uid, static_cast<uid_t>(-1)))
		return true; // root needs no round trip to slurmctld
	auto su = c.slurm_user_uid();
	if (!su.ok()) {
		log_warn("%s", su.status().message().c_str());
		return false;
	}
	return is_slurm_admin(uid, su.value());
}

Status drain_node(SlurmClient &c, const std::string &node, const std::string &reason, bool *kept)
{
	if (kept)
		*kept = false;
	if (!has_prefix(reason, kReasonPrefix))
		return Status::Error("drain reason '" + reason + "' does not start with " +
		                     kReasonPrefix);
	auto cur = c.node(node);
	if (cur.ok() && !cur.value())
		return Status::Error("unknown node " + node);
	if (cur.ok() && !cur.value()->reason.empty() &&
	    !has_prefix(cur.value()->reason, kReasonPrefix)) {
		log_info("node %s: keeping the admin's reason '%s' (not writing '%s')",
		         node.c_str(), cur.value()->reason.c_str(), reason.c_str());
		if (kept)
			*kept = true;
		return Status::Ok();
	}
	if (!cur.ok())
		log_warn("%s; draining anyway", cur.status().message().c_str());
	return c.set_drain(node, reason);
}

Status resume_node(SlurmClient &c, const std::string &node, const std::string &prefix, bool *left)
{
	if (left)
		*left = false;
	if (!has_prefix(prefix, kReasonPrefix))
		return Status::Error("reason prefix '" + prefix + "' is not onramp's");
	auto cur = c.node(node);
	if (!cur.ok())
		return cur.status();
	if (!cur.value())
		return Status::Error("unknown node " + node);
	if (!has_prefix(cur.value()->reason, prefix)) {
		log_info("node %s: reason '%s' is not %s...; left as is", node.c_str(),
		         cur.value()->reason.c_str(), prefix.c_str());
		if (left)
			*left = true;
		return Status::Ok();
	}
	return c.set_resume(node);
}

Status set_active_feature(SlurmClient &c, const std::string &node, const std::string &feature,
                          bool active)
{
	auto n = c.node(node);
	if (!n.ok())
		return n.status();
	if (!n.value())
		return Status::Error("unknown node " + node);
	const std::string &cur = n.value()->features_active;
	std::string out;
	bool present = false;
	for (size_t p = 0; p < cur.size();) {
		size_t comma = cur.find(',', p);
		std::string f =
		    cur.substr(p, comma == std::string::npos ? std::string::npos : comma - p);
		p = comma == std::string::npos ? cur.size() : comma + 1;
		if (f.empty())
			continue;
		if (f == feature) {
			present = true;
			if (!active)
				continue;
		}
		out += (out.empty() ? "" : ",") + f;
	}
	if (present == active)
		return Status::Ok();
	if (active)
		out += (out.empty() ? "" : ",") + feature;
	return c.set_features_active(node, out);
}

std::vector<std::string> split(const std::string &text, char sep)
{
	std::vector<std::string> out;
	size_t p = 0;
	for (size_t at; (at = text.find(sep, p)) != std::string::npos; p = at + 1)
		out.push_back(text.substr(p, at - p));
	out.push_back(text.substr(p));
	return out;
}

bool satisfies_term(const std::string &list, const std::string &term)
{
	std::string t;
	for (char c : term)
		if (c != '(' && c != ')')
			t += c;
	for (const auto &f : split(t, '|'))
		if (has_feature(list, f))
			return true;
	return false;
}

Result<std::vector<Switch>> parse_switch_lines(const std::string &text)
{
	std::vector<Switch> out;
	size_t lineno = 0;
	for (const auto &line : split(text, '\n')) {
		lineno++;
		if (line.find_first_not_of(" \t") == std::string::npos)
			continue;
		// Records of a partition's other topology (topology.yaml, 25.05+:
		// block, ring, torus) are not switches; any other line is named.
		std::string first = line.substr(0, line.find_first_of(" =\t"));
		if (first == "BlockName" || first == "AggregatedBlock" || first == "RingName" ||
		    first == "TorusName" || first == "Topology" || first == "TopologyName")
			continue;
		Switch s;
		bool have_level = false;
		for (const auto &word : split(line, ' ')) {
			size_t eq = word.find('=');
			if (eq == std::string::npos)
				continue;
			std::string key = word.substr(0, eq), val = word.substr(eq + 1);
			if (key == "SwitchName") {
				s.name = val;
			} else if (key == "Level") {
				char *end = nullptr;
				long l = strtol(val.c_str(), &end, 10);
				have_level = !val.empty() && *end == '\0' && l >= 0 && l < 65536;
				s.level = static_cast<int>(l);
			} else if (key == "Nodes") {
				s.nodes = val;
			} else if (key == "Switches") {
				s.switches = val;
			}
		}
		if (s.name.empty() || !have_level)
			return Status::Error(strprintf("switch table, line %zu: not a "
			                               "\"SwitchName=... Level=N\" record: '%s'",
			                               lineno, line.c_str()));
		out.push_back(s);
	}
	return out;
}

Result<std::set<std::string>> connected_leaves(const std::vector<Switch> &table)
{
	std::set<std::string> leaves, children;
	for (const auto &s : table) {
		if (s.level == 0)
			leaves.insert(s.name);
		if (s.switches.empty())
			continue;
		auto kids =
		    hostlist_expand(s.switches, "switch table: switch " + s.name + ": children");
		if (!kids.ok())
			return kids.status();
		children.insert(kids->begin(), kids->end());
	}
	std::set<std::string> out;
	for (const auto &l : leaves)
		if (children.count(l))
			out.insert(l);
	return out;
}

std::vector<std::string> sbatch_args(const BatchJob &b)
{
	std::vector<std::string> args = {"-J", b.name};
	if (!b.account.empty())
		args.insert(args.end(), {"-A", b.account});
	if (!b.reservation.empty())
		args.push_back("--reservation=" + b.reservation);
	args.insert(args.end(), b.options.begin(), b.options.end());
	args.insert(args.end(), {"-N", std::to_string(b.num_nodes)});
	if (!b.nodes.empty())
		args.insert(args.end(), {"-w", b.nodes});
	if (!b.constraint.empty())
		args.push_back("--constraint=" + b.constraint);
	if (b.time_limit_min > 0)
		args.insert(args.end(), {"-t", std::to_string(b.time_limit_min)});
	// The job's output never goes through slurmstepd's open (-o): it runs
	// as the job's user, root for root's jobs, and follows any symlink at
	// the name or its directory, which another account (SlurmUser, owner
	// of StateDir) may have planted there: root's file would be truncated
	// and written. The batch script pipes the command into a file it
	// creates itself inside the directory: entered and checked to be the
	// same path with no symlink (pwd -P), the old name removed, the new
	// one created by dd with O_EXCL|O_NOFOLLOW. Anything else there: the
	// output is dropped, never written elsewhere. The command's exit
	// status is the job's.
	std::vector<std::string> words = b.command;
	if (!b.output.empty()) {
		args.insert(args.end(), {"-o", "/dev/null"});
		std::string dir = ".", name = b.output;
		size_t slash = b.output.rfind('/');
		if (slash != std::string::npos) {
			dir = slash == 0 ? "/" : b.output.substr(0, slash);
			name = b.output.substr(slash + 1);
		}
		// Only the parent is resolved: the directory's own name stays as
		// given, so that a symlink another account put there in its place
		// (SlurmUser owns StateDir, so it can swap admit/ or expand/ for
		// one at any time) fails the script's pwd -P test instead of
		// becoming the directory root writes in.
		while (dir.size() > 1 && dir.back() == '/')
			dir.pop_back();
		size_t cut = dir.rfind('/');
		std::string parent = cut == std::string::npos ? "."
		                     : cut == 0               ? "/"
		                                              : dir.substr(0, cut);
		std::string own = cut == std::string::npos ? dir : dir.substr(cut + 1);
		char real[PATH_MAX];
		if (own == "." || own == ".." || dir == "/") {
			if (realpath(dir.c_str(), real))
				dir = real;
		} else if (realpath(parent.c_str(), real)) {
			dir = std::string(real) + (strcmp(real, "/") ? "/" : "") + own;
		}
		static const char *const script =
		    "d=$1 n=$2 j=%j x=%x; shift 2; n=${n//\"$j\"/$SLURM_JOB_ID}; "
		    "n=${n//\"$x\"/$SLURM_JOB_NAME}; "
		    "\"$@\" 2>&1 | { cd -- \"$d\" 2>/dev/null && [[ $(pwd -P) == \"$d\" && "
		    "$n != */* ]] && rm -f -- \"$n\" && dd of=\"$n\" conv=excl oflag=nofollow "
		    "status=none 2>/dev/null; cat >/dev/null; }; exit \"${PIPESTATUS[0]}\"";
		words = {"/bin/bash", "-c", script, "onramp-job", dir, name};
		words.insert(words.end(), b.command.begin(), b.command.end());
	}
	// The batch script's one line: every word single-quoted.
	std::string wrap = b.output.empty() ? "" : "exec";
	for (const auto &w : words) {
		std::string q = "'";
		for (char c : w)
			q += c == '\'' ? std::string("'\\''") : std::string(1, c);
		wrap += (wrap.empty() ? "" : " ") + q + "'";
	}
	args.insert(args.end(), {"--wrap", wrap});
	return args;
}

Result<NodeSet> expand_nodes(const std::string &expr)
{
	auto hosts = hostlist_expand(expr);
	if (!hosts.ok())
		return Status::Error("bad hostlist '" + expr + "': " + hosts.status().message());
	NodeSet out;
	std::set<std::string> seen;
	for (auto &h : hosts.value())
		if (seen.insert(h).second)
			out.nodes.push_back(std::move(h));
	if (out.nodes.empty())
		return Status::Error("hostlist '" + expr + "' names no node");
	out.hostlist = hostlist_compress(out.nodes);
	return out;
}

Status find_unknown(SlurmClient &c, NodeSet *set)
{
	auto all = c.nodes();
	if (!all.ok())
		return all.status();
	std::set<std::string> known;
	for (const auto &n : all.value())
		known.insert(n.name);
	set->unknown.clear();
	for (const auto &n : set->nodes)
		if (!known.count(n))
			set->unknown.push_back(n);
	return Status::Ok();
}

Result<std::vector<std::string>> known_nodes(SlurmClient &c, const std::string &expr)
{
	auto r = expand_nodes(expr);
	if (!r.ok())
		return r.status();
	Status st = find_unknown(c, &r.value());
	if (!st.ok())
		return st;
	if (!r->unknown.empty()) {
		std::string names;
		for (const auto &n : r->unknown)
			names += (names.empty() ? "" : " ") + n;
		return Status::Error("unknown node(s): " + names);
	}
	return r->nodes;
}

} // namespace slurm

Result<std::string> node_reason(const std::string &node)
{
	auto n = slurm::default_client().node(node);
	if (!n.ok())
		return n.status();
	if (!n.value())
		return Status::Error("unknown node " + node);
	return n.value()->reason;
}

Status drain_node(const std::string &node, const std::string &reason, bool *kept)
{
	return slurm::drain_node(slurm::default_client(), node, reason, kept);
}

Status set_active_feature(const std::string &node, const std::string &feature, bool active)
{
	return slurm::set_active_feature(slurm::default_client(), node, feature, active);
}

Status reregister_slurmd(const std::string &node)
{
	DIR *d = opendir("/proc");
	if (!d)
		return Status::Error("cannot read /proc");
	std::vector<pid_t> any, named;
	while (struct dirent *e = readdir(d)) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		auto cmd = read_file(std::string("/proc/") + e->d_name + "/cmdline", 1 << 16);
		if (!cmd.ok() || cmd->empty())
			continue;
		std::vector<std::string> argv;
		for (size_t p = 0; p < cmd->size();) {
			size_t z = cmd->find('\0', p);
			argv.push_back(
			    cmd->substr(p, z == std::string::npos ? std::string::npos : z - p));
			p = (z == std::string::npos) ? cmd->size() : z + 1;
		}
		std::string exe = argv[0].substr(argv[0].rfind('/') + 1);
		if (exe != "slurmd")
			continue;
		// argv[0] is the process's to choose: a user's look-alike named
		// slurmd is not slurmd. It must run the slurmd binary and belong
		// to root (or to this account, where slurmd runs as it).
		struct stat ps;
		std::string proc = std::string("/proc/") + e->d_name;
		if (stat(proc.c_str(), &ps) != 0 || (ps.st_uid != 0 && ps.st_uid != geteuid()))
			continue;
		char path[PATH_MAX];
		ssize_t n = readlink((proc + "/exe").c_str(), path, sizeof path - 1);
		if (n <= 0)
			continue;
		path[n] = '\0';
		std::string real = path;
		real = real.substr(real.rfind('/') + 1);
		const std::string deleted = " (deleted)"; // upgraded under it
		if (real.size() > deleted.size() &&
		    real.compare(real.size() - deleted.size(), deleted.size(), deleted) == 0)
			real.resize(real.size() - deleted.size());
		// Debian installs the binary as slurmd-wlm (an alternative).
		if (real != "slurmd" && real.compare(0, 7, "slurmd-") != 0)
			continue;
		any.push_back(static_cast<pid_t>(pid));
		for (size_t i = 0; i + 1 < argv.size(); i++)
			if (argv[i] == "-N" && argv[i + 1] == node)
				named.push_back(static_cast<pid_t>(pid));
	}
	closedir(d);
	pid_t target = !named.empty() ? named[0] : (any.size() == 1 ? any[0] : 0);
	if (!target)
		return Status::Error("no slurmd for node " + node + " on this host");
	if (kill(target, SIGHUP) != 0)
		return Status::Error(
		    strprintf("cannot signal slurmd %d: %s", (int)target, strerror(errno)));
	return Status::Ok();
}

} // namespace onramp
