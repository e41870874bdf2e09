// IB/RoCE ports as sysfs shows them, under a root that is "/" on a real
// node and a fixture tree in tests and simulations:
//   <root>/sys/class/infiniband/<dev>/ports/<n>/{state,phys_state,rate,link_layer}
//   <root>/sys/class/infiniband/<dev>/ports/<n>/counters/link_downed
//   <root>/sys/class/infiniband/<dev>/fw_ver
//   <root>/sys/class/infiniband/<dev>/device/net/<ifname>/address
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

} // namespace admit
} // namespace onramp
