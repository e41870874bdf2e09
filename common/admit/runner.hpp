// Runs one check in a forked child, in its own process group, with its own
// timeout. The child sends its CheckResult back as JSON over a pipe. On
// overrun the whole process group is SIGKILLed and the check is TIMEOUT
// (CHECK_TIMEOUT). When the check ends, in any way, the group is killed and
// every process of it reaped: nothing is left behind. The calling process
// becomes a child subreaper (PR_SET_CHILD_SUBREAPER) so orphaned
// grandchildren come back to it to be reaped.
#pragma once

#include <functional>
#include <string>
#include <sys/types.h>

#include "admit/verdict.hpp"

namespace onramp {
namespace admit {

struct IsolatedRun {
	CheckResult result;
	pid_t pgid = 0; // the check's process group
	bool timed_out = false;
	bool leftover = false; // processes of the group survived SIGKILL
};

// REQUIRES: timeout_s > 0. fn runs in the child; its stdout goes to stderr
// so the verdict on stdout stays clean. on_spawn (optional) is told the
// child's process group as soon as it exists.
IsolatedRun run_isolated(const std::string &name, double timeout_s,
                         const std::function<CheckResult()> &fn,
                         const std::function<void(pid_t)> &on_spawn = nullptr);

// Sleep s seconds (fractions too), resuming after signals; s <= 0: no-op.
void sleep_s(double s);

// True while any process is in process group pgid (scans /proc).
bool process_group_alive(pid_t pgid);

} // namespace admit
} // namespace onramp
