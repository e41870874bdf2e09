// onramp-metrics: onramp's Prometheus metrics.
//
//   onramp-metrics node [--conf F] [--node N] [--sysfs-root DIR] [--textfile-dir DIR]
//       the node's metrics (admission, checks, IB ports) in the text format;
//       with --textfile-dir, written crash-safely as onramp-<node>.prom for
//       node_exporter's textfile collector (the usual way on Slurm sites)
//   onramp-metrics controller [--conf F] [--textfile-dir DIR]
//       controller-side metrics (nodes by admission state, campaigns, rewire
//       windows, migrations) on stdout
//   onramp-metrics serve [--conf F] [--listen ADDR:PORT] [--textfile-dir DIR]
//       an exporter serving the controller metrics (plus, with
//       --textfile-dir, the nodes' textfiles merged) on /metrics
//
// The collectors live in common/metrics/collect.hpp, the HTTP side in
// common/metrics/exporter.hpp. Whatever cannot be read (a missing sysfs
// counter, an unreadable file, a garbage value) is logged and counted in
// onramp_metrics_read_errors; the exporter keeps serving.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <unistd.h>

#include "atomic_file.hpp"
#include "cli.hpp"
#include "config.hpp"
#include "log.hpp"
#include "metrics/collect.hpp"
#include "metrics/exporter.hpp"
#include "slurm/client.hpp"

using namespace onramp;

namespace {

int usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: onramp-metrics node [--conf F] [--node N] [--sysfs-root DIR] "
	    "[--textfile-dir DIR]\n"
	    "       onramp-metrics controller [--conf F] [--textfile-dir DIR]\n"
	    "       onramp-metrics serve [--conf F] [--listen ADDR:PORT] [--textfile-dir DIR]\n");
	return f == stdout ? 0 : 2;
}

// The short host name, for a node that was not named.
std::string this_host()
{
	char h[256] = "";
	gethostname(h, sizeof h - 1);
	std::string s = h;
	return s.substr(0, s.find('.'));
}

int node_main(const Config &cfg, std::string node, const std::string &root,
              const std::string &textdir)
{
	if (node.empty())
		node = this_host();
	Exposition e;
	metrics::collect_node(e, cfg, node, root.empty() ? cfg.str("SysfsRoot") : root);
	for (const auto &m : e.errors())
		log_warn("node %s: %s", node.c_str(), m.c_str());
	if (textdir.empty()) {
		fputs(e.text().c_str(), stdout);
		return 0;
	}
	Status st = write_file_atomic(textdir + "/onramp-" + node + ".prom", e.text(), 0644);
	if (!st.ok()) {
		log_error("%s", st.message().c_str());
		return 1;
	}
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	log_set_program("onramp-metrics");
	if (argc < 2)
		return usage(stderr);
	std::string mode = argv[1], conf = default_conf_path(), node, root, textdir, listen_at;
	const char *nn = getenv("SLURMD_NODENAME");
	if (nn)
		node = nn;
	if (mode == "-h" || mode == "--help")
		return usage(stdout);
	cli::Parser opts;
	opts.value("conf", &conf).value("node", &node).value("sysfs-root", &root);
	opts.value("textfile-dir", &textdir).value("listen", &listen_at);
	Status st = opts.parse(argc - 1, argv + 1);
	if (int rc = cli::after_parse(st, false, usage); rc != cli::kGoOn)
		return rc;
	auto cfg = Config::load(conf);
	if (!cfg.ok()) {
		log_error("%s", cfg.status().message().c_str());
		return 2;
	}
	if (mode == "node")
		return node_main(cfg.value(), node, root, textdir);
	if (mode == "controller") {
		// One attempt: a collection never waits for slurmctld.
		auto client = slurm::libslurm_client(0);
		fputs(metrics::controller_text(cfg.value(), *client, textdir, double(time(nullptr)))
		          .c_str(),
		      stdout);
		return 0;
	}
	if (mode == "serve")
		return metrics::serve(
		    conf, listen_at.empty() ? cfg->str("MetricsListen") : listen_at, textdir);
	return usage(stderr);
}
