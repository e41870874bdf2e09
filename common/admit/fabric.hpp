// IB/RoCE ports as sysfs shows them, under a root that is "/" on a real
// node and a fixture tree in tests and simulations:
//   <root>/sys/class/infiniband/<dev>/ports/<n>/{state,phys_state,rate,link_layer}
//   <root>/sys/class/infiniband/<dev>/ports/<n>/counters/link_downed
//   <root>/sys/class/infiniband/<dev>/fw_ver
//   <root>/sys/class/infiniband/<dev>/device/net/<ifname>/address
//   <root>/sys/class/infiniband/<dev>/ports/<n>/counters/<error counter>
// and PCIe links of GPUs and HCAs:
//   <root>/sys/bus/pci/devices/<domain:bus:dev.fn>/current_link_{speed,width}
//   <root>/sys/class/infiniband/<dev>/device/current_link_{speed,width}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "admit/backend.hpp"
#include "status.hpp"

namespace onramp {
namespace admit {

// <root>/sys/class/infiniband (root "/" or "" gives /sys/class/infiniband).
std::string ib_class_dir(const std::string &root);

// Every port of every device, sorted by device then port. A missing
// class directory is no ports (not an error); an unreadable state file is
// an error naming it.
Result<std::vector<PortObs>> read_ib_ports(const std::string &root);
// Devices with fw_ver and the MAC of their first network interface.
std::vector<NicInfo> read_ib_nics(const std::string &root);

// "4: ACTIVE" -> "ACTIVE"; "5: LinkUp" -> "LinkUp"; "ACTIVE" -> "ACTIVE".
std::string port_state_name(const std::string &text);
// "400 Gb/sec (4X NDR)" -> 400; anything not "<decimal>[ ...]" -> 0.
double parse_rate_gbps(const std::string &text);
// A sysfs counter: decimal digits only (blanks around allowed), no sign, no
// overflow. False otherwise.
bool parse_sysfs_u64(const std::string &text, uint64_t *out);
// Lanes of a rate text: "400 Gb/sec (4X NDR)" -> 4; 0 when it names none.
int parse_rate_width(const std::string &text);

// current_link_speed: "16.0 GT/s PCIe", "8 GT/s", "2.5 GT/s" -> GT/s; 0
// for anything else ("Unknown", "").
double parse_pcie_speed_gts(const std::string &text);
// The PCIe generation of a link speed (2.5 -> 1 ... 64 -> 6), 0 if none.
int pcie_gen_of(double gts);
// The link of a PCI device directory (current_link_speed and _width);
// measured false with why naming the file when either is unreadable or
// malformed.
PcieLinkObs read_pcie_link(const std::string &device_dir);
// <root>/sys/bus/pci/devices/<pci>; "" when pci is not a PCI address
// (hex digits, ':' and '.', as NVML and sysfs write it).
std::string pci_device_dir(const std::string &root, const std::string &pci);
// The PCIe links of every IB device under root, by device name.
std::vector<GpuDepthObs::Hca> read_hca_pcie(const std::string &root);

} // namespace admit
} // namespace onramp
