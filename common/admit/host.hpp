// The host check: what a GPU node needs besides its GPUs and fabric.
//
// Each filesystem the site names (AdmissionMounts=PATH:TYPE[:MINFREEGIB],...)
// is mounted, of its type, writable by an unprivileged test user
// (AdmissionTestUser) and has its free space; the checkpoint filesystem
// (AdmissionCheckpointMount) passes a bounded write+read bandwidth test
// (never more than AdmissionIoBytes, never longer than AdmissionIoTimeout,
// its file removed after) against the baseline's host.ckpt_*_gbs; the
// clock offset chronyc reports is within AdmissionClockMaxOffset; every
// service of AdmissionServices is active (systemctl is-active); the kernel
// command line has the baseline's host.cmdline tokens and each
// host.sysctl key has its value.
//
// Everything is read under HostRoot (%n: the node name), "/" on a real
// node and a fixture tree in tests:
//   <root>/proc/self/mountinfo, <root>/proc/cmdline, <root>/proc/sys/...,
//   <root><mount path> (statvfs, the write test).
// A part that cannot be measured (chronyc or systemctl missing, a read
// error) is NOT_AVAILABLE: the check is inconclusive (ERROR) unless a
// part failed, never a pass.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "admit/verdict.hpp"
#include "config.hpp"
#include "status.hpp"

namespace onramp {
namespace admit {

extern const char *const kHost;

namespace code {
extern const char *const kMountMissing;     // a named filesystem is not mounted
extern const char *const kMountType;        // mounted with another type
extern const char *const kMountNotWritable; // the test user cannot write there
extern const char *const kMountFull;        // less free space than required
extern const char *const kCkptBwLow;        // checkpoint write/read bandwidth low
extern const char *const kServiceInactive;  // a required service is not active
extern const char *const kClockOffset;      // clock offset above the bound
extern const char *const kClockUnsync;      // chrony not synchronised
extern const char *const kKernelCmdline;    // a baseline cmdline token missing
extern const char *const kSysctl;           // a sysctl key differs
extern const char *const kNotAvailable;     // a tool/source to measure is missing
} // namespace code

// One line of /proc/self/mountinfo.
struct MountEntry {
	std::string mount_point; // octal escapes (\040) decoded
	std::string fstype;
	std::string source;
};
// Every well-formed line; malformed ones are skipped and counted in *bad.
std::vector<MountEntry> parse_mountinfo(const std::string &text, int *bad = nullptr);

struct MountSpec {
	std::string path; // absolute
	std::string type; // expected fstype ("lustre", "nfs4", ...)
	double min_free_gib = 0;
};
// "PATH:TYPE[:MINFREEGIB],..." (AdmissionMounts). Errors name the entry.
Result<std::vector<MountSpec>> parse_mount_list(const std::string &text);

// `chronyc -c tracking`: one CSV line, 14 fields (reference id, name,
// stratum, ref time, system time offset, last offset, RMS offset,
// frequency, residual frequency, skew, root delay, root dispersion,
// update interval, leap status).
struct ClockObs {
	std::string ref_id, ref_name, leap;
	int stratum = 0;
	double offset_s = 0; // system time offset (signed), seconds
	bool synced = false; // leap status not "Not synchronised" and a reference
};
Result<ClockObs> parse_chronyc_tracking(const std::string &text);

// "net.core.rmem_max" -> "proc/sys/net/core/rmem_max" (relative to the
// root); '/' separators accepted too. Error for an empty component, "..",
// or a character outside [A-Za-z0-9_.:@-].
Result<std::string> sysctl_path(const std::string &key);
// Whitespace-separated tokens of a kernel command line.
std::vector<std::string> cmdline_tokens(const std::string &text);
// A service name systemctl may be asked about (no leading '-', no blanks).
bool valid_service_name(const std::string &name);

// What the host check wants (onramp.conf and the baseline's host section).
struct HostSpec {
	std::vector<MountSpec> mounts;
	std::string ckpt_mount; // one of mounts' paths, or "" (no bandwidth test)
	uint64_t io_bytes = 0;
	double io_timeout_s = 30;
	double ckpt_write_min_gbs = 0, ckpt_read_min_gbs = 0; // 0: not judged
	std::vector<std::string> services;
	double clock_max_offset_s = -1; // < 0: clock not checked
	std::vector<std::string> cmdline;
	std::map<std::string, std::string> sysctl;
	bool empty() const
	{
		return mounts.empty() && services.empty() && clock_max_offset_s < 0 &&
		       cmdline.empty() && sysctl.empty();
	}
};

struct HostObs {
	struct Mount {
		MountSpec spec;
		bool mounted = false;
		std::string fstype, source;
		bool free_known = false;
		double free_gib = 0;
		std::string free_error;
		bool write_known = false; // the write probe ran to an answer
		bool writable = false;
		std::string write_error; // why not writable, or why not known
	};
	std::vector<Mount> mounts;
	std::string mountinfo_error; // mountinfo unreadable: mounts unknown

	struct Io {
		bool attempted = false, measured = false;
		std::string mount, error;
		uint64_t bytes = 0;
		double write_s = 0, read_s = 0;
	} io;

	struct Service {
		std::string name, state; // state: systemctl's answer ("active", ...)
		bool known = false;
		std::string error;
	};
	std::vector<Service> services;

	bool clock_wanted = false, clock_known = false;
	ClockObs clock;
	std::string clock_error;

	bool cmdline_known = false;
	std::string cmdline, cmdline_error;
	std::map<std::string, std::string> sysctl;        // key -> value read
	std::map<std::string, std::string> sysctl_errors; // key -> why unread
};

// The spec from onramp.conf and the baseline's host section. Errors name
// the key, the file and the line (onramp-admit refuses such a config
// before running any check: exit 2).
Result<HostSpec> host_spec(const Config &cfg, const std::vector<std::string> &cmdline,
                           const std::map<std::string, std::string> &sysctl,
                           double ckpt_write_min_gbs, double ckpt_read_min_gbs);

// Judge: any failing part is FAIL (first code by severity, every part in
// the detail); else any unmeasured part is ERROR NOT_AVAILABLE; else PASS.
// Nothing configured is SKIP.
CheckResult evaluate_host(const HostObs &obs, const HostSpec &spec);

// Observe everything spec asks for on this node (I/O, processes).
HostObs observe_host(const HostSpec &spec, const Config &cfg, const std::string &node);

} // namespace admit
} // namespace onramp
