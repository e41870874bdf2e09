// onramp-metrics: onramp's Prometheus metrics.
//
//   onramp-metrics node [--conf F] [--node N] [--sysfs-root DIR] [--textfile-dir DIR]
//       the node's metrics (admission, checks, IB ports) in the text format;
//       with --textfile-dir, written crash-safely as onramp-<node>.prom for
//       node_exporter's textfile collector (the usual way on Slurm sites)
//   onramp-metrics controller [--conf F]
//       controller-side metrics (nodes by admission state, campaigns, rewire
//       windows, migrations) on stdout
//   onramp-metrics serve [--conf F] [--listen ADDR:PORT] [--textfile-dir DIR]
//       an exporter serving the controller metrics (plus, with
//       --textfile-dir, the nodes' textfiles merged) on /metrics
//       (libmicrohttpd: concurrent scrapes, GET/HEAD only, bounded URLs,
//       connections and per-connection time; see serve())
//
// Whatever cannot be read (a missing sysfs counter, an unreadable file, a
// garbage value) is logged and counted in onramp_metrics_read_errors; the
// exporter keeps serving.
#include <algorithm>
#include <arpa/inet.h>
#include <functional>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <map>
#include <microhttpd.h>
#include <mutex>
#include <pthread.h>
#include <netinet/in.h>
#include <set>
#include <slurm/slurm.h>
#include <string>
#include <unistd.h>
#include <vector>

#include "admit/record.hpp"
#include "atomic_file.hpp"
#include "campaign/journal.hpp"
#include "config.hpp"
#include "hostlist.hpp"
#include "log.hpp"
#include "metrics/exposition.hpp"
#include "migrate/journal.hpp"
#include "number.hpp"
#include "onramp.h"
#include "rewire/window.hpp"
#include "slurm/client.hpp"

using namespace onramp;

namespace {

std::vector<std::string> list_dir(const std::string &dir)
{
	std::vector<std::string> out;
	if (DIR *d = opendir(dir.c_str())) {
		while (struct dirent *e = readdir(d))
			if (e->d_name[0] != '.')
				out.emplace_back(e->d_name);
		closedir(d);
	}
	std::sort(out.begin(), out.end());
	return out;
}

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
	         "The node's admission record status (PASS, FAIL, REVOKED, NONE).");
	e.family("onramp_node_admission_timestamp_seconds", "gauge",
	         "When the node's admission record was written.");
	e.family("onramp_node_boot_changed", "gauge",
	         "1 when the node booted since its admission record was written.");
	e.family("onramp_check_value", "gauge", "A check's last measured value, in its unit.");
	e.family("onramp_check_threshold", "gauge", "What the check's value was compared with.");
	e.family("onramp_check_pass", "gauge", "1 when the check passed (or was skipped).");
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
		struct tm tm = {};
		if (strptime(rec->time.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm))
			e.sample("onramp_node_admission_timestamp_seconds", nl,
			         double(timegm(&tm)));
		auto boot = admit::read_boot_id(cfg, node);
		if (boot.ok())
			e.sample("onramp_node_boot_changed", nl,
			         boot.value() != rec->boot_id ? 1 : 0);
		else
			e.read_error("boot_id", boot.status().message());
		const json_t *checks = json_object_get(rec->verdict.get(), "checks");
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
			const json_t *v = json_object_get(c, "value"),
			             *t = json_object_get(c, "threshold");
			if (json_is_number(v))
				e.sample("onramp_check_value", cl, json_number_value(v) * scale);
			if (json_is_number(t))
				e.sample("onramp_check_threshold", cl,
				         json_number_value(t) * scale);
			if (!strcmp(name, "nccl_allreduce") && json_is_number(v) &&
			    json_is_number(t)) {
				e.sample("onramp_nccl_allreduce_busbw_bytes_per_second", nl,
				         json_number_value(v) * scale);
				e.sample("onramp_nccl_allreduce_threshold_bytes_per_second", nl,
				         json_number_value(t) * scale);
			}
			e.sample(
			    "onramp_check_pass", {{"node", node}, {"check", name}},
			    status && (!strcmp(status, "PASS") || !strcmp(status, "SKIP")) ? 1 : 0);
			const json_t *d = json_object_get(c, "duration_s");
			if (json_is_number(d))
				e.sample("onramp_check_duration_seconds",
				         {{"node", node}, {"check", name}}, json_number_value(d));
		}
	}
	// Every verdict kept on the node counts once.
	std::string vdir = expand_node(cfg.str("NodeStateDir"), node) + "/verdicts";
	double runs = 0, timeouts = 0;
	for (const auto &f : list_dir(vdir)) {
		auto text = read_file(vdir + "/" + f, 4u << 20);
		if (!text.ok()) {
			e.read_error(vdir + "/" + f, text.status().message());
			continue;
		}
		if (text->find("\"nccl_allreduce\"") == std::string::npos)
			continue;
		runs++;
		size_t p = text->find("\"name\":\"nccl_allreduce\",\"status\":\"TIMEOUT\"");
		if (p != std::string::npos)
			timeouts++;
	}
	e.sample("onramp_nccl_checks_total", nl, runs);
	e.sample("onramp_nccl_check_timeouts_total", nl, timeouts);
	collect_ports(e, node, root);
}

