// topology.conf (topology_parse) and what is built from it.
#include "fuzz.hpp"
#include "rewire/topology.hpp"

using namespace onramp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_stderr_level(LogLevel::Error);
	auto t = topology_parse(fuzz_text(data, size), "topology.conf");
	if (t.ok())
		(void)topology_node_names(t.value());
	return 0;
}
