// sysfs values of IB ports: counters, rates, states.
#include "admit/fabric.hpp"
#include "fuzz.hpp"

using namespace onramp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_stderr_level(LogLevel::Error);
	std::string text = fuzz_text(data, size);
	uint64_t v = 0;
	(void)admit::parse_sysfs_u64(text, &v);
	double r = admit::parse_rate_gbps(text);
	if (!(r >= 0) || r > 1e13)
		__builtin_trap();
	(void)admit::port_state_name(text);
	return 0;
}
