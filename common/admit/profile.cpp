#include "admit/profile.hpp"
#include "admit/runner.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <ctime>
#include <fcntl.h>
#include <unistd.h>

#include "admit/bandwidth.hpp"
#include "admit/baseline.hpp"
#include "admit/fabric.hpp"
#include "admit/sim_fabric.hpp"
#include "admit/verdict.hpp"
#include "atomic_file.hpp"
#include "json.hpp"
#include "log.hpp"

namespace onramp {
namespace admit {

namespace {

std::string dir_of(const std::string &path)
{
	size_t s = path.rfind('/');
	if (s == std::string::npos)
		return ".";
	return s == 0 ? "/" : path.substr(0, s);
}

std::string resolve(const std::string &p, const std::string &origin)
{
	if (p.empty() || p[0] == '/')
		return p;
	return dir_of(origin) + "/" + p;
}

int64_t nonneg_int(JsonReader &r, const json_t *o, const std::string &path, const char *key,
                   int64_t def)
{
	int64_t v = r.integer_or(o, path, key, def);
	if (!r.failed() && v < 0)
		r.error(JsonReader::join(path, key), "must not be negative");
	return v;
}

// The link speed of a PCIe generation (1..6).
double gen_speed_gts(int gen)
{
	return gen <= 2 ? 2.5 * gen : 8.0 * (1 << (gen - 3));
}

// "pcie": {"gen": 5, "width": 16}
void pcie_of(JsonReader &r, const json_t *o, const std::string &path, int *gen, int *width)
{
	const json_t *p = r.obj(o, path, "pcie", false);
	if (!p)
		return;
	std::string pp = JsonReader::join(path, "pcie");
	r.only_keys(p, pp, {"gen", "width"});
	*gen = static_cast<int>(r.integer_or(p, pp, "gen", *gen));
	*width = static_cast<int>(r.integer_or(p, pp, "width", *width));
	if (!r.failed() && (*gen < 1 || *gen > 6 || *width < 1 || *width > 32))
		r.error(pp, "gen must be in [1, 6] and width in [1, 32]");
}

void parse_gpu_depth(JsonReader &r, const json_t *g, const std::string &path, GpuDepthObs::Gpu *d);

void parse_gpu(JsonReader &r, const json_t *g, const std::string &path, int index,
               Profile::Gpu *out)
{
	if (!r.expect_object(g, path))
		return;
	r.only_keys(g, path, {"uuid",          "serial",        "pci",           "model",
	                      "vbios",         "numa",          "nearest_nic",   "ecc_uncorrected",
	                      "remap_pending", "remap_failed",  "nvlink_links",  "nvlink_down",
	                      "mem_bw_gbs",    "sm_clock_mhz",  "throttle",      "temp_c",
	                      "power_w",       "memory_mib",    "persistence",   "processes",
	                      "ecc_corrected", "remapped_rows", "nvlink_errors", "pcie",
	                      "unmeasured",    "h2d_gbs",       "d2h_gbs",       "pair_busbw_gbs"});
	out->info.index = index;
	out->info.uuid = r.str(g, path, "uuid");
	out->info.serial = r.str(g, path, "serial");
	out->info.pci = r.str(g, path, "pci");
	out->info.model = r.str(g, path, "model");
	out->info.vbios = r.str_or(g, path, "vbios", "");
	out->numa = static_cast<int>(r.integer_or(g, path, "numa", -1));
	out->nearest_nic = r.str_or(g, path, "nearest_nic", "");
	out->ecc_uncorrected = static_cast<uint64_t>(nonneg_int(r, g, path, "ecc_uncorrected", 0));
	out->remap_pending = r.boolean_or(g, path, "remap_pending", false);
	out->remap_failed = r.boolean_or(g, path, "remap_failed", false);
	out->nvlink_links = static_cast<int>(nonneg_int(r, g, path, "nvlink_links", 18));
	if (const json_t *a = r.arr(g, path, "nvlink_down", false)) {
		size_t i;
		const json_t *v;
		json_array_foreach(a, i, v)
		{
			if (!json_is_integer(v) || json_integer_value(v) < 0 ||
			    json_integer_value(v) >= out->nvlink_links) {
				r.error(JsonReader::index(JsonReader::join(path, "nvlink_down"), i),
				        "expected a link number below nvlink_links");
				return;
			}
			out->nvlink_down.push_back(static_cast<int>(json_integer_value(v)));
		}
	}
	out->mem_bw_gbs = r.num(g, path, "mem_bw_gbs");
	if (!r.failed() && out->mem_bw_gbs < 0)
		r.error(JsonReader::join(path, "mem_bw_gbs"), "must not be negative");
	out->pair_busbw_gbs = r.num_or(g, path, "pair_busbw_gbs", -1);
	if (!r.failed() && json_object_get(g, "pair_busbw_gbs") && out->pair_busbw_gbs < 0)
		r.error(JsonReader::join(path, "pair_busbw_gbs"), "must not be negative");
	parse_gpu_depth(r, g, path, &out->depth);
}

// The gpu_depth fields of a simulated GPU.
void parse_gpu_depth(JsonReader &r, const json_t *g, const std::string &path, GpuDepthObs::Gpu *d)
{
	d->sm_clock_min_mhz = static_cast<unsigned>(nonneg_int(r, g, path, "sm_clock_mhz", 1980));
	for (const auto &t : r.str_list(g, path, "throttle", false)) {
		uint64_t bit = throttle_reason_bit(t);
		if (!bit) {
			r.error(JsonReader::join(path, "throttle"),
			        "'" + t + "' is not a throttle reason");
			return;
		}
		d->throttle_reasons |= bit;
	}
	d->temp_max_c = static_cast<unsigned>(nonneg_int(r, g, path, "temp_c", 55));
	d->power_max_w = r.num_or(g, path, "power_w", 650);
	d->memory_total_mib = static_cast<uint64_t>(nonneg_int(r, g, path, "memory_mib", 143771));
	d->persistence = r.boolean_or(g, path, "persistence", true);
	d->h2d_gbs = r.num_or(g, path, "h2d_gbs", 55);
	d->d2h_gbs = r.num_or(g, path, "d2h_gbs", 55);
	if (const json_t *a = r.arr(g, path, "processes", false)) {
		size_t i;
		const json_t *v;
		json_array_foreach(a, i, v)
		{
			if (!json_is_integer(v) || json_integer_value(v) < 1 ||
			    json_integer_value(v) > 0x7fffffff) {
				r.error(JsonReader::index(JsonReader::join(path, "processes"), i),
				        "expected a process id");
				return;
			}
			d->foreign_pids.push_back(static_cast<unsigned>(json_integer_value(v)));
		}
	}
	d->ecc_corrected = static_cast<uint64_t>(nonneg_int(r, g, path, "ecc_corrected", 0));
	d->remapped_rows = static_cast<unsigned>(nonneg_int(r, g, path, "remapped_rows", 0));
	parse_counter_map(r, r.obj(g, path, "nvlink_errors", false),
	                  JsonReader::join(path, "nvlink_errors"), nvlink_error_counters(),
	                  &d->nvlink_error_delta);
	d->pcie.gen = 5;
	d->pcie.width = 16;
	pcie_of(r, g, path, &d->pcie.gen, &d->pcie.width);
	d->pcie.speed_gts = gen_speed_gts(d->pcie.gen);
	d->pcie.measured = true;
	d->has_clock = d->has_throttle = d->has_temp = d->has_power = d->has_memory = true;
	d->has_persistence = d->has_processes = d->has_ecc_corrected = d->has_remapped = true;
	d->has_nvlink_errors = d->has_host_copy = true;
	// Parts "NVML cannot read": {"unmeasured": ["power: why", ...]}.
	using G = GpuDepthObs::Gpu;
	static const std::pair<const char *, bool G::*> parts[] = {
	    {"clock", &G::has_clock},
	    {"throttle", &G::has_throttle},
	    {"temperature", &G::has_temp},
	    {"power", &G::has_power},
	    {"memory", &G::has_memory},
	    {"persistence", &G::has_persistence},
	    {"processes", &G::has_processes},
	    {"ecc_corrected", &G::has_ecc_corrected},
	    {"remapped_rows", &G::has_remapped},
	    {"nvlink_errors", &G::has_nvlink_errors},
	    {"host_copy", &G::has_host_copy}};
	d->unmeasured = r.str_list(g, path, "unmeasured", false);
	for (const auto &u : d->unmeasured) {
		std::string part = u.substr(0, u.find(": "));
		bool known = part == "pcie";
		if (known) {
			d->pcie.measured = false;
			d->pcie.why = u;
		}
		for (const auto &p : parts)
			if (part == p.first) {
				d->*p.second = false;
				known = true;
			}
		if (!known) {
			r.error(JsonReader::join(path, "unmeasured"),
			        "'" + u.substr(0, 64) + "' names no part (\"<part>: why\")");
			return;
		}
	}
}

void parse_nic(JsonReader &r, const json_t *n, const std::string &path, Profile::Nic *out)
{
	if (!r.expect_object(n, path))
		return;
	r.only_keys(n, path, {"name", "mac", "fw_ver", "ports", "pcie"});
	out->info.name = r.str(n, path, "name");
	pcie_of(r, n, path, &out->pcie_gen, &out->pcie_width);
	out->info.mac = r.str_or(n, path, "mac", "");
	out->info.fw_ver = r.str_or(n, path, "fw_ver", "");
	const json_t *ports = r.arr(n, path, "ports", false);
	if (!ports)
		return;
	size_t i;
	const json_t *p;
	json_array_foreach(ports, i, p)
	{
		std::string pp = JsonReader::index(JsonReader::join(path, "ports"), i);
		if (!r.expect_object(p, pp))
			return;
		r.only_keys(p, pp,
		            {"port", "state", "phys_state", "link_layer", "rate_gbps", "rate",
		             "link_downed", "link_downed_after", "counters", "counters_after",
		             "active_mtu", "rail_busbw_gbs"});
		Profile::Port port;
		port.port =
		    static_cast<int>(r.integer_or(p, pp, "port", static_cast<int64_t>(i) + 1));
		port.state = r.str_or(p, pp, "state", port.state);
		port.phys_state = r.str_or(p, pp, "phys_state", port.phys_state);
		port.link_layer = r.str_or(p, pp, "link_layer", port.link_layer);
		port.rate_gbps = r.num(p, pp, "rate_gbps");
		port.rate_text = r.str_or(p, pp, "rate", "");
		port.link_downed = nonneg_int(r, p, pp, "link_downed", 0);
		port.link_downed_after =
		    nonneg_int(r, p, pp, "link_downed_after", port.link_downed);
		parse_counter_map(r, r.obj(p, pp, "counters", false),
		                  JsonReader::join(pp, "counters"), fabric_error_counters(),
		                  &port.counters);
		port.counters_after = port.counters;
		parse_counter_map(r, r.obj(p, pp, "counters_after", false),
		                  JsonReader::join(pp, "counters_after"), fabric_error_counters(),
		                  &port.counters_after);
		port.active_mtu = static_cast<int>(nonneg_int(r, p, pp, "active_mtu", 4096));
		port.rail_busbw_gbs = r.num_or(p, pp, "rail_busbw_gbs", -1);
		if (!r.failed() && json_object_get(p, "rail_busbw_gbs") && port.rail_busbw_gbs < 0)
			r.error(JsonReader::join(pp, "rail_busbw_gbs"), "must not be negative");
		out->ports.push_back(port);
	}
}

} // namespace

Result<Profile> parse_profile(const std::string &text, const std::string &origin)
{
	auto doc = json_parse(text, origin);
	if (!doc.ok())
		return doc.status();
	const json_t *j = doc->get();
	JsonReader r(origin);
	Profile p;
	p.path = origin;
	if (!r.expect_object(j, ""))
		return r.status();
	r.only_keys(j, "",
	            {"sku", "description", "gpus", "nics", "sysfs_root", "versions", "xids", "nccl",
	             "pair_busbw_gbs", "rail_busbw_gbs", "hang", "delay_s"});
	p.sku = r.str(j, "", "sku");
	r.str_or(j, "", "description", "");
	if (const json_t *gpus = r.arr(j, "", "gpus")) {
		size_t i;
		const json_t *g;
		json_array_foreach(gpus, i, g)
		{
			Profile::Gpu gpu;
			parse_gpu(r, g, JsonReader::index("gpus", i), static_cast<int>(i), &gpu);
			p.gpus.push_back(gpu);
		}
	}
	if (const json_t *nics = r.arr(j, "", "nics", false)) {
		size_t i;
		const json_t *n;
		json_array_foreach(nics, i, n)
		{
			Profile::Nic nic;
			parse_nic(r, n, JsonReader::index("nics", i), &nic);
			p.nics.push_back(nic);
		}
	}
	p.sysfs_root = resolve(r.str_or(j, "", "sysfs_root", ""), origin);
	if (const json_t *v = r.obj(j, "", "versions", false)) {
		const char *k;
		const json_t *x;
		json_object_foreach(const_cast<json_t *>(v), k, x)
		{
			const auto &known = version_components();
			if (std::find(known.begin(), known.end(), k) == known.end()) {
				r.error(JsonReader::join("versions", k), "unknown component");
				break;
			}
			p.versions[k] = r.str(v, "versions", k);
		}
	}
	if (const json_t *xs = r.arr(j, "", "xids", false)) {
		size_t i;
		const json_t *x;
		json_array_foreach(xs, i, x)
		{
			std::string xp = JsonReader::index("xids", i);
			if (!r.expect_object(x, xp))
				break;
			r.only_keys(x, xp, {"xid", "gpu", "age_s"});
			XidEvent e;
			e.xid = static_cast<int>(r.integer(x, xp, "xid"));
			e.gpu = r.str(x, xp, "gpu");
			e.age_s = r.num(x, xp, "age_s");
			if (!r.failed() && (e.xid < 1 || e.age_s < 0))
				r.error(xp, "xid must be positive and age_s not negative");
			p.xids.push_back(e);
		}
	}
	if (const json_t *n = r.obj(j, "", "nccl", false)) {
		r.only_keys(n, "nccl", {"busbw_gbs", "corrupt"});
		if (const json_t *a = r.arr(n, "nccl", "busbw_gbs")) {
			size_t i;
			const json_t *v;
			json_array_foreach(a, i, v)
			{
				if (!json_is_number(v) || json_number_value(v) < 0) {
					r.error(JsonReader::index("nccl.busbw_gbs", i),
					        "expected a non-negative number");
					break;
				}
				p.nccl_busbw_gbs.push_back(json_number_value(v));
			}
			if (!r.failed() && p.nccl_busbw_gbs.empty())
				r.error("nccl.busbw_gbs", "needs at least one sample");
		}
		p.nccl_corrupt = r.boolean_or(n, "nccl", "corrupt", false);
	}
	p.pair_busbw_gbs = r.num_or(j, "", "pair_busbw_gbs", 0);
	p.rail_busbw_gbs = r.num_or(j, "", "rail_busbw_gbs", p.pair_busbw_gbs);
	if (!r.failed() && (p.pair_busbw_gbs < 0 || p.rail_busbw_gbs < 0))
		r.error("pair_busbw_gbs", "pair_busbw_gbs and rail_busbw_gbs must not be negative");
	if (const json_t *h = r.obj(j, "", "hang", false)) {
		r.only_keys(h, "hang", {"check", "pid_file"});
		p.hang_check = r.str(h, "hang", "check");
		if (!r.failed() && !is_check_name(p.hang_check))
			r.error("hang.check", "'" + p.hang_check + "' is not a check name");
		p.hang_pid_file = resolve(r.str_or(h, "hang", "pid_file", ""), origin);
	}
	if (const json_t *d = r.obj(j, "", "delay_s", false)) {
		const char *k;
		const json_t *x;
		json_object_foreach(const_cast<json_t *>(d), k, x)
		{
			std::string dp = JsonReader::join("delay_s", k);
			if (!is_check_name(k)) {
				r.error(dp, "not a check name");
				break;
			}
			if (!json_is_number(x) || json_number_value(x) < 0 ||
			    json_number_value(x) > 3600) {
				r.error(dp, "expected seconds in [0, 3600]");
				break;
			}
			p.delay_s[k] = json_number_value(x);
		}
	}
	if (r.failed())
		return r.status();
	return p;
}

Result<Profile> load_profile(const std::string &path)
{
	auto text = read_file(path, 4u << 20);
	if (!text.ok())
		return Status::Error("sim profile: " + text.status().message());
	return parse_profile(text.value(), path);
}

std::string profile_path(const std::string &dir, const std::string &node)
{
	std::string own = dir + "/" + node + ".json";
	if (access(own.c_str(), F_OK) == 0)
		return own;
	return dir + "/default.json";
}

namespace {

class SimBackend : public Backend {
public:
	SimBackend(Profile p, std::string dir, std::string node)
	    : p_(std::move(p)), dir_(std::move(dir)), node_(std::move(node))
	{}
	const char *name() const override { return "sim"; }
	bool simulated() const override { return true; }

