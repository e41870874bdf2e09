#include "admit/host.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomic_file.hpp"
#include "log.hpp"
#include "proc.hpp"

namespace onramp {
namespace admit {

const char *const kHost = "host";

namespace code {
const char *const kMountMissing = "MOUNT_MISSING";
const char *const kMountType = "MOUNT_TYPE";
const char *const kMountNotWritable = "MOUNT_NOT_WRITABLE";
const char *const kMountFull = "MOUNT_FULL";
const char *const kCkptBwLow = "CKPT_BW_LOW";
const char *const kServiceInactive = "SERVICE_INACTIVE";
const char *const kClockOffset = "CLOCK_OFFSET";
const char *const kClockUnsync = "CLOCK_UNSYNC";
const char *const kKernelCmdline = "KERNEL_CMDLINE";
const char *const kSysctl = "SYSCTL_MISMATCH";
const char *const kNotAvailable = "NOT_AVAILABLE";
} // namespace code

namespace {

std::vector<std::string> split_blank(const std::string &s)
{
	std::vector<std::string> out;
	size_t i = 0;
	while (i < s.size()) {
		while (i < s.size() && isspace(static_cast<unsigned char>(s[i])))
			i++;
		size_t j = i;
		while (j < s.size() && !isspace(static_cast<unsigned char>(s[j])))
			j++;
		if (j > i)
			out.push_back(s.substr(i, j - i));
		i = j;
	}
	return out;
}

std::vector<std::string> split_on(const std::string &s, char sep)
{
	std::vector<std::string> out;
	size_t pos = 0;
	for (;;) {
		size_t k = s.find(sep, pos);
		out.push_back(s.substr(pos, k == std::string::npos ? k : k - pos));
		if (k == std::string::npos)
			return out;
		pos = k + 1;
	}
}

std::string trim(const std::string &s)
{
	size_t a = 0, b = s.size();
	while (a < b && isspace(static_cast<unsigned char>(s[a])))
		a++;
	while (b > a && isspace(static_cast<unsigned char>(s[b - 1])))
		b--;
	return s.substr(a, b - a);
}

// mountinfo's octal escapes (\040 blank, \011 tab, \012 newline, \134 '\').
std::string unescape_octal(const std::string &s)
{
	std::string out;
	for (size_t i = 0; i < s.size(); i++) {
		if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 +
			                         (s[i + 3] - '0'));
			i += 3;
		} else {
			out += s[i];
		}
	}
	return out;
}

bool parse_double(const std::string &s, double *out)
{
	if (s.empty())
		return false;
	errno = 0;
	char *end = nullptr;
	double v = strtod(s.c_str(), &end);
	if (errno || !end || *end || !std::isfinite(v))
		return false;
	*out = v;
	return true;
}

std::string join(const std::vector<std::string> &v, const char *sep)
{
	std::string s;
	for (size_t i = 0; i < v.size(); i++)
		s += (i ? sep : "") + v[i];
	return s;
}

std::string under_root(const std::string &root, const std::string &path)
{
	if (root.empty() || root == "/")
		return path;
	std::string r = root;
	while (r.size() > 1 && r.back() == '/')
		r.pop_back();
	return r + (path.empty() || path[0] != '/' ? "/" : "") + path;
}

double now_s()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
	    .count();
}

} // namespace

std::vector<MountEntry> parse_mountinfo(const std::string &text, int *bad)
{
	std::vector<MountEntry> out;
	int nbad = 0;
	size_t pos = 0;
	std::string line;
	while (next_conf_line(text, &pos, &line)) {
		if (trim(line).empty())
			continue;
		// id parent major:minor root mount-point options [optional...] - fstype source
		// super
		std::vector<std::string> f = split_blank(line);
		size_t dash = 0;
		for (size_t i = 6; i < f.size(); i++)
			if (f[i] == "-") {
				dash = i;
				break;
			}
		if (f.size() < 7 || dash == 0 || dash + 2 >= f.size() || f[4].empty() ||
		    f[4][0] != '/') {
			nbad++;
			continue;
		}
		MountEntry e;
		e.mount_point = unescape_octal(f[4]);
		e.fstype = f[dash + 1];
		e.source = unescape_octal(f[dash + 2]);
		out.push_back(e);
	}
	if (bad)
		*bad = nbad;
	return out;
}

