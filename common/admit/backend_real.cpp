// The real backend: NVML, CUDA runtime and NCCL through dlopen, hwloc for
// GPU-NIC locality, libibverbs and sysfs for the fabric, the kernel log for
// XIDs. Everything that cannot be loaded or found fails closed.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <strings.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <hwloc.h>
#include <infiniband/verbs.h>
#include <slurm/slurm_version.h>

#include "admit/backend.hpp"
#include "admit/runner.hpp"
#include "admit/fabric.hpp"
#include "admit/gpu_bench.hpp"
#include "admit/gpu_dl.hpp"
#include "admit/kernel_log.hpp"
#include "admit/pair.hpp"
#include "admit/profile.hpp"
#include "log.hpp"

namespace onramp {
namespace admit {

namespace {

// "00000000:3B:00.0" -> "0000:3b:00.0" (the form sysfs and hwloc use).
std::string normalise_pci(const std::string &id)
{
	unsigned dom = 0, bus = 0, dev = 0, fn = 0;
	if (sscanf(id.c_str(), "%x:%x:%x.%x", &dom, &bus, &dev, &fn) == 4)
		return strprintf("%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return id;
}

class Nvml {
public:
	Status open()
	{
		Status st = gpu::load_nvml(&n_);
		if (!st.ok())
			return st;
		gpu::nvmlReturn r = n_.Init();
		if (r != gpu::kNvmlSuccess)
			return Status::Error("nvmlInit: " + n_.err(r));
		inited_ = true;
		return Status::Ok();
	}
	~Nvml()
	{
		if (inited_)
			n_.Shutdown();
	}
	const gpu::Nvml &api() const { return n_; }

	Result<std::vector<gpu::nvmlDevice>> devices() const
	{
		unsigned count = 0;
		gpu::nvmlReturn r = n_.DeviceGetCount(&count);
		if (r != gpu::kNvmlSuccess)
			return Status::Error("nvmlDeviceGetCount: " + n_.err(r));
		std::vector<gpu::nvmlDevice> out;
		for (unsigned i = 0; i < count; i++) {
			gpu::nvmlDevice d = nullptr;
			r = n_.DeviceGetHandleByIndex(i, &d);
			if (r != gpu::kNvmlSuccess)
				return Status::Error(strprintf("nvmlDeviceGetHandleByIndex(%u): %s",
				                               i, n_.err(r).c_str()));
			out.push_back(d);
		}
		return out;
	}

	// open() and devices().
	Result<std::vector<gpu::nvmlDevice>> open_devices()
	{
		Status st = open();
		if (!st.ok())
			return st;
		return devices();
	}

	std::string text(gpu::nvmlReturn (*fn)(gpu::nvmlDevice, char *, unsigned),
	                 gpu::nvmlDevice d) const
	{
		char buf[256] = "";
		return fn(d, buf, sizeof buf) == gpu::kNvmlSuccess ? buf : "";
	}

	std::string pci(gpu::nvmlDevice d) const
	{
		gpu::nvmlPciInfo info;
		memset(&info, 0, sizeof info);
		if (n_.DeviceGetPciInfo(d, &info) != gpu::kNvmlSuccess)
			return "";
		return normalise_pci(info.busId);
	}

private:
	gpu::Nvml n_;
	bool inited_ = false;
};

double monotonic_s()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// One NVML read of a part: success, or the part marked unmeasured (the
// first reason kept) and false.
bool nvml_ok(const gpu::Nvml &n, gpu::nvmlReturn r, const char *part, const char *fn,
             GpuDepthObs::Gpu *g)
{
	if (r == gpu::kNvmlSuccess)
		return true;
	std::string pre = std::string(part) + ": ";
	for (const auto &u : g->unmeasured)
		if (u.compare(0, pre.size(), pre) == 0)
			return false;
	g->unmeasured.push_back(pre + fn + ": " + n.err(r));
	return false;
}

// Sum of each NVLink error counter over the GPU's links; false (and the
// part unmeasured) when a link that exists cannot be read.
bool nvlink_error_sums(const gpu::Nvml &n, const gpu::NvmlDepth &x, gpu::nvmlDevice d,
                       GpuDepthObs::Gpu *g, std::map<std::string, uint64_t> *out)
{
	static const std::pair<const char *, int> kinds[] = {
	    {"replay", gpu::kNvmlNvlinkErrorDlReplay},
	    {"recovery", gpu::kNvmlNvlinkErrorDlRecovery},
	    {"crc_flit", gpu::kNvmlNvlinkErrorDlCrcFlit},
	    {"crc_data", gpu::kNvmlNvlinkErrorDlCrcData}};
	out->clear();
	for (unsigned l = 0; l < gpu::kNvmlNvlinkMaxLinks; l++) {
		int active = 0;
		if (n.DeviceGetNvLinkState(d, l, &active) != gpu::kNvmlSuccess)
			continue; // no such link
		for (const auto &k : kinds) {
			unsigned long long v = 0;
			if (!nvml_ok(n, x.DeviceGetNvLinkErrorCounter(d, l, k.second, &v),
			             "nvlink_errors", "nvmlDeviceGetNvLinkErrorCounter", g))
				return false;
			(*out)[k.first] += v;
		}
	}
	return true;
}

std::string kernel_release()
{
	struct utsname u;
	return uname(&u) == 0 ? u.release : "";
}

std::string slurm_version()
{
	return strprintf("%d.%02d.%d", SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
	                 SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
	                 SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
}

// fn(name, context) for each IB device libibverbs sees; context is null
// when the device cannot be opened (closed again after fn).
void each_verbs_device(const std::function<void(const std::string &, struct ibv_context *)> &fn)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list)
		return;
	for (int i = 0; i < n; i++) {
		struct ibv_context *ctx = ibv_open_device(list[i]);
		fn(ibv_get_device_name(list[i]), ctx);
		if (ctx)
			ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
}

// IB devices libibverbs sees (empty when it sees none).
std::vector<NicInfo> verbs_nics()
{
	std::vector<NicInfo> out;
	each_verbs_device([&](const std::string &name, struct ibv_context *ctx) {
		NicInfo nic;
		nic.name = name;
		struct ibv_device_attr attr;
		if (ctx && ibv_query_device(ctx, &attr) == 0)
			nic.fw_ver = attr.fw_ver;
		out.push_back(nic);
	});
	return out;
}

// Ports libibverbs reports, for devices sysfs showed no ports of.
void add_verbs_ports(std::vector<PortObs> *ports)
{
	each_verbs_device([&](const std::string &name, struct ibv_context *ctx) {
		bool known = std::any_of(ports->begin(), ports->end(),
		                         [&](const PortObs &p) { return p.dev == name; });
		struct ibv_device_attr attr;
		if (known || !ctx || ibv_query_device(ctx, &attr) != 0)
			return;
		for (int p = 1; p <= attr.phys_port_cnt; p++) {
			struct ibv_port_attr pa;
			if (ibv_query_port(ctx, static_cast<uint8_t>(p), &pa) != 0)
				continue;
			PortObs o;
			o.dev = name;
			o.port = p;
			o.state = strprintf("%d: %s", pa.state,
			                    pa.state == IBV_PORT_ACTIVE ? "ACTIVE" : "DOWN");
			o.phys_state = strprintf("%d: %s", pa.phys_state,
			                         pa.phys_state == 5 ? "LinkUp" : "Down");
			o.link_layer =
			    pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
			ports->push_back(o);
		}
	});
}

// Each port's active MTU as libibverbs reports it (sysfs has none).
void add_verbs_mtu(std::vector<PortObs> *ports)
{
	each_verbs_device([&](const std::string &name, struct ibv_context *ctx) {
		for (auto &p : *ports) {
			struct ibv_port_attr pa;
			if (ctx && p.dev == name && p.port >= 1 && p.port <= 255 &&
			    ibv_query_port(ctx, static_cast<uint8_t>(p.port), &pa) == 0 &&
			    pa.active_mtu >= IBV_MTU_256 && pa.active_mtu <= IBV_MTU_4096)
				p.active_mtu = 128 << pa.active_mtu;
		}
	});
}

class RealBackend : public Backend {
public:
	RealBackend(const Config &cfg, std::string node) : cfg_(cfg), node_(std::move(node)) {}
	const char *name() const override { return "real"; }
	bool simulated() const override { return false; }

	Result<Inventory> inventory() override
	{
		gpu::Cudart cuda;
		Status st = gpu::load_cudart(&cuda);
		if (!st.ok())
			return st;
		Nvml nvml;
		st = nvml.open();
		if (!st.ok())
			return st;
		auto devs = nvml.devices();
		if (!devs.ok())
			return devs.status();
		Inventory inv;
		int i = 0;
		for (auto d : devs.value()) {
			GpuInfo g;
			g.index = i++;
			g.model = nvml.text(nvml.api().DeviceGetName, d);
			g.uuid = nvml.text(nvml.api().DeviceGetUUID, d);
			g.serial = nvml.text(nvml.api().DeviceGetSerial, d);
			g.vbios = nvml.text(nvml.api().DeviceGetVbiosVersion, d);
			g.pci = nvml.pci(d);
			inv.gpus.push_back(g);
		}
		inv.nics = nics();
		// NVML lists every GPU whatever CUDA_VISIBLE_DEVICES says; the
		// measurements see only what the CUDA runtime sees.
		int n = 0;
		gpu::cudaError e = cuda.GetDeviceCount(&n);
		inv.cuda_devices = e == gpu::kCudaSuccess ? n : 0;
		if (e != gpu::kCudaSuccess) {
			inv.cuda_error = "cudaGetDeviceCount: " + cuda.err(e);
			if (const char *vis = getenv("CUDA_VISIBLE_DEVICES"))
				inv.cuda_error += " with CUDA_VISIBLE_DEVICES='" +
				                  std::string(vis).substr(0, 64) + "'";
		}
		return inv;
	}

	Result<VersionsObs> versions() override
	{
		VersionsObs v;
		v.versions["kernel"] = kernel_release();
		v.versions["slurm"] = slurm_version();
		Nvml nvml;
		Status st = nvml.open();
		if (st.ok()) {
			v.libraries["nvml"] = nvml.api().path;
			char buf[128] = "";
			if (nvml.api().SystemGetDriverVersion(buf, sizeof buf) == gpu::kNvmlSuccess)
				v.versions["driver"] = buf;
			auto devs = nvml.devices();
			std::string vb;
			if (devs.ok())
				for (auto d : devs.value()) {
					std::string one =
					    nvml.text(nvml.api().DeviceGetVbiosVersion, d);
					if (vb.find(one) == std::string::npos)
						vb += (vb.empty() ? "" : ",") + one;
				}
			if (!vb.empty())
				v.versions["vbios"] = vb;
		} else {
			v.errors["driver"] = v.errors["vbios"] = st.message();
		}
		gpu::Cudart cuda;
		st = gpu::load_cudart(&cuda);
		int cv = 0;
		if (st.ok())
			v.libraries["cudart"] = cuda.path;
		if (st.ok() && cuda.RuntimeGetVersion(&cv) == gpu::kCudaSuccess)
			v.versions["cuda_runtime"] = gpu::cuda_version_string(cv);
		else
			v.errors["cuda_runtime"] =
			    st.ok() ? "cudaRuntimeGetVersion failed" : st.message();
		gpu::Nccl nccl;
		st = gpu::load_nccl(&nccl);
		int nv = 0;
		if (st.ok())
			v.libraries["nccl"] = nccl.path;
		if (st.ok() && nccl.GetVersion(&nv) == gpu::kNcclSuccess)
			v.versions["nccl"] = gpu::nccl_version_string(nv);
		else
			v.errors["nccl"] = st.ok() ? "ncclGetVersion failed" : st.message();
		for (const auto &n : nics())
			if (!n.fw_ver.empty())
				v.firmware[n.name] = n.fw_ver;
		return v;
	}

	Result<GpuHealthObs> gpu_health(double window) override
	{
		Nvml nvml;
		auto devs = nvml.open_devices();
		if (!devs.ok())
			return devs.status();
		const gpu::Nvml &n = nvml.api();
		GpuHealthObs h;
		int i = 0;
		for (auto d : devs.value()) {
			GpuHealthObs::Gpu g;
			g.index = i++;
			g.pci = nvml.pci(d);
			unsigned long long ecc = 0;
			gpu::nvmlReturn r = n.DeviceGetTotalEccErrors(
			    d, gpu::kNvmlMemoryErrorUncorrected, gpu::kNvmlVolatileEcc, &ecc);
			if (r == gpu::kNvmlSuccess)
				g.ecc_uncorrected = ecc;
			else if (r != gpu::kNvmlErrorNotSupported)
				return Status::Error(
				    strprintf("GPU %d: nvmlDeviceGetTotalEccErrors: %s", g.index,
				              n.err(r).c_str()));
			g.ecc_supported = r == gpu::kNvmlSuccess;
			unsigned corr = 0, unc = 0, pending = 0, failed = 0;
			r = n.DeviceGetRemappedRows(d, &corr, &unc, &pending, &failed);
			g.remap_supported = r == gpu::kNvmlSuccess;
			if (r == gpu::kNvmlSuccess) {
				g.remap_pending = pending != 0;
				g.remap_failed = failed != 0;
				g.remapped_correctable = corr;
				g.remapped_uncorrectable = unc;
			}
			for (unsigned l = 0; l < gpu::kNvmlNvlinkMaxLinks; l++) {
				int active = 0;
				r = n.DeviceGetNvLinkState(d, l, &active);
				if (r != gpu::kNvmlSuccess)
					continue; // link not present / not supported
				g.nvlink_links++;
				if (!active)
					g.nvlink_down.push_back(static_cast<int>(l));
			}
			h.gpus.push_back(g);
		}
		auto log = read_kernel_log(cfg_.str("KernelLog"));
		if (!log.ok())
			return log.status();
		h.xids = parse_xids(log.value(), uptime_s(), window);
		return h;
	}

	Result<MemBwObs> mem_bw(uint64_t bytes, int iterations) override
	{
		gpu::Cudart cuda;
		Status st = gpu::load_cudart(&cuda);
		if (!st.ok())
			return st;
		int n = 0;
		gpu::cudaError e = cuda.GetDeviceCount(&n);
		if (e != gpu::kCudaSuccess)
			return Status::Error("cudaGetDeviceCount: " + cuda.err(e));
		return gpu::measure_mem_bw(cuda, n, bytes, iterations);
	}

	Result<NcclRun> nccl_allreduce(uint64_t bytes, int warmup, int iterations,
	                               int best_of) override
	{
		gpu::Cudart cuda;
		gpu::Nccl nccl;
		Status st = gpu::load_cudart_nccl(&cuda, &nccl);
		if (!st.ok())
			return st;
		int n = 0;
		gpu::cudaError e = cuda.GetDeviceCount(&n);
		if (e != gpu::kCudaSuccess)
			return Status::Error("cudaGetDeviceCount: " + cuda.err(e));
		return gpu::measure_allreduce_local(cuda, nccl, n, bytes, warmup, iterations,
		                                    best_of);
	}

	Result<FabricObs> fabric(double interval_s) override
	{
		FabricObs f;
		std::string root = cfg_.str("SysfsRoot");
		f.source = "sysfs:" + root;
		f.interval_s = interval_s;
		auto a = read_ib_ports(root);
		if (!a.ok())
			return a.status();
		sleep_s(interval_s);
		auto b = read_ib_ports(root);
		if (!b.ok())
			return b.status();
		f.first = a.value();
		f.second = b.value();
		if (root == "/") {
			add_verbs_ports(&f.first);
			add_verbs_ports(&f.second);
			add_verbs_mtu(&f.second);
		}
		return f;
	}

	Result<TopologyObs> topology() override;

	Result<GpuDepthObs> gpu_depth(double load_s) override;

	Result<PairObs> pair_busbw(const std::string &peer) override
	{
		return run_pair_launch(cfg_, node_, peer);
	}

	// Each GPU with the HCA hwloc puts nearest to it, NCCL_IB_HCA set to
	// that HCA's first port alone ("=" : an exact name, not a prefix). The
	// peer is the same SKU: its GPU of the same index uses the HCA of the
	// same name. A GPU with no affine HCA found is an unmeasured rail.
	Result<std::vector<RailObs>> pair_rails(const std::string &peer) override
	{
		std::vector<RailObs> out;
		auto topo = topology();
		if (!topo.ok()) {
			// Not our input: no rail could be measured (inconclusive).
			log_info("nccl_pair: per-rail pass: %s", topo.status().message().c_str());
			return out;
		}
		std::vector<PortObs> ports;
		if (auto p = read_ib_ports(cfg_.str("SysfsRoot")); p.ok())
			ports = p.value();
		for (const auto &g : topo->gpus) {
			RailObs r;
			r.gpu = g.index;
			r.hca = g.nearest_nic;
			for (const auto &p : ports)
				if (p.dev == r.hca) {
					r.port = p.port;
					break;
				}
			if (r.hca.empty()) {
				r.why = strprintf("GPU %d: no affine HCA found (hwloc)", g.index);
				out.push_back(r);
				continue;
			}
			auto obs = run_pair_launch(cfg_, node_, peer, g.index,
			                           strprintf("=%s:%d", r.hca.c_str(), r.port));
			if (!obs.ok())
				return obs.status();
			r.measured = obs->measured;
			r.busbw_gbs = obs->busbw_gbs;
			r.wrong = obs->wrong;
			r.why = obs->why;
			out.push_back(r);
		}
		return out;
	}

private:
	std::vector<NicInfo> nics() const
	{
		std::string root = cfg_.str("SysfsRoot");
		std::vector<NicInfo> out = read_ib_nics(root);
		if (root == "/")
			for (const auto &v : verbs_nics()) {
				auto it =
				    std::find_if(out.begin(), out.end(), [&](const NicInfo &n) {
					    return n.name == v.name;
				    });
				if (it == out.end())
					out.push_back(v);
				else if (it->fw_ver.empty())
					it->fw_ver = v.fw_ver;
			}
		return out;
	}

	Config cfg_;
	std::string node_;
};

// Ancestors of obj, itself first.
std::vector<hwloc_obj_t> ancestors(hwloc_obj_t obj)
{
	std::vector<hwloc_obj_t> out;
	for (; obj; obj = obj->parent)
		out.push_back(obj);
	return out;
}

Result<TopologyObs> RealBackend::topology()
{
	auto inv = inventory();
	if (!inv.ok())
		return inv.status();
	hwloc_topology_t topo;
	if (hwloc_topology_init(&topo) != 0)
		return Status::Error("hwloc_topology_init failed");
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	if (hwloc_topology_load(topo) != 0) {
		hwloc_topology_destroy(topo);
		return Status::Error("hwloc_topology_load failed");
	}
	// Every OpenFabrics OS device (mlx5_0, ...).
	std::vector<hwloc_obj_t> nics;
	for (hwloc_obj_t o = hwloc_get_next_osdev(topo, nullptr); o;
	     o = hwloc_get_next_osdev(topo, o))
		if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS)
			nics.push_back(o);
	TopologyObs t;
	for (const auto &g : inv->gpus) {
		TopologyObs::Gpu tg;
		tg.index = g.index;
		tg.pci = g.pci;
		unsigned dom = 0, bus = 0, dev = 0, fn = 0;
		hwloc_obj_t pcidev = nullptr;
		if (sscanf(g.pci.c_str(), "%x:%x:%x.%x", &dom, &bus, &dev, &fn) == 4)
			pcidev = hwloc_get_pcidev_by_busid(topo, dom, bus, dev, fn);
		if (pcidev) {
			hwloc_obj_t cpu = hwloc_get_non_io_ancestor_obj(topo, pcidev);
			if (cpu && cpu->nodeset && !hwloc_bitmap_iszero(cpu->nodeset))
				tg.numa = hwloc_bitmap_first(cpu->nodeset);
			// Nearest NIC: fewest hops from the GPU up to a common
			// ancestor; ties go to the first by name.
			auto up = ancestors(pcidev);
			size_t best = SIZE_MAX;
			for (hwloc_obj_t nic : nics) {
				auto nup = ancestors(nic);
				for (size_t h = 0; h < up.size(); h++) {
					if (std::find(nup.begin(), nup.end(), up[h]) == nup.end())
						continue;
					std::string name = nic->name ? nic->name : "";
					if (h < best || (h == best && name < tg.nearest_nic)) {
						best = h;
						tg.nearest_nic = name;
					}
					break;
				}
			}
		}
		t.gpus.push_back(tg);
	}
	hwloc_topology_destroy(topo);
	return t;
}

} // namespace

Result<std::unique_ptr<Backend>> make_backend(const Config &cfg, const std::string &node)
{
	if (strcasecmp(cfg.str("GpuBackend").c_str(), "sim") == 0) {
		if (!cfg.is_set("SimProfileDir"))
			return Status::Error(cfg.origin() +
			                     ": GpuBackend=sim needs SimProfileDir to be set");
		std::string dir = cfg.str("SimProfileDir");
		auto p = load_profile(profile_path(dir, node));
		if (!p.ok())
			return p.status();
		return make_sim_backend(std::move(p.value()), dir, node);
	}
	return std::unique_ptr<Backend>(new RealBackend(cfg, node));
}

} // namespace admit
} // namespace onramp

