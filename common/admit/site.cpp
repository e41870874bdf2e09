#include "admit/site.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "admit/record.hpp"
#include "log.hpp"

namespace onramp {
namespace admit {

namespace {

bool runnable_name(const std::string &n)
{
	if (n.empty())
		return false;
	for (char ch : n) {
		unsigned char c = static_cast<unsigned char>(ch);
		if (!(c < 128 && (isalnum(c) || c == '_' || c == '-')))
			return false;
	}
	return true;
}

// Root's and nobody else's to change: owned by root, not group/other-
// writable. what names it in the error.
Status trusted(const struct stat &st, const std::string &path, const char *what)
{
	if (st.st_uid != 0)
		return Status::Error(
		    strprintf("%s %s is owned by uid %u, not root: refused (anyone "
		              "but root could make admission run anything)",
		              what, path.c_str(), static_cast<unsigned>(st.st_uid)));
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return Status::Error(strprintf("%s %s is writable by group or others (mode %04o): "
		                               "refused",
		                               what, path.c_str(),
		                               static_cast<unsigned>(st.st_mode & 07777)));
	return Status::Ok();
}

std::string blank_controls(std::string s)
{
	for (char &c : s)
		if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
			c = ' ';
	return s;
}

std::string trim_blanks(const std::string &s)
{
	size_t b = s.find_first_not_of(" \t\r");
	if (b == std::string::npos)
		return "";
	size_t e = s.find_last_not_of(" \t\r");
	return s.substr(b, e - b + 1);
}

// Each line of out, control characters blanked, blanks trimmed.
std::vector<std::string> clean_lines(const std::string &out)
{
	std::vector<std::string> lines;
	size_t pos = 0;
	while (pos < out.size()) {
		size_t nl = out.find('\n', pos);
		lines.push_back(trim_blanks(
		    blank_controls(out.substr(pos, nl == std::string::npos ? nl : nl - pos))));
		pos = nl == std::string::npos ? out.size() : nl + 1;
	}
	return lines;
}

// The tail of the output kept in a result's data (for an admin to read).
Json output_data(const SpawnResult &r)
{
	Json d = Json::object();
	std::string tail = r.out.size() > 4096 ? r.out.substr(r.out.size() - 4096) : r.out;
	// Keep it valid UTF-8 at the front: drop continuation bytes.
	size_t k = 0;
	while (k < tail.size() && (static_cast<unsigned char>(tail[k]) & 0xC0) == 0x80)
		k++;
	tail = tail.substr(k);
	for (char &c : tail)
		if (static_cast<unsigned char>(c) >= 0x80)
			c = '?'; // jansson refuses invalid UTF-8: keep the bytes' places
	d.set("exit_status", r.rc).set("signal", r.sig).set("output_tail", tail);
	d.set_bool("output_truncated", r.truncated);
	return d;
}

CheckResult unmeasured(const std::string &name, const std::string &detail)
{
	CheckResult c = make_fail(name, code::kCheckError, detail);
	c.status = CheckStatus::Error;
	return c;
}

} // namespace

Result<std::vector<SiteProgram>> list_site_checks(const std::string &dir)
{
	struct stat st;
	if (lstat(dir.c_str(), &st) != 0)
		return Status::Error("AdmissionSiteChecks " + dir + ": " + strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return Status::Error("AdmissionSiteChecks " + dir + " is not a directory");
	Status t = trusted(st, dir, "AdmissionSiteChecks directory");
	if (!t.ok())
		return t;
	DIR *d = opendir(dir.c_str());
	if (!d)
		return Status::Error("AdmissionSiteChecks " + dir + ": " + strerror(errno));
	std::vector<std::string> names;
	while (struct dirent *e = readdir(d))
		if (runnable_name(e->d_name))
			names.push_back(e->d_name);
	closedir(d);
	std::sort(names.begin(), names.end());
	std::vector<SiteProgram> out;
	for (const auto &n : names) {
		std::string path = dir + "/" + n;
		if (lstat(path.c_str(), &st) != 0)
			return Status::Error("site check " + path + ": " + strerror(errno));
		if (!S_ISREG(st.st_mode) || !(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH))) {
			log_verbose("site check %s: not an executable regular file; not run",
			            path.c_str());
			continue;
		}
		Status ts = trusted(st, path, "site check");
		if (!ts.ok())
			return ts;
		out.push_back({n, path});
	}
	return out;
}

SpawnResult spawn_capture(const std::vector<std::string> &argv, const std::string &user,
                          const std::string &node)
{
	SpawnResult r;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	std::string uname;
	if (!user.empty()) {
		struct passwd *pw = getpwnam(user.c_str());
		if (!pw) {
			r.why = "AdmissionSiteUser '" + user + "' is not a known user";
			return r;
		}
		if (pw->pw_uid != geteuid() && geteuid() != 0) {
			r.why =
			    strprintf("cannot run as %s: the admission runs as uid %u, not root",
			              user.c_str(), static_cast<unsigned>(geteuid()));
			return r;
		}
		uid = pw->pw_uid;
		gid = pw->pw_gid;
		uname = pw->pw_name;
	}
	int out[2], st[2];
	if (pipe2(out, O_CLOEXEC) != 0) {
		r.why = std::string("pipe: ") + strerror(errno);
		return r;
	}
	if (pipe2(st, O_CLOEXEC) != 0) {
		close(out[0]);
		close(out[1]);
		r.why = std::string("pipe: ") + strerror(errno);
		return r;
	}
	std::vector<char *> args;
	for (const auto &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	std::string env_node = "ONRAMP_NODE=" + node;
	pid_t pid = fork();
	if (pid < 0) {
		r.why = std::string("fork: ") + strerror(errno);
		for (int fd : {out[0], out[1], st[0], st[1]})
			close(fd);
		return r;
	}
	if (pid == 0) {
		// Stays in the runner's process group: its timeout reaches it.
		auto fail = [&](const char *what) {
			int e = errno;
			std::string m = strprintf("%s: %s", what, strerror(e));
			(void)!write(st[1], m.data(), m.size());
			_exit(127);
		};
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull < 0 || dup2(devnull, STDIN_FILENO) < 0 ||
		    dup2(out[1], STDOUT_FILENO) < 0 || dup2(out[1], STDERR_FILENO) < 0)
			fail("redirect");
		signal(SIGPIPE, SIG_DFL);
		if (!uname.empty() && uid != geteuid()) {
			if (initgroups(uname.c_str(), gid) != 0)
				fail("initgroups");
			if (setgid(gid) != 0)
				fail("setgid");
			if (setuid(uid) != 0)
				fail("setuid");
		}
		if (chdir("/") != 0)
			fail("chdir /");
		putenv(const_cast<char *>(env_node.c_str()));
		execv(args[0], args.data());
		fail(("exec " + argv[0]).c_str());
	}
	close(out[1]);
	close(st[1]);
	// Read until EOF or until the program has exited: a process it left
	// behind may hold the pipe open (the runner kills it with the group).
	fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
	char buf[65536];
	auto drain = [&]() {
		for (;;) {
			ssize_t n = read(out[0], buf, sizeof buf);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return n == 0; // true at EOF
			size_t room = kSiteOutputMax - std::min(kSiteOutputMax, r.out.size());
			size_t take = std::min(room, static_cast<size_t>(n));
			r.out.append(buf, take);
			if (take < static_cast<size_t>(n))
				r.truncated = true; // read on, dropped: it never blocks on us
		}
	};
	int ws = 0;
	bool reaped = false;
	for (;;) {
		if (drain())
			break;
		pid_t w = waitpid(pid, &ws, WNOHANG);
		if (w == pid) {
			reaped = true;
			drain();
			break;
		}
		struct pollfd pfd = {out[0], POLLIN, 0};
		poll(&pfd, 1, 50);
	}
	close(out[0]);
	std::string why;
	for (;;) {
		ssize_t n = read(st[0], buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		why.append(buf, static_cast<size_t>(n));
	}
	close(st[0]);
	while (!reaped && waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
	}
	if (!why.empty()) {
		r.why = why;
		return r;
	}
	r.started = true;
	if (WIFEXITED(ws))
		r.rc = WEXITSTATUS(ws);
	else if (WIFSIGNALED(ws))
		r.sig = WTERMSIG(ws);
	return r;
}

std::string first_output_line(const std::string &out)
{
	for (const auto &line : clean_lines(out))
		if (!line.empty())
			return utf8_truncate(line, 200);
	return "";
}

CheckResult evaluate_site(const std::string &name, const SpawnResult &r)
{
	std::string check = kSitePrefix + name;
	if (!r.started) {
		CheckResult c = unmeasured(check, "site check " + name + " not run: " + r.why);
		return c;
	}
	CheckResult c;
	std::string line = first_output_line(r.out);
	if (r.sig == 0 && r.rc == 0) {
		c = make_pass(check,
		              "site check " + name + " passed" + (line.empty() ? "" : ": " + line));
	} else {
		std::string how =
		    r.sig ? strprintf("killed by signal %d", r.sig) : strprintf("exit %d", r.rc);
		c = make_fail(check, site_code(name),
		              line.empty() ? name + ": " + how + " without output"
		                           : line + " (" + how + ")");
	}
	c.value = r.sig ? NAN : r.rc;
	c.data = output_data(r);
	return c;
}

NhcReport parse_nhc_output(const std::string &out)
{
	static const char kFailed[] = "Health check failed:";
	NhcReport rep;
	std::string count;
	for (std::string line : clean_lines(out)) {
		// A time stamp "[SECONDS] - " (NHC's TS=1, DEBUG=1).
		if (!line.empty() && line[0] == '[') {
			size_t close = line.find("] - ");
			if (close != std::string::npos)
				line = line.substr(close + 4);
		}
		if (line.compare(0, 5, "ERROR") != 0)
			continue;
		size_t f = line.find(kFailed);
		if (f != std::string::npos) {
			rep.found = true;
			rep.message =
			    utf8_truncate(trim_blanks(line.substr(f + sizeof kFailed - 1)), 200);
			if (rep.message.empty())
				rep.message = "health check failed";
			return rep;
		}
		// -a: "ERROR:  nhc:  3 health checks failed."
		size_t h = line.find(" health checks failed");
		if (h != std::string::npos && count.empty()) {
			size_t b = line.find_last_not_of("0123456789", h - 1);
			std::string n = line.substr(b == std::string::npos ? 0 : b + 1,
			                            h - (b == std::string::npos ? 0 : b + 1));
			if (!n.empty() && n.size() < 10)
				count = n + " health checks failed";
		}
	}
	if (!count.empty()) {
		rep.found = true;
		rep.message = count;
	}
	return rep;
}

CheckResult evaluate_nhc(const SpawnResult &r)
{
	if (!r.started)
		return unmeasured(kNhc, "nhc not run: " + r.why);
	NhcReport rep = parse_nhc_output(r.out);
	CheckResult c;
	std::string why = rep.found ? rep.message : first_output_line(r.out);
	if (r.sig != 0) {
		c = unmeasured(kNhc, strprintf("nhc was killed by signal %d", r.sig));
	} else if (r.rc == 0) {
		c = make_pass(kNhc, "nhc: healthy");
	} else if (r.rc == 142 || r.rc == 129 || r.rc == 130 || r.rc == 143 ||
	           (r.rc >= 8 && r.rc <= 10 && !rep.found)) {
		// Its watchdog or a signal ended it, or it refused its command
		// line: no verdict on the node.
		c = unmeasured(kNhc, strprintf("nhc could not finish (exit %d)%s", r.rc,
		                               why.empty() ? "" : (": " + why).c_str()));
	} else {
		c = make_fail(kNhc, code::kNhc,
		              why.empty() ? strprintf("nhc exit %d without a message", r.rc) : why);
	}
	c.value = r.sig ? NAN : r.rc;
	c.data = output_data(r);
	return c;
}

std::vector<std::string> nhc_argv(const Config &cfg, int timeout_s)
{
	return {cfg.str("AdmissionNhcProgram"),
	        "-c",
	        cfg.str("AdmissionNhc"),
	        "-t",
	        std::to_string(std::max(1, timeout_s)),
	        "MARK_OFFLINE=0",
	        "LOGFILE=-"};
}

Status validate_site_config(const Config &cfg)
{
	if (cfg.is_set("AdmissionSiteChecks")) {
		auto l = list_site_checks(cfg.str("AdmissionSiteChecks"));
		if (!l.ok())
			return Status::Error(cfg.where("AdmissionSiteChecks") + ": " +
			                     l.status().message());
	}
	if (cfg.is_set("AdmissionNhc")) {
		std::string conf = cfg.str("AdmissionNhc");
		struct stat st;
		if (stat(conf.c_str(), &st) != 0)
			return Status::Error(cfg.where("AdmissionNhc") + ": " + conf + ": " +
			                     strerror(errno) +
			                     " (nhc passes every node without its configuration)");
		if (!S_ISREG(st.st_mode))
			return Status::Error(cfg.where("AdmissionNhc") + ": " + conf +
			                     " is not a regular file");
		Status t = trusted(st, conf, "NHC configuration");
		if (!t.ok())
			return Status::Error(cfg.where("AdmissionNhc") + ": " + t.message());
	}
	if (cfg.is_set("AdmissionNhc")) {
		// A missing program is a missing tool (unmeasured at run time);
		// one that exists is run as root: root's alone.
		std::string prog = cfg.str("AdmissionNhcProgram");
		struct stat st;
		if (stat(prog.c_str(), &st) == 0) {
			Status t = trusted(st, prog, "nhc program");
			if (!t.ok())
				return Status::Error(cfg.where("AdmissionNhcProgram") + ": " +
				                     t.message());
		}
	}
	if (cfg.is_set("AdmissionSiteUser") && !getpwnam(cfg.str("AdmissionSiteUser").c_str()))
		return Status::Error(cfg.where("AdmissionSiteUser") + ": '" +
		                     cfg.str("AdmissionSiteUser") + "' is not a known user");
	return Status::Ok();
}

CheckResult run_site_program(const SiteProgram &p, const Config &cfg, const std::string &node)
{
	std::string user = cfg.is_set("AdmissionSiteUser") ? cfg.str("AdmissionSiteUser") : "";
	return evaluate_site(p.name, spawn_capture({p.path}, user, node));
}

CheckResult run_nhc(const Config &cfg, const std::string &node, int timeout_s)
{
	std::string user = cfg.is_set("AdmissionSiteUser") ? cfg.str("AdmissionSiteUser") : "";
	return evaluate_nhc(spawn_capture(nhc_argv(cfg, timeout_s), user, node));
}

} // namespace admit
} // namespace onramp
