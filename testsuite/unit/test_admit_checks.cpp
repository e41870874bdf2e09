// The checks' judgements: fabric from sysfs fixture trees, XIDs from the
// kernel log, inventory, versions, GPU health, topology; and the real
// backend failing closed on a machine without GPUs.
#include "unit.hpp"

#include <cmath>
#include <functional>

#include "admit/baseline.hpp"
#include "admit/checks.hpp"
#include "admit/fabric.hpp"
#include "admit/kernel_log.hpp"
#include "admit/profile.hpp"
#include "admit_fixture.hpp"

using namespace onramp;
using namespace onramp::admit;

static Baseline sim_baseline()
{
	auto b = load_baseline(src_path("etc/baselines/SIM-8GPU.json"));
	assert_true(b.ok());
	return b.value();
}

// A sysfs tree with n HCAs, one port each.
static std::string fabric_tree(int n, const char *rate = "400 Gb/sec (4X NDR)")
{
	std::string root = unit_tmpdir();
	for (int i = 0; i < n; i++) {
		std::string dev = root + "/sys/class/infiniband/mlx5_" + std::to_string(i);
		put(dev + "/fw_ver", "28.43.1014\n");
		put(dev + "/device/net/ibp" + std::to_string(i) + "/address",
		    "b8:3f:d2:1a:00:0" + std::to_string(i) + "\n");
		std::string p = dev + "/ports/1/";
		put(p + "state", "4: ACTIVE\n");
		put(p + "phys_state", "5: LinkUp\n");
		put(p + "rate", std::string(rate) + "\n");
		put(p + "link_layer", "InfiniBand\n");
		put(p + "counters/link_downed", "3\n");
	}
	return root;
}

static FabricObs observe(const std::string &root, const std::function<void()> &between = nullptr)
{
	FabricObs f;
	f.interval_s = 0.1;
	auto a = read_ib_ports(root);
	assert_true(a.ok());
	if (between)
		between();
	auto b = read_ib_ports(root);
	assert_true(b.ok());
	f.first = a.value();
	f.second = b.value();
	return f;
}

static void fabric_fixture_trees(void **)
{
	Baseline b = sim_baseline();
	std::string good = fabric_tree(8);
	auto ports = read_ib_ports(good);
	assert_int_equal(ports->size(), 8);
	assert_string_equal(port_state_name(ports->at(0).state).c_str(), "ACTIVE");
	assert_true(parse_rate_gbps(ports->at(0).rate) == 400);
	CheckResult ok = evaluate_fabric(observe(good), b);
	assert_int_equal(ok.status, CheckStatus::Pass);
	assert_true(ok.value == 8);

	std::string down = fabric_tree(8);
	put(down + "/sys/class/infiniband/mlx5_5/ports/1/state", "1: DOWN\n");
	put(down + "/sys/class/infiniband/mlx5_5/ports/1/phys_state", "2: Polling\n");
	CheckResult d = evaluate_fabric(observe(down), b);
	assert_string_equal(d.code.c_str(), "PORT_DOWN");
	assert_contains(d.detail, "mlx5_5 port 1 state DOWN phys_state Polling");
	assert_true(d.value == 7);

	std::string slow = fabric_tree(8);
	put(slow + "/sys/class/infiniband/mlx5_2/ports/1/rate", "200 Gb/sec (4X HDR)\n");
	CheckResult s = evaluate_fabric(observe(slow), b);
	assert_string_equal(s.code.c_str(), "PORT_RATE_LOW");
	assert_contains(s.detail, "mlx5_2 port 1 rate 200 Gb/s < 400 Gb/s");

	std::string flap = fabric_tree(8);
	CheckResult fl = evaluate_fabric(observe(flap,
	                                         [&] {
		                                         put(flap + "/sys/class/infiniband/mlx5_1/"
		                                                    "ports/1/counters/link_downed",
		                                             "5\n");
	                                         }),
	                                 b);
	assert_string_equal(fl.code.c_str(), "PORT_FLAPPING");
	assert_contains(fl.detail, "mlx5_1 port 1 link_downed 3 -> 5");

	CheckResult m = evaluate_fabric(observe(fabric_tree(7)), b);
	assert_string_equal(m.code.c_str(), "PORT_MISSING");
	assert_contains(m.detail, "7 ports < 8 expected");

	// No infiniband class at all: no ports, which the SKU says is wrong.
	CheckResult none = evaluate_fabric(observe(unit_tmpdir()), b);
	assert_string_equal(none.code.c_str(), "PORT_MISSING");

	auto nics = read_ib_nics(good);
	assert_int_equal(nics.size(), 8);
	assert_string_equal(nics[3].mac.c_str(), "b8:3f:d2:1a:00:03");
	assert_string_equal(nics[3].fw_ver.c_str(), "28.43.1014");
}

