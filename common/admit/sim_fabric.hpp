// Simulated link-level faults (GpuBackend=sim only): a leaf's uplinks, one
// leaf-spine link or a spine that slows every pair through it. Described in
// <SimProfileDir>/fabric-faults.json (onramp-admit(8)):
//   {"topology": "topology.conf",          required; relative to the directory
//    "fabric": "fabric.json",              optional; else topology.conf's parents
//    "uplinks": {"leaf2": 0.5},            factor on pairs through the leaf's uplinks
//    "links": {"leaf2/spine1": 0.5},       factor on pairs over that link
//    "spines": {"spine1": 0.5}}            factor on pairs routed through the spine
// Pairs are routed as fleet::FabricView::route does; the factors of every
// component on a pair's path multiply. Unknown fields and factors outside
// (0, 1] are refused, so a typo cannot silently heal the fabric.
#pragma once

#include <string>

#include "status.hpp"

namespace onramp {
namespace admit {

// The factor (0, 1] on pair (a, b)'s busbw; 1 when dir has no
// fabric-faults.json. Errors name the file and field.
Result<double> sim_fabric_factor(const std::string &dir, const std::string &a,
                                 const std::string &b);

} // namespace admit
} // namespace onramp