	void enter_check(const std::string &check) override
	{
		auto d = p_.delay_s.find(check);
		if (d != p_.delay_s.end())
			sleep_s(d->second);
		if (check != p_.hang_check)
			return;
		// A hung check with a helper process, as a real hung NCCL run
		// has: both must be killed by the runner.
		pid_t helper = fork();
		if (helper == 0) {
			// Named so tests can look for it: "onramp-sim-hang".
			execlp("sleep", "onramp-sim-hang", "1000000", static_cast<char *>(nullptr));
			for (;;)
				pause();
		}
		if (!p_.hang_pid_file.empty())
			write_file_atomic(p_.hang_pid_file,
			                  strprintf("%d %d\n", static_cast<int>(getpid()),
			                            static_cast<int>(helper)));
		for (;;)
			pause();
	}

	Result<Inventory> inventory() override
	{
		Inventory inv;
		inv.sku = p_.sku;
		for (const auto &g : p_.gpus)
			inv.gpus.push_back(g.info);
		if (!p_.sysfs_root.empty()) {
			inv.nics = read_ib_nics(p_.sysfs_root);
		} else {
			for (const auto &n : p_.nics)
				inv.nics.push_back(n.info);
		}
		return inv;
	}

	Result<VersionsObs> versions() override
	{
		VersionsObs v;
		v.versions = p_.versions;
		auto inv = inventory();
		for (const auto &n : inv->nics)
			if (!n.fw_ver.empty())
				v.firmware[n.name] = n.fw_ver;
		return v;
	}