static void sim_profile_reads_a_sysfs_fixture(void **)
{
	AdmitFixture fx;
	std::string root = fabric_tree(8);
	put(root + "/sys/class/infiniband/mlx5_7/ports/1/state", "1: DOWN\n");
	std::string text = slurp(src_path("etc/sim-profiles/healthy.json"));
	text.replace(text.find("\"pair_busbw_gbs\""), 0, "\"sysfs_root\": \"" + root + "\", ");
	auto p = parse_profile(text, "p.json");
	assert_true(p.ok());
	auto be = make_sim_backend(p.value(), fx.profiles);
	auto f = be->fabric(0.0);
	assert_true(f.ok());
	assert_contains(f->source, root.c_str());
	CheckResult r = evaluate_fabric(f.value(), sim_baseline());
	assert_string_equal(r.code.c_str(), "PORT_DOWN");
	assert_contains(r.detail, "mlx5_7");
}

static void xids_from_kmsg_and_dmesg(void **)
{
	std::string log = "6,100,1000000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module\n"
	                  "4,101,5000000000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has "
	                  "fallen off the bus.\n"
	                  " SUBSYSTEM=pci\n"
	                  "4,102,9000000000,-;NVRM: Xid (PCI:0000:19:00): 13, Graphics Exception\n"
	                  "[ 9500.123456] NVRM: Xid (PCI:0000:5d:00): 48, An uncorrectable double "
	                  "bit error\n"
	                  "[   10.0] NVRM: Xid (PCI:0000:db:00): 74, too old\n";
	auto x = parse_xids(log, 10000.0, 7200.0);
	assert_int_equal(x.size(), 3);
	assert_int_equal(x[0].xid, 79);
	assert_string_equal(x[0].gpu.c_str(), "0000:3b:00");
	assert_true(std::fabs(x[0].age_s - 5000) < 1e-6);
	assert_int_equal(x[1].xid, 13);
	assert_int_equal(x[2].xid, 48);
	assert_true(std::fabs(x[2].age_s - 499.876544) < 1e-3);

	// Each critical XID reported once; non-critical ones ignored.
	GpuHealthObs h;
	h.xids = x;
	h.xids.push_back(XidEvent{79, "0000:3b:00", 100});
	Baseline b = sim_baseline();
	CheckResult r = evaluate_gpu_health(h, b, 7200);
	assert_string_equal(r.code.c_str(), "XID_CRITICAL");
	assert_string_equal(r.detail.c_str(), "gpu_health: XID 48 on 0000:5d:00 (1x, latest 500 s "
	                                      "ago); XID 79 on 0000:3b:00 (2x, latest 100 s ago)");
	// The SKU file decides what is critical.
	b.critical_xids = {13};
	r = evaluate_gpu_health(h, b, 7200);
	assert_contains(r.detail, "XID 13");
	assert_true(r.detail.find("XID 79") == std::string::npos);

	std::string f = unit_tmpdir() + "/kern.log";
	put(f, log);
	auto text = read_kernel_log(f);
	assert_true(text.ok());
	assert_int_equal(parse_xids(text.value(), 10000.0, 7200.0).size(), 3);
	assert_false(read_kernel_log("/nonexistent/kmsg").ok());
	// A file another account could write is refused: its lines carry no
	// facility, so anyone writing it could forge an XID.
	chmod(f.c_str(), 0666);
	auto open_to_all = read_kernel_log(f);
	assert_false(open_to_all.ok());
	assert_contains(open_to_all.status().message(), "writable by no other account");
	chmod(f.c_str(), 0644);
	if (geteuid() == 0) {
		assert_int_equal(chown(f.c_str(), 65534, 65534), 0);
		assert_false(read_kernel_log(f).ok());
	}
}

