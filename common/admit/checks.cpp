#include "admit/checks.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "admit/bandwidth.hpp"
#include "admit/dcgm.hpp"
#include "admit/host.hpp"
#include "admit/fabric.hpp"
#include "admit/record.hpp"
#include "log.hpp"

namespace onramp {
namespace admit {

namespace {

CheckResult with_numbers(CheckResult r, double value, double threshold, const char *unit)
{
	r.value = value;
	r.threshold = threshold;
	r.unit = unit;
	return r;
}

std::string join(const std::vector<std::string> &v, const char *sep)
{
	std::string s;
	for (size_t i = 0; i < v.size(); i++)
		s += (i ? sep : "") + v[i];
	return s;
}

// Why no measurement can use the GPUs NVML lists ("" when one can): the
// CUDA runtime sees none of them (CUDA_VISIBLE_DEVICES empty, no usable
// device node, a runtime older than the driver).
std::string cuda_sees_none(const Inventory &inv)
{
	if (inv.gpus.empty() || inv.cuda_devices != 0)
		return "";
	return strprintf("NVML lists %zu GPUs but the CUDA runtime sees none (%s)", inv.gpus.size(),
	                 inv.cuda_error.empty() ? "0 devices" : inv.cuda_error.c_str());
}

// Inventory or "no GPU" for the checks that need GPUs.
Status gpu_gate(CheckContext &ctx)
{
	if (ctx.inventory_known)
		return ctx.no_gpu ? Status::Error(ctx.no_gpu_why) : Status::Ok();
	auto inv = ctx.backend->inventory();
	if (!inv.ok())
		return Status::Error("no GPU: " + inv.status().message());
	if (inv->gpus.empty())
		return Status::Error("no GPU found");
	std::string blind = cuda_sees_none(inv.value());
	if (!blind.empty())
		return Status::Error("no GPU: " + blind);
	return Status::Ok();
}

CheckResult error_result(const std::string &name, const Status &st)
{
	CheckResult r = make_fail(name, code::kCheckError, name + ": " + st.message());
	r.status = CheckStatus::Error;
	return r;
}

// The port counters the node's previous admission recorded (its record's
// verdict, fabric check data); none when there is no readable record.
void previous_port_counters(const Config &cfg, const std::string &node, FabricObs *f)
{
	if (node.empty())
		return;
	auto rec = read_record(record_path(cfg, node));
	if (!rec.ok() || !rec->verdict)
		return;
	const json_t *checks = json_object_get(rec->verdict.get(), "checks");
	size_t i;
	const json_t *c;
	json_array_foreach(checks, i, c)
	{
		const json_t *n = json_object_get(c, "name");
		if (!json_is_string(n) || std::string(json_string_value(n)) != kFabric)
			continue;
		const json_t *ports = json_object_get(json_object_get(c, "data"), "ports");
		size_t k;
		const json_t *p;
		json_array_foreach(ports, k, p)
		{
			const json_t *dev = json_object_get(p, "dev"),
			             *port = json_object_get(p, "port");
			if (!json_is_string(dev) || !json_is_integer(port))
				continue;
			std::string key =
			    strprintf("%s/%lld", json_string_value(dev),
			              static_cast<long long>(json_integer_value(port)));
			const char *cn;
			const json_t *v;
			json_object_foreach(json_object_get(p, "counters"), cn, v)
			{
				if (json_is_integer(v) && json_integer_value(v) >= 0)
					f->previous[key][cn] =
					    static_cast<uint64_t>(json_integer_value(v));
			}
		}
	}
	const json_t *t = json_object_get(rec->verdict.get(), "time");
	if (!f->previous.empty())
		f->previous_time = json_is_string(t) ? json_string_value(t) : rec->time;
}

CheckResult run_inner(const std::string &name, CheckContext &ctx)
{
	const Baseline &b = *ctx.baseline;
	const Config &cfg = *ctx.cfg;
	Backend &be = *ctx.backend;
	if (name == kInventory) {
		auto inv = be.inventory();
		if (!inv.ok())
			return with_numbers(
			    make_fail(name, code::kNoGpu, "no GPU: " + inv.status().message()), 0,
			    b.gpu_count, "gpus");
		return evaluate_inventory(inv.value(), b);
	}
	if (name == kVersions) {
		auto v = be.versions();
		if (!v.ok())
			return error_result(name, v.status());
		return evaluate_versions(v.value(), b);
	}
	if (name == kHost) {
		auto spec = host_spec(cfg, b.host_cmdline, b.host_sysctl, b.ckpt_write_min_gbs,
		                      b.ckpt_read_min_gbs);
		if (!spec.ok())
			return error_result(name, spec.status());
		return evaluate_host(observe_host(spec.value(), cfg, ctx.node), spec.value());
	}
	if (name == kDcgm)
		return evaluate_dcgm(observe_dcgm(cfg, ctx.node), cfg.boolean("DcgmRequired"));
	if (name == kFabric) {
		auto f = be.fabric(b.fabric_flap_interval_s);
		if (!f.ok())
			return error_result(name, f.status());
		previous_port_counters(cfg, ctx.node, &f.value());
		return evaluate_fabric(f.value(), b);
	}
	Status gate = gpu_gate(ctx);
	if (!gate.ok())
		return make_fail(name, code::kNoGpu, gate.message() + "; " + name + " not run");
	if (name == kGpuHealth) {
		double window = static_cast<double>(cfg.seconds("XidWindow"));
		auto h = be.gpu_health(window);
		if (!h.ok())
			return error_result(name, h.status());
		return evaluate_gpu_health(h.value(), b, window);
	}
	if (name == kMemBw) {
		auto bw = be.mem_bw(b.mem_bw_bytes, b.mem_bw_iterations);
		if (!bw.ok())
			return error_result(name, bw.status());
		return evaluate_mem_bw(bw.value(), b.mem_bw_threshold_gbs(cfg), b.peak_mem_bw_gbs);
	}
	if (name == kNcclAllreduce) {
		auto run = be.nccl_allreduce(b.nccl_bytes, b.nccl_warmup, b.nccl_iterations,
		                             b.nccl_best_of);
		if (!run.ok())
			return error_result(name, run.status());
		return evaluate_nccl(run.value(), b.nccl_threshold_gbs(cfg), b.gpu_count);
	}
	if (name == kGpuDepth) {
		if (!b.gpu_depth.present) {
			CheckResult r =
			    make_pass(name, "no gpu_depth in the baseline; not checked");
			r.status = CheckStatus::Skip;
			r.code = code::kSkipped;
			return r;
		}
		double load = b.gpu_depth.load_s > 0
		                  ? b.gpu_depth.load_s
		                  : static_cast<double>(cfg.seconds("GpuLoadSeconds"));
		auto o = be.gpu_depth(load);
		if (!o.ok())
			return error_result(name, o.status());
		return evaluate_gpu_depth(o.value(), b);
	}
	if (name == kTopology) {
		if (b.affinity.empty()) {
			CheckResult r =
			    make_pass(name, "no affinity map in the baseline; not checked");
			r.status = CheckStatus::Skip;
			r.code = code::kSkipped;
			return r;
		}
		auto t = be.topology();
		if (!t.ok())
			return error_result(name, t.status());
		return evaluate_topology(t.value(), b);
	}
	return error_result(name, Status::Error("unknown check"));
}

} // namespace

void mark_simulated(CheckResult *r)
{
	if (r->simulated)
		return;
	r->simulated = true;
	r->detail += std::string(r->detail.empty() ? "" : " ") + kSimulatedMarker;
}

CheckResult run_check(const std::string &name, CheckContext &ctx)
{
	CheckResult r;
	try {
		ctx.backend->enter_check(name);
		r = run_inner(name, ctx);
	} catch (const std::exception &e) {
		r = error_result(name, Status::Error(std::string("internal error: ") + e.what()));
	} catch (...) {
		r = error_result(name, Status::Error("internal error"));
	}
	r.name = name;
	if (ctx.backend->simulated())
		mark_simulated(&r);
	return r;
}

CheckResult evaluate_inventory(const Inventory &inv, const Baseline &b)
{
	Json gpus = Json::array();
	for (const auto &g : inv.gpus) {
		Json o = Json::object();
		o.set("index", g.index).set("uuid", g.uuid).set("serial", g.serial);
		o.set("pci", g.pci).set("model", g.model).set("vbios", g.vbios);
		gpus.push(o);
	}
	Json nics = Json::array();
	for (const auto &n : inv.nics) {
		Json o = Json::object();
		o.set("name", n.name).set("mac", n.mac).set("fw_ver", n.fw_ver);
		nics.push(o);
	}
	Json data = Json::object();
	data.set("gpus", gpus).set("nics", nics);
	if (!inv.sku.empty())
		data.set("simulated_sku", inv.sku);
	if (inv.cuda_devices >= 0)
		data.set("cuda_devices", inv.cuda_devices);

	int n = static_cast<int>(inv.gpus.size());
	std::string blind = cuda_sees_none(inv);
	CheckResult r;
	if (n == 0) {
		r = make_fail(kInventory, code::kNoGpu, "no GPU found");
	} else if (!blind.empty()) {
		r = make_fail(kInventory, code::kNoGpu, "inventory: " + blind);
	} else if (inv.cuda_devices > 0 && inv.cuda_devices < n) {
		r = make_fail(kInventory, code::kGpuCount,
		              strprintf("inventory: the CUDA runtime sees %d of the %d GPUs NVML "
		                        "lists",
		                        inv.cuda_devices, n));
	} else if (n != b.gpu_count) {
		r = make_fail(kInventory, code::kGpuCount,
		              strprintf("inventory found %d GPUs, SKU %s has %d", n, b.sku.c_str(),
		                        b.gpu_count));
	} else {
		std::vector<std::string> wrong;
		for (const auto &g : inv.gpus)
			if (g.model != b.gpu_model)
				wrong.push_back(
				    strprintf("GPU %d is '%s'", g.index, g.model.c_str()));
		if (!wrong.empty())
			r = make_fail(kInventory, code::kGpuModel,
			              "inventory expected '" + b.gpu_model +
			                  "': " + join(wrong, ", "));
		else
			r = make_pass(kInventory, strprintf("%d x %s, %zu NICs", n,
			                                    b.gpu_model.c_str(), inv.nics.size()));
	}
	if (!inv.sku.empty() && inv.sku != b.sku)
		r.detail += " (profile simulates SKU " + inv.sku + ")";
	r = with_numbers(r, n, b.gpu_count, "gpus");
	r.data = data;
	return r;
}

CheckResult evaluate_versions(const VersionsObs &v, const Baseline &b)
{
	std::vector<std::string> bad;
	Json expected = Json::object(), found = Json::object();
	auto compare = [&](const std::string &label, const std::string &want,
	                   const std::map<std::string, std::string> &have, const std::string &key) {
		expected.set(label.c_str(), want);
		auto it = have.find(key);
		if (it == have.end()) {
			auto e = v.errors.find(key);
			found.set_null(label.c_str());
			bad.push_back(label + " expected " + want + " found none" +
			              (e != v.errors.end() ? " (" + e->second + ")" : ""));
			return;
		}
		found.set(label.c_str(), it->second);
		if (it->second != want)
			bad.push_back(label + " expected " + want + " found " + it->second);
	};
	for (const auto &c : version_components()) {
		auto w = b.versions.find(c);
		if (w != b.versions.end())
			compare(c, w->second, v.versions, c);
	}
	// Firmware: devices with the same expected/found pair share one entry
	// ("firmware mlx5_0,mlx5_1 expected A found B").
	std::vector<std::string> plain = bad;
	bad.clear();
	std::vector<std::pair<std::string, std::string>> fw_groups; // (what, devices)
	for (const auto &fw : b.firmware) {
		std::string label = "firmware." + fw.first;
		compare(label, fw.second, v.firmware, fw.first);
		if (bad.empty())
			continue;
		std::string what = bad.back().substr(label.size());
		bad.pop_back();
		auto it = std::find_if(
		    fw_groups.begin(), fw_groups.end(),
		    [&](const std::pair<std::string, std::string> &g) { return g.first == what; });
		if (it == fw_groups.end())
			fw_groups.emplace_back(what, fw.first);
		else
			it->second += "," + fw.first;
	}
	bad = plain;
	for (const auto &g : fw_groups)
		bad.push_back("firmware " + g.second + g.first);
	Json data = Json::object();
	data.set("expected", expected).set("found", found);
	Json all = Json::object();
	for (const auto &kv : v.versions)
		all.set(kv.first.c_str(), kv.second);
	data.set("observed", all);
	Json libs = Json::object();
	for (const auto &kv : v.libraries)
		libs.set(kv.first.c_str(), kv.second);
	data.set("libraries", libs);
	Json errors = Json::object();
	for (const auto &kv : v.errors)
		errors.set(kv.first.c_str(), kv.second);
	data.set("errors", errors);
	size_t checked = b.versions.size() + b.firmware.size();
	CheckResult r =
	    bad.empty()
	        ? make_pass(kVersions, strprintf("%zu versions match the baseline", checked))
	        : make_fail(kVersions, code::kVersionMismatch, "versions: " + join(bad, "; "));
	r = with_numbers(r, static_cast<double>(bad.size()), 0, "mismatches");
	r.data = data;
	return r;
}

CheckResult evaluate_gpu_health(const GpuHealthObs &h, const Baseline &b, double window_s)
{
	std::vector<std::string> ecc, remap, xid, nvl;
	for (const auto &g : h.gpus) {
		if (g.ecc_uncorrected)
			ecc.push_back(strprintf(
			    "GPU %d (%s) %llu volatile uncorrected ECC errors", g.index,
			    g.pci.c_str(), static_cast<unsigned long long>(g.ecc_uncorrected)));
		if (g.remap_failed)
			remap.push_back(
			    strprintf("GPU %d (%s) row remap failed", g.index, g.pci.c_str()));
		else if (g.remap_pending)
			remap.push_back(
			    strprintf("GPU %d (%s) row remap pending", g.index, g.pci.c_str()));
		// A one-GPU SKU has no NVLink peer (a GPU passed alone to a VM
		// reports its links inactive): the state is reported, not judged.
		// Links outside the SKU's mask are inactive by design.
		std::vector<std::string> links;
		for (int l : g.nvlink_down)
			if (!b.nvlink_mask || (l < 64 && (b.nvlink_mask >> l) & 1))
				links.push_back(std::to_string(l));
		int active = g.nvlink_links - static_cast<int>(g.nvlink_down.size());
		if (!links.empty() && b.gpu_count > 1)
			nvl.push_back(strprintf("GPU %d (%s) NVLink %s down of %d", g.index,
			                        g.pci.c_str(), join(links, ",").c_str(),
			                        g.nvlink_links));
		else if (b.nvlink_active_links >= 0 && active != b.nvlink_active_links &&
		         b.gpu_count > 1)
			nvl.push_back(strprintf("GPU %d (%s) %d NVLinks active, SKU has %d",
			                        g.index, g.pci.c_str(), active,
			                        b.nvlink_active_links));
	}
	// Each critical XID once: count, GPUs and the latest occurrence.
	struct Seen {
		int count = 0;
		double newest = 1e300;
		std::vector<std::string> gpus;
	};
	std::map<int, Seen> seen;
	Json events = Json::array();
	for (const auto &x : h.xids) {
		Json e = Json::object();
		e.set("xid", x.xid).set("gpu", x.gpu).set("age_s", x.age_s);
		e.set_bool("critical", b.is_critical_xid(x.xid));
		events.push(e);
		if (!b.is_critical_xid(x.xid))
			continue;
		Seen &s = seen[x.xid];
		s.count++;
		s.newest = std::min(s.newest, x.age_s);
		if (std::find(s.gpus.begin(), s.gpus.end(), x.gpu) == s.gpus.end())
			s.gpus.push_back(x.gpu);
	}
	for (const auto &kv : seen)
		xid.push_back(strprintf("XID %d on %s (%dx, latest %.0f s ago)", kv.first,
		                        join(kv.second.gpus, ",").c_str(), kv.second.count,
		                        kv.second.newest));
	std::vector<std::string> all;
	const char *c = nullptr;
	for (auto *group : {&ecc, &remap, &xid, &nvl})
		all.insert(all.end(), group->begin(), group->end());
	if (!ecc.empty())
		c = code::kEccUncorrected;
	else if (!remap.empty())
		c = code::kRowRemap;
	else if (!xid.empty())
		c = code::kXidCritical;
	else if (!nvl.empty())
		c = code::kNvlinkDown;
	CheckResult r =
	    c ? make_fail(kGpuHealth, c, "gpu_health: " + join(all, "; "))
	      : make_pass(
	            kGpuHealth,
	            strprintf("%zu GPUs: no uncorrected ECC, no row remap, no critical XID "
	                      "in %.0f s, %s",
	                      h.gpus.size(), window_s,
	                      b.gpu_count > 1 ? "NVLinks up" : "NVLink not judged (one-GPU SKU)"));
	r = with_numbers(r, static_cast<double>(all.size()), 0, "problems");
	Json gpus = Json::array();
	for (const auto &g : h.gpus) {
		Json o = Json::object();
		o.set("index", g.index).set("pci", g.pci);
		if (g.ecc_supported)
			o.set("ecc_uncorrected", static_cast<int64_t>(g.ecc_uncorrected));
		else
			o.set("ecc_uncorrected", "not supported");
		if (g.remap_supported) {
			o.set("remapped_rows_correctable",
			      static_cast<int64_t>(g.remapped_correctable));
			o.set("remapped_rows_uncorrectable",
			      static_cast<int64_t>(g.remapped_uncorrectable));
			o.set_bool("remap_pending", g.remap_pending)
			    .set_bool("remap_failed", g.remap_failed);
		} else {
			o.set("remapped_rows", "not supported");
		}
		Json down = Json::array();
		for (int l : g.nvlink_down)
			down.push(Json::adopt(json_integer(l)));
		o.set("nvlink_links", g.nvlink_links).set("nvlink_down", down);
		gpus.push(o);
	}
	Json data = Json::object();
	data.set("gpus", gpus).set("xids", events).set("xid_window_s", window_s);
	r.data = data;
	return r;
}

CheckResult evaluate_mem_bw(const MemBwObs &obs, double threshold, double peak)
{
	const std::vector<double> &bw = obs.gbs;
	if (bw.empty())
		return with_numbers(make_fail(kMemBw, code::kNoGpu, "mem_bw: no GPU measured"), NAN,
		                    threshold, "GB/s");
	std::vector<std::string> low;
	double worst = bw[0];
	for (size_t i = 0; i < bw.size(); i++) {
		worst = std::min(worst, bw[i]);
		if (!(bw[i] >= threshold))
			low.push_back(strprintf("GPU %zu %.1f GB/s", i, bw[i]));
	}
	CheckResult r =
	    low.empty()
	        ? make_pass(kMemBw,
	                    strprintf("mem_bw slowest GPU %.1f GB/s >= %.1f GB/s (%zu GPUs)", worst,
	                              threshold, bw.size()))
	        : make_fail(kMemBw, code::kMemBwLow,
	                    strprintf("mem_bw %s < %.1f GB/s", join(low, ", ").c_str(), threshold));
	r = with_numbers(r, worst, threshold, "GB/s");
	r.samples = bw;
	Json gpus = Json::array();
	for (size_t i = 0; i < bw.size(); i++) {
		double plain = i < obs.plain_copy_gbs.size() ? obs.plain_copy_gbs[i] : NAN;
		Json o = Json::object();
		o.set("index", static_cast<int64_t>(i)).set("gbs", bw[i]);
		o.set("plain_copy_gbs", plain);
		o.set("fraction_of_plain_copy", bandwidth_fraction(bw[i], plain));
		o.set("fraction_of_peak", bandwidth_fraction(bw[i], peak));
		gpus.push(o);
	}
	Json data = Json::object();
	data.set("peak_gbs", peak).set("gpus", gpus);
	r.data = data;
	return r;
}

CheckResult evaluate_nccl(const NcclRun &run, double threshold, int expected_ranks)
{
	std::vector<double> busbw;
	Json secs = Json::array(), alg = Json::array(), wrong = Json::array();
	uint64_t wrong_total = 0;
	for (const auto &s : run.samples) {
		busbw.push_back(allreduce_busbw_gbs(run.bytes, s.seconds, run.nranks));
		secs.push(Json::adopt(json_real(s.seconds)));
		alg.push(Json::adopt(json_real(algbw_gbs(run.bytes, s.seconds))));
		wrong.push(Json::adopt(json_integer(static_cast<json_int_t>(s.wrong))));
		wrong_total += s.wrong;
	}
	BestOf best = best_of(busbw);
	// One rank moves nothing between GPUs (bus factor 2(n-1)/n = 0): its
	// "busbw" of 0 is no measurement, so it neither fails as slow nor
	// passes; it still proves NCCL runs and sums correctly.
	bool one_rank = run.nranks == 1;
	CheckResult r;
	if (run.nranks < 1)
		r = make_fail(kNcclAllreduce, code::kNoGpu, "nccl_allreduce: no GPU to run on");
	else if (wrong_total > 0)
		r = make_fail(kNcclAllreduce, code::kNcclCorrupt,
		              strprintf("nccl_allreduce: %llu wrong results in %zu samples",
		                        static_cast<unsigned long long>(wrong_total),
		                        run.samples.size()));
	else if (run.nranks < expected_ranks)
		r = make_fail(kNcclAllreduce, code::kGpuCount,
		              strprintf("nccl_allreduce ran over %d GPUs, the SKU has %d (all must "
		                        "take part)",
		                        run.nranks, expected_ranks));
	else if (one_rank) {
		r = make_pass(
		    kNcclAllreduce,
		    "nccl_allreduce: one GPU: a one-rank all-reduce moves no data between "
		    "GPUs (bus factor 2(n-1)/n = 0), so no bus bandwidth is judged; its "
		    "sums were correct");
		r.status = CheckStatus::Skip;
		r.code = code::kSkipped;
	} else if (!best.valid)
		r = make_fail(kNcclAllreduce, code::kCheckError, "nccl_allreduce: no sample");
	else if (best.best < threshold)
		r = make_fail(kNcclAllreduce, code::kNcclBwLow,
		              strprintf("nccl_allreduce busbw %.1f GB/s < %.1f GB/s (best of %zu)",
		                        best.best, threshold, busbw.size()));
	else
		r = make_pass(kNcclAllreduce,
		              strprintf("nccl_allreduce busbw %.1f GB/s >= %.1f GB/s (best of %zu)",
		                        best.best, threshold, busbw.size()));
	r = with_numbers(r, best.valid && !one_rank ? best.best : NAN, threshold, "GB/s");
	if (!one_rank)
		r.samples = busbw;
	Json data = Json::object();
	data.set("nranks", run.nranks).set("bytes", static_cast<int64_t>(run.bytes));
	data.set("iterations", run.iterations).set("bus_factor", allreduce_bus_factor(run.nranks));
	data.set("seconds", secs).set("algbw_gbs", alg).set("wrong", wrong);
	r.data = data;
	return r;
}

CheckResult evaluate_fabric(const FabricObs &f, const Baseline &b)
{
	std::vector<std::string> down, slow, flap, errs, narrow, mtu;
	int good = 0;
	Json ports = Json::array();
	for (const auto &p : f.second) {
		std::string state = port_state_name(p.state), phys = port_state_name(p.phys_state);
		double rate = parse_rate_gbps(p.rate);
		std::string id = strprintf("%s port %d", p.dev.c_str(), p.port);
		bool ok = true;
		if (state != "ACTIVE" || phys != "LinkUp") {
			down.push_back(id + " state " + state + " phys_state " + phys);
			ok = false;
		} else if (b.fabric_min_rate_gbps > 0 && rate < b.fabric_min_rate_gbps) {
			slow.push_back(strprintf("%s rate %g Gb/s < %g Gb/s", id.c_str(), rate,
			                         b.fabric_min_rate_gbps));
			ok = false;
		}
		int width = parse_rate_width(p.rate);
		if (ok && b.fabric_width > 0 && width > 0 && width < b.fabric_width) {
			narrow.push_back(
			    strprintf("%s width %dX < %dX", id.c_str(), width, b.fabric_width));
			ok = false;
		}
		if (ok && b.fabric_min_mtu > 0 && p.active_mtu > 0 &&
		    p.active_mtu < b.fabric_min_mtu) {
			mtu.push_back(strprintf("%s active MTU %d < %d", id.c_str(), p.active_mtu,
			                        b.fabric_min_mtu));
			ok = false;
		}
		int64_t before = -1;
		const PortObs *q0 = nullptr;
		for (const auto &q : f.first)
			if (q.dev == p.dev && q.port == p.port) {
				q0 = &q;
				if (q.has_link_downed)
					before = q.link_downed;
			}
		if (p.has_link_downed && before >= 0 && p.link_downed > before) {
			flap.push_back(strprintf("%s link_downed %lld -> %lld in %g s", id.c_str(),
			                         static_cast<long long>(before),
			                         static_cast<long long>(p.link_downed),
			                         f.interval_s));
			ok = false;
		}
		// Since the previous admission: a link that went down in between
		// flaps (a counter reset by a reboot or driver reload is lower,
		// not grown, and says nothing).
		std::string key = strprintf("%s/%d", p.dev.c_str(), p.port);
		auto prev = f.previous.find(key);
		Json since = Json::object();
		if (prev != f.previous.end() && p.has_link_downed) {
			auto pl = prev->second.find("link_downed");
			if (pl != prev->second.end() &&
			    static_cast<uint64_t>(p.link_downed) > pl->second && before >= 0 &&
			    p.link_downed == before) {
				// (Short: node reasons are cut at 99 bytes; the
				// admission's time is in data.previous_admission.)
				flap.push_back(strprintf(
				    "%s link_downed %llu -> %lld since the last admission",
				    id.c_str(), static_cast<unsigned long long>(pl->second),
				    static_cast<long long>(p.link_downed)));
				ok = false;
			}
		}
		// Error counters against their limits: growth during the check.
		Json counters = Json::object();
		for (const auto &c : p.counters) {
			counters.set(c.first.c_str(), static_cast<int64_t>(c.second));
			if (!q0)
				continue;
			auto a = q0->counters.find(c.first);
			if (a == q0->counters.end() || c.second < a->second)
				continue;
			uint64_t delta = c.second - a->second;
			auto lim = b.fabric_counter_limits.find(c.first);
			if (c.first == "link_downed" || lim == b.fabric_counter_limits.end())
				continue;
			since.set(c.first.c_str(), static_cast<int64_t>(delta));
			if (delta > lim->second) {
				errs.push_back(strprintf(
				    "%s %s +%llu in %g s (limit %llu)", id.c_str(), c.first.c_str(),
				    static_cast<unsigned long long>(delta), f.interval_s,
				    static_cast<unsigned long long>(lim->second)));
				ok = false;
			}
		}
		good += ok;
		Json o = Json::object();
		o.set("dev", p.dev).set("port", p.port).set("state", state).set("phys_state", phys);
		o.set("rate_gbps", rate).set("link_layer", p.link_layer);
		if (width > 0)
			o.set("width", width);
		if (p.active_mtu > 0)
			o.set("active_mtu", p.active_mtu);
		else
			o.set("active_mtu", "unknown");
		if (p.has_link_downed)
			o.set("link_downed", p.link_downed);
		o.set("counters", counters).set("counter_deltas", since);
		ports.push(o);
	}
	int have = static_cast<int>(f.second.size());
	std::vector<std::string> all;
	for (auto *g : {&down, &slow, &narrow, &flap, &errs, &mtu})
		all.insert(all.end(), g->begin(), g->end());
	bool missing = have < b.fabric_ports;
	if (missing)
		all.push_back(strprintf("%d ports < %d expected", have, b.fabric_ports));
	const char *c = !down.empty()     ? code::kPortDown
	                : !slow.empty()   ? code::kPortRateLow
	                : !narrow.empty() ? code::kPortWidthLow
	                : !flap.empty()   ? code::kPortFlapping
	                : !errs.empty()   ? code::kPortErrors
	                : !mtu.empty()    ? code::kPortMtuLow
	                : missing         ? code::kPortMissing
	                                  : nullptr;
	CheckResult r =
	    c ? make_fail(kFabric, c, "fabric: " + join(all, "; "))
	      : make_pass(
	            kFabric,
	            strprintf("%d ports ACTIVE/LinkUp%s, none flapping", have,
	                      b.fabric_min_rate_gbps > 0
	                          ? strprintf(" at >= %g Gb/s", b.fabric_min_rate_gbps).c_str()
	                          : ""));
	r = with_numbers(r, good, b.fabric_ports, "ports");
	Json data = Json::object();
	data.set("source", f.source).set("interval_s", f.interval_s).set("ports", ports);
	if (!f.previous_time.empty())
		data.set("previous_admission", f.previous_time);
	r.data = data;
	return r;
}

CheckResult evaluate_topology(const TopologyObs &t, const Baseline &b)
{
	std::vector<std::string> bad;
	Json found = Json::object();
	for (const auto &g : t.gpus) {
		Json o = Json::object();
		o.set("pci", g.pci).set("nic", g.nearest_nic).set("numa", g.numa);
		found.set(std::to_string(g.index).c_str(), o);
	}
	for (const auto &kv : b.affinity) {
		auto it =
		    std::find_if(t.gpus.begin(), t.gpus.end(),
		                 [&](const TopologyObs::Gpu &g) { return g.index == kv.first; });
		if (it == t.gpus.end()) {
			bad.push_back(strprintf("GPU %d not found", kv.first));
			continue;
		}
		if (!kv.second.nic.empty() && it->nearest_nic != kv.second.nic)
			bad.push_back(
			    strprintf("GPU %d nearest NIC expected %s found %s", kv.first,
			              kv.second.nic.c_str(),
			              it->nearest_nic.empty() ? "none" : it->nearest_nic.c_str()));
		if (kv.second.numa >= 0 && it->numa != kv.second.numa)
			bad.push_back(strprintf("GPU %d NUMA expected %d found %d", kv.first,
			                        kv.second.numa, it->numa));
	}
	CheckResult r =
	    bad.empty()
	        ? make_pass(kTopology, strprintf("%zu GPUs have the expected nearest NIC "
	                                         "and NUMA node",
	                                         b.affinity.size()))
	        : make_fail(kTopology, code::kAffinityMismatch, "topology: " + join(bad, "; "));
	r = with_numbers(r, static_cast<double>(bad.size()), 0, "mismatches");
	Json data = Json::object();
	data.set("found", found);
	r.data = data;
	return r;
}

namespace {

std::string unmeasured_why(const GpuDepthObs::Gpu &g, const char *part)
{
	std::string prefix = std::string(part) + ": ";
	for (const auto &u : g.unmeasured)
		if (u.compare(0, prefix.size(), prefix) == 0)
			return u;
	return prefix + "not measured";
}

std::string pcie_text(const PcieLinkObs &l)
{
	return strprintf("Gen%d x%d (%g GT/s)", l.gen, l.width, l.speed_gts);
}

// "" when link meets gen/width (0: not judged), else what is short.
std::string pcie_short(const PcieLinkObs &l, int gen, int width)
{
	std::vector<std::string> bad;
	if (gen > 0 && l.gen < gen)
		bad.push_back(strprintf("Gen%d < Gen%d", l.gen, gen));
	if (width > 0 && l.width < width)
		bad.push_back(strprintf("x%d < x%d", l.width, width));
	return join(bad, ", ");
}

Json pcie_json(const PcieLinkObs &l)
{
	Json o = Json::object();
	if (l.measured)
		o.set("gen", l.gen).set("width", l.width).set("speed_gts", l.speed_gts);
	else
		o.set("not_measured", l.why);
	return o;
}

} // namespace

CheckResult evaluate_gpu_depth(const GpuDepthObs &o, const Baseline &b)
{
	const Baseline::GpuDepth &d = b.gpu_depth;
	std::vector<std::string> thr, hot, pwr, pcie, ecc, remap, nvl, mem, pers, procs, unk;
	Json gpus = Json::array();
	for (const auto &g : o.gpus) {
		std::string id = strprintf("GPU %d (%s)", g.index, g.pci.c_str());
		auto judged = [&](bool has, const char *part) {
			if (!has)
				unk.push_back(id + " " + unmeasured_why(g, part));
			return has;
		};
		if (d.throttle_fail_mask && judged(g.has_throttle, "throttle") &&
		    (g.throttle_reasons & d.throttle_fail_mask))
			thr.push_back(strprintf(
			    "%s throttled under load: %s", id.c_str(),
			    throttle_reason_names(g.throttle_reasons & d.throttle_fail_mask)
			        .c_str()));
		if (d.min_sm_clock_mhz && judged(g.has_clock, "clock") &&
		    g.sm_clock_min_mhz < d.min_sm_clock_mhz)
			thr.push_back(strprintf("%s SM clock %u MHz < %u MHz under load",
			                        id.c_str(), g.sm_clock_min_mhz,
			                        d.min_sm_clock_mhz));
		if (d.max_temp_c && judged(g.has_temp, "temperature") &&
		    g.temp_max_c > d.max_temp_c)
			hot.push_back(strprintf("%s %u C > %u C under load", id.c_str(),
			                        g.temp_max_c, d.max_temp_c));
		if (d.max_power_w > 0 && judged(g.has_power, "power") &&
		    g.power_max_w > d.max_power_w)
			pwr.push_back(strprintf("%s %.0f W > %.0f W under load", id.c_str(),
			                        g.power_max_w, d.max_power_w));
		if ((d.gpu_pcie_gen || d.gpu_pcie_width) && judged(g.pcie.measured, "pcie")) {
			std::string sh = pcie_short(g.pcie, d.gpu_pcie_gen, d.gpu_pcie_width);
			if (!sh.empty())
				pcie.push_back(strprintf("%s PCIe %s: %s", id.c_str(),
				                         pcie_text(g.pcie).c_str(), sh.c_str()));
		}
		if ((d.min_h2d_gbs > 0 || d.min_d2h_gbs > 0) &&
		    judged(g.has_host_copy, "host_copy")) {
			if (g.h2d_gbs < d.min_h2d_gbs)
				pcie.push_back(strprintf("%s host->device %.1f GB/s < %.1f GB/s",
				                         id.c_str(), g.h2d_gbs, d.min_h2d_gbs));
			if (g.d2h_gbs < d.min_d2h_gbs)
				pcie.push_back(strprintf("%s device->host %.1f GB/s < %.1f GB/s",
				                         id.c_str(), g.d2h_gbs, d.min_d2h_gbs));
		}
		if (d.max_ecc_corrected >= 0 && judged(g.has_ecc_corrected, "ecc_corrected") &&
		    g.ecc_corrected > static_cast<uint64_t>(d.max_ecc_corrected))
			ecc.push_back(strprintf("%s %llu volatile corrected ECC errors > %lld",
			                        id.c_str(),
			                        static_cast<unsigned long long>(g.ecc_corrected),
			                        static_cast<long long>(d.max_ecc_corrected)));
		if (d.max_remapped_rows >= 0 && judged(g.has_remapped, "remapped_rows") &&
		    g.remapped_rows > d.max_remapped_rows)
			remap.push_back(strprintf("%s %u remapped rows > %lld", id.c_str(),
			                          g.remapped_rows,
			                          static_cast<long long>(d.max_remapped_rows)));
		if (!d.nvlink_errors.empty() && judged(g.has_nvlink_errors, "nvlink_errors"))
			for (const auto &lim : d.nvlink_errors) {
				auto it = g.nvlink_error_delta.find(lim.first);
				if (it != g.nvlink_error_delta.end() && it->second > lim.second)
					nvl.push_back(strprintf(
					    "%s NVLink %s errors +%llu during load > %llu",
					    id.c_str(), lim.first.c_str(),
					    static_cast<unsigned long long>(it->second),
					    static_cast<unsigned long long>(lim.second)));
			}
		if (d.memory_mib && judged(g.has_memory, "memory") &&
		    g.memory_total_mib < d.memory_mib)
			mem.push_back(strprintf("%s %llu MiB < %llu MiB", id.c_str(),
			                        static_cast<unsigned long long>(g.memory_total_mib),
			                        static_cast<unsigned long long>(d.memory_mib)));
		if (d.persistence && judged(g.has_persistence, "persistence") && !g.persistence)
			pers.push_back(id + " persistence mode off");
		if (!d.foreign_processes && judged(g.has_processes, "processes") &&
		    !g.foreign_pids.empty()) {
			std::vector<std::string> pids;
			for (unsigned p : g.foreign_pids)
				pids.push_back(std::to_string(p));
			procs.push_back(id + " runs process " + join(pids, ","));
		}
		Json j = Json::object();
		j.set("index", g.index).set("pci", g.pci);
		if (g.has_clock)
			j.set("sm_clock_min_mhz", static_cast<int64_t>(g.sm_clock_min_mhz));
		if (g.has_throttle)
			j.set("throttle_reasons", throttle_reason_names(g.throttle_reasons));
		if (g.has_temp)
			j.set("temp_max_c", static_cast<int64_t>(g.temp_max_c));
		if (g.has_power)
			j.set("power_max_w", g.power_max_w);
		if (g.has_memory)
			j.set("memory_mib", static_cast<int64_t>(g.memory_total_mib));
		if (g.has_persistence)
			j.set_bool("persistence", g.persistence);
		if (g.has_processes) {
			Json pids = Json::array();
			for (unsigned p : g.foreign_pids)
				pids.push(Json::adopt(json_integer(p)));
			j.set("foreign_pids", pids);
		}
		if (g.has_ecc_corrected)
			j.set("ecc_corrected", static_cast<int64_t>(g.ecc_corrected));
		if (g.has_remapped)
			j.set("remapped_rows", static_cast<int64_t>(g.remapped_rows));
		if (g.has_nvlink_errors) {
			Json n = Json::object();
			for (const auto &kv : g.nvlink_error_delta)
				n.set(kv.first.c_str(), static_cast<int64_t>(kv.second));
			j.set("nvlink_error_deltas", n);
		}
		j.set("pcie", pcie_json(g.pcie));
		if (g.has_host_copy)
			j.set("h2d_gbs", g.h2d_gbs).set("d2h_gbs", g.d2h_gbs);
		j.set("not_measured", Json::array(g.unmeasured));
		gpus.push(j);
	}
	Json hcas = Json::array();
	for (const auto &h : o.hcas) {
		if (d.hca_pcie_gen || d.hca_pcie_width) {
			if (!h.pcie.measured)
				unk.push_back(h.dev + " pcie: " + h.pcie.why);
			else {
				std::string sh =
				    pcie_short(h.pcie, d.hca_pcie_gen, d.hca_pcie_width);
				if (!sh.empty())
					pcie.push_back(strprintf("%s PCIe %s: %s", h.dev.c_str(),
					                         pcie_text(h.pcie).c_str(),
					                         sh.c_str()));
			}
		}
		Json j = pcie_json(h.pcie);
		j.set("dev", h.dev);
		hcas.push(j);
	}
	std::vector<std::string> all;
	for (auto *g : {&thr, &hot, &pwr, &pcie, &nvl, &ecc, &remap, &mem, &pers, &procs})
		all.insert(all.end(), g->begin(), g->end());
	const char *c = !thr.empty()     ? code::kGpuThrottled
	                : !hot.empty()   ? code::kGpuTempHigh
	                : !pwr.empty()   ? code::kGpuPowerHigh
	                : !pcie.empty()  ? code::kPcieDegraded
	                : !nvl.empty()   ? code::kNvlinkErrors
	                : !ecc.empty()   ? code::kEccCorrectedHigh
	                : !remap.empty() ? code::kRowRemapHigh
	                : !mem.empty()   ? code::kGpuMemory
	                : !pers.empty()  ? code::kPersistenceOff
	                : !procs.empty() ? code::kGpuForeignProcess
	                                 : nullptr;
	CheckResult r;
	if (o.gpus.empty()) {
		r = make_fail(kGpuDepth, code::kNoGpu, "gpu_depth: no GPU observed");
	} else if (c) {
		if (!unk.empty())
			all.push_back("not measured: " + join(unk, "; "));
		r = make_fail(kGpuDepth, c, "gpu_depth: " + join(all, "; "));
	} else if (!unk.empty()) {
		// Could not tell: never a pass.
		r = make_fail(kGpuDepth, code::kCheckError,
		              "gpu_depth: not measured: " + join(unk, "; "));
		r.status = CheckStatus::Error;
	} else {
		r = make_pass(kGpuDepth,
		              strprintf("%zu GPUs, %zu HCAs under %.0f s load: no throttling, "
		                        "within the SKU's limits",
		                        o.gpus.size(), o.hcas.size(), o.load_s));
	}
	r = with_numbers(r, static_cast<double>(all.size()), 0, "problems");
	Json data = Json::object();
	data.set("load_s", o.load_s).set("load", o.load).set("gpus", gpus).set("hcas", hcas);
	r.data = data;
	return r;
}

} // namespace admit
} // namespace onramp