	Result<GpuHealthObs> gpu_health(double window) override
	{
		GpuHealthObs h;
		for (const auto &g : p_.gpus) {
			GpuHealthObs::Gpu o;
			o.index = g.info.index;
			o.pci = g.info.pci;
			o.ecc_uncorrected = g.ecc_uncorrected;
			o.remap_pending = g.remap_pending;
			o.remap_failed = g.remap_failed;
			o.nvlink_links = g.nvlink_links;
			o.nvlink_down = g.nvlink_down;
			h.gpus.push_back(o);
		}
		for (const auto &x : p_.xids)
			if (x.age_s <= window)
				h.xids.push_back(x);
		return h;
	}

	Result<MemBwObs> mem_bw(uint64_t, int) override
	{
		MemBwObs v;
		for (const auto &g : p_.gpus)
			v.gbs.push_back(g.mem_bw_gbs);
		return v;
	}

	Result<NcclRun> nccl_allreduce(uint64_t bytes, int, int iterations, int best_of) override
	{
		if (p_.nccl_busbw_gbs.empty())
			return Status::Error(p_.path + ": no nccl.busbw_gbs to simulate from");
		NcclRun run;
		run.nranks = static_cast<int>(p_.gpus.size());
		run.bytes = bytes;
		run.iterations = iterations;
		for (int i = 0; i < best_of; i++) {
			size_t k = std::min(static_cast<size_t>(i), p_.nccl_busbw_gbs.size() - 1);
			NcclSample s;
			s.seconds = allreduce_seconds_for(bytes, p_.nccl_busbw_gbs[k], run.nranks);
			s.wrong = p_.nccl_corrupt ? 1024 : 0;
			run.samples.push_back(s);
		}
		return run;
	}

