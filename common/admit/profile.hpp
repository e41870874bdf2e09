// Simulated hardware profiles (GpuBackend=sim only): one JSON file per node,
// <SimProfileDir>/<node>.json, else <SimProfileDir>/default.json. The format
// is documented in onramp-admit(8); unknown fields are refused so a typo
// cannot silently make a profile healthy.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "admit/backend.hpp"
#include "status.hpp"

namespace onramp {
namespace admit {

struct Profile {
	std::string path; // the file it was read from
	std::string sku;  // the SKU it simulates (may differ from onramp.conf's)

	struct Gpu {
		GpuInfo info;
		int numa = -1;
		std::string nearest_nic;
		uint64_t ecc_uncorrected = 0;
		bool remap_pending = false, remap_failed = false;
		int nvlink_links = 18;
		std::vector<int> nvlink_down; // link numbers
		double mem_bw_gbs = 0;
		// What gpu_depth observes (parse_profile's defaults: a healthy
		// H200 under load; the parts named in "unmeasured" not measured).
		GpuDepthObs::Gpu depth;
		// This GPU's figure in the all-GPU pair run (a GPU slow only there);
		// -1: not limiting.
		double pair_busbw_gbs = -1;
	};
	std::vector<Gpu> gpus;

	struct Port {
		int port = 1;
		std::string state = "ACTIVE", phys_state = "LinkUp", link_layer = "InfiniBand";
		double rate_gbps = 0;
		// sysfs's rate text ("400 Gb/sec (2X XDR)"); "": "<rate_gbps> Gb/sec".
		std::string rate_text;
		int64_t link_downed = 0, link_downed_after = 0;
		std::map<std::string, uint64_t> counters, counters_after; // error counters
		int active_mtu = 4096;
		// This port's figure in the per-rail pass; -1: the profile's.
		double rail_busbw_gbs = -1;
	};
	struct Nic {
		NicInfo info;
		std::vector<Port> ports;
		int pcie_gen = 5, pcie_width = 16;
	};
	std::vector<Nic> nics;
	std::string sysfs_root; // absolute; "" when the ports come from nics

	std::map<std::string, std::string> versions;
	std::vector<XidEvent> xids;
	std::vector<double> nccl_busbw_gbs; // one per sample, cycled
	bool nccl_corrupt = false;
	double pair_busbw_gbs = 0;             // the all-GPU pair run's figure
	double rail_busbw_gbs = 0;             // each rail's figure (default: pair_busbw_gbs)
	std::string hang_check;                // the check that hangs ("" none)
	std::string hang_pid_file;             // where the hang writes its pids
	std::map<std::string, double> delay_s; // check -> seconds
};

// Parse a profile; relative sysfs_root and pid_file are resolved against
// the profile's directory. Errors name origin and field.
Result<Profile> parse_profile(const std::string &text, const std::string &origin);
Result<Profile> load_profile(const std::string &path);
// <dir>/<node>.json when it exists, else <dir>/default.json.
std::string profile_path(const std::string &dir, const std::string &node);

// The simulated backend over a loaded profile; dir is SimProfileDir (peer
// profiles for pair_busbw are looked up there, and link-level faults in
// sim_fabric.hpp's file); node is the node it simulates ("" outside a
// fabric: no link faults apply).
std::unique_ptr<Backend> make_sim_backend(Profile profile, const std::string &dir,
                                          const std::string &node = "");

} // namespace admit
} // namespace onramp