Result<std::vector<MountSpec>> parse_mount_list(const std::string &text)
{
	std::vector<MountSpec> out;
	for (const auto &raw : split_on(text, ',')) {
		std::string item = trim(raw);
		if (item.empty())
			continue;
		std::vector<std::string> p = split_on(item, ':');
		if (p.size() < 2 || p.size() > 3)
			return Status::Error("'" + item +
			                     "' is not PATH:TYPE or PATH:TYPE:MINFREEGIB");
		MountSpec m;
		m.path = p[0];
		m.type = p[1];
		if (m.path.empty() || m.path[0] != '/' ||
		    m.path.find("/../") != std::string::npos ||
		    (m.path.size() >= 3 && m.path.compare(m.path.size() - 3, 3, "/..") == 0))
			return Status::Error("'" + item +
			                     "': the path must be absolute, without '..'");
		while (m.path.size() > 1 && m.path.back() == '/')
			m.path.pop_back();
		if (m.type.empty())
			return Status::Error("'" + item + "': no filesystem type");
		if (p.size() == 3 && (!parse_double(p[2], &m.min_free_gib) || m.min_free_gib < 0))
			return Status::Error("'" + item + "': MINFREEGIB '" + p[2] +
			                     "' is not a non-negative number");
		for (const auto &o : out)
			if (o.path == m.path)
				return Status::Error(m.path + " named twice");
		out.push_back(m);
	}
	return out;
}

Result<ClockObs> parse_chronyc_tracking(const std::string &text)
{
	size_t pos = 0;
	std::string line;
	while (next_conf_line(text, &pos, &line))
		if (!trim(line).empty())
			break;
	std::vector<std::string> f = split_on(trim(line), ',');
	if (f.size() < 14)
		return Status::Error(
		    strprintf("chronyc -c tracking: %zu fields, expected 14", f.size()));
	ClockObs c;
	c.ref_id = f[0];
	c.ref_name = f[1];
	double stratum = 0;
	if (!parse_double(f[2], &stratum) || stratum < 0 || stratum > 16 ||
	    stratum != std::floor(stratum))
		return Status::Error("chronyc -c tracking: stratum '" + f[2] + "' is not 0-16");
	c.stratum = static_cast<int>(stratum);
	if (!parse_double(f[4], &c.offset_s))
		return Status::Error("chronyc -c tracking: system time offset '" + f[4] +
		                     "' is not a number");
	c.leap = trim(f[13]);
	if (c.leap.empty())
		return Status::Error("chronyc -c tracking: no leap status");
	// chronyd reports reference id 0 and stratum 0 until it has a source.
	bool no_ref = c.ref_id.empty() || strtoull(c.ref_id.c_str(), nullptr, 16) == 0;
	c.synced = c.leap.rfind("Not synchronised", 0) != 0 && !no_ref && c.stratum > 0;
	return c;
}

Result<std::string> sysctl_path(const std::string &key)
{
	if (key.empty())
		return Status::Error("empty sysctl key");
	std::string path = "proc/sys";
	bool slash = key.find('/') != std::string::npos;
	for (const auto &part : split_on(key, slash ? '/' : '.')) {
		if (part.empty() || part == "." || part == "..")
			return Status::Error("sysctl key '" + key + "': empty or '..' component");
		for (char ch : part)
			if (!isalnum(static_cast<unsigned char>(ch)) && !strchr("_.:@-", ch))
				return Status::Error("sysctl key '" + key + "': bad character");
		path += "/" + part;
	}
	return path;
}

std::vector<std::string> cmdline_tokens(const std::string &text)
{
	return split_blank(text);
}

bool valid_service_name(const std::string &name)
{
	if (name.empty() || name[0] == '-' || name.size() > 256)
		return false;
	for (char ch : name)
		if (!isalnum(static_cast<unsigned char>(ch)) && !strchr("@._:-\\", ch))
			return false;
	return true;
}

