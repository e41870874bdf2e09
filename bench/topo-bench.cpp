// topo-bench: time libonramp's switch-table build for a topology.conf.
//   topo-bench TOPOLOGY_CONF RUNS [CUT_LEAF...]
// Prints one line per run: seconds to parse and build the table.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "rewire/topology.hpp"

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: topo-bench TOPOLOGY_CONF RUNS [CUT_LEAF...]\n");
		return 2;
	}
	std::set<std::string> cut(argv + 3, argv + argc);
	int runs = atoi(argv[2]);
	for (int i = 0; i < runs; i++) {
		auto t0 = std::chrono::steady_clock::now();
		auto topo = onramp::topology_load(argv[1]);
		if (!topo.ok()) {
			fprintf(stderr, "%s\n", topo.status().message().c_str());
			return 2;
		}
		auto names = onramp::topology_node_names(topo.value());
		if (!names.ok()) {
			fprintf(stderr, "%s\n", names.status().message().c_str());
			return 2;
		}
		auto table = onramp::build_switch_table(topo.value(), names.value(), cut);
		double s =
		    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		if (!table.ok()) {
			fprintf(stderr, "%s\n", table.status().message().c_str());
			return 2;
		}
		printf("%.6f %zu switches %zu nodes\n", s, table->sw.size(), names->size());
	}
	return 0;
}
