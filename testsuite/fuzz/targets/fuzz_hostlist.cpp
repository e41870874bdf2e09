// Slurm hostlists: onramp's checks around libslurm's slurm_hostlist_* (the
// expansion itself is Slurm's; it is linked uninstrumented).
#include "fuzz.hpp"
#include "hostlist.hpp"

using namespace onramp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_stderr_level(LogLevel::Error);
	if (size > 256) // a range like a[0-99999999] is libslurm's time, not onramp's
		return 0;
	auto n = hostlist_count(fuzz_text(data, size));
	auto h = hostlist_expand(fuzz_text(data, size));
	if (n.ok() != h.ok())
		__builtin_trap(); // the same checks decide both
	if (h.ok() && h->size() < 10000)
		(void)hostlist_compress(h.value());
	return 0;
}