Result<HostSpec> host_spec(const Config &cfg, const std::vector<std::string> &cmdline,
                           const std::map<std::string, std::string> &sysctl, double write_gbs,
                           double read_gbs)
{
	HostSpec s;
	if (cfg.is_set("AdmissionMounts")) {
		auto m = parse_mount_list(cfg.str("AdmissionMounts"));
		if (!m.ok())
			return Status::Error(cfg.where("AdmissionMounts") + ": " +
			                     m.status().message());
		s.mounts = m.value();
	}
	if (cfg.is_set("AdmissionCheckpointMount")) {
		s.ckpt_mount = cfg.str("AdmissionCheckpointMount");
		bool named = false;
		for (const auto &m : s.mounts)
			named = named || m.path == s.ckpt_mount;
		if (!named)
			return Status::Error(cfg.where("AdmissionCheckpointMount") + ": " +
			                     s.ckpt_mount + " is not one of AdmissionMounts");
	}
	s.io_bytes = static_cast<uint64_t>(cfg.integer("AdmissionIoBytes"));
	s.io_timeout_s = static_cast<double>(cfg.seconds("AdmissionIoTimeout"));
	s.ckpt_write_min_gbs = write_gbs;
	s.ckpt_read_min_gbs = read_gbs;
	if (cfg.is_set("AdmissionServices"))
		for (const auto &raw : split_on(cfg.str("AdmissionServices"), ',')) {
			std::string n = trim(raw);
			if (n.empty())
				continue;
			if (!valid_service_name(n))
				return Status::Error(cfg.where("AdmissionServices") + ": '" + n +
				                     "' is not a service name");
			s.services.push_back(n);
		}
	if (cfg.is_set("AdmissionClockMaxOffset"))
		s.clock_max_offset_s = cfg.number("AdmissionClockMaxOffset");
	s.cmdline = cmdline;
	s.sysctl = sysctl;
	return s;
}