	Result<FabricObs> fabric(double interval_s) override
	{
		FabricObs f;
		f.interval_s = interval_s;
		if (!p_.sysfs_root.empty()) {
			f.source = "sysfs:" + p_.sysfs_root;
			auto a = read_ib_ports(p_.sysfs_root);
			if (!a.ok())
				return a.status();
			sleep_s(interval_s);
			auto b = read_ib_ports(p_.sysfs_root);
			if (!b.ok())
				return b.status();
			f.first = a.value();
			f.second = b.value();
			return f;
		}
		f.source = "profile";
		for (const auto &n : p_.nics)
			for (const auto &port : n.ports) {
				PortObs o;
				o.dev = n.info.name;
				o.port = port.port;
				o.state = port.state;
				o.phys_state = port.phys_state;
				o.rate = port.rate_text.empty()
				             ? strprintf("%g Gb/sec", port.rate_gbps)
				             : port.rate_text;
				o.link_layer = port.link_layer;
				o.has_link_downed = true;
				o.link_downed = port.link_downed;
				o.active_mtu = port.active_mtu;
				o.counters = port.counters;
				o.counters["link_downed"] = static_cast<uint64_t>(port.link_downed);
				f.first.push_back(o);
				o.link_downed = port.link_downed_after;
				o.counters = port.counters_after;
				o.counters["link_downed"] =
				    static_cast<uint64_t>(port.link_downed_after);
				f.second.push_back(o);
			}
		return f;
	}