namespace onramp {
namespace admit {
namespace {

// Device-to-device copies queued on every GPU the CUDA runtime sees: a
// memory-bound load that keeps the GPUs busy while NVML samples them.
class CopyLoad {
public:
	explicit CopyLoad(gpu::Cudart &c) : c_(c) {}
	~CopyLoad()
	{
		for (auto &g : gpus_) {
			c_.SetDevice(g.dev);
			if (g.stream)
				c_.StreamSynchronize(g.stream), c_.StreamDestroy(g.stream);
			if (g.a)
				c_.Free(g.a);
			if (g.b)
				c_.Free(g.b);
		}
	}
	Status start(int n, size_t bytes)
	{
		bytes_ = bytes;
		for (int i = 0; i < n; i++) {
			gpus_.push_back(G{i, nullptr, nullptr, nullptr});
			G &g = gpus_.back();
			gpu::cudaError e = c_.SetDevice(i);
			if (e == gpu::kCudaSuccess)
				e = c_.Malloc(&g.a, bytes);
			if (e == gpu::kCudaSuccess)
				e = c_.Malloc(&g.b, bytes);
			if (e == gpu::kCudaSuccess)
				e = c_.Memset(g.a, 1, bytes);
			if (e == gpu::kCudaSuccess)
				e = c_.StreamCreate(&g.stream);
			if (e != gpu::kCudaSuccess)
				return Status::Error(
				    strprintf("GPU %d: load setup: %s", i, c_.err(e).c_str()));
		}
		return Status::Ok();
	}
	// Queue copies on every GPU (returns at once).
	Status queue(int copies)
	{
		for (auto &g : gpus_) {
			c_.SetDevice(g.dev);
			for (int k = 0; k < copies; k++) {
				gpu::cudaError e =
				    c_.MemcpyAsync(k % 2 ? g.a : g.b, k % 2 ? g.b : g.a, bytes_,
				                   gpu::kCudaMemcpyDeviceToDevice, g.stream);
				if (e != gpu::kCudaSuccess)
					return Status::Error(strprintf("GPU %d: load copy: %s",
					                               g.dev, c_.err(e).c_str()));
			}
		}
		return Status::Ok();
	}
	Status wait()
	{
		for (auto &g : gpus_) {
			c_.SetDevice(g.dev);
			gpu::cudaError e = c_.StreamSynchronize(g.stream);
			if (e != gpu::kCudaSuccess)
				return Status::Error(
				    strprintf("GPU %d: load: %s", g.dev, c_.err(e).c_str()));
		}
		return Status::Ok();
	}

private:
	struct G {
		int dev;
		void *a, *b;
		gpu::cudaStream stream;
	};
	gpu::Cudart &c_;
	std::vector<G> gpus_;
	size_t bytes_ = 0;
};

} // namespace

Result<GpuDepthObs> RealBackend::gpu_depth(double load_s)
{
	Nvml nvml;
	auto devs = nvml.open_devices();
	if (!devs.ok())
		return devs.status();
	const gpu::Nvml &n = nvml.api();
	gpu::NvmlDepth x;
	gpu::load_nvml_depth(n, &x);
	std::string root = cfg_.str("SysfsRoot");
	GpuDepthObs o;
	o.load_s = load_s;
	const std::vector<gpu::nvmlDevice> &dv = devs.value();
	std::vector<std::map<std::string, uint64_t>> nvl_before(dv.size());
	for (size_t i = 0; i < dv.size(); i++) {
		GpuDepthObs::Gpu g;
		g.index = static_cast<int>(i);
		g.pci = nvml.pci(dv[i]);
		for (const auto &m : x.missing)
			g.unmeasured.push_back(m.first + ": " + m.second);
		gpu::nvmlDevice d = dv[i];
		if (x.DeviceGetMemoryInfo) {
			gpu::nvmlMemory mem = {0, 0, 0};
			g.has_memory = nvml_ok(n, x.DeviceGetMemoryInfo(d, &mem), "memory",
			                       "nvmlDeviceGetMemoryInfo", &g);
			g.memory_total_mib = mem.total >> 20;
		}
		if (x.DeviceGetPersistenceMode) {
			int mode = 0;
			g.has_persistence =
			    nvml_ok(n, x.DeviceGetPersistenceMode(d, &mode), "persistence",
			            "nvmlDeviceGetPersistenceMode", &g);
			g.persistence = mode == gpu::kNvmlFeatureEnabled;
		}
		// Before any context of ours exists: every compute process is foreign.
		if (x.DeviceGetComputeRunningProcesses) {
			gpu::nvmlProcessInfo procs[64];
			unsigned count = 64;
			gpu::nvmlReturn r = x.DeviceGetComputeRunningProcesses(d, &count, procs);
			if (r == gpu::kNvmlErrorInsufficientSize) {
				g.has_processes = true;
				g.foreign_pids.push_back(0); // more than 64: pids not listed
			} else if (nvml_ok(n, r, "processes",
			                   "nvmlDeviceGetComputeRunningProcesses", &g)) {
				g.has_processes = true;
				for (unsigned k = 0; k < count && k < 64; k++)
					if (procs[k].pid != static_cast<unsigned>(getpid()))
						g.foreign_pids.push_back(procs[k].pid);
			}
		}
		unsigned long long corr = 0;
		g.has_ecc_corrected =
		    nvml_ok(n,
		            n.DeviceGetTotalEccErrors(d, gpu::kNvmlMemoryErrorCorrected,
		                                      gpu::kNvmlVolatileEcc, &corr),
		            "ecc_corrected", "nvmlDeviceGetTotalEccErrors", &g);
		g.ecc_corrected = corr;
		unsigned rc = 0, ru = 0, rp = 0, rf = 0;
		g.has_remapped = nvml_ok(n, n.DeviceGetRemappedRows(d, &rc, &ru, &rp, &rf),
		                         "remapped_rows", "nvmlDeviceGetRemappedRows", &g);
		g.remapped_rows = rc + ru;
		if (x.DeviceGetNvLinkErrorCounter)
			g.has_nvlink_errors = nvlink_error_sums(n, x, d, &g, &nvl_before[i]);
		g.has_clock = x.DeviceGetClockInfo != nullptr;
		g.sm_clock_min_mhz = ~0u;
		g.has_throttle = x.DeviceGetClocksEventReasons != nullptr;
		g.has_temp = x.DeviceGetTemperature != nullptr;
		g.has_power = x.DeviceGetPowerUsage != nullptr;
		o.gpus.push_back(g);
	}
	// The load: copies on every GPU the CUDA runtime sees.
	gpu::Cudart cuda;
	Status st = gpu::load_cudart(&cuda);
	if (!st.ok())
		return st;
	int cn = 0;
	gpu::cudaError e = cuda.GetDeviceCount(&cn);
	if (e != gpu::kCudaSuccess)
		return Status::Error("cudaGetDeviceCount: " + cuda.err(e));
	if (cn != static_cast<int>(dv.size()))
		return Status::Error(
		    strprintf("the CUDA runtime sees %d of the %zu GPUs NVML lists: "
		              "cannot load them all",
		              cn, dv.size()));
	// Host <-> device copies over each GPU's PCIe link, before the load.
	auto host = gpu::measure_host_copy_bw(cuda, cn, size_t(256) << 20, 10);
	for (size_t i = 0; i < dv.size(); i++) {
		GpuDepthObs::Gpu &g = o.gpus[i];
		if (!host.ok()) {
			g.unmeasured.push_back("host_copy: " + host.status().message());
			continue;
		}
		g.has_host_copy = true;
		g.h2d_gbs = host.value()[i].h2d_gbs;
		g.d2h_gbs = host.value()[i].d2h_gbs;
	}
	o.load = strprintf("device-to-device copies of 256 MiB on %d GPUs", cn);
	{
		CopyLoad load(cuda);
		st = load.start(cn, size_t(256) << 20);
		if (!st.ok())
			return st;
		double t0 = monotonic_s(), warm = std::min(1.0, load_s / 4);
		int samples = 0;
		while (true) {
			st = load.queue(64);
			if (!st.ok())
				return st;
			sleep_s(0.05);
			double t = monotonic_s() - t0;
			if (t >= warm) {
				samples++;
				for (size_t i = 0; i < dv.size(); i++) {
					GpuDepthObs::Gpu &g = o.gpus[i];
					gpu::nvmlDevice d = dv[i];
					unsigned v = 0;
					unsigned long long bits = 0;
					if (g.has_clock &&
					    (g.has_clock = nvml_ok(
					         n, x.DeviceGetClockInfo(d, gpu::kNvmlClockSm, &v),
					         "clock", "nvmlDeviceGetClockInfo", &g)))
						g.sm_clock_min_mhz =
						    std::min(g.sm_clock_min_mhz, v);
					if (g.has_throttle &&
					    (g.has_throttle = nvml_ok(
					         n, x.DeviceGetClocksEventReasons(d, &bits),
					         "throttle",
					         "nvmlDeviceGetCurrentClocksEventReasons", &g)))
						g.throttle_reasons |= bits;
					if (g.has_temp &&
					    (g.has_temp = nvml_ok(
					         n,
					         x.DeviceGetTemperature(d, gpu::kNvmlTemperatureGpu,
					                                &v),
					         "temperature", "nvmlDeviceGetTemperature", &g)))
						g.temp_max_c = std::max(g.temp_max_c, v);
					if (g.has_power &&
					    (g.has_power =
					         nvml_ok(n, x.DeviceGetPowerUsage(d, &v), "power",
					                 "nvmlDeviceGetPowerUsage", &g)))
						g.power_max_w = std::max(g.power_max_w, v / 1000.0);
					// Idle GPUs train their links down: read them loaded.
					if (samples == 1) {
						std::string dir = pci_device_dir(root, g.pci);
						if (dir.empty())
							g.pcie.why = "no PCI address for the GPU";
						else
							g.pcie = read_pcie_link(dir);
						if (!g.pcie.measured)
							g.unmeasured.push_back("pcie: " +
							                       g.pcie.why);
					}
				}
			}
			st = load.wait();
			if (!st.ok())
				return st;
			if (monotonic_s() - t0 >= load_s && samples > 0)
				break;
		}
	}
	for (size_t i = 0; i < dv.size(); i++) {
		GpuDepthObs::Gpu &g = o.gpus[i];
		if (g.sm_clock_min_mhz == ~0u)
			g.sm_clock_min_mhz = 0;
		std::map<std::string, uint64_t> after;
		if (g.has_nvlink_errors &&
		    (g.has_nvlink_errors = nvlink_error_sums(n, x, dv[i], &g, &after)))
			for (const auto &kv : after) {
				uint64_t b0 = nvl_before[i][kv.first];
				g.nvlink_error_delta[kv.first] =
				    kv.second >= b0 ? kv.second - b0 : 0;
			}
	}
	o.hcas = read_hca_pcie(root);
	return o;
}

} // namespace admit
} // namespace onramp
