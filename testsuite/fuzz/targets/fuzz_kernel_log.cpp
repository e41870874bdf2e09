// Kernel log text (parse_xids): /dev/kmsg records and dmesg lines.
#include "admit/kernel_log.hpp"
#include "fuzz.hpp"

using namespace onramp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_stderr_level(LogLevel::Error);
	for (const auto &x : admit::parse_xids(fuzz_text(data, size), 1e6, 1e7))
		if (x.xid <= 0 || x.age_s < 0)
			__builtin_trap();
	return 0;
}