	Result<GpuDepthObs> gpu_depth(double load_s) override
	{
		GpuDepthObs o;
		o.load_s = load_s;
		o.load = "simulated (no load applied)";
		for (const auto &g : p_.gpus) {
			GpuDepthObs::Gpu d = g.depth;
			d.index = g.info.index;
			d.pci = g.info.pci;
			o.gpus.push_back(d);
		}
		if (!p_.sysfs_root.empty()) {
			o.hcas = read_hca_pcie(p_.sysfs_root);
		} else {
			for (const auto &n : p_.nics) {
				GpuDepthObs::Hca h;
				h.dev = n.info.name;
				h.pcie.measured = true;
				h.pcie.gen = n.pcie_gen;
				h.pcie.width = n.pcie_width;
				h.pcie.speed_gts = gen_speed_gts(n.pcie_gen);
				o.hcas.push_back(h);
			}
		}
		return o;
	}

	Result<TopologyObs> topology() override
	{
		TopologyObs t;
		for (const auto &g : p_.gpus)
			t.gpus.push_back(
			    TopologyObs::Gpu{g.info.index, g.info.pci, g.numa, g.nearest_nic});
		return t;
	}

	// The all-GPU run: as slow as the slowest part of either node (the
	// node's figure, any GPU's own figure), times the link faults.
	Result<PairObs> pair_busbw(const std::string &peer) override
	{
		auto pp = load_profile(profile_path(dir_, peer));
		if (!pp.ok())
			return Status::Error("peer " + peer + ": " + pp.status().message());
		PairObs o;
		o.measured = true;
		o.nranks = static_cast<int>(p_.gpus.size() + pp->gpus.size());
		o.busbw_gbs = std::min(p_.pair_busbw_gbs, pp->pair_busbw_gbs);
		for (const auto *side : {&p_, &pp.value()})
			for (const auto &g : side->gpus)
				if (g.pair_busbw_gbs >= 0 && g.pair_busbw_gbs < o.busbw_gbs) {
					o.busbw_gbs = g.pair_busbw_gbs;
					o.note =
					    strprintf("slowest: %s GPU %d",
					              side == &p_ ? node_.c_str() : peer.c_str(),
					              g.info.index);
				}
		auto link = sim_fabric_factor(dir_, node_, peer); // link-level faults
		if (!link.ok())
			return link.status();
		o.busbw_gbs *= link.value();
		o.samples = {o.busbw_gbs};
		return o;
	}

