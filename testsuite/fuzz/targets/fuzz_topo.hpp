// The example topology and fabric (etc/) that the plan and fabric targets
// validate against; ONRAMP_FUZZ_ETC is the etc/ directory (set by run).
#pragma once

#include <cstdlib>

#include "atomic_file.hpp"
#include "rewire/topology.hpp"
#include "rewire/window.hpp"

inline const onramp::TopologyConf &fuzz_topology()
{
	static const onramp::TopologyConf t = [] {
		auto r =
		    onramp::topology_load(std::string(ONRAMP_FUZZ_ETC) + "/topology.conf.example");
		if (!r.ok())
			abort();
		return r.value();
	}();
	return t;
}

inline const onramp::Fabric *fuzz_fabric()
{
	static const onramp::Fabric f = [] {
		auto r = onramp::fabric_load(std::string(ONRAMP_FUZZ_ETC) + "/fabric.json",
		                             fuzz_topology());
		if (!r.ok())
			abort();
		return r.value();
	}();
	return &f;
}
