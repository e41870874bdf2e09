#include "admit/checks.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "admit/bandwidth.hpp"
#include "admit/dcgm.hpp"
#include "admit/host.hpp"
#include "admit/fabric.hpp"
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
		if (!g.nvlink_down.empty() && b.gpu_count > 1) {
			std::vector<std::string> links;
			for (int l : g.nvlink_down)
				links.push_back(std::to_string(l));
			nvl.push_back(strprintf("GPU %d (%s) NVLink %s down of %d", g.index,
			                        g.pci.c_str(), join(links, ",").c_str(),
			                        g.nvlink_links));
		}
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
	std::vector<std::string> down, slow, flap;
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
		int64_t before = -1;
		for (const auto &q : f.first)
			if (q.dev == p.dev && q.port == p.port && q.has_link_downed)
				before = q.link_downed;
		if (p.has_link_downed && before >= 0 && p.link_downed > before) {
			flap.push_back(strprintf("%s link_downed %lld -> %lld in %g s", id.c_str(),
			                         static_cast<long long>(before),
			                         static_cast<long long>(p.link_downed),
			                         f.interval_s));
			ok = false;
		}
		good += ok;
		Json o = Json::object();
		o.set("dev", p.dev).set("port", p.port).set("state", state).set("phys_state", phys);
		o.set("rate_gbps", rate).set("link_layer", p.link_layer);
		if (p.has_link_downed)
			o.set("link_downed", p.link_downed);
		ports.push(o);
	}
	int have = static_cast<int>(f.second.size());
	std::vector<std::string> all;
	for (auto *g : {&down, &slow, &flap})
		all.insert(all.end(), g->begin(), g->end());
	bool missing = have < b.fabric_ports;
	if (missing)
		all.push_back(strprintf("%d ports < %d expected", have, b.fabric_ports));
	const char *c = !down.empty()   ? code::kPortDown
	                : !slow.empty() ? code::kPortRateLow
	                : !flap.empty() ? code::kPortFlapping
	                : missing       ? code::kPortMissing
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

} // namespace admit
} // namespace onramp
