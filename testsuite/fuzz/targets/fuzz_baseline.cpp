// SKU baselines (parse_baseline).
#include "admit/baseline.hpp"
#include "fuzz.hpp"

using namespace onramp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_stderr_level(LogLevel::Error);
	(void)admit::parse_baseline(fuzz_text(data, size), "baseline.json");
	return 0;
}