// Only the driver's own lines are XIDs: a kernel-facility record whose
// message starts with "NVRM: Xid (PCI:dddd:bb:dd[.f]): N". A process named
// "NVRM: Xid ():79" that segfaults makes the kernel write a line starting
// with that name; a user writing to /dev/kmsg gets facility user.
static void forged_xid_lines_are_not_xids(void **)
{
	std::string forged =
	    // the segfault line of a process named "NVRM: Xid ():79" (15 bytes)
	    "6,300,9100000000,-;NVRM: Xid ():79[4242]: segfault at 0 ip 0000000000401000 sp "
	    "00007ffd00000000 error 4 in a.out[401000+1000]\n"
	    "6,301,9100000000,-;NVRM: Xid (PCI:[4243]: segfault at 0 ip 0 sp 0 error 4\n"
	    // the text anywhere but at the start
	    "6,302,9100000000,-;a.out[42]: NVRM: Xid (PCI:0000:3b:00): 79, pid=1\n"
	    // a user's write to /dev/kmsg: facility user (pri 12 = 1 << 3 | 4)
	    "12,303,9100000000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1\n"
	    "<12>[ 9100.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1\n"
	    // malformed: no number, trailing junk, bad PCI address, XID 0
	    "4,304,9100000000,-;NVRM: Xid (PCI:0000:3b:00): 79x\n"
	    "4,305,9100000000,-;NVRM: Xid (PCI:0000:3b:0): 79, short bus\n"
	    "4,306,9100000000,-;NVRM: Xid (PCI:0000:3b:00): 0, zero\n"
	    "4,307,9100000000,-;NVRM: Xid (PCI:0000:3b:00):  79, two blanks\n"
	    "x,308,9100000000,-;NVRM: Xid (PCI:0000:3b:00): 79, bad priority\n"
	    // a continuation line of a record
	    " NVRM: Xid (PCI:0000:3b:00): 79, in a dictionary line\n";
	assert_int_equal(parse_xids(forged, 10000.0, 7200.0).size(), 0);
	std::string real =
	    "4,400,9100000000,-;NVRM: Xid (PCI:0000:3B:00): 94, pid=77, name=python\n"
	    "<4>[ 9200.5] NVRM: Xid (PCI:0000:5d:00.1): 31, Ch 00000010\n"
	    "4,401,9300000000,c;NVRM: Xid (PCI:0001:db:00): 79\n";
	auto x = parse_xids(forged + real, 10000.0, 7200.0);
	assert_int_equal(x.size(), 3);
	assert_int_equal(x[0].xid, 94);
	assert_string_equal(x[0].gpu.c_str(), "0000:3b:00");
	assert_int_equal(x[1].xid, 31);
	assert_string_equal(x[1].gpu.c_str(), "0000:5d:00.1");
	assert_true(std::fabs(x[1].age_s - 799.5) < 1e-6);
	assert_int_equal(x[2].xid, 79);
	assert_string_equal(x[2].gpu.c_str(), "0001:db:00");
}

// sysfs values are numbers or nothing: "inf", "0x10", signs, overflow and
// trailing junk are refused, and a garbage counter is an error naming it.
static void sysfs_values_are_strict_numbers(void **)
{
	uint64_t v = 0;
	assert_true(parse_sysfs_u64("3\n", &v) && v == 3);
	assert_true(parse_sysfs_u64(" 18446744073709551615 ", &v) && v == UINT64_MAX);
	for (const char *bad : {"", "-1", "+1", "0x10", "1e3", "3 4", "18446744073709551616", "inf",
	                        "12abc", "99999999999999999999999"})
		assert_false(parse_sysfs_u64(bad, &v));
	assert_true(parse_rate_gbps("400 Gb/sec (4X NDR)") == 400);
	assert_true(parse_rate_gbps("2.5 Gb/sec (1X SDR)") == 2.5);
	for (const char *bad : {"inf Gb/sec", "nan", "1e308 Gb/sec", "0x190 Gb/sec", "-400 Gb/sec",
	                        "400Gb/sec", ".5 Gb/sec", "1.2.3 Gb/sec", "0 Gb/sec"})
		assert_true(parse_rate_gbps(bad) == 0);
	std::string root = fabric_tree(1);
	put(root + "/sys/class/infiniband/mlx5_0/ports/1/counters/link_downed", "-5\n");
	auto p = read_ib_ports(root);
	assert_false(p.ok());
	assert_contains(p.status().message(), "counters/link_downed: '-5' is not a number");
	// Only numeric port directories are ports.
	put(root + "/sys/class/infiniband/mlx5_0/ports/1/counters/link_downed", "5\n");
	put(root + "/sys/class/infiniband/mlx5_0/ports/1x/state", "4: ACTIVE\n");
	p = read_ib_ports(root);
	assert_true(p.ok());
	assert_int_equal(p->size(), 1);
}

static void gpu_health_codes_in_order(void **)
{
	Baseline b = sim_baseline();
	GpuHealthObs h;
	for (int i = 0; i < 8; i++) {
		GpuHealthObs::Gpu g;
		g.index = i;
		g.pci = "p" + std::to_string(i);
		g.nvlink_links = 18;
		h.gpus.push_back(g);
	}
	assert_int_equal(evaluate_gpu_health(h, b, 7200).status, CheckStatus::Pass);
	h.gpus[4].nvlink_down = {3, 7};
	CheckResult r = evaluate_gpu_health(h, b, 7200);
	assert_string_equal(r.code.c_str(), "NVLINK_DOWN");
	assert_contains(r.detail, "GPU 4 (p4) NVLink 3,7 down of 18");
	h.gpus[1].remap_failed = true;
	assert_string_equal(evaluate_gpu_health(h, b, 7200).code.c_str(), "ROW_REMAP");
	h.gpus[6].ecc_uncorrected = 1;
	r = evaluate_gpu_health(h, b, 7200);
	assert_string_equal(r.code.c_str(), "ECC_UNCORRECTED");
	assert_true(r.value == 3); // every problem is still listed
	assert_contains(r.detail, "row remap failed");
}

