// Slurm hostlists ("node[1-4,7],gpu[01-02]") through libslurm's public
// slurm_hostlist_* API: inside a daemon the symbols resolve to the daemon's
// own Slurm library, in tools to libslurm.
#pragma once

#include <string>
#include <vector>

#include "status.hpp"

namespace onramp {

// Expand an expression into host names, in order, duplicates kept.
// Rejects empty input, unbalanced brackets and characters outside
// [A-Za-z0-9._-[],], empty names, more than one [...] per name, ranges that
// are not N or N-M with N <= M, ranges of more than 65,536 hosts (libslurm's
// limit) and more than 1,048,576 hosts.
Result<std::vector<std::string>> hostlist_expand(const std::string &expr);
// The same; an error starts with what ("partition batch: nodes: ...").
Result<std::vector<std::string>> hostlist_expand(const std::string &expr, const std::string &what);
// How many distinct hosts an expression names, without expanding it (the
// same checks as hostlist_expand; cheap enough for slurmctld's locks).
Result<size_t> hostlist_count(const std::string &expr);
// Compress names into Slurm's ranged form (sorted, duplicates removed).
std::string hostlist_compress(const std::vector<std::string> &hosts);

} // namespace onramp