CheckResult evaluate_host(const HostObs &obs, const HostSpec &spec)
{
	if (spec.empty()) {
		CheckResult r =
		    make_pass(kHost, "host: no mounts, services, clock bound, kernel "
		                     "command line or sysctl keys configured; not checked");
		r.status = CheckStatus::Skip;
		r.code = code::kSkipped;
		return r;
	}
	// (code, text) of each failure, in severity order; then unmeasured parts.
	std::vector<std::pair<const char *, std::string>> bad;
	std::vector<std::string> unknown;
	Json mounts = Json::array();
	if (!obs.mountinfo_error.empty() && !spec.mounts.empty())
		unknown.push_back("mounts: " + obs.mountinfo_error);
	for (const auto &m : obs.mounts) {
		Json o = Json::object();
		o.set("path", m.spec.path).set("expected_type", m.spec.type);
		o.set_bool("mounted", m.mounted).set("type", m.fstype).set("source", m.source);
		if (m.free_known)
			o.set("free_gib", m.free_gib);
		o.set("min_free_gib", m.spec.min_free_gib);
		if (m.write_known)
			o.set_bool("writable", m.writable);
		mounts.push(o);
		if (!obs.mountinfo_error.empty())
			continue;
		if (!m.mounted) {
			bad.emplace_back(code::kMountMissing, m.spec.path +
			                                          " not mounted (expected " +
			                                          m.spec.type + ")");
			continue;
		}
		if (m.fstype != m.spec.type)
			bad.emplace_back(code::kMountType, m.spec.path + " is " + m.fstype +
			                                       ", expected " + m.spec.type);
		if (m.write_known && !m.writable)
			bad.emplace_back(code::kMountNotWritable,
			                 m.spec.path +
			                     " not writable by the test user: " + m.write_error);
		else if (!m.write_known)
			unknown.push_back(m.spec.path + " writability: " + m.write_error);
		if (m.spec.min_free_gib > 0) {
			if (!m.free_known)
				unknown.push_back(m.spec.path + " free space: " + m.free_error);
			else if (m.free_gib < m.spec.min_free_gib)
				bad.emplace_back(code::kMountFull,
				                 strprintf("%s %.1f GiB free < %g GiB",
				                           m.spec.path.c_str(), m.free_gib,
				                           m.spec.min_free_gib));
		}
	}
	Json io = Json::object();
	double write_gbs = NAN, read_gbs = NAN;
	if (obs.io.attempted) {
		io.set("mount", obs.io.mount).set("bytes", static_cast<int64_t>(obs.io.bytes));
		if (obs.io.measured) {
			write_gbs = obs.io.write_s > 0 ? obs.io.bytes / obs.io.write_s / 1e9 : NAN;
			read_gbs = obs.io.read_s > 0 ? obs.io.bytes / obs.io.read_s / 1e9 : NAN;
			io.set("write_s", obs.io.write_s).set("read_s", obs.io.read_s);
			io.set("write_gbs", write_gbs).set("read_gbs", read_gbs);
			std::vector<std::string> low;
			if (spec.ckpt_write_min_gbs > 0 && !(write_gbs >= spec.ckpt_write_min_gbs))
				low.push_back(strprintf("write %.2f GB/s < %g GB/s", write_gbs,
				                        spec.ckpt_write_min_gbs));
			if (spec.ckpt_read_min_gbs > 0 && !(read_gbs >= spec.ckpt_read_min_gbs))
				low.push_back(strprintf("read %.2f GB/s < %g GB/s", read_gbs,
				                        spec.ckpt_read_min_gbs));
			if (!low.empty())
				bad.emplace_back(
				    code::kCkptBwLow,
				    obs.io.mount + " " + join(low, ", ") +
				        strprintf(" (%llu bytes)",
				                  static_cast<unsigned long long>(obs.io.bytes)));
		} else {
			io.set("error", obs.io.error);
			// A write refused is the writability failure already named.
			bool refused = false;
			for (const auto &m : obs.mounts)
				refused =
				    refused || (m.spec.path == obs.io.mount &&
				                (!m.mounted || (m.write_known && !m.writable)));
			if (!refused)
				unknown.push_back(obs.io.mount + " bandwidth: " + obs.io.error);
		}
	}
	Json services = Json::object();
	for (const auto &s : obs.services) {
		services.set(s.name.c_str(), s.known ? s.state : "unknown: " + s.error);
		if (!s.known)
			unknown.push_back("service " + s.name + ": " + s.error);
		else if (s.state != "active")
			bad.emplace_back(code::kServiceInactive, s.name + " is " + s.state);
	}
	Json clock = Json::object();
	if (obs.clock_wanted) {
		clock.set("max_offset_s", spec.clock_max_offset_s);
		if (!obs.clock_known) {
			unknown.push_back("clock: " + obs.clock_error);
		} else {
			clock.set("offset_s", obs.clock.offset_s).set("stratum", obs.clock.stratum);
			clock.set("reference", obs.clock.ref_name).set("leap", obs.clock.leap);
			if (!obs.clock.synced)
				bad.emplace_back(
				    code::kClockUnsync,
				    "chrony not synchronised (leap status '" + obs.clock.leap +
				        "', reference " +
				        (obs.clock.ref_name.empty() ? "none" : obs.clock.ref_name) +
				        ")");
			else if (std::fabs(obs.clock.offset_s) > spec.clock_max_offset_s)
				bad.emplace_back(code::kClockOffset,
				                 strprintf("offset %.6f s > %g s (source %s)",
				                           obs.clock.offset_s,
				                           spec.clock_max_offset_s,
				                           obs.clock.ref_name.c_str()));
		}
	}
	if (!spec.cmdline.empty()) {
		if (!obs.cmdline_known) {
			unknown.push_back("kernel command line: " + obs.cmdline_error);
		} else {
			std::vector<std::string> have = cmdline_tokens(obs.cmdline), missing;
			for (const auto &t : spec.cmdline)
				if (std::find(have.begin(), have.end(), t) == have.end())
					missing.push_back(t);
			if (!missing.empty())
				bad.emplace_back(code::kKernelCmdline,
				                 "kernel command line lacks " + join(missing, " "));
		}
	}
	Json sysctl = Json::object();
	for (const auto &kv : spec.sysctl) {
		auto it = obs.sysctl.find(kv.first);
		if (it == obs.sysctl.end()) {
			auto e = obs.sysctl_errors.find(kv.first);
			unknown.push_back("sysctl " + kv.first + ": " +
			                  (e != obs.sysctl_errors.end() ? e->second : "not read"));
			continue;
		}
		sysctl.set(kv.first.c_str(), it->second);
		// Multi-value keys (net.ipv4.tcp_rmem) compare word by word.
		if (split_blank(it->second) != split_blank(kv.second))
			bad.emplace_back(code::kSysctl,
			                 kv.first + " = " + it->second + ", expected " + kv.second);
	}
	// Severity: the order of the codes below.
	static const char *const order[] = {code::kMountMissing,     code::kMountType,
	                                    code::kMountNotWritable, code::kMountFull,
	                                    code::kCkptBwLow,        code::kServiceInactive,
	                                    code::kClockUnsync,      code::kClockOffset,
	                                    code::kKernelCmdline,    code::kSysctl};
	CheckResult r;
	if (!bad.empty()) {
		const char *first = bad[0].first;
		for (const char *c : order) {
			bool found = false;
			for (const auto &b : bad)
				found = found || b.first == c;
			if (found) {
				first = c;
				break;
			}
		}
		std::vector<std::string> all;
		for (const char *c : order)
			for (const auto &b : bad)
				if (b.first == c)
					all.push_back(b.second);
		for (const auto &u : unknown)
			all.push_back("not measured: " + u);
		r = make_fail(kHost, first, "host: " + join(all, "; "));
	} else if (!unknown.empty()) {
		r = make_fail(kHost, code::kNotAvailable,
		              "host: could not measure " + join(unknown, "; "));
		r.status = CheckStatus::Error;
	} else {
		std::vector<std::string> parts;
		if (!spec.mounts.empty())
			parts.push_back(strprintf("%zu mounts ok", spec.mounts.size()));
		if (obs.io.measured)
			parts.push_back(strprintf("%s write %.2f GB/s read %.2f GB/s",
			                          obs.io.mount.c_str(), write_gbs, read_gbs));
		if (!spec.services.empty())
			parts.push_back(strprintf("%zu services active", spec.services.size()));
		if (obs.clock_wanted)
			parts.push_back(strprintf("clock offset %.6f s", obs.clock.offset_s));
		if (!spec.cmdline.empty() || !spec.sysctl.empty())
			parts.push_back("kernel settings match");
		r = make_pass(kHost, "host: " + join(parts, ", "));
	}
	r.value = static_cast<double>(bad.size());
	r.threshold = 0;
	r.unit = "problems";
	Json data = Json::object();
	data.set("mounts", mounts).set("services", services).set("clock", clock);
	data.set("sysctl", sysctl);
	if (obs.io.attempted)
		data.set("checkpoint_io", io);
	r.data = data;
	return r;
}