// gpu_health's data carries every GPU's ECC, remapped rows and NVLink
// state, and says "not supported" rather than 0 when NVML cannot read it.
static void gpu_health_data_per_gpu(void **)
{
	Baseline b = sim_baseline();
	GpuHealthObs h;
	GpuHealthObs::Gpu g;
	g.index = 0;
	g.pci = "0000:19:00.0";
	g.remapped_correctable = 2;
	g.nvlink_links = 18;
	g.nvlink_down = {5};
	h.gpus.push_back(g);
	g.index = 1;
	g.ecc_supported = false;
	g.remap_supported = false;
	g.nvlink_links = 0;
	g.nvlink_down.clear();
	h.gpus.push_back(g);
	std::string j = evaluate_gpu_health(h, b, 7200).to_json().dump();
	assert_contains(j, "\"remapped_rows_correctable\":2");
	assert_contains(j, "\"nvlink_down\":[5]");
	assert_contains(j, "\"ecc_uncorrected\":\"not supported\"");
	assert_contains(j, "\"remapped_rows\":\"not supported\"");
	assert_string_equal(evaluate_gpu_health(h, b, 7200).code.c_str(), "NVLINK_DOWN");

	// One GPU alone (a one-GPU SKU) has no NVLink peer: its inactive links
	// are data, not a failure.
	b.gpu_count = 1;
	h.gpus.pop_back();
	CheckResult one = evaluate_gpu_health(h, b, 7200);
	assert_int_equal(one.status, CheckStatus::Pass);
	assert_contains(one.detail, "NVLink not judged (one-GPU SKU)");
	assert_contains(one.to_json().dump(), "\"nvlink_down\":[5]");
}

// NVML lists GPUs whatever CUDA_VISIBLE_DEVICES says: when the CUDA
// runtime sees none of them the inventory is NO_GPU (not a pass that the
// measurements then contradict), and when it sees fewer, GPU_COUNT.
static void inventory_needs_the_cuda_runtime_to_see_the_gpus(void **)
{
	Baseline b = sim_baseline();
	Inventory inv;
	for (int i = 0; i < 8; i++)
		inv.gpus.push_back(
		    GpuInfo{i, "GPU-" + std::to_string(i), "S", "pci", "NVIDIA H200", ""});
	inv.cuda_devices = 0;
	inv.cuda_error = "cudaGetDeviceCount: no CUDA-capable device is detected with "
	                 "CUDA_VISIBLE_DEVICES=''";
	CheckResult r = evaluate_inventory(inv, b);
	assert_string_equal(r.code.c_str(), "NO_GPU");
	assert_contains(r.detail, "NVML lists 8 GPUs but the CUDA runtime sees none");
	assert_contains(r.detail, "CUDA_VISIBLE_DEVICES=''");
	assert_contains(r.to_json().dump(), "\"uuid\":\"GPU-7\""); // asset record kept
	inv.cuda_devices = 1;
	r = evaluate_inventory(inv, b);
	assert_string_equal(r.code.c_str(), "GPU_COUNT");
	assert_contains(r.detail, "the CUDA runtime sees 1 of the 8 GPUs");
	inv.cuda_devices = 8;
	assert_int_equal(evaluate_inventory(inv, b).status, CheckStatus::Pass);
	inv.cuda_devices = -1; // not asked (sim)
	assert_int_equal(evaluate_inventory(inv, b).status, CheckStatus::Pass);
}

