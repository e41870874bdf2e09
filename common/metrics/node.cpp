// The node side of onramp's metrics: admission record, checks, kept
// verdicts and IB/RoCE ports (collect.hpp).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <unistd.h>

#include "admit/record.hpp"
#include "atomic_file.hpp"
#include "json.hpp"
#include "metrics/collect.hpp"

namespace onramp {
namespace metrics {
namespace {

std::string trim(std::string s)
{
	while (!s.empty() && isspace(static_cast<unsigned char>(s.back())))
		s.pop_back();
	size_t i = 0;
	while (i < s.size() && isspace(static_cast<unsigned char>(s[i])))
		i++;
	return s.substr(i);
}

// A non-negative counter from a sysfs file; records a read error otherwise.
bool read_counter(Exposition &e, const std::string &path, double *out)
{
	auto t = read_file(path, 4096);
	if (!t.ok()) {
		e.read_error(path, t.status().message());
		return false;
	}
	std::string v = trim(t.value());
	char *end = nullptr;
	errno = 0;
	unsigned long long x = strtoull(v.c_str(), &end, 10);
	if (v.empty() || errno || !end || *end || v[0] == '-') {
		e.read_error(path, "not a counter: '" + v.substr(0, 40) + "'");
		return false;
	}
	*out = static_cast<double>(x);
	return true;
}

// The record's checks: value, threshold, pass and duration per check, and
// the NCCL all-reduce numbers on their own.
void collect_checks(Exposition &e, const std::string &node, const json_t *checks)
{
	Labels nl = {{"node", node}};
	size_t i;
	const json_t *c;
	json_array_foreach(checks, i, c)
	{
		const char *name = json_string_value(json_object_get(c, "name"));
		const char *unit = json_string_value(json_object_get(c, "unit"));
		const char *status = json_string_value(json_object_get(c, "status"));
		if (!name)
			continue;
		// Base units: GB/s (1e9 bytes) becomes bytes per second.
		std::string u = unit ? unit : "";
		double scale = 1;
		if (u == "GB/s") {
			u = "bytes_per_second";
			scale = 1e9;
		}
		Labels cl = {{"node", node}, {"check", name}, {"unit", u}};
		const json_t *v = json_object_get(c, "value"), *t = json_object_get(c, "threshold");
		if (json_is_number(v))
			e.sample("onramp_check_value", cl, json_number_value(v) * scale);
		if (json_is_number(t))
			e.sample("onramp_check_threshold", cl, json_number_value(t) * scale);
		if (!strcmp(name, "nccl_allreduce") && json_is_number(v) && json_is_number(t)) {
			e.sample("onramp_nccl_allreduce_busbw_bytes_per_second", nl,
			         json_number_value(v) * scale);
			e.sample("onramp_nccl_allreduce_threshold_bytes_per_second", nl,
			         json_number_value(t) * scale);
		}
		e.sample("onramp_check_pass", {{"node", node}, {"check", name}},
		         status && (!strcmp(status, "PASS") || !strcmp(status, "SKIP")) ? 1 : 0);
		// Could not measure (TIMEOUT, ERROR): neither passed nor failed.
		e.sample("onramp_check_inconclusive", {{"node", node}, {"check", name}},
		         status && (!strcmp(status, "TIMEOUT") || !strcmp(status, "ERROR")) ? 1
		                                                                            : 0);
		const json_t *d = json_object_get(c, "duration_s");
		if (json_is_number(d))
			e.sample("onramp_check_duration_seconds", {{"node", node}, {"check", name}},
			         json_number_value(d));
	}
}

// Every verdict kept in <NodeStateDir>/verdicts counts once when it ran the
// NCCL all-reduce check, and as a timeout when that check's status is
// TIMEOUT. An empty file is an admission job whose onramp-admit wrote no
// verdict: not counted, not an error.
void collect_verdicts(Exposition &e, const Config &cfg, const std::string &node)
{
	std::string vdir = expand_node(cfg.str("NodeStateDir"), node) + "/verdicts";
	double runs = 0, timeouts = 0;
	// verdicts/ may be SlurmUser's: read at its descriptor, following no
	// symlink, neither to the directory nor to a file in it.
	int dfd = open(vdir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 && errno != ENOENT)
		e.read_error(vdir, std::string("open: ") + strerror(errno));
	for (const auto &f : dfd < 0 ? std::vector<std::string>() : list_dir(vdir)) {
		std::string path = vdir + "/" + f;
		auto text = read_file_at(dfd, f, path, 4u << 20);
		if (!text.ok()) {
			e.read_error(path, text.status().message());
			continue;
		}
		if (trim(text.value()).empty())
			continue;
		auto v = json_parse(text.value(), path);
		if (!v.ok()) {
			e.read_error(path, v.status().message());
			continue;
		}
		size_t i;
		const json_t *c;
		json_array_foreach(json_object_get(v->get(), "checks"), i, c)
		{
			const char *name = json_string_value(json_object_get(c, "name"));
			if (!name || strcmp(name, "nccl_allreduce") != 0)
				continue;
			const char *status = json_string_value(json_object_get(c, "status"));
			runs++;
			if (status && !strcmp(status, "TIMEOUT"))
				timeouts++;
			break;
		}
	}
	if (dfd >= 0)
		close(dfd);
	e.sample("onramp_nccl_checks_total", {{"node", node}}, runs);
	e.sample("onramp_nccl_check_timeouts_total", {{"node", node}}, timeouts);
}

} // namespace

void collect_ports(Exposition &e, const std::string &node, const std::string &root)
{
	e.family("onramp_ib_port_up", "gauge", "1 when the IB/RoCE port is ACTIVE and LinkUp.");
	e.family("onramp_ib_port_rate_bytes_per_second", "gauge", "The port's active rate.");
	e.family("onramp_ib_port_transmit_bytes_total", "counter",
	         "Bytes transmitted (port_xmit_data counts 4-byte words).");
	e.family("onramp_ib_port_receive_bytes_total", "counter",
	         "Bytes received (port_rcv_data counts 4-byte words).");
	e.family("onramp_ib_port_link_downed_total", "counter", "Times the link went down.");
	e.family("onramp_ib_port_pause_frames_total", "counter",
	         "PFC pause frames, where the NIC exposes them in hw_counters.");
	std::string base = (root == "/" ? "" : root) + "/sys/class/infiniband";
	for (const auto &dev : list_dir(base)) {
		for (const auto &port : list_dir(base + "/" + dev + "/ports")) {
			std::string p = base + "/" + dev + "/ports/" + port;
			Labels l = {{"node", node}, {"device", dev}, {"port", port}};
			auto st = read_file(p + "/state", 256),
			     ph = read_file(p + "/phys_state", 256);
			if (st.ok() && ph.ok())
				e.sample("onramp_ib_port_up", l,
				         st->find("ACTIVE") != std::string::npos &&
				                 ph->find("LinkUp") != std::string::npos
				             ? 1
				             : 0);
			else
				e.read_error(p + "/state", "unreadable");
			auto rate = read_file(p + "/rate", 256);
			double gbps = 0;
			if (rate.ok() && sscanf(rate->c_str(), "%lf", &gbps) == 1 && gbps >= 0)
				e.sample("onramp_ib_port_rate_bytes_per_second", l, gbps * 1e9 / 8);
			else
				e.read_error(p + "/rate", "unreadable or not a rate");
			double v;
			if (read_counter(e, p + "/counters/port_xmit_data", &v))
				e.sample("onramp_ib_port_transmit_bytes_total", l, v * 4);
			if (read_counter(e, p + "/counters/port_rcv_data", &v))
				e.sample("onramp_ib_port_receive_bytes_total", l, v * 4);
			if (read_counter(e, p + "/counters/link_downed", &v))
				e.sample("onramp_ib_port_link_downed_total", l, v);
			for (const auto &hc : list_dir(p + "/hw_counters"))
				if (hc.find("pause") != std::string::npos &&
				    read_counter(e, p + "/hw_counters/" + hc, &v)) {
					Labels lc = l;
					lc.push_back({"counter", hc});
					e.sample("onramp_ib_port_pause_frames_total", lc, v);
				}
		}
	}
}

void collect_node(Exposition &e, const Config &cfg, const std::string &node,
                  const std::string &root)
{
	e.set_error_labels({{"node", node}});
	e.family("onramp_node_admitted", "gauge",
	         "1 while the node's admission record is PASS for its current boot and baseline.");
	e.family("onramp_node_admission_status", "gauge",
	         "The node's admission record status (PASS, FAIL, REVOKED, INCONCLUSIVE, NONE).");
	e.family("onramp_node_admission_timestamp_seconds", "gauge",
	         "When the node's admission record was written.");
	e.family("onramp_node_boot_changed", "gauge",
	         "1 when the node booted since its admission record was written.");
	e.family("onramp_check_value", "gauge", "A check's last measured value, in its unit.");
	e.family("onramp_check_threshold", "gauge", "What the check's value was compared with.");
	e.family("onramp_check_pass", "gauge", "1 when the check passed (or was skipped).");
	e.family("onramp_check_inconclusive", "gauge",
	         "1 when the check could not measure (timeout, launch failure, missing tool) after "
	         "its retries: neither passed nor failed.");
	e.family("onramp_nccl_allreduce_busbw_bytes_per_second", "gauge",
	         "Last single-node NCCL all-reduce bus bandwidth (best of N).");
	e.family("onramp_nccl_allreduce_threshold_bytes_per_second", "gauge",
	         "The bus bandwidth the NCCL check required (fraction of the SKU peak).");
	e.family("onramp_check_duration_seconds", "gauge", "How long the check ran.");
	e.family("onramp_nccl_checks_total", "counter", "NCCL all-reduce checks run on the node.");
	e.family("onramp_nccl_check_timeouts_total", "counter",
	         "NCCL all-reduce checks that overran their timeout.");
	Labels nl = {{"node", node}};
	std::string why;
	auto j = admit::judge(cfg, node, &why);
	e.sample("onramp_node_admitted", nl, j == admit::Judgement::Admitted ? 1 : 0);
	bool missing = false;
	auto rec = admit::read_record(admit::record_path(cfg, node), &missing);
	if (!rec.ok()) {
		if (!missing)
			e.read_error(admit::record_path(cfg, node), rec.status().message());
		e.sample("onramp_node_admission_status", {{"node", node}, {"status", "NONE"}}, 1);
	} else {
		e.sample("onramp_node_admission_status", {{"node", node}, {"status", rec->status}},
		         1);
		long long t = admit::parse_iso_time(rec->time);
		if (t >= 0)
			e.sample("onramp_node_admission_timestamp_seconds", nl, double(t));
		auto boot = admit::read_boot_id(cfg, node);
		if (boot.ok())
			e.sample("onramp_node_boot_changed", nl,
			         boot.value() != rec->boot_id ? 1 : 0);
		else
			e.read_error("boot_id", boot.status().message());
		collect_checks(e, node, json_object_get(rec->verdict.get(), "checks"));
	}
	collect_verdicts(e, cfg, node);
	collect_ports(e, node, root);
}

} // namespace metrics
} // namespace onramp