namespace {

// Probe dir as user: create a file (no symlink followed), write bytes (at
// least one block) and read them back within timeout_s, remove it. Runs in
// a child that drops to the user's uid/gid when we are root: root never
// writes into a directory users control. Result on the pipe:
// "OK <bytes> <write_s> <read_s>" or "EPERM <why>" (refused: not writable)
// or "ERR <why>" (could not tell).
std::string probe_child(const std::string &dir, const std::string &user, uint64_t bytes,
                        double timeout_s, const std::string &node)
{
	if (geteuid() == 0) {
		struct passwd *pw = getpwnam(user.c_str());
		if (!pw)
			return "ERR test user '" + user + "' does not exist";
		if (pw->pw_uid == 0)
			return "ERR test user '" + user + "' is root";
		gid_t g = pw->pw_gid;
		if (setgroups(1, &g) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0 ||
		    getuid() != pw->pw_uid)
			return std::string("ERR cannot become ") + user + ": " + strerror(errno);
	}
	int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return std::string(errno == EACCES ? "EPERM " : "ERR ") + dir + ": " +
		       strerror(errno);
	std::string name = strprintf(".onramp-admit-%s-%d", node.c_str(), getpid());
	int fd =
	    openat(dfd, name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = errno;
		close(dfd);
		return std::string(e == EACCES || e == EPERM || e == EROFS ? "EPERM " : "ERR ") +
		       "create in " + dir + ": " + strerror(e);
	}
	const size_t chunk = 1u << 20;
	std::string buf(chunk, '\0');
	for (size_t i = 0; i < chunk; i++)
		buf[i] = static_cast<char>((i * 131 + 7) & 0xff);
	uint64_t want = bytes < 4096 ? 4096 : bytes, done = 0;
	double start = now_s(), deadline = start + timeout_s;
	std::string why;
	while (done < want && now_s() < deadline) {
		size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, want - done));
		ssize_t k = write(fd, buf.data(), n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			why = std::string("write: ") + (k < 0 ? strerror(errno) : "no progress");
			break;
		}
		done += static_cast<uint64_t>(k);
	}
	if (why.empty() && fsync(fd) != 0)
		why = std::string("fsync: ") + strerror(errno);
	double write_s = now_s() - start;
	uint64_t got = 0;
	double read_s = 0;
	if (why.empty()) {
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		double rs = now_s();
		if (lseek(fd, 0, SEEK_SET) != 0)
			why = std::string("lseek: ") + strerror(errno);
		while (why.empty() && got < done && now_s() < deadline + timeout_s) {
			ssize_t k = read(fd, &buf[0], chunk);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				why = std::string("read: ") +
				      (k < 0 ? strerror(errno) : "short file");
				break;
			}
			got += static_cast<uint64_t>(k);
		}
		read_s = now_s() - rs;
	}
	close(fd);
	if (unlinkat(dfd, name.c_str(), 0) != 0 && why.empty())
		why = std::string("remove: ") + strerror(errno);
	close(dfd);
	if (!why.empty())
		return "ERR " + why;
	uint64_t measured = std::min(done, got);
	return strprintf("OK %llu %.9f %.9f", static_cast<unsigned long long>(measured),
	                 write_s * measured / std::max<double>(1, static_cast<double>(done)),
	                 read_s);
}