static void inventory_versions_topology(void **)
{
	Baseline b = sim_baseline();
	Inventory inv;
	assert_string_equal(evaluate_inventory(inv, b).code.c_str(), "NO_GPU");
	for (int i = 0; i < 7; i++)
		inv.gpus.push_back(
		    GpuInfo{i, "GPU-" + std::to_string(i), "S", "pci", "NVIDIA H200", ""});
	CheckResult r = evaluate_inventory(inv, b);
	assert_string_equal(r.code.c_str(), "GPU_COUNT");
	assert_string_equal(r.detail.c_str(), "inventory found 7 GPUs, SKU SIM-8GPU has 8");
	inv.gpus.push_back(GpuInfo{7, "GPU-7", "S", "pci", "NVIDIA H100 80GB HBM3", ""});
	r = evaluate_inventory(inv, b);
	assert_string_equal(r.code.c_str(), "GPU_MODEL");
	assert_contains(r.detail, "GPU 7 is 'NVIDIA H100 80GB HBM3'");
	inv.gpus[7].model = "NVIDIA H200";
	r = evaluate_inventory(inv, b);
	assert_int_equal(r.status, CheckStatus::Pass);
	// The asset record travels in data.
	assert_contains(r.to_json().dump(), "\"uuid\":\"GPU-7\"");

	VersionsObs v;
	v.versions = {{"driver", "570.124.06"},
	              {"vbios", "96.00.A5.00.01"},
	              {"cuda_runtime", "12.8"},
	              {"nccl", "2.25.1"}};
	for (int i = 0; i < 8; i++)
		v.firmware["mlx5_" + std::to_string(i)] = "28.43.1014";
	assert_int_equal(evaluate_versions(v, b).status, CheckStatus::Pass);
	v.versions["nccl"] = "2.21.5";
	v.versions.erase("driver");
	v.errors["driver"] = "cannot load NVML";
	v.firmware["mlx5_4"] = "28.39.1002";
	r = evaluate_versions(v, b);
	assert_string_equal(r.code.c_str(), "VERSION_MISMATCH");
	assert_string_equal(
	    r.detail.c_str(),
	    "versions: driver expected 570.124.06 found none (cannot load NVML); "
	    "nccl expected 2.25.1 found 2.21.5; firmware mlx5_4 expected 28.43.1014 "
	    "found 28.39.1002");
	assert_true(r.value == 3);

	TopologyObs t;
	for (int i = 0; i < 8; i++)
		t.gpus.push_back(
		    TopologyObs::Gpu{i, "p", i < 4 ? 0 : 1, "mlx5_" + std::to_string(i)});
	assert_int_equal(evaluate_topology(t, b).status, CheckStatus::Pass);
	t.gpus[5].nearest_nic = "mlx5_1";
	t.gpus.pop_back();
	r = evaluate_topology(t, b);
	assert_string_equal(r.code.c_str(), "AFFINITY_MISMATCH");
	assert_string_equal(r.detail.c_str(), "topology: GPU 5 nearest NIC expected mlx5_5 found "
	                                      "mlx5_1; GPU 7 not found");
}

static void real_backend_without_gpu_fails_closed(void **)
{
	AdmitFixture fx("real");
	Config c = fx.config();
	auto be = make_backend(c, "n1");
	assert_true(be.ok());
	assert_string_equal(be.value()->name(), "real");
	assert_false(be.value()->simulated());
	Baseline b = load_baseline(fx.baselines + "/H200-SXM-8.json").value();
	CheckContext ctx;
	ctx.cfg = &c;
	ctx.baseline = &b;
	ctx.backend = be.value().get();
	ctx.node = "n1";
	CheckResult inv = run_check("inventory", ctx);
	assert_int_equal(inv.status, CheckStatus::Fail);
	assert_string_equal(inv.code.c_str(), "NO_GPU");
	assert_false(inv.simulated);
	// Without the inventory having run, each GPU check finds out itself.
	for (const char *name :
	     {"gpu_health", "mem_bw", "nccl_allreduce", "topology", "gpu_depth"}) {
		CheckResult r = run_check(name, ctx);
		assert_int_equal(r.status, CheckStatus::Fail);
		assert_string_equal(r.code.c_str(), "NO_GPU");
	}
}

// A healthy gpu_depth observation of the SIM-8GPU baseline's SKU.
static GpuDepthObs healthy_depth()
{
	GpuDepthObs o;
	o.load_s = 30;
	for (int i = 0; i < 8; i++) {
		GpuDepthObs::Gpu g;
		g.index = i;
		g.pci = "p" + std::to_string(i);
		g.has_clock = g.has_throttle = g.has_temp = g.has_power = true;
		g.sm_clock_min_mhz = 1980;
		g.throttle_reasons = 0x4; // sw_power_cap: normal under load
		g.temp_max_c = 60;
		g.power_max_w = 640;
		g.has_memory = g.has_persistence = g.has_processes = true;
		g.memory_total_mib = 143771;
		g.persistence = true;
		g.has_ecc_corrected = g.has_remapped = g.has_nvlink_errors = true;
		g.has_host_copy = true;
		g.h2d_gbs = 52.4;
		g.d2h_gbs = 51.9;
		g.nvlink_error_delta = {{"replay", 3}, {"recovery", 0}};
		g.pcie.measured = true;
		g.pcie.gen = 5;
		g.pcie.width = 16;
		g.pcie.speed_gts = 32;
		o.gpus.push_back(g);
		GpuDepthObs::Hca h;
		h.dev = "mlx5_" + std::to_string(i);
		h.pcie = g.pcie;
		o.hcas.push_back(h);
	}
	return o;
}

