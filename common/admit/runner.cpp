#include <ctime>
#include "admit/runner.hpp"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <utility>
#include <vector>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomic_file.hpp"
#include "json.hpp"
#include "log.hpp"

namespace onramp {
namespace admit {

namespace {

double now_s()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
	    .count();
}

void write_all(int fd, const std::string &s)
{
	const char *p = s.data();
	size_t n = s.size();
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		p += k;
		n -= static_cast<size_t>(k);
	}
}

[[noreturn]] void child_main(int wfd, pid_t parent, const std::function<CheckResult()> &fn,
                             const std::string &name)
{
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(3);
	signal(SIGPIPE, SIG_DFL);
	dup2(STDERR_FILENO, STDOUT_FILENO);
	CheckResult r;
	try {
		r = fn();
	} catch (...) {
		r = make_fail(name, code::kCheckError, name + ": internal error in the check");
		r.status = CheckStatus::Error;
	}
	write_all(wfd, r.to_json().dump());
	close(wfd);
	_exit(0);
}

// The other members of process group pgid: (pid, zombie).
std::vector<std::pair<pid_t, bool>> group_members(pid_t pgid, pid_t except);

// Kill the group of leader (our child, not yet reaped: while it is at most
// a zombie, its pid, the group's id, cannot be given to another process)
// and reap what is ours of it, for at most grace_s; the leader last, with
// its wait status into *status. Returns false when members other than the
// leader outlived the grace period.
bool kill_and_reap(pid_t leader, double grace_s, int *status)
{
	double until = now_s() + grace_s;
	bool clean = true;
	for (;;) {
		kill(-leader, SIGKILL);
		auto others = group_members(leader, leader);
		for (const auto &m : others)
			if (m.second)
				(void)waitpid(m.first, nullptr, WNOHANG); // re-parented to us
		if (others.empty())
			break;
		if (now_s() > until) {
			clean = false;
			break;
		}
		usleep(10000);
	}
	// Never signalled again after this: the group's id may be reused.
	while (waitpid(leader, status, 0) < 0 && errno == EINTR) {
	}
	return clean;
}

} // namespace

bool process_group_alive(pid_t pgid)
{
	return !group_members(pgid, 0).empty();
}

namespace {

std::vector<std::pair<pid_t, bool>> group_members(pid_t pgid, pid_t except)
{
	std::vector<std::pair<pid_t, bool>> out;
	DIR *d = opendir("/proc");
	if (!d)
		return out;
	while (struct dirent *e = readdir(d)) {
		char *end = nullptr;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		auto stat = read_file(std::string("/proc/") + e->d_name + "/stat", 4096);
		if (!stat.ok())
			continue;
		// "pid (comm) state ppid pgrp ...": comm may hold ')' and blanks.
		size_t close_paren = stat->rfind(')');
		if (close_paren == std::string::npos)
			continue;
		char state = 0;
		long ppid = 0, pgrp = 0;
		if (sscanf(stat->c_str() + close_paren + 1, " %c %ld %ld", &state, &ppid, &pgrp) !=
		    3)
			continue;
		if (pgrp == pgid && pid != except)
			out.emplace_back(static_cast<pid_t>(pid), state == 'Z');
	}
	closedir(d);
	return out;
}

} // namespace

IsolatedRun run_isolated(const std::string &name, double timeout_s,
                         const std::function<CheckResult()> &fn,
                         const std::function<void(pid_t)> &on_spawn)
{
	IsolatedRun out;
	static bool subreaper = [] { return prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }();
	(void)subreaper;
	auto fail = [&](CheckStatus s, const char *c, const std::string &d) {
		out.result = make_fail(name, c, d);
		out.result.status = s;
		return out;
	};
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0)
		return fail(CheckStatus::Error, code::kCheckError,
		            strprintf("%s: pipe: %s", name.c_str(), strerror(errno)));
	fflush(nullptr);
	double start = now_s();
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return fail(CheckStatus::Error, code::kCheckError,
		            strprintf("%s: fork: %s", name.c_str(), strerror(errno)));
	}
	if (pid == 0) {
		close(fds[0]);
		child_main(fds[1], parent, fn, name);
	}
	close(fds[1]);
	setpgid(pid, pid); // also done by the child; whichever runs first wins
	out.pgid = pid;
	if (on_spawn)
		on_spawn(pid);

	// Read until EOF or until the child exits: a process the check left
	// behind may hold the pipe open, but everything the child wrote is in
	// the pipe by the time it has exited.
	fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
	std::string text;
	double deadline = start + timeout_s;
	int wstatus = 0;
	bool reaped_child = false; // exited: a zombie, reaped by kill_and_reap
	// Has the child exited? WNOWAIT leaves it a zombie, so that its pid (the
	// process group's id) stays reserved until the group is killed.
	auto exited = [&]() {
		siginfo_t si{};
		return waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) ==
		           0 &&
		       si.si_pid == pid;
	};
	auto drain = [&]() {
		char buf[65536];
		for (;;) {
			ssize_t n = read(fds[0], buf, sizeof buf);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return n == 0; // true at EOF
			text.append(buf, static_cast<size_t>(n));
		}
	};
	for (;;) {
		if (drain())
			break;
		if (!reaped_child && exited()) {
			reaped_child = true;
			drain();
			break;
		}
		double left = deadline - now_s();
		if (left <= 0) {
			out.timed_out = true;
			break;
		}
		struct pollfd pfd = {fds[0], POLLIN, 0};
		int ms = static_cast<int>(std::ceil(std::min(left, 0.05) * 1000));
		poll(&pfd, 1, ms);
	}
	close(fds[0]);
	if (!out.timed_out && !reaped_child) {
		// EOF seen: the child is about to exit.
		while (now_s() < deadline) {
			if (exited()) {
				reaped_child = true;
				break;
			}
			usleep(2000);
		}
	}
	double duration = now_s() - start;
	out.leftover = !kill_and_reap(pid, 5.0, &wstatus);

	if (out.timed_out) {
		fail(CheckStatus::Timeout, code::kCheckTimeout,
		     strprintf("%s did not finish within %g s; process group %d killed",
		               name.c_str(), timeout_s, static_cast<int>(pid)));
	} else if (text.empty()) {
		std::string how = reaped_child && WIFSIGNALED(wstatus)
		                      ? strprintf("was killed by signal %d", WTERMSIG(wstatus))
		                  : reaped_child
		                      ? strprintf("exited with status %d", WEXITSTATUS(wstatus))
		                      : std::string("closed its pipe");
		fail(CheckStatus::Error, code::kCheckError,
		     strprintf("%s: check process %s without a result", name.c_str(), how.c_str()));
	} else {
		auto j = json_parse(text, name + " result");
		auto r = j.ok() ? CheckResult::from_json(j->get(), name + " result")
		                : Result<CheckResult>(j.status());
		if (r.ok())
			out.result = r.value();
		else
			fail(CheckStatus::Error, code::kCheckError,
			     name + ": bad result from the check process: " + r.status().message());
	}
	if (out.leftover)
		out.result.detail += strprintf(" (process group %d did not exit after SIGKILL)",
		                               static_cast<int>(pid));
	out.result.name = name;
	out.result.duration_s = duration;
	return out;
}

void sleep_s(double s)
{
	if (!(s > 0))
		return;
	struct timespec ts;
	ts.tv_sec = static_cast<time_t>(s);
	ts.tv_nsec = static_cast<long>((s - static_cast<double>(ts.tv_sec)) * 1e9);
	while (nanosleep(&ts, &ts) != 0)
		;
}

} // namespace admit
} // namespace onramp
