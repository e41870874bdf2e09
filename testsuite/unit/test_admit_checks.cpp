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
	for (const char *name : {"gpu_health", "mem_bw", "nccl_allreduce", "topology"}) {
		CheckResult r = run_check(name, ctx);
		assert_int_equal(r.status, CheckStatus::Fail);
		assert_string_equal(r.code.c_str(), "NO_GPU");
	}
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
	};
	return cmocka_run_group_tests_name("admit_checks", tests, NULL, NULL);
}
