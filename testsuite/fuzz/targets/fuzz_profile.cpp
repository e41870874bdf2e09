// Simulated hardware profiles (parse_profile).
#include "admit/profile.hpp"
#include "fuzz.hpp"

using namespace onramp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_stderr_level(LogLevel::Error);
	(void)admit::parse_profile(fuzz_text(data, size), "profile.json");
	return 0;
}