	// Rail g: GPU g of both nodes over each one's affine HCA (the GPU's
	// nearest_nic, its first port), as slow as the slower port's
	// rail_busbw_gbs (else the profile's), times the link faults.
	Result<std::vector<RailObs>> pair_rails(const std::string &peer) override
	{
		auto pp = load_profile(profile_path(dir_, peer));
		if (!pp.ok())
			return Status::Error("peer " + peer + ": " + pp.status().message());
		auto link = sim_fabric_factor(dir_, node_, peer);
		if (!link.ok())
			return link.status();
		std::vector<RailObs> out;
		for (size_t i = 0; i < p_.gpus.size(); i++) {
			RailObs r;
			r.gpu = p_.gpus[i].info.index;
			r.hca = p_.gpus[i].nearest_nic;
			double mine = rail_figure(p_, p_.gpus[i], &r.port);
			if (r.hca.empty() || i >= pp->gpus.size()) {
				r.why = r.hca.empty()
				            ? strprintf("GPU %d has no affine HCA", r.gpu)
				            : peer + " has no GPU " + std::to_string(r.gpu);
				out.push_back(r);
				continue;
			}
			int peer_port = 1;
			double theirs = rail_figure(pp.value(), pp->gpus[i], &peer_port);
			r.measured = true;
			r.busbw_gbs = std::min(mine, theirs) * link.value();
			r.wrong = p_.nccl_corrupt || pp->nccl_corrupt ? 1024 : 0;
			out.push_back(r);
		}
		return out;
	}

private:
	// A GPU's rail figure: its nearest NIC's first port's rail_busbw_gbs,
	// else the profile's; *port: that port's number.
	static double rail_figure(const Profile &p, const Profile::Gpu &g, int *port)
	{
		for (const auto &n : p.nics)
			if (n.info.name == g.nearest_nic && !n.ports.empty()) {
				*port = n.ports.front().port;
				if (n.ports.front().rail_busbw_gbs >= 0)
					return n.ports.front().rail_busbw_gbs;
			}
		return p.rail_busbw_gbs;
	}

	Profile p_;
	std::string dir_, node_;
};

} // namespace

std::unique_ptr<Backend> make_sim_backend(Profile profile, const std::string &dir,
                                          const std::string &node)
{
	return std::unique_ptr<Backend>(new SimBackend(std::move(profile), dir, node));
}

} // namespace admit
} // namespace onramp