void collect_slurm(Exposition &e, const Config &cfg)
{
	e.family("onramp_nodes", "gauge", "Nodes by admission state as slurmctld sees them.");
	node_info_msg_t *msg = nullptr;
	slurm::init_libslurm();
	if (slurm_load_node(0, &msg, SHOW_ALL) != SLURM_SUCCESS) {
		e.read_error("slurmctld", slurm_strerror(errno));
		return;
	}
	reserve_info_msg_t *resv = nullptr;
	std::set<std::string> reserved;
	if (slurm_load_reservations(0, &resv) == SLURM_SUCCESS) {
		for (uint32_t i = 0; i < resv->record_count; i++) {
			const char *n = resv->reservation_array[i].name;
			std::string base = cfg.str("AdmissionReservation") + "_";
			if (n && std::string(n).rfind(base, 0) == 0)
				reserved.insert(std::string(n).substr(base.size()));
		}
		slurm_free_reservation_info_msg(resv);
	} else {
		e.read_error("slurmctld", "reservations unreadable");
	}
	std::map<std::string, int> count = {{"admitted", 0},
	                                    {"under_admission", 0},
	                                    {"drained_by_onramp", 0},
	                                    {"drained_other", 0},
	                                    {"not_admitted", 0}};
	std::string feat = cfg.str("AdmittedFeature");
	for (uint32_t i = 0; i < msg->record_count; i++) {
		node_info_t *n = &msg->node_array[i];
		if (!n->name)
			continue;
		std::string act = std::string(",") + (n->features_act ? n->features_act : "") + ",";
		std::string reason = n->reason ? n->reason : "";
		bool drain = (n->node_state & NODE_STATE_DRAIN) != 0;
		if (reserved.count(n->name))
			count["under_admission"]++;
		else if (drain && reason.rfind(ONRAMP_REASON_PREFIX, 0) == 0)
			count["drained_by_onramp"]++;
		else if (drain)
			count["drained_other"]++;
		else if (act.find("," + feat + ",") != std::string::npos)
			count["admitted"]++;
		else
			count["not_admitted"]++;
	}
	slurm_free_node_info_msg(msg);
	for (const auto &c : count)
		e.sample("onramp_nodes", {{"state", c.first}}, c.second);
}

