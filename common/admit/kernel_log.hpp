// NVIDIA XID events from the kernel log. Understands /dev/kmsg records
// ("6,1234,5678901234,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=...") and dmesg
// lines ("[ 5678.901234] NVRM: Xid (PCI:0000:3b:00): 79, ..."); both carry
// the time since boot, which is compared with the current uptime.
#pragma once

#include <string>
#include <vector>

#include "admit/backend.hpp"
#include "status.hpp"

namespace onramp {
namespace admit {

// Every XID in text at most window_s seconds before now_s (seconds since
// boot), oldest first. Only the driver's own lines count: a kernel-facility
// record (kmsg priority >> 3 == 0; "<pri>[...]" lines of dmesg --raw alike;
// plain "[...]" lines are taken as kernel records) whose message STARTS
// with "NVRM: Xid (PCI:dddd:bb:dd[.f]): N" followed by ',' or the end. A
// message that merely contains such text (a segfault line naming a process
// "NVRM: Xid ():79", a user's write to /dev/kmsg) is not an XID.
std::vector<XidEvent> parse_xids(const std::string &text, double now_s, double window_s);

// The kernel log: /dev/kmsg (or any character device of its kind) is read
// record by record without blocking; a regular file is read whole (at most
// 64 MiB, the tail kept).
Result<std::string> read_kernel_log(const std::string &path);

// Seconds since boot (/proc/uptime).
double uptime_s();

} // namespace admit
} // namespace onramp
