#include "proc.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomic_file.hpp"

extern char **environ;

namespace onramp {

namespace {

int64_t mono_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
	           std::chrono::steady_clock::now().time_since_epoch())
	    .count();
}

std::vector<std::string> merged_env(const std::vector<std::string> &extra)
{
	std::vector<std::string> env;
	for (char **e = environ; e && *e; e++) {
		std::string s(*e);
		bool replaced = false;
		for (const auto &x : extra) {
			size_t eq = x.find('=');
			if (eq != std::string::npos && s.compare(0, eq + 1, x, 0, eq + 1) == 0)
				replaced = true;
			if (eq == std::string::npos && s.compare(0, x.size(), x) == 0 &&
			    s.size() > x.size() && s[x.size()] == '=')
				replaced = true; // "NAME" alone: removed
		}
		if (!replaced)
			env.push_back(s);
	}
	for (const auto &x : extra)
		if (x.find('=') != std::string::npos)
			env.push_back(x);
	return env;
}

void trim_newlines(std::string *s)
{
	while (!s->empty() && s->back() == '\n')
		s->pop_back();
}

} // namespace

bool detach_process(const std::string &log, int64_t log_max_bytes, bool *failed)
{
	if (failed)
		*failed = false;
	fflush(nullptr);
	pid_t pid = fork();
	if (pid < 0) {
		if (failed)
			*failed = true;
		return false;
	}
	if (pid > 0) {
		waitpid(pid, nullptr, 0);
		return false;
	}
	if (fork() != 0)
		_exit(0);
	setsid();
	int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	auto opened = open_log(log, log_max_bytes, 0660);
	int out = opened.ok() ? opened.value() : open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (in >= 0)
		dup2(in, 0);
	if (out >= 0) {
		dup2(out, 1);
		dup2(out, 2);
	}
	return true;
}

std::string argv_str(const std::vector<std::string> &argv)
{
	std::string s;
	for (const auto &a : argv)
		s += (s.empty() ? "" : " ") + a;
	return s;
}

ProcResult run_argv(const std::vector<std::string> &argv, const ProcOptions &opt)
{
	ProcResult r;
	if (argv.empty()) {
		r.out = "run_argv: empty command";
		return r;
	}
	int out[2], err[2] = {-1, -1};
	if (pipe2(out, O_CLOEXEC) != 0) {
		r.out = argv[0] + ": pipe: " + strerror(errno);
		return r;
	}
	if (opt.separate_stderr && pipe2(err, O_CLOEXEC) != 0) {
		close(out[0]);
		close(out[1]);
		r.out = argv[0] + ": pipe: " + strerror(errno);
		return r;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, opt.separate_stderr ? err[1] : out[1], 2);
	// Only stdin, stdout and stderr: a descriptor this process inherited
	// without close-on-exec (a caller's lock) is not the command's to keep.
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_t attr;
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
	                                    POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&attr, 0);
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	std::vector<char *> av;
	for (const auto &a : argv)
		av.push_back(const_cast<char *>(a.c_str()));
	av.push_back(nullptr);
	std::vector<std::string> envs = merged_env(opt.env);
	std::vector<char *> ev;
	for (auto &e : envs)
		ev.push_back(const_cast<char *>(e.c_str()));
	ev.push_back(nullptr);
	pid_t pid;
	int e = posix_spawnp(&pid, av[0], &fa, &attr, av.data(), ev.data());
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(out[1]);
	if (err[1] >= 0)
		close(err[1]);
	if (e != 0) {
		close(out[0]);
		if (err[0] >= 0)
			close(err[0]);
		r.out = argv[0] + ": " + strerror(e);
		return r;
	}

	int64_t deadline =
	    opt.timeout_s > 0 ? mono_ms() + static_cast<int64_t>(opt.timeout_s * 1000) : 0;
	int64_t kill_at = 0; // when SIGKILL follows the SIGTERM
	std::string line;
	struct pollfd pf[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
	int open_fds = err[0] >= 0 ? 2 : 1;
	auto stop = [&](int sig) {
		kill(-pid, sig);
		kill(pid, sig);
	};
	while (open_fds > 0) {
		int wait_ms = -1;
		int64_t now = mono_ms();
		if (kill_at)
			wait_ms = static_cast<int>(std::max<int64_t>(0, kill_at - now));
		else if (deadline)
			wait_ms = static_cast<int>(std::max<int64_t>(0, deadline - now));
		int n = poll(pf, 2, wait_ms);
		if (n < 0 && errno == EINTR)
			continue;
		now = mono_ms();
		if (deadline && !r.timed_out && now >= deadline) {
			r.timed_out = true;
			stop(SIGTERM);
			kill_at = now + 2000;
		} else if (kill_at && now >= kill_at) {
			stop(SIGKILL);
			kill_at = 0;
			deadline = 0;
		}
		for (int i = 0; i < 2; i++) {
			if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char buf[4096];
			ssize_t got = read(pf[i].fd, buf, sizeof buf);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				close(pf[i].fd);
				pf[i].fd = -1;
				open_fds--;
				continue;
			}
			std::string &dst = i == 0 ? r.out : r.err;
			dst.append(buf, static_cast<size_t>(got));
			if (i == 0 && opt.on_line) {
				line.append(buf, static_cast<size_t>(got));
				size_t nl;
				while ((nl = line.find('\n')) != std::string::npos) {
					opt.on_line(line.substr(0, nl));
					line.erase(0, nl + 1);
				}
			}
			if (r.out.size() + r.err.size() > opt.max_output && !kill_at) {
				stop(SIGKILL);
				kill_at = mono_ms() + 2000;
			}
		}
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	trim_newlines(&r.out);
	trim_newlines(&r.err);
	return r;
}

Result<std::vector<std::string>>
split_command(const std::string &line, const std::function<bool(char, std::string *)> &subst)
{
	std::vector<std::string> words;
	std::string w;
	bool in_word = false;
	char quote = 0;
	for (size_t i = 0; i < line.size(); i++) {
		char c = line[i];
		if (quote) {
			if (c == quote)
				quote = 0;
			else
				w += c;
			continue;
		}
		if (c == '\'' || c == '"') {
			quote = c;
			in_word = true;
		} else if (c == ' ' || c == '\t' || c == '\n') {
			if (in_word)
				words.push_back(w);
			w.clear();
			in_word = false;
		} else if (c == '%' && i + 1 < line.size() && line[i + 1] == '%') {
			w += '%';
			in_word = true;
			i++;
		} else if (c == '%' && i + 1 < line.size() && subst) {
			std::string v;
			if (subst(line[i + 1], &v)) {
				w += v;
				i++;
			} else {
				w += c;
			}
			in_word = true;
		} else {
			w += c;
			in_word = true;
		}
	}
	if (quote)
		return Status::Error("unterminated " + std::string(1, quote) + " quote in '" +
		                     line + "'");
	if (in_word)
		words.push_back(w);
	if (words.empty())
		return Status::Error("empty command");
	return words;
}

} // namespace onramp