// Run probe_child in a child process, at most timeout_s * 2 + 10 s.
std::string probe(const std::string &dir, const std::string &user, uint64_t bytes, double timeout_s,
                  const std::string &node)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0)
		return std::string("ERR pipe: ") + strerror(errno);
	fflush(nullptr);
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return std::string("ERR fork: ") + strerror(errno);
	}
	if (pid == 0) {
		close(fds[0]);
		std::string out = probe_child(dir, user, bytes, timeout_s, node);
		ssize_t k = write(fds[1], out.data(), out.size());
		(void)k;
		_exit(0);
	}
	close(fds[1]);
	std::string text;
	double deadline = now_s() + timeout_s * 2 + 10;
	for (;;) {
		double left = deadline - now_s();
		if (left <= 0)
			break;
		struct pollfd p = {fds[0], POLLIN, 0};
		int ms = static_cast<int>(std::min(left, 1.0) * 1000) + 1;
		if (poll(&p, 1, ms) <= 0)
			continue;
		char b[512];
		ssize_t n = read(fds[0], b, sizeof b);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		text.append(b, static_cast<size_t>(n));
		if (text.size() > 4096)
			break;
	}
	close(fds[0]);
	bool late = now_s() >= deadline;
	kill(pid, SIGKILL);
	// A child stuck in the kernel (a hung NFS or Lustre mount) cannot die
	// until the filesystem answers: reap it if it goes within 2 s, else
	// leave it to the check runner, which kills and reaps the whole group.
	for (int i = 0; i < 200; i++) {
		pid_t w = waitpid(pid, nullptr, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			break;
		usleep(10000);
	}
	if (late && text.empty())
		return strprintf("ERR the write test did not finish within %g s",
		                 timeout_s * 2 + 10);
	return text.empty() ? "ERR the write test gave no answer" : text;
}

// A configured tool's path (%n expanded); "" and *why when it cannot run.
std::string tool(const Config &cfg, const char *key, const std::string &node, std::string *why)
{
	std::string p = expand_node(cfg.str(key), node);
	if (access(p.c_str(), X_OK) != 0) {
		*why = p + " not available (" + strerror(errno) + ")";
		return "";
	}
	return p;
}

// Run a site tool (an absolute path, never a shell) for at most 30 s.
ProcResult run_tool(std::vector<std::string> argv, size_t max_output)
{
	ProcOptions po;
	po.timeout_s = 30;
	po.separate_stderr = true;
	po.max_output = max_output;
	return run_argv(argv, po);
}

} // namespace

