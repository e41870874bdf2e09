// The campaign journal: SQLite in <StateDir>/onramp.db through common/db
// (WAL, synchronous=FULL, busy timeout), shared with other onramp flows,
// each owning its own tables; the schema is the one the tool wrote before
// common/db (a journal it left is read and continued as is). This module creates and
// touches only the expand_* tables. Every write is one transaction, so a
// crash leaves the journal at the last completed step; re-running a
// campaign continues from there.
//
// Node states: planned, rebooting, booted, admitting, admitted, drained,
// boot_timeout. Each transition is appended to expand_events (the per-node
// timeline) and stamps the node's t_<state> column.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "campaign/planner.hpp"
#include "status.hpp"

namespace onramp {
namespace db {
class Db;
}
namespace campaign {

extern const char *const kNodeStates[]; // nullptr-terminated, in timeline order
bool valid_node_state(const std::string &s);
// admitted, drained, boot_timeout: the node's wave step is over.
bool final_node_state(const std::string &s);

struct CampaignRow {
	std::string id, nodes; // nodes: Slurm hostlist
	double fraction = 0.2, min_pass = 0.8;
	int64_t boot_timeout = 600;
	std::string state = "running"; // running | paused | done
	std::string status;            // why paused, or a summary
	int64_t created = 0, updated = 0;
};

struct NodeRow {
	std::string node, rack, state, code, detail;
	int wave = 0, reboots = 0;
	std::map<std::string, int64_t> times; // state -> last time entered
};

struct WaveRow {
	int wave = 0;
	std::string state; // planned | open | passed | failed
	int64_t opened = 0, closed = 0;
};

struct EventRow {
	std::string node, state;
	int64_t time = 0;
};

struct PairRow {
	std::string node, rack, peer, peer_rack, result, detail; // result: "" until run
	int64_t time = 0;
};

// The application layer: one smoke job per rack, on the rack's admitted new
// nodes, after the cross-rack validation.
struct SmokeRow {
	std::string rack, nodes; // nodes: Slurm hostlist
	std::string job;         // Slurm job id, "" until submitted
	std::string result;      // "" not run, running, pass, fail
	std::string detail;
	int64_t time = 0;
};

class Journal {
public:
	// Opens (creating) the database with busy_timeout and WAL, and creates the
	// expand_* tables if missing.
	static Result<std::unique_ptr<Journal>> open(const std::string &path);
	// Opens an existing database read-only (no schema change, no pragma that
	// writes; busy_timeout 2 s), for readers such as the metrics exporter.
	static Result<std::unique_ptr<Journal>> open_readonly(const std::string &path);
	~Journal();
	Journal(const Journal &) = delete;
	Journal &operator=(const Journal &) = delete;

	// Creates the campaign with its waves (all nodes planned). Returns false
	// (and changes nothing) when a campaign with this id already exists.
	Result<bool> create(const CampaignRow &c, const std::vector<Wave> &waves, int64_t now);
	// *found is false when there is no such campaign.
	Result<CampaignRow> campaign(const std::string &id, bool *found);
	Result<std::vector<CampaignRow>> campaigns();
	Result<std::vector<NodeRow>> nodes(const std::string &id);
	Result<std::vector<WaveRow>> waves(const std::string &id);
	Result<std::vector<EventRow>> events(const std::string &id);
	Result<std::vector<PairRow>> pairs(const std::string &id);

	// Moves a node to state (stamping t_<state> and logging an event). Entering
	// "rebooting" from another state counts a reboot. Setting the state a
	// node already has changes nothing (idempotent).
	Status set_node(const std::string &id, const std::string &node, const std::string &state,
	                const std::string &code, const std::string &detail, int64_t now);
	Status set_wave(const std::string &id, int wave, const std::string &state, int64_t now);
	Status set_campaign(const std::string &id, const std::string &state,
	                    const std::string &status, int64_t now);
	// Adds the pair unless (node, peer) is already there.
	Status add_pair(const std::string &id, const Pair &p);
	Status set_pair(const std::string &id, const std::string &node, const std::string &peer,
	                const std::string &result, const std::string &detail, int64_t now);
	Result<std::vector<SmokeRow>> smokes(const std::string &id);
	// Adds the rack's smoke row unless the rack has one.
	Status add_smoke(const std::string &id, const std::string &rack, const std::string &nodes);
	Status set_smoke(const std::string &id, const std::string &rack, const std::string &job,
	                 const std::string &result, const std::string &detail, int64_t now);

	// Nodes of nodes that belong to another campaign that is not done:
	// "node (campaign ID, STATE)".
	Result<std::vector<std::string>> overlaps(const std::string &id,
	                                          const std::vector<std::string> &nodes);

	// The database, for db::SharedJournal::follow.
	db::Db &db() { return *db_; }

private:
	explicit Journal(std::unique_ptr<db::Db> db);
	std::unique_ptr<db::Db> db_;
};

} // namespace campaign
} // namespace onramp
