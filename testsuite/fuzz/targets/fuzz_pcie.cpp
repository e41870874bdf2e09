// sysfs PCIe link values (current_link_speed / current_link_width), the
// rate text's width, and a PCI address turned into a sysfs path.
#include "admit/fabric.hpp"
#include "fuzz.hpp"

using namespace onramp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_stderr_level(LogLevel::Error);
	std::string text = fuzz_text(data, size);
	double gts = admit::parse_pcie_speed_gts(text);
	if (!(gts >= 0) || gts > 1e13)
		__builtin_trap();
	int gen = admit::pcie_gen_of(gts);
	if (gen < 0 || gen > 6)
		__builtin_trap();
	int w = admit::parse_rate_width(text);
	if (w < 0 || w > 999)
		__builtin_trap();
	// A path under devices/ and nowhere else.
	const std::string pre = "/r/sys/bus/pci/devices/";
	std::string dir = admit::pci_device_dir("/r", text);
	if (!dir.empty() &&
	    (dir.compare(0, pre.size(), pre) != 0 ||
	     dir.find('/', pre.size()) != std::string::npos || dir.find("..") != std::string::npos))
		__builtin_trap();
	return 0;
}
