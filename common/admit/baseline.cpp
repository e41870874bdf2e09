#include "admit/baseline.hpp"

#include <cmath>
#include <cstdlib>

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
	return it != timeouts.end() ? it->second : cfg.seconds("CheckTimeout");
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

} // namespace

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
	             "timeouts"});
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
		r.only_keys(f, "fabric", {"ports", "min_rate_gbps", "flap_interval_s"});
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
			if (!is_check_name(k)) {
				r.error(path, "not a check name");
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
