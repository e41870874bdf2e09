#include "admit/baseline.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdlib>

#include "admit/host.hpp"
#include "admit/record.hpp"
#include "admit/verdict.hpp"
#include "atomic_file.hpp"
#include "json.hpp"
#include "log.hpp"

namespace onramp {
namespace admit {

const std::vector<std::string> &version_components()
{
	static const std::vector<std::string> v = {"driver", "vbios",  "cuda_runtime",
	                                           "nccl",   "kernel", "slurm"};
	return v;
}

const std::vector<int> &default_critical_xids()
{
	static const std::vector<int> v = {48, 56, 57, 58, 62, 63, 64, 65,  68,
	                                   69, 73, 74, 79, 80, 81, 92, 119, 120};
	return v;
}

double Baseline::nccl_threshold_gbs(const Config &cfg) const
{
	double f = nccl_fraction > 0 ? nccl_fraction : cfg.number("NcclBusBwFraction");
	return f * peak_nccl_busbw_gbs;
}

double Baseline::mem_bw_threshold_gbs(const Config &cfg) const
{
	double f = mem_bw_fraction > 0 ? mem_bw_fraction : cfg.number("MemBwFraction");
	return f * peak_mem_bw_gbs;
}

double Baseline::pair_threshold_gbs(const Config &cfg) const
{
	if (pair_min_gbs > 0)
		return pair_min_gbs;
	double f = nccl_fraction > 0 ? nccl_fraction : cfg.number("NcclBusBwFraction");
	return f * peak_pair_busbw_gbs;
}

double Baseline::rail_threshold_gbs(const Config &cfg) const
{
	if (peak_rail_busbw_gbs <= 0)
		return 0;
	if (rail_min_gbs > 0)
		return rail_min_gbs;
	double f = nccl_fraction > 0 ? nccl_fraction : cfg.number("NcclBusBwFraction");
	return f * peak_rail_busbw_gbs;
}

int64_t Baseline::timeout_s(const Config &cfg, const std::string &check) const
{
	auto it = timeouts.find(check);
	if (it != timeouts.end())
		return it->second;
	int64_t t = cfg.seconds("CheckTimeout");
	if (check == "dcgm")
		t = std::max<int64_t>(t, cfg.seconds("DcgmTimeout") + 60);
	if (check == "host")
		t = std::max<int64_t>(t, 2 * cfg.seconds("AdmissionIoTimeout") + 60);
	return t;
}

bool Baseline::is_critical_xid(int xid) const
{
	for (int x : critical_xids)
		if (x == xid)
			return true;
	return false;
}

namespace {

// A positive number at obj.key (required or optional with def).
double positive(JsonReader &r, const json_t *o, const std::string &path, const char *key,
                bool required, double def)
{
	double v = required ? r.num(o, path, key) : r.num_or(o, path, key, def);
	if (!r.failed() && (required || json_object_get(o, key)) && !(v > 0))
		r.error(JsonReader::join(path, key), "must be a positive number");
	return v;
}

double fraction(JsonReader &r, const json_t *o, const std::string &path, const char *key)
{
	if (!o || !json_object_get(o, key))
		return -1;
	double v = r.num(o, path, key);
	if (!r.failed() && !(v > 0 && v <= 1))
		r.error(JsonReader::join(path, key), "must be in (0, 1]");
	return v;
}

int positive_int(JsonReader &r, const json_t *o, const std::string &path, const char *key, int def,
                 int max)
{
	int64_t v = r.integer_or(o, path, key, def);
	if (!r.failed() && (v < 1 || v > max)) {
		r.error(JsonReader::join(path, key), strprintf("must be in [1, %d]", max));
		return def;
	}
	return static_cast<int>(v);
}

void string_map(JsonReader &r, const json_t *o, const std::string &path,
                std::map<std::string, std::string> *out)
{
	if (!o)
		return;
	const char *k;
	const json_t *v;
	json_object_foreach(const_cast<json_t *>(o), k, v)
	{
		if (!json_is_string(v)) {
			r.error(JsonReader::join(path, k), "expected a string");
			return;
		}
		(*out)[k] = json_string_value(v);
	}
}

// An integer in [lo, hi] at obj.key, def when absent.
int64_t int_in(JsonReader &r, const json_t *o, const std::string &path, const char *key,
               int64_t def, int64_t lo, int64_t hi)
{
	int64_t v = r.integer_or(o, path, key, def);
	if (!r.failed() && o && json_object_get(o, key) && (v < lo || v > hi)) {
		r.error(JsonReader::join(path, key),
		        strprintf("must be in [%lld, %lld]", static_cast<long long>(lo),
		                  static_cast<long long>(hi)));
		return def;
	}
	return v;
}

} // namespace

void parse_counter_map(JsonReader &r, const json_t *o, const std::string &path,
                       const std::vector<std::string> &known, std::map<std::string, uint64_t> *out)
{
	if (!o)
		return;
	const char *k;
	const json_t *v;
	json_object_foreach(const_cast<json_t *>(o), k, v)
	{
		std::string p = JsonReader::join(path, k);
		if (std::find(known.begin(), known.end(), k) == known.end()) {
			std::string names;
			for (const auto &n : known)
				names += (names.empty() ? "" : ", ") + n;
			r.error(p, "unknown counter (" + names + ")");
			return;
		}
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			r.error(p, "expected a non-negative integer");
			return;
		}
		(*out)[k] = static_cast<uint64_t>(json_integer_value(v));
	}
}

namespace {

void parse_gpu_depth(JsonReader &r, const json_t *g, Baseline::GpuDepth *d)
{
	const std::string P = "gpu_depth";
	r.only_keys(g, P,
	            {"load_s", "min_sm_clock_mhz", "max_temp_c", "max_power_w", "memory_mib",
	             "persistence", "foreign_processes", "max_ecc_corrected", "max_remapped_rows",
	             "pcie", "nvlink_errors", "throttle_fail", "min_h2d_gbs", "min_d2h_gbs"});
	d->present = true;
	if (json_object_get(g, "load_s")) {
		d->load_s = r.num(g, P, "load_s");
		if (!r.failed() && !(d->load_s >= 1 && d->load_s <= 3600))
			r.error("gpu_depth.load_s", "must be in [1, 3600] seconds");
	}
	d->min_sm_clock_mhz =
	    static_cast<unsigned>(int_in(r, g, P, "min_sm_clock_mhz", 0, 1, 10000));
	d->max_temp_c = static_cast<unsigned>(int_in(r, g, P, "max_temp_c", 0, 1, 200));
	d->max_power_w = r.num_or(g, P, "max_power_w", 0);
	if (!r.failed() && json_object_get(g, "max_power_w") && !(d->max_power_w > 0))
		r.error("gpu_depth.max_power_w", "must be a positive number");
	const std::pair<const char *, double *> copies[] = {{"min_h2d_gbs", &d->min_h2d_gbs},
	                                                    {"min_d2h_gbs", &d->min_d2h_gbs}};
	for (const auto &c : copies) {
		*c.second = r.num_or(g, P, c.first, 0);
		if (!r.failed() && json_object_get(g, c.first) &&
		    !(*c.second > 0 && *c.second < 10000))
			r.error(JsonReader::join(P, c.first), "must be a positive number of GB/s");
	}
	d->memory_mib =
	    static_cast<uint64_t>(int_in(r, g, P, "memory_mib", 0, 1, int64_t(1) << 30));
	d->persistence = r.boolean_or(g, P, "persistence", false);
	d->foreign_processes = r.boolean_or(g, P, "foreign_processes", true);
	d->max_ecc_corrected = int_in(r, g, P, "max_ecc_corrected", -1, 0, INT64_MAX);
	d->max_remapped_rows = int_in(r, g, P, "max_remapped_rows", -1, 0, 1 << 20);
	if (const json_t *p = r.obj(g, P, "pcie", false)) {
		const std::string PP = "gpu_depth.pcie";
		r.only_keys(p, PP, {"gpu_gen", "gpu_width", "hca_gen", "hca_width"});
		d->gpu_pcie_gen = static_cast<int>(int_in(r, p, PP, "gpu_gen", 0, 1, 6));
		d->gpu_pcie_width = static_cast<int>(int_in(r, p, PP, "gpu_width", 0, 1, 32));
		d->hca_pcie_gen = static_cast<int>(int_in(r, p, PP, "hca_gen", 0, 1, 6));
		d->hca_pcie_width = static_cast<int>(int_in(r, p, PP, "hca_width", 0, 1, 32));
	}
	parse_counter_map(r, r.obj(g, P, "nvlink_errors", false), "gpu_depth.nvlink_errors",
	                  nvlink_error_counters(), &d->nvlink_errors);
	if (const json_t *t = r.arr(g, P, "throttle_fail", false)) {
		d->throttle_fail_mask = 0;
		size_t i;
		const json_t *e;
		json_array_foreach(t, i, e)
		{
			uint64_t bit =
			    json_is_string(e) ? throttle_reason_bit(json_string_value(e)) : 0;
			if (!bit) {
				r.error(JsonReader::index("gpu_depth.throttle_fail", i),
				        "expected a throttle reason (sw_power_cap, hw_slowdown, "
				        "sw_thermal, hw_thermal, hw_power_brake)");
				return;
			}
			d->throttle_fail_mask |= bit;
		}
	}
}

} // namespace

const std::vector<std::string> &fabric_error_counters()
{
	static const std::vector<std::string> v = {"symbol_error",
	                                           "link_error_recovery",
	                                           "link_downed",
	                                           "port_rcv_errors",
	                                           "port_rcv_remote_physical_errors",
	                                           "port_rcv_switch_relay_errors",
	                                           "port_xmit_discards",
	                                           "port_xmit_constraint_errors",
	                                           "port_rcv_constraint_errors",
	                                           "local_link_integrity_errors",
	                                           "excessive_buffer_overrun_errors",
	                                           "VL15_dropped"};
	return v;
}

const std::vector<std::string> &nvlink_error_counters()
{
	static const std::vector<std::string> v = {"replay", "recovery", "crc_flit", "crc_data"};
	return v;
}

uint64_t throttle_reason_bit(const std::string &name)
{
	static const std::vector<std::pair<const char *, uint64_t>> m = {{"sw_power_cap", 0x4},
	                                                                 {"hw_slowdown", 0x8},
	                                                                 {"sw_thermal", 0x20},
	                                                                 {"hw_thermal", 0x40},
	                                                                 {"hw_power_brake", 0x80}};
	for (const auto &kv : m)
		if (name == kv.first)
			return kv.second;
	return 0;
}

std::string throttle_reason_names(uint64_t bits)
{
	static const std::vector<std::pair<const char *, uint64_t>> m = {
	    {"idle", 0x1},        {"app_clocks", 0x2},      {"sw_power_cap", 0x4},
	    {"hw_slowdown", 0x8}, {"sync_boost", 0x10},     {"sw_thermal", 0x20},
	    {"hw_thermal", 0x40}, {"hw_power_brake", 0x80}, {"display_clocks", 0x100}};
	std::string out;
	uint64_t rest = bits;
	for (const auto &kv : m)
		if (bits & kv.second) {
			out += (out.empty() ? "" : ",") + std::string(kv.first);
			rest &= ~kv.second;
		}
	if (rest)
		out += (out.empty() ? "" : ",") +
		       strprintf("0x%llx", static_cast<unsigned long long>(rest));
	return out.empty() ? "none" : out;
}

Result<Baseline> parse_baseline(const std::string &text, const std::string &origin)
{
	auto doc = json_parse(text, origin);
	if (!doc.ok())
		return doc.status();
	const json_t *j = doc->get();
	JsonReader r(origin);
	Baseline b;
	b.path = origin;
	b.digest = sha256_hex(text);
	if (!r.expect_object(j, ""))
		return r.status();
	r.only_keys(j, "",
	            {"sku", "description", "gpu_count", "gpu_model", "versions", "firmware", "peak",
	             "thresholds", "nccl", "mem_bw", "critical_xids", "fabric", "affinity",
	             "timeouts", "nvlink", "gpu_depth", "host"});
	r.str_or(j, "", "description", "");
	b.sku = r.str(j, "", "sku");
	if (!json_object_get(j, "gpu_count"))
		r.error("gpu_count", "missing");
	b.gpu_count = positive_int(r, j, "", "gpu_count", 1, 1024);
	b.gpu_model = r.str(j, "", "gpu_model");

	const json_t *v = r.obj(j, "", "versions", false);
	if (v) {
		const char *k;
		const json_t *x;
		json_object_foreach(const_cast<json_t *>(v), k, x)
		{
			bool known = false;
			for (const auto &c : version_components())
				known = known || c == k;
			if (!known)
				r.error(JsonReader::join("versions", k),
				        "unknown component (driver, vbios, cuda_runtime, nccl, "
				        "kernel, slurm)");
		}
		string_map(r, v, "versions", &b.versions);
	}
	string_map(r, r.obj(j, "", "firmware", false), "firmware", &b.firmware);

	const json_t *peak = r.obj(j, "", "peak");
	r.only_keys(peak, "peak",
	            {"mem_bw_gbs", "nccl_busbw_gbs", "pair_busbw_gbs", "rail_busbw_gbs"});
	b.peak_mem_bw_gbs = positive(r, peak, "peak", "mem_bw_gbs", true, 0);
	b.peak_nccl_busbw_gbs = positive(r, peak, "peak", "nccl_busbw_gbs", true, 0);
	b.peak_pair_busbw_gbs = positive(r, peak, "peak", "pair_busbw_gbs", true, 0);
	b.peak_rail_busbw_gbs = positive(r, peak, "peak", "rail_busbw_gbs", false, 0);

	const json_t *th = r.obj(j, "", "thresholds", false);
	r.only_keys(th, "thresholds",
	            {"nccl_fraction", "mem_bw_fraction", "pair_min_gbs", "rail_min_gbs"});
	b.nccl_fraction = fraction(r, th, "thresholds", "nccl_fraction");
	b.mem_bw_fraction = fraction(r, th, "thresholds", "mem_bw_fraction");
	if (th && json_object_get(th, "pair_min_gbs"))
		b.pair_min_gbs = positive(r, th, "thresholds", "pair_min_gbs", true, 0);
	if (th && json_object_get(th, "rail_min_gbs"))
		b.rail_min_gbs = positive(r, th, "thresholds", "rail_min_gbs", true, 0);
	if (!r.failed() && b.rail_min_gbs > 0 && b.peak_rail_busbw_gbs <= 0)
		r.error("thresholds.rail_min_gbs", "needs peak.rail_busbw_gbs (the per-rail pass)");

	if (const json_t *n = r.obj(j, "", "nccl", false)) {
		r.only_keys(n, "nccl", {"bytes", "iterations", "warmup", "best_of"});
		int64_t bytes =
		    r.integer_or(n, "nccl", "bytes", static_cast<int64_t>(b.nccl_bytes));
		if (!r.failed() && (bytes < 1024 || bytes > (int64_t(1) << 40) || bytes % 4))
			r.error("nccl.bytes", "must be a multiple of 4 in [1 KiB, 1 TiB]");
		b.nccl_bytes = static_cast<uint64_t>(bytes);
		b.nccl_iterations =
		    positive_int(r, n, "nccl", "iterations", b.nccl_iterations, 100000);
		b.nccl_warmup = static_cast<int>(r.integer_or(n, "nccl", "warmup", b.nccl_warmup));
		if (!r.failed() && (b.nccl_warmup < 0 || b.nccl_warmup > 10000))
			r.error("nccl.warmup", "must be in [0, 10000]");
		b.nccl_best_of = positive_int(r, n, "nccl", "best_of", b.nccl_best_of, 100);
	}
	if (const json_t *m = r.obj(j, "", "mem_bw", false)) {
		r.only_keys(m, "mem_bw", {"bytes", "iterations"});
		int64_t bytes =
		    r.integer_or(m, "mem_bw", "bytes", static_cast<int64_t>(b.mem_bw_bytes));
		if (!r.failed() && (bytes < 1024 || bytes > (int64_t(1) << 40)))
			r.error("mem_bw.bytes", "must be in [1 KiB, 1 TiB]");
		b.mem_bw_bytes = static_cast<uint64_t>(bytes);
		b.mem_bw_iterations =
		    positive_int(r, m, "mem_bw", "iterations", b.mem_bw_iterations, 100000);
	}

	if (const json_t *x = r.arr(j, "", "critical_xids", false)) {
		size_t i;
		const json_t *e;
		json_array_foreach(x, i, e)
		{
			if (!json_is_integer(e) || json_integer_value(e) < 1) {
				r.error(JsonReader::index("critical_xids", i),
				        "expected a positive integer");
				break;
			}
			b.critical_xids.push_back(static_cast<int>(json_integer_value(e)));
		}
	} else {
		b.critical_xids = default_critical_xids();
	}

	if (const json_t *f = r.obj(j, "", "fabric", false)) {
		r.only_keys(f, "fabric",
		            {"ports", "min_rate_gbps", "flap_interval_s", "width", "min_mtu",
		             "counter_limits"});
		int64_t ports = r.integer_or(f, "fabric", "ports", 0);
		if (!r.failed() && (ports < 0 || ports > 1024))
			r.error("fabric.ports", "must be in [0, 1024]");
		b.fabric_ports = static_cast<int>(ports);
		b.fabric_min_rate_gbps = r.num_or(f, "fabric", "min_rate_gbps", 0);
		if (!r.failed() && b.fabric_min_rate_gbps < 0)
			r.error("fabric.min_rate_gbps", "must not be negative");
		b.fabric_flap_interval_s = r.num_or(f, "fabric", "flap_interval_s", 2);
		if (!r.failed() &&
		    !(b.fabric_flap_interval_s >= 0 && b.fabric_flap_interval_s <= 600))
			r.error("fabric.flap_interval_s", "must be in [0, 600]");
		b.fabric_width = static_cast<int>(int_in(r, f, "fabric", "width", 0, 1, 32));
		b.fabric_min_mtu =
		    static_cast<int>(int_in(r, f, "fabric", "min_mtu", 0, 256, 65536));
		parse_counter_map(r, r.obj(f, "fabric", "counter_limits", false),
		                  "fabric.counter_limits", fabric_error_counters(),
		                  &b.fabric_counter_limits);
	}

	if (const json_t *n = r.obj(j, "", "nvlink", false)) {
		r.only_keys(n, "nvlink", {"mask", "active_links"});
		std::string mask = r.str_or(n, "nvlink", "mask", "");
		if (!mask.empty()) {
			char *end = nullptr;
			errno = 0;
			unsigned long long m = strtoull(mask.c_str(), &end, 16);
			if (mask.compare(0, 2, "0x") != 0 || mask.size() < 3 || mask.size() > 18 ||
			    *end || errno || m == 0)
				r.error("nvlink.mask",
				        "expected a non-zero hex bit mask such as "
				        "\"0x3ffff\" (bit n: link n must be active)");
			b.nvlink_mask = m;
		}
		b.nvlink_active_links =
		    static_cast<int>(int_in(r, n, "nvlink", "active_links", -1, 0, 64));
	}
	if (const json_t *g = r.obj(j, "", "gpu_depth", false))
		parse_gpu_depth(r, g, &b.gpu_depth);
	if (const json_t *h = r.obj(j, "", "host", false)) {
		r.only_keys(h, "host", {"cmdline", "sysctl", "ckpt_write_gbs", "ckpt_read_gbs"});
		if (const json_t *c = r.arr(h, "host", "cmdline", false)) {
			size_t i;
			const json_t *e;
			json_array_foreach(c, i, e)
			{
				if (!json_is_string(e) || !*json_string_value(e) ||
				    strpbrk(json_string_value(e), " \t\n")) {
					r.error(JsonReader::index("host.cmdline", i),
					        "expected one command line token (no blanks)");
					break;
				}
				b.host_cmdline.push_back(json_string_value(e));
			}
		}
		string_map(r, r.obj(h, "host", "sysctl", false), "host.sysctl", &b.host_sysctl);
		for (const auto &kv : b.host_sysctl) {
			auto p = sysctl_path(kv.first);
			if (!p.ok()) {
				r.error(JsonReader::join("host.sysctl", kv.first.c_str()),
				        p.status().message());
				break;
			}
		}
		if (json_object_get(h, "ckpt_write_gbs"))
			b.ckpt_write_min_gbs = positive(r, h, "host", "ckpt_write_gbs", true, 0);
		if (json_object_get(h, "ckpt_read_gbs"))
			b.ckpt_read_min_gbs = positive(r, h, "host", "ckpt_read_gbs", true, 0);
	}

	if (const json_t *a = r.obj(j, "", "affinity", false)) {
		const char *k;
		const json_t *e;
		json_object_foreach(const_cast<json_t *>(a), k, e)
		{
			std::string path = JsonReader::join("affinity", k);
			char *end = nullptr;
			long idx = strtol(k, &end, 10);
			if (!*k || *end || idx < 0 || idx >= b.gpu_count) {
				r.error(path, strprintf("key must be a GPU index in [0, %d)",
				                        b.gpu_count));
				break;
			}
			if (!r.expect_object(e, path))
				break;
			r.only_keys(e, path, {"nic", "numa"});
			Baseline::Affinity af;
			af.nic = r.str_or(e, path, "nic", "");
			af.numa = static_cast<int>(r.integer_or(e, path, "numa", -1));
			b.affinity[static_cast<int>(idx)] = af;
		}
	}

	if (const json_t *t = r.obj(j, "", "timeouts", false)) {
		const char *k;
		const json_t *e;
		json_object_foreach(const_cast<json_t *>(t), k, e)
		{
			std::string path = JsonReader::join("timeouts", k);
			std::string name = k;
			bool site = name == kNhc ||
			            (name.compare(0, strlen(kSitePrefix), kSitePrefix) == 0 &&
			             name.size() > strlen(kSitePrefix));
			if (!is_check_name(name) && !site) {
				r.error(path, "not a check name (nor nhc, nor site_<program>)");
				break;
			}
			if (!json_is_integer(e) || json_integer_value(e) < 1 ||
			    json_integer_value(e) > 86400) {
				r.error(path, "expected whole seconds in [1, 86400]");
				break;
			}
			b.timeouts[k] = json_integer_value(e);
		}
	}
	if (r.failed())
		return r.status();
	return b;
}

Result<Baseline> load_baseline(const std::string &path)
{
	auto text = read_file(path, 4u << 20);
	if (!text.ok())
		return Status::Error("baseline: " + text.status().message());
	return parse_baseline(text.value(), path);
}

} // namespace admit
} // namespace onramp
