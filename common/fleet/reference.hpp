// Fleet-relative admission: a node judged against its own fleet, not only
// against the absolute floors of the baseline.
//
// Every recorded admission appends the node's figures (mem_bw's slowest GPU,
// nccl_allreduce's busbw, nccl_pair's busbw and the pairs it measured) to its
// own history file, <FleetDir>/<node>.json, kept crash-safe and bounded to
// the last kHistoryMax entries, so a node that degrades between admissions
// is visible. Each node writes only its own file, so concurrent admissions
// never race on one file.
//
// The reference of a check for one SKU is the median and the MAD (median
// absolute deviation) of the latest entry of every other node that passed
// that check, within FleetWindow, leaving out FleetExclude. A value that
// passed the absolute floor is SLOW when
//     value < median * (1 - FleetSlowMargin)  and  value < median - 3 * 1.4826 * MAD
// (the MAD term keeps a noisy fleet from flagging its own spread). With fewer
// than FleetMinSamples values only the floor applies, and the detail says so.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "admit/verdict.hpp"
#include "config.hpp"
#include "fleet/robust.hpp"
#include "json.hpp"
#include "status.hpp"

namespace onramp {
namespace fleet {

struct Policy {
	int64_t min_samples = 8;
	int64_t window_s = 30 * 86400;
	// FleetClearWindow: how recent the other nodes' pairs must be to clear a
	// node's PAIR_BW_LOW as a link's fault (diagnose.hpp, review_verdict).
	int64_t clear_window_s = 86400;
	double margin = 0.05;
	bool drain = false;               // FleetSlowAction=drain
	std::vector<std::string> exclude; // FleetExclude, expanded
	std::string dir;                  // FleetDir (StateDir/fleet when unset)
};
// The policy keys of onramp.conf; an error names FleetExclude when it is not
// a valid hostlist.
Result<Policy> policy_from_config(const Config &cfg);

// "SLOW_MEMBW", "SLOW_NCCL", "SLOW_PAIR" for mem_bw, nccl_allreduce and
// nccl_pair; "" for a check with no fleet figure.
std::string slow_code(const std::string &check);

struct Reference {
	size_t samples = 0;
	double median = 0, mad = 0;
};
Reference reference_of(const std::vector<double> &values);

enum class Outcome { Ok, Slow, TooFewSamples };
struct Judgement {
	Outcome outcome = Outcome::Ok;
	Reference ref;
	double limit = 0; // below this a value is SLOW (0 with too few samples)
	std::string note; // the fleet figures, for a check's detail
};
// value (already above the absolute floor) against the fleet's values.
Judgement judge(double value, const std::vector<double> &fleet, const Policy &p);

// One pair measured during an admission or a probe.
struct PairSample {
	std::string a, b;
	double busbw_gbs = 0; // NaN: no result
	std::string time;     // ISO-8601 UTC
};

// A JSON array of {"a", "b", "busbw_gbs" (absent: no result), "time"}; a
// pair without a time takes default_time. Errors name origin and the item.
Json pairs_to_json(const std::vector<PairSample> &pairs);
Result<std::vector<PairSample>> pairs_from_json(const json_t *array, const std::string &origin,
                                                const std::string &default_time);

// One admission's figures.
struct Entry {
	std::string node, sku, time, status, code;
	std::map<std::string, double> metrics; // check name -> value (passing checks only)
	std::vector<PairSample> pairs;

	Json to_json() const;
	static Result<Entry> from_json(const json_t *j, const std::string &origin);
};

// The most entries a node's history keeps (oldest dropped first).
constexpr size_t kHistoryMax = 32;

// <dir>/<node>.json. REQUIRES: node is a valid node name (no '/').
std::string history_path(const Policy &p, const std::string &node);
// A node's history, oldest first; a missing file is an empty history.
// Errors name the file.
Result<std::vector<Entry>> read_history(const std::string &path);
// Append e to its node's history (crash-safe; creates the directory).
Status append_history(const Policy &p, const Entry &e);
// The entry an admission verdict gives.
Entry entry_of(const admit::Verdict &v);

// The latest entry within the window of every node with a history under
// p.dir, except p.exclude. now is seconds since the epoch. Unreadable files
// are skipped with a warning in *warnings.
std::vector<Entry> load_fleet(const Policy &p, long long now, std::vector<std::string> *warnings);
// Every pair within the window from every history under p.dir (all
// entries, not only the latest).
std::vector<PairSample> fleet_pairs(const Policy &p, long long now);

// The values of check for sku in fleet, except node's own.
std::vector<double> fleet_values(const std::vector<Entry> &fleet, const std::string &sku,
                                 const std::string &check, const std::string &node);

// Judge every passing mem_bw, nccl_allreduce and nccl_pair check of v
// against fleet. A slow check gets code SLOW_<CHECK> and the fleet figures in
// its detail; it fails (drains) with p.drain, else stays passing as a
// warning. A check with too few samples gets a note saying only the floor
// applied. Returns how many checks were SLOW.
int apply_fleet(const Policy &p, const std::vector<Entry> &fleet, admit::Verdict *v);

} // namespace fleet
} // namespace onramp