void collect_topology(Exposition &e, const Config &cfg)
{
	e.family("onramp_node_leaf", "gauge",
	         "1 for each node and the leaf switch it hangs under.");
	e.family("onramp_leaf_uplink_capacity_bytes_per_second", "gauge",
	         "A leaf's uplink capacity from the fabric file (links x speed).");
	e.family("onramp_rewire_window_active", "gauge", "1 for the rewire window in force.");
	e.family("onramp_rewire_windows", "gauge", "Rewire windows by state.");
	auto topo = topology_load(default_topology_path(cfg));
	if (!topo.ok()) {
		e.read_error("topology", topo.status().message());
		return;
	}
	for (const auto &s : topo->switches) {
		if (s.nodes.empty())
			continue;
		auto hosts = hostlist_expand(s.nodes);
		if (hosts.ok())
			for (const auto &h : hosts.value())
				e.sample("onramp_node_leaf", {{"node", h}, {"leaf", s.name}}, 1);
	}
	std::shared_ptr<Fabric> fabric;
	if (cfg.is_set("FabricFile")) {
		auto f = fabric_load(cfg.str("FabricFile"), topo.value());
		if (f.ok()) {
			std::map<std::string, double> cap;
			for (const auto &u : f->uplinks)
				cap[u.leaf] += u.links * u.speed_gbps * 1e9 / 8;
			for (const auto &c : cap)
				e.sample("onramp_leaf_uplink_capacity_bytes_per_second",
				         {{"leaf", c.first}}, c.second);
			fabric = std::make_shared<Fabric>(f.value());
		} else {
			e.read_error("fabric", f.status().message());
		}
	}
	if (cfg.is_set("RewirePlan")) {
		auto p = plan_load(cfg.str("RewirePlan"), topo.value(), fabric.get());
		if (!p.ok()) {
			e.read_error("rewire_plan", p.status().message());
			return;
		}
		std::map<std::string, int> states = {{"planned", 0}, {"active", 0}, {"done", 0}};
		for (const auto &w : p->windows) {
			states[window_state_name(w.state)]++;
			if (w.state == WindowState::Active)
				e.sample("onramp_rewire_window_active", {{"window", w.id}}, 1);
		}
		for (const auto &s : states)
			e.sample("onramp_rewire_windows", {{"state", s.first}}, s.second);
	}
}

void collect_journal(Exposition &e, const Config &cfg)
{
	e.family("onramp_campaign_nodes", "gauge",
	         "Nodes of an expansion campaign by wave and state.");
	e.family("onramp_campaign_state", "gauge", "1 for each campaign's current state.");
	e.family("onramp_campaign_node_in_flight_seconds", "gauge",
	         "How long a campaign node has been between reboot and a final state.");
	std::string path = cfg.str("StateDir") + "/onramp.db";
	if (access(path.c_str(), R_OK) != 0)
		return; // no campaign or migration yet
	// Read through the campaign journal's own API (its schema lives there).
	auto j = campaign::Journal::open_readonly(path);
	if (!j.ok()) {
		e.read_error("journal", j.status().message());
		return;
	}
	auto campaigns = j.value()->campaigns();
	if (!campaigns.ok()) {
		e.read_error("journal", path + ": " + campaigns.status().message());
		return;
	}
	const double now = double(time(nullptr));
	for (const auto &c : campaigns.value()) {
		e.sample("onramp_campaign_state", {{"campaign", c.id}, {"state", c.state}}, 1);
		auto nodes = j.value()->nodes(c.id);
		if (!nodes.ok()) {
			e.read_error("journal", path + ": " + nodes.status().message());
			continue;
		}
		std::map<std::pair<int, std::string>, int> by_wave_state;
		for (const auto &n : nodes.value()) {
			by_wave_state[{n.wave, n.state}]++;
			auto reboot = n.times.find("rebooting");
			if (reboot != n.times.end() && !campaign::final_node_state(n.state) &&
			    n.state != "planned")
				e.sample("onramp_campaign_node_in_flight_seconds",
				         {{"campaign", c.id}, {"node", n.node}},
				         now - double(reboot->second));
		}
		for (const auto &[ws, count] : by_wave_state)
			e.sample("onramp_campaign_nodes",
			         {{"campaign", c.id},
			          {"wave", std::to_string(ws.first)},
			          {"state", ws.second}},
			         count);
	}
}

