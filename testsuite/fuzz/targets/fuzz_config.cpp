// onramp.conf (Config::parse) and the values read back through the schema.
#include "config.hpp"
#include "fuzz.hpp"

using namespace onramp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_stderr_level(LogLevel::Error);
	auto c = Config::parse(fuzz_text(data, size), "onramp.conf");
	if (c.ok())
		for (const auto &k : config_schema()) {
			(void)c->str(k.name);
			(void)c->line_of(k.name);
		}
	(void)parse_duration(fuzz_text(data, size));
	return 0;
}