HostObs observe_host(const HostSpec &spec, const Config &cfg, const std::string &node)
{
	HostObs o;
	std::string root = expand_node(cfg.str("HostRoot"), node);
	std::string user = cfg.str("AdmissionTestUser");
	if (!spec.mounts.empty()) {
		std::vector<MountEntry> entries;
		auto mi = read_file(under_root(root, "/proc/self/mountinfo"), 16u << 20);
		if (!mi.ok())
			o.mountinfo_error = mi.status().message();
		else
			entries = parse_mountinfo(mi.value());
		for (const auto &s : spec.mounts) {
			HostObs::Mount m;
			m.spec = s;
			// The last entry for a mount point is the one on top.
			for (const auto &e : entries)
				if (e.mount_point == s.path) {
					m.mounted = true;
					m.fstype = e.fstype;
					m.source = e.source;
				}
			std::string dir = under_root(root, s.path);
			if (m.mounted) {
				struct statvfs sv;
				if (statvfs(dir.c_str(), &sv) == 0) {
					m.free_known = true;
					m.free_gib = static_cast<double>(sv.f_bavail) *
					             static_cast<double>(sv.f_frsize) /
					             (1024.0 * 1024 * 1024);
				} else {
					m.free_error = dir + ": " + strerror(errno);
				}
				bool ckpt = s.path == spec.ckpt_mount && spec.io_bytes > 0;
				std::string res = probe(dir, user, ckpt ? spec.io_bytes : 4096,
				                        spec.io_timeout_s, node);
				if (res.rfind("OK ", 0) == 0) {
					m.write_known = m.writable = true;
					if (ckpt) {
						unsigned long long b = 0;
						double ws = 0, rs = 0;
						o.io.attempted = true;
						o.io.mount = s.path;
						if (sscanf(res.c_str() + 3, "%llu %lf %lf", &b, &ws,
						           &rs) == 3) {
							o.io.measured = true;
							o.io.bytes = b;
							o.io.write_s = ws;
							o.io.read_s = rs;
						} else {
							o.io.error =
							    "bad answer from the write test";
						}
					}
				} else if (res.rfind("EPERM ", 0) == 0) {
					m.write_known = true;
					m.write_error = res.substr(6);
				} else {
					m.write_error = res.size() > 4 ? res.substr(4) : res;
					if (ckpt) {
						o.io.attempted = true;
						o.io.mount = s.path;
						o.io.error = m.write_error;
					}
				}
			}
			o.mounts.push_back(m);
		}
	}
	if (!spec.services.empty()) {
		std::string why;
		std::string sc = tool(cfg, "SystemctlCommand", node, &why);
		for (const auto &name : spec.services) {
			HostObs::Service s;
			s.name = name;
			if (sc.empty()) {
				s.error = why;
			} else {
				ProcResult pr = run_tool({sc, "is-active", "--", name}, 4096);
				std::string state = trim(pr.out);
				if (pr.timed_out || pr.rc < 0 || state.empty() ||
				    state.find('\n') != std::string::npos)
					s.error = strprintf(
					    "systemctl is-active gave no state (exit %d)", pr.rc);
				else {
					s.known = true;
					s.state = state;
				}
			}
			o.services.push_back(s);
		}
	}
	if (spec.clock_max_offset_s >= 0) {
		o.clock_wanted = true;
		std::string why;
		std::string cc = tool(cfg, "ChronycCommand", node, &why);
		if (cc.empty()) {
			o.clock_error = why;
		} else {
			ProcResult pr = run_tool({cc, "-c", "tracking"}, 65536);
			if (pr.rc != 0) {
				o.clock_error =
				    strprintf("chronyc -c tracking exited %d: %s", pr.rc,
				              trim(pr.err.empty() ? pr.out : pr.err).c_str());
			} else {
				auto c = parse_chronyc_tracking(pr.out);
				if (c.ok()) {
					o.clock_known = true;
					o.clock = c.value();
				} else {
					o.clock_error = c.status().message();
				}
			}
		}
	}
	if (!spec.cmdline.empty()) {
		auto c = read_file(under_root(root, "/proc/cmdline"), 65536);
		if (c.ok()) {
			o.cmdline_known = true;
			o.cmdline = c.value();
		} else {
			o.cmdline_error = c.status().message();
		}
	}
	for (const auto &kv : spec.sysctl) {
		auto rel = sysctl_path(kv.first);
		if (!rel.ok()) {
			o.sysctl_errors[kv.first] = rel.status().message();
			continue;
		}
		auto v = read_file(under_root(root, "/" + rel.value()), 65536);
		if (v.ok())
			o.sysctl[kv.first] = trim(v.value());
		else
			o.sysctl_errors[kv.first] = v.status().message();
	}
	return o;
}

} // namespace admit
} // namespace onramp