static void gpu_depth_each_failure_names_its_part(void **)
{
	Baseline b = sim_baseline();
	CheckResult ok = evaluate_gpu_depth(healthy_depth(), b);
	assert_int_equal(ok.status, CheckStatus::Pass);
	assert_string_equal(ok.code.c_str(), "OK");
	struct Case {
		const char *code, *part;
		std::function<void(GpuDepthObs &)> hurt;
	} cases[] = {
	    {"GPU_THROTTLED", "GPU 3 (p3) throttled under load: hw_thermal",
	     [](GpuDepthObs &o) { o.gpus[3].throttle_reasons |= 0x40; }},
	    {"GPU_THROTTLED", "GPU 2 (p2) SM clock 1200 MHz < 1500 MHz",
	     [](GpuDepthObs &o) { o.gpus[2].sm_clock_min_mhz = 1200; }},
	    {"GPU_TEMP_HIGH", "GPU 1 (p1) 90 C > 85 C",
	     [](GpuDepthObs &o) { o.gpus[1].temp_max_c = 90; }},
	    {"GPU_POWER_HIGH", "GPU 0 (p0) 760 W > 700 W",
	     [](GpuDepthObs &o) { o.gpus[0].power_max_w = 760; }},
	    {"PCIE_DEGRADED", "GPU 4 (p4) PCIe Gen5 x8 (32 GT/s): x8 < x16",
	     [](GpuDepthObs &o) { o.gpus[4].pcie.width = 8; }},
	    {"PCIE_DEGRADED", "mlx5_5 PCIe Gen3 x16 (8 GT/s): Gen3 < Gen5",
	     [](GpuDepthObs &o) {
		     o.hcas[5].pcie.gen = 3;
		     o.hcas[5].pcie.speed_gts = 8;
	     }},
	    {"PCIE_DEGRADED", "GPU 3 (p3) host->device 12.5 GB/s < 40.0 GB/s",
	     [](GpuDepthObs &o) { o.gpus[3].h2d_gbs = 12.5; }},
	    {"PCIE_DEGRADED", "GPU 1 (p1) device->host 20.0 GB/s < 40.0 GB/s",
	     [](GpuDepthObs &o) { o.gpus[1].d2h_gbs = 20; }},
	    {"NVLINK_ERRORS", "GPU 6 (p6) NVLink recovery errors +2 during load > 0",
	     [](GpuDepthObs &o) { o.gpus[6].nvlink_error_delta["recovery"] = 2; }},
	    {"ECC_CORRECTED_HIGH", "GPU 7 (p7) 5000 volatile corrected ECC errors > 1000",
	     [](GpuDepthObs &o) { o.gpus[7].ecc_corrected = 5000; }},
	    {"ROW_REMAP_HIGH", "GPU 5 (p5) 20 remapped rows > 16",
	     [](GpuDepthObs &o) { o.gpus[5].remapped_rows = 20; }},
	    {"GPU_MEMORY", "GPU 2 (p2) 81559 MiB < 143000 MiB",
	     [](GpuDepthObs &o) { o.gpus[2].memory_total_mib = 81559; }},
	    {"PERSISTENCE_OFF", "GPU 1 (p1) persistence mode off",
	     [](GpuDepthObs &o) { o.gpus[1].persistence = false; }},
	    {"GPU_FOREIGN_PROCESS", "GPU 0 (p0) runs process 4242",
	     [](GpuDepthObs &o) { o.gpus[0].foreign_pids = {4242}; }},
	};
	for (auto &c : cases) {
		GpuDepthObs o = healthy_depth();
		c.hurt(o);
		CheckResult r = evaluate_gpu_depth(o, b);
		if (r.code != c.code)
			print_error("%s: got %s: %s\n", c.code, r.code.c_str(), r.detail.c_str());
		assert_int_equal(r.status, CheckStatus::Fail);
		assert_string_equal(r.code.c_str(), c.code);
		assert_contains(r.detail, c.part);
	}
	// Throttling wins over the others; every problem is listed.
	GpuDepthObs o = healthy_depth();
	o.gpus[1].persistence = false;
	o.gpus[3].throttle_reasons |= 0x20;
	CheckResult r = evaluate_gpu_depth(o, b);
	assert_string_equal(r.code.c_str(), "GPU_THROTTLED");
	assert_true(r.value == 2);
	assert_contains(r.detail, "persistence mode off");
	// A baseline may make sw_power_cap a failure too.
	Baseline strict = b;
	strict.gpu_depth.throttle_fail_mask |= throttle_reason_bit("sw_power_cap");
	assert_string_equal(evaluate_gpu_depth(healthy_depth(), strict).code.c_str(),
	                    "GPU_THROTTLED");
	// No GPU observed is NO_GPU.
	assert_string_equal(evaluate_gpu_depth(GpuDepthObs(), b).code.c_str(), "NO_GPU");
}

