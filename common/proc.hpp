// Running a program by argv: no shell ever parses a command line built
// from data. The one way onramp's tools start another program and read
// what it prints (Slurm commands where libslurm has no call, a site's
// launch command split into words, helpers).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "status.hpp"

namespace onramp {

struct ProcOptions {
	// Kill the child's whole process group (SIGTERM, then SIGKILL after
	// 2 s) once it has run this long; 0: no limit.
	double timeout_s = 0;
	// Keep stderr apart (ProcResult::err) instead of merging it into out.
	bool separate_stderr = false;
	// Stop reading (and kill the child) past this many bytes of output.
	size_t max_output = 16u << 20;
	// Called with each complete line of stdout (without '\n') as it
	// arrives; out still collects everything.
	std::function<void(const std::string &)> on_line;
	// Extra "NAME=VALUE" entries added to (or replacing in) the environment;
	// a "NAME" alone removes NAME from it.
	std::vector<std::string> env;
};

struct ProcResult {
	// The exit status, 128+signal when killed by a signal, -1 when the
	// program could not be started (out says why).
	int rc = -1;
	bool timed_out = false;
	std::string out; // stdout (and stderr unless separate_stderr), trailing newlines cut
	std::string err; // stderr when separate_stderr
};

// REQUIRES: !argv.empty(). argv[0] is looked up in PATH. stdin is
// /dev/null; the child runs in a process group of its own, so a timeout
// reaches every process it started.
ProcResult run_argv(const std::vector<std::string> &argv, const ProcOptions &opt = {});

// Twice forked into a session of its own, stdin /dev/null, stdout and
// stderr appended to log (open_log: no symlink followed, rotated to log.1
// past log_max_bytes, mode 0660 so that root's and SlurmUser's runs share
// it through the directory's group; /dev/null when it cannot be opened),
// so the rest outlives the caller and leaves no zombie. Returns true in
// that detached process, false in the caller (after reaping the
// intermediate child, or when fork failed: *failed). Descriptors above 2
// are the caller's to close in the detached process.
bool detach_process(const std::string &log, int64_t log_max_bytes, bool *failed = nullptr);

// argv joined by blanks, for log lines only (never run).
std::string argv_str(const std::vector<std::string> &argv);

// Split a configured command line into words: blanks separate words,
// '...' and "..." quote (no escapes, no expansion); then each "%x" in a
// word is replaced by subst(x) (for x with a value; "%%" is '%'). Error
// on an unterminated quote or an empty command.
Result<std::vector<std::string>>
split_command(const std::string &line,
              const std::function<bool(char, std::string *)> &subst = nullptr);

} // namespace onramp