// onrampctl migrate's journal (<StateDir>/migrate.db).
void collect_migrations(Exposition &e, const Config &cfg)
{
	e.family("onramp_migrations", "gauge", "Migrations by state.");
	// The Slurm job is "job_id": "job" is Prometheus' own target label.
	e.family("onramp_migration_duration_seconds", "gauge",
	         "From a migration's first journaled step to its last (so far).");
	std::string path = cfg.str("StateDir") + "/migrate.db";
	if (access(path.c_str(), R_OK) != 0)
		return;
	auto jr = migrate::Journal::open_read_only(path);
	auto counts = jr.ok() ? jr.value()->count_by_state()
	                      : Result<std::map<std::string, int64_t>>(jr.status());
	auto spans = jr.ok() ? jr.value()->spans()
	                     : Result<std::vector<migrate::Journal::Span>>(jr.status());
	if (!counts.ok() || !spans.ok()) {
		e.read_error("journal", (counts.ok() ? spans.status() : counts.status()).message());
		return;
	}
	for (const auto &c : counts.value())
		e.sample("onramp_migrations", {{"state", c.first}}, static_cast<double>(c.second));
	for (const auto &sp : spans.value())
		e.sample("onramp_migration_duration_seconds",
		         {{"migration", std::to_string(sp.id)},
		          {"job_id", std::to_string(sp.job)},
		          {"state", sp.state}},
		         sp.seconds);
}

std::string controller_text(const Config &cfg, const std::string &textfile_dir)
{
	Exposition e;
	collect_slurm(e, cfg);
	collect_topology(e, cfg);
	collect_journal(e, cfg);
	collect_migrations(e, cfg);
	if (!textfile_dir.empty())
		for (const auto &f : list_dir(textfile_dir)) {
			if (f.size() < 5 || f.compare(f.size() - 5, 5, ".prom"))
				continue;
			auto t = read_file(textfile_dir + "/" + f, 16u << 20);
			if (t.ok())
				e.merge_text(t.value(), textfile_dir + "/" + f);
			else
				e.read_error(textfile_dir + "/" + f, t.status().message());
		}
	for (const auto &m : e.errors())
		log_warn("%s", m.c_str());
	return e.text();
}

// The exporter's HTTP side is libmicrohttpd: a small pool of polling threads
// multiplexes every connection, so an idle or slow client holds one of
// kMaxConnections slots until kConnTimeout, never a thread another scrape
// needs. Limits: GET and HEAD only, URLs of at most kMaxUrl bytes, request
// line and headers within kConnMemory bytes. Collecting is serialized
// (libslurm and SQLite calls one at a time); sending is not.
constexpr unsigned kPoolThreads = 4;
constexpr unsigned kMaxConnections = 64;
constexpr unsigned kMaxPerIp = 32;
constexpr unsigned kConnTimeout = 10; // seconds
constexpr size_t kConnMemory = 32 * 1024;
constexpr size_t kMaxUrl = 256;

struct Exporter {
	std::string conf, textfile_dir;
	std::mutex collect;
};

std::string scrape(Exporter &x, unsigned *code)
{
	std::lock_guard<std::mutex> lock(x.collect);
	try {
		auto cfg = Config::load(x.conf);
		if (cfg.ok())
			return controller_text(cfg.value(), x.textfile_dir);
		Exposition e;
		e.read_error("onramp.conf", cfg.status().message());
		log_warn("%s", cfg.status().message().c_str());
		return e.text();
	} catch (const std::exception &ex) {
		*code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		return std::string("error: ") + ex.what() + "\n";
	}
}

MHD_Result reply(MHD_Connection *conn, unsigned code, const std::string &body)
{
	MHD_Response *r = MHD_create_response_from_buffer(
	    body.size(), const_cast<char *>(body.data()), MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
	                        code == MHD_HTTP_OK ? "text/plain; version=0.0.4; charset=utf-8"
	                                            : "text/plain; charset=utf-8");
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	MHD_Result ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

MHD_Result answer(void *cls, MHD_Connection *conn, const char *url, const char *method,
                  const char *, const char *, size_t *upload_size, void **)
{
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
		*upload_size = 0; // the body is not read
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
		             "onramp exporter: GET or HEAD only\n");
	}
	if (strlen(url) > kMaxUrl)
		return reply(conn, MHD_HTTP_URI_TOO_LONG, "onramp exporter: URL too long\n");
	if (strcmp(url, "/metrics") != 0)
		return reply(conn, MHD_HTTP_NOT_FOUND, "onramp exporter: try /metrics\n");
	unsigned code = MHD_HTTP_OK;
	std::string body = scrape(*static_cast<Exporter *>(cls), &code);
	return reply(conn, code, body);
}

