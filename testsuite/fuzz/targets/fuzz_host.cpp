// The host check's parsers: /proc/self/mountinfo, `chronyc -c tracking`,
// AdmissionMounts, sysctl keys, the kernel command line.
#include <cmath>

#include "admit/host.hpp"
#include "fuzz.hpp"

using namespace onramp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_stderr_level(LogLevel::Error);
	std::string text = fuzz_text(data, size);
	int bad = 0;
	for (const auto &e : admit::parse_mountinfo(text, &bad))
		if (e.mount_point.empty() || e.mount_point[0] != '/' || e.fstype.empty())
			__builtin_trap();
	if (bad < 0)
		__builtin_trap();
	auto c = admit::parse_chronyc_tracking(text);
	if (c.ok() && (!std::isfinite(c->offset_s) || c->stratum < 0 || c->stratum > 16))
		__builtin_trap();
	auto m = admit::parse_mount_list(text);
	if (m.ok())
		for (const auto &s : m.value())
			if (s.path.empty() || s.path[0] != '/' || s.type.empty() ||
			    s.min_free_gib < 0)
				__builtin_trap();
	auto p = admit::sysctl_path(text);
	if (p.ok() && (p->find("/../") != std::string::npos || p->rfind("proc/sys/", 0) != 0))
		__builtin_trap();
	(void)admit::cmdline_tokens(text);
	(void)admit::valid_service_name(text);
	return 0;
}
