// The fabric's uplink map (fabric_parse) against etc/topology.conf.example.
#include "fuzz.hpp"
#include "fuzz_topo.hpp"
#include "rewire/window.hpp"

using namespace onramp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_stderr_level(LogLevel::Error);
	auto f = fabric_parse(fuzz_text(data, size), "fabric.json", fuzz_topology());
	if (f.ok())
		for (const auto &u : f->uplinks)
			(void)f->of_leaf(u.leaf);
	return 0;
}