int serve(const std::string &conf, const std::string &listen_at, const std::string &textfile_dir)
{
	size_t colon = listen_at.rfind(':');
	std::string host = colon == std::string::npos ? "127.0.0.1" : listen_at.substr(0, colon);
	auto port = parse_int(colon == std::string::npos ? listen_at : listen_at.substr(colon + 1),
	                      1, 65535);
	sockaddr_in addr{};
	addr.sin_family = AF_INET;
	addr.sin_port = htons(static_cast<uint16_t>(port.ok() ? port.value() : 0));
	if (!port.ok() || inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
		log_error("--listen %s: not an IPv4 ADDR:PORT", listen_at.c_str());
		return 2;
	}
	// SIGTERM/SIGINT are taken by sigwait below: blocked before the pool's
	// threads start, so they inherit the mask and no thread is interrupted.
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop, nullptr);
	signal(SIGPIPE, SIG_IGN);
	Exporter x{conf, textfile_dir, {}};
	MHD_Daemon *d = MHD_start_daemon(
	    MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, nullptr, nullptr, &answer, &x,
	    MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr *>(&addr),
	    MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_THREAD_POOL_SIZE, kPoolThreads,
	    MHD_OPTION_CONNECTION_LIMIT, kMaxConnections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	    kMaxPerIp, MHD_OPTION_CONNECTION_TIMEOUT, kConnTimeout,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, kConnMemory, MHD_OPTION_END);
	if (!d) {
		log_error("cannot listen on %s: %s", listen_at.c_str(), strerror(errno));
		return 1;
	}
	log_info("serving /metrics on %s", listen_at.c_str());
	int sig = 0;
	sigwait(&stop, &sig);
	MHD_stop_daemon(d);
	return 0;
}

int usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: onramp-metrics node [--conf F] [--node N] [--sysfs-root DIR] "
	    "[--textfile-dir DIR]\n"
	    "       onramp-metrics controller [--conf F]\n"
	    "       onramp-metrics serve [--conf F] [--listen ADDR:PORT] [--textfile-dir DIR]\n");
	return f == stdout ? 0 : 2;
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
	for (int i = 2; i < argc; i++) {
		std::string a = argv[i];
		auto val = [&]() -> std::string {
			if (i + 1 >= argc) {
				log_error("%s needs a value", a.c_str());
				exit(2);
			}
			return argv[++i];
		};
		if (a == "--conf")
			conf = val();
		else if (a == "--node")
			node = val();
		else if (a == "--sysfs-root")
			root = val();
		else if (a == "--textfile-dir")
			textdir = val();
		else if (a == "--listen")
			listen_at = val();
		else
			return usage(stderr);
	}
	if (mode == "-h" || mode == "--help")
		return usage(stdout);
	auto cfg = Config::load(conf);
	if (!cfg.ok()) {
		log_error("%s", cfg.status().message().c_str());
		return 2;
	}
	if (mode == "node") {
		if (node.empty()) {
			char h[256] = "";
			gethostname(h, sizeof h - 1);
			node = std::string(h).substr(0, std::string(h).find('.'));
		}
		Exposition e;
		collect_node(e, cfg.value(), node, root.empty() ? cfg->str("SysfsRoot") : root);
		for (const auto &m : e.errors())
			log_warn("node %s: %s", node.c_str(), m.c_str());
		if (textdir.empty()) {
			fputs(e.text().c_str(), stdout);
			return 0;
		}
		Status st =
		    write_file_atomic(textdir + "/onramp-" + node + ".prom", e.text(), 0644);
		if (!st.ok()) {
			log_error("%s", st.message().c_str());
			return 1;
		}
		return 0;
	}
	if (mode == "controller") {
		fputs(controller_text(cfg.value(), textdir).c_str(), stdout);
		return 0;
	}
	if (mode == "serve")
		return serve(conf, listen_at.empty() ? cfg->str("MetricsListen") : listen_at,
		             textdir);
	return usage(stderr);
}
