// The site's own admission checks: the programs of AdmissionSiteChecks
// (each one check, "site_<file>", code SITE_<FILE>) and LBNL NHC with the
// site's configuration (AdmissionNhc; check "nhc", code NHC). Each runs
// inside its check's runner child (runner.hpp: timeout, process group,
// every process killed at the end), as AdmissionSiteUser when set, with
// stdin /dev/null and stdout+stderr captured up to kSiteOutputMax bytes.
//
// Exit 0 passes; any other exit fails with the first line of output as the
// reason. A program that cannot be started (exec failure, the user to run
// as unknown) could not measure: ERROR, retried, then INCONCLUSIVE_<CHECK>.
// NHC follows its own documented conventions (read from LBNL NHC's nhc
// driver): "nhc -c CONF -t SECONDS VAR=value...", exit 0 healthy, a failed
// check prints "ERROR:  nhc:  Health check failed:  MESSAGE" and exits
// non-zero; its watchdog's "Script timed out" (exit 142) and a signal's
// exit (129, 130, 143) are unmeasured, as is exit 8-10 (its command line
// refused).
#pragma once

#include <string>
#include <vector>

#include "admit/verdict.hpp"
#include "config.hpp"
#include "status.hpp"

namespace onramp {
namespace admit {

constexpr size_t kSiteOutputMax = 64u << 10;

struct SiteProgram {
	std::string name; // the file's name
	std::string path; // dir/name
};

// The programs of dir to run, in byte order of their names: regular
// executable files named only by letters, digits, '_' and '-' (run-parts'
// rule: README.md, foo~, foo.dpkg-old and dot files are not run). An
// error naming the path when dir or a program is not owned by root or is
// writable by group or others (anyone else could make root run anything),
// or dir cannot be read.
Result<std::vector<SiteProgram>> list_site_checks(const std::string &dir);

// What running a program gave.
struct SpawnResult {
	bool started = false; // false: could not start (why says why)
	std::string why;
	int rc = -1;     // exit status when it exited
	int sig = 0;     // the signal that killed it, else 0
	std::string out; // stdout and stderr, at most kSiteOutputMax bytes
	bool truncated = false;
};

// Run argv (argv[0] a path) in the calling process's process group (the
// runner's), as user when non-empty (needs root unless it is the caller),
// with ONRAMP_NODE=node in the environment; wait for it.
SpawnResult spawn_capture(const std::vector<std::string> &argv, const std::string &user,
                          const std::string &node);

// The first non-blank line of out, control characters blanked, trimmed,
// cut to 200 bytes; "" when none.
std::string first_output_line(const std::string &out);

// Judge a site program's run (name: the file's name).
CheckResult evaluate_site(const std::string &name, const SpawnResult &r);

// What NHC's output says: the message of its first "Health check failed:"
// line ("ERROR:  nhc:  Health check failed:  MSG", its detached mode's
// "ERROR Health check failed:  MSG", any "[N] - " time stamp before it),
// else "N health checks failed" of its -a mode. found: one was there.
struct NhcReport {
	bool found = false;
	std::string message;
};
NhcReport parse_nhc_output(const std::string &out);

// Judge an NHC run.
CheckResult evaluate_nhc(const SpawnResult &r);

// The argv onramp runs NHC with: PROGRAM -c CONF -t SECONDS MARK_OFFLINE=0
// LOGFILE=- (NHC never drains the node itself; its log comes to onramp).
std::vector<std::string> nhc_argv(const Config &cfg, int timeout_s);

// Refuse bad site configuration before any check runs (exit 2, never a
// drain): AdmissionSiteChecks as list_site_checks(), AdmissionNhc a
// regular file owned by root, not group/other-writable (NHC silently
// passes without its configuration), AdmissionSiteUser a known user.
Status validate_site_config(const Config &cfg);

// Observe and judge, inside the check's child process.
CheckResult run_site_program(const SiteProgram &p, const Config &cfg, const std::string &node);
CheckResult run_nhc(const Config &cfg, const std::string &node, int timeout_s);

} // namespace admit
} // namespace onramp