static void gpu_depth_unmeasured_is_never_a_pass(void **)
{
	Baseline b = sim_baseline();
	GpuDepthObs o = healthy_depth();
	o.gpus[6].has_power = false;
	o.gpus[6].unmeasured = {"power: NVML has no nvmlDeviceGetPowerUsage"};
	CheckResult r = evaluate_gpu_depth(o, b);
	assert_int_equal(r.status, CheckStatus::Error);
	assert_string_equal(r.code.c_str(), "CHECK_ERROR");
	assert_contains(r.detail, "GPU 6 (p6) power: NVML has no nvmlDeviceGetPowerUsage");
	o.gpus[4].has_host_copy = false;
	o.gpus[4].unmeasured = {"host_copy: cudaMallocHost: out of memory"};
	assert_contains(evaluate_gpu_depth(o, b).detail,
	                "GPU 4 (p4) host_copy: cudaMallocHost: out of memory");
	o.hcas[2].pcie = PcieLinkObs();
	o.hcas[2].pcie.why = "x/current_link_speed: No such file";
	r = evaluate_gpu_depth(o, b);
	assert_contains(r.detail, "mlx5_2 pcie: x/current_link_speed");
	// A part the baseline does not judge is not needed.
	Baseline lax = b;
	lax.gpu_depth.max_power_w = 0;
	lax.gpu_depth.hca_pcie_gen = lax.gpu_depth.hca_pcie_width = 0;
	lax.gpu_depth.min_h2d_gbs = lax.gpu_depth.min_d2h_gbs = 0;
	assert_int_equal(evaluate_gpu_depth(o, lax).status, CheckStatus::Pass);
	// A measured failure still fails, the unmeasured part listed.
	o.gpus[0].temp_max_c = 99;
	r = evaluate_gpu_depth(o, b);
	assert_string_equal(r.code.c_str(), "GPU_TEMP_HIGH");
	assert_contains(r.detail, "; not measured: GPU 4 (p4) host_copy");
	assert_contains(r.detail, "GPU 6 (p6) power: NVML has no");
}

static void pcie_links_from_sysfs(void **)
{
	assert_true(parse_pcie_speed_gts("16.0 GT/s PCIe\n") == 16);
	assert_true(parse_pcie_speed_gts("8 GT/s") == 8);
	assert_true(parse_pcie_speed_gts("2.5 GT/s PCIe") == 2.5);
	for (const char *bad : {"Unknown", "", "16.0", "16.0 GT/sX", "inf GT/s", "-8 GT/s",
	                        "0x10 GT/s", "16.0  GT/s"})
		assert_true(parse_pcie_speed_gts(bad) == 0);
	assert_int_equal(pcie_gen_of(32), 5);
	assert_int_equal(pcie_gen_of(2.5), 1);
	assert_int_equal(pcie_gen_of(64), 6);
	assert_int_equal(pcie_gen_of(10), 0);
	std::string root = fabric_tree(2);
	std::string gpu = pci_device_dir(root, "0000:19:00.0");
	assert_string_equal(gpu.c_str(), (root + "/sys/bus/pci/devices/0000:19:00.0").c_str());
	assert_string_equal(pci_device_dir(root, "../../etc").c_str(), "");
	for (const char *bad : {"", "..", "..7", "0000:19:00.0/..", "0000:19:00", "19:00.0",
	                        "0000:19:00.0x", "0000:1g:00.0"})
		assert_string_equal(pci_device_dir(root, bad).c_str(), "");
	assert_string_equal(pci_device_dir("/", "00000000:3b:00.1").c_str(),
	                    "/sys/bus/pci/devices/00000000:3b:00.1");
	put(gpu + "/current_link_speed", "32.0 GT/s PCIe\n");
	put(gpu + "/current_link_width", "16\n");
	PcieLinkObs l = read_pcie_link(gpu);
	assert_true(l.measured);
	assert_int_equal(l.gen, 5);
	assert_int_equal(l.width, 16);
	put(gpu + "/current_link_width", "x16\n");
	l = read_pcie_link(gpu);
	assert_false(l.measured);
	assert_contains(l.why, "not understood");
	// HCAs: one with its link, one without (unmeasured, with the file).
	std::string d0 = root + "/sys/class/infiniband/mlx5_0/device/";
	put(d0 + "current_link_speed", "16.0 GT/s PCIe\n");
	put(d0 + "current_link_width", "8\n");
	auto hcas = read_hca_pcie(root);
	assert_int_equal(hcas.size(), 2);
	assert_true(hcas[0].pcie.measured);
	assert_int_equal(hcas[0].pcie.gen, 4);
	assert_int_equal(hcas[0].pcie.width, 8);
	assert_false(hcas[1].pcie.measured);
	assert_contains(hcas[1].pcie.why, "mlx5_1/device/current_link_speed");
}

