// The migration journal (<StateDir>/migrate.db): one row per migration in
// "migrations", one row per state change in "events". The schema is the
// one onramp-migrate has always written (a journal left mid-migration by an
// older binary is resumed as is); each step is one transaction. Read by
// onramp-migrate (driver, status) and onramp-metrics.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "db/db.hpp"
#include "status.hpp"

namespace onramp {
namespace migrate {

// The schema (CREATE ... IF NOT EXISTS), unchanged since the first release.
extern const char *const kJournalSchema;

struct Migration {
	int64_t id = 0;
	uint32_t job = 0;
	std::string state, src, target, ckpt_dir, drained, admin_comment, old_features, error;
	bool target_nodes = false, from_mode = false;
	int64_t base_gen = 0, gen = 0, signal_ms = 0, restarts = 0, leaves = 0;
	int sig = 12; // SIGUSR2
	int64_t ack_s = 60, grace_s = 300, confirm_s = 300;
	int64_t created_ms = 0, updated_ms = 0;
	// Not journaled: how often this run redid steps a restarted slurmctld
	// had lost (bounded, so a controller that keeps losing them ends it).
	int redos = 0;
};

// DONE and ABORTED end a migration (its row is no longer active).
bool is_final_state(const std::string &state);

class Journal {
public:
	// Open (create) the journal at path.
	static Result<std::unique_ptr<Journal>> open(const std::string &path);
	// Open an existing journal to read it only (onramp-metrics).
	static Result<std::unique_ptr<Journal>> open_read_only(const std::string &path);

	// Insert m as PLANNED (m.id set). Refused, naming the migration, when
	// the job already has an active one.
	Status plan(Migration &m, int64_t now_ms);
	// Journal m's new state with its fields (gen, signal_ms, drained,
	// leaves, error, old_features) and an event carrying msg, in one
	// transaction.
	Status save(Migration &m, const std::string &state, const std::string &msg, int64_t now_ms);

	// Active migrations, oldest first.
	Result<std::vector<Migration>> active();
	// Every migration (of job, when given), oldest first.
	Result<std::vector<Migration>> list(std::optional<uint32_t> job = std::nullopt);
	// How many migrations of job completed (DONE).
	Result<int64_t> done_count(uint32_t job);
	// How many migrations are in each state.
	Result<std::map<std::string, int64_t>> count_by_state();
	// Each migration with the seconds from its first journaled event to its
	// last (so far).
	struct Span {
		int64_t id = 0;
		uint32_t job = 0;
		std::string state;
		double seconds = 0;
	};
	Result<std::vector<Span>> spans();
	// The message of the newest event of migration id in state ("" when none).
	Result<std::string> event_message(int64_t id, const std::string &state);

	const std::string &path() const { return db_->path(); }
	// The database, for db::SharedJournal::follow (its commit hook runs
	// under this journal's lock: every write goes through it).
	db::Db &db() { return *db_; }

private:
	explicit Journal(std::unique_ptr<db::Db> db) : db_(std::move(db)) {}
	Result<std::vector<Migration>> select(const std::string &where,
	                                      std::optional<uint32_t> job);
	std::unique_ptr<db::Db> db_;
	std::mutex mu_; // one connection shared by the driving threads
};

} // namespace migrate
} // namespace onramp
