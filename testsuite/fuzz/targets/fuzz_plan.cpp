// The rewire plan (plan_parse) against etc/topology.conf.example and
// etc/fabric.json, and its dump parsed again.
#include "fuzz.hpp"
#include "fuzz_topo.hpp"
#include "rewire/window.hpp"

using namespace onramp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_stderr_level(LogLevel::Error);
	const Fabric *fab = fuzz_fabric();
	std::string text = fuzz_text(data, size);
	for (const Fabric *f : {fab, static_cast<const Fabric *>(nullptr)}) {
		auto p = plan_parse(text, "rewire-plan.json", fuzz_topology(), f);
		if (!p.ok())
			continue;
		(void)p->active();
		auto again = plan_parse(plan_dump(p.value()), "dump", fuzz_topology(), f);
		if (!again.ok())
			__builtin_trap(); // what plan_dump writes must parse
	}
	return 0;
}