static void fabric_counters_width_mtu_and_history(void **)
{
	Baseline b = sim_baseline();
	std::string root = fabric_tree(8);
	std::string c2 = root + "/sys/class/infiniband/mlx5_2/ports/1/counters/";
	put(c2 + "symbol_error", "7\n");
	put(c2 + "port_rcv_errors", "0\n");
	FabricObs ok = observe(root);
	assert_int_equal(ok.second[2].counters.at("symbol_error"), 7);
	assert_int_equal(evaluate_fabric(ok, b).status, CheckStatus::Pass);
	// Grown past its limit (10) during the check.
	CheckResult r =
	    evaluate_fabric(observe(root, [&] { put(c2 + "symbol_error", "5007\n"); }), b);
	assert_string_equal(r.code.c_str(), "PORT_ERRORS");
	assert_contains(r.detail, "mlx5_2 port 1 symbol_error +5000");
	// Within the limit, or a counter the baseline does not limit: pass.
	put(c2 + "symbol_error", "7\n");
	assert_int_equal(
	    evaluate_fabric(observe(root, [&] { put(c2 + "symbol_error", "12\n"); }), b).status,
	    CheckStatus::Pass);
	// A garbled counter is an error naming its file.
	put(c2 + "port_rcv_errors", "12abc\n");
	auto bad = read_ib_ports(root);
	assert_false(bad.ok());
	assert_contains(bad.status().message(), "mlx5_2/ports/1/counters/port_rcv_errors");
	put(c2 + "port_rcv_errors", "0\n");
	// A port trained to 2X of 4X.
	put(root + "/sys/class/infiniband/mlx5_4/ports/1/rate", "400 Gb/sec (2X NDR)\n");
	r = evaluate_fabric(observe(root), b);
	assert_string_equal(r.code.c_str(), "PORT_WIDTH_LOW");
	assert_contains(r.detail, "mlx5_4 port 1 width 2X < 4X");
	put(root + "/sys/class/infiniband/mlx5_4/ports/1/rate", "400 Gb/sec (4X NDR)\n");
	// Active MTU (libibverbs on a real node) below the SKU's.
	FabricObs m = observe(root);
	m.second[1].active_mtu = 2048;
	r = evaluate_fabric(m, b);
	assert_string_equal(r.code.c_str(), "PORT_MTU_LOW");
	assert_contains(r.detail, "mlx5_1 port 1 active MTU 2048 < 4096");
	// link_downed grew since the previous admission: flapping; lower (a
	// reset counter) says nothing.
	FabricObs h = observe(root);
	h.previous["mlx5_6/1"]["link_downed"] = 1;
	h.previous_time = "2026-12-01T10:00:00Z";
	r = evaluate_fabric(h, b);
	assert_string_equal(r.code.c_str(), "PORT_FLAPPING");
	assert_contains(r.detail, "mlx5_6 port 1 link_downed 1 -> 3 since the last admission");
	assert_contains(r.data.dump(), "\"previous_admission\":\"2026-12-01T10:00:00Z\"");
	h.previous["mlx5_6/1"]["link_downed"] = 9;
	assert_int_equal(evaluate_fabric(h, b).status, CheckStatus::Pass);
}

static void nvlink_mask_spares_links_inactive_by_design(void **)
{
	Baseline b = sim_baseline();
	b.nvlink_mask = 0xfff; // links 0-11 carry traffic on this SKU
	b.nvlink_active_links = 12;
	GpuHealthObs h;
	for (int i = 0; i < 8; i++) {
		GpuHealthObs::Gpu g;
		g.index = i;
		g.pci = "p" + std::to_string(i);
		g.nvlink_links = 18;
		g.nvlink_down = {12, 13, 14, 15, 16, 17};
		h.gpus.push_back(g);
	}
	assert_int_equal(evaluate_gpu_health(h, b, 7200).status, CheckStatus::Pass);
	h.gpus[2].nvlink_down.push_back(4);
	CheckResult r = evaluate_gpu_health(h, b, 7200);
	assert_string_equal(r.code.c_str(), "NVLINK_DOWN");
	assert_contains(r.detail, "GPU 2 (p2) NVLink 4 down of 18");
	h.gpus[2].nvlink_down.pop_back();
	h.gpus[5].nvlink_links = 17; // a link gone from NVML's list
	r = evaluate_gpu_health(h, b, 7200);
	assert_string_equal(r.code.c_str(), "NVLINK_DOWN");
	assert_contains(r.detail, "GPU 5 (p5) 11 NVLinks active, SKU has 12");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(fabric_fixture_trees),
	    cmocka_unit_test(sim_profile_reads_a_sysfs_fixture),
	    cmocka_unit_test(xids_from_kmsg_and_dmesg),
	    cmocka_unit_test(forged_xid_lines_are_not_xids),
	    cmocka_unit_test(sysfs_values_are_strict_numbers),
	    cmocka_unit_test(gpu_health_codes_in_order),
	    cmocka_unit_test(gpu_health_data_per_gpu),
	    cmocka_unit_test(inventory_needs_the_cuda_runtime_to_see_the_gpus),
	    cmocka_unit_test(inventory_versions_topology),
	    cmocka_unit_test(real_backend_without_gpu_fails_closed),
	    cmocka_unit_test(gpu_depth_each_failure_names_its_part),
	    cmocka_unit_test(gpu_depth_unmeasured_is_never_a_pass),
	    cmocka_unit_test(pcie_links_from_sysfs),
	    cmocka_unit_test(fabric_counters_width_mtu_and_history),
	    cmocka_unit_test(nvlink_mask_spares_links_inactive_by_design),
	};
	return cmocka_run_group_tests_name("admit_checks", tests, NULL, NULL);
}
