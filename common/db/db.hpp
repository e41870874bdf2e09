// The one SQLite layer under every journal (migration, campaign): a
// database opened with WAL, synchronous=FULL and a busy timeout; prepared
// statements with typed binds by parameter name; rows read by column name;
// RAII transactions. Every error is a Status that names the database file.
// Never linked into a Slurm plugin (nothing here may run under
// slurmctld's locks).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "status.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace onramp {
namespace db {

class Stmt;

// The network (or cluster) filesystem a statfs() f_type names ("nfs",
// "cifs", "lustre", ...), or nullptr for a local one. SQLite's WAL mode
// keeps its index in shared memory (the -shm file, mmap'd), which such a
// filesystem does not share between hosts, and its locks are not reliable
// there either (sqlite.org/wal.html, "WAL does not work over a network
// filesystem"): a journal on one may be corrupted by two hosts at once.
const char *network_fs_name(long f_type);
// Error when dir (the directory of a journal) is on a network filesystem;
// the message names dir, the filesystem and where to put StateDir instead.
// An unreadable dir is an error too (the caller cannot tell).
Status check_journal_dir(const std::string &dir);
Status check_journal_fs(const std::string &dir, long f_type);

class Db {
public:
	// Open (creating it when absent) the database at path: WAL (refused,
	// with check_journal_dir's error, on a network filesystem),
	// synchronous=FULL, busy timeout busy_ms, its -wal and -shm files kept
	// after the last close (so a reader without write access to the
	// directory can open it). Read-only: an existing database, nothing
	// written (a reader such as onramp-metrics).
	static Result<std::unique_ptr<Db>> open(const std::string &path, int busy_ms = 10000,
	                                        bool read_only = false);
	~Db();
	Db(const Db &) = delete;
	Db &operator=(const Db &) = delete;

	// Run SQL text (several statements; no parameters, no rows).
	Status exec(const std::string &sql);
	// A prepared statement; error when sql does not compile.
	Result<Stmt> prepare(const std::string &sql);
	int64_t last_insert_id() const;
	// Rows the last INSERT/UPDATE/DELETE changed.
	int64_t changes() const;
	const std::string &path() const { return path_; }
	// "PATH: what: sqlite's message".
	Status error(const std::string &what) const;

	// The database's generation: SQLite's user_version (a number in the
	// file's header that onramp uses for nothing else), which counts the
	// copies of a journal exported to SharedStateDir (db/shared.hpp).
	Result<int64_t> generation();
	Status set_generation(int64_t gen);
	// A consistent copy of the whole database (SQLite's online backup, so
	// a writer of another connection is neither blocked nor seen half-done)
	// in a new file at path on a local disk, converted to rollback-journal
	// mode (never WAL: the copy must be readable as one file, without its
	// -wal and -shm) with generation gen, synced. path and its -journal are
	// replaced when present.
	Status snapshot_to(const std::string &path, int64_t gen);
	// Replace this database's whole content with the database file at path
	// (a snapshot_to copy), in one transaction of this connection; the copy
	// is checked first (PRAGMA quick_check), and a bad one changes nothing.
	Status restore_from(const std::string &path);
	// The generation of the database file at path, opened read-only and
	// immutable (no lock, no journal: a snapshot_to copy, which is replaced
	// by rename and never written in place).
	static Result<int64_t> file_generation(const std::string &path);
	// Call hook(*this) after each write this connection commits: a
	// transaction's COMMIT, or a write statement run outside one. Not
	// re-entered by the hook's own writes. Empty: no hook.
	void on_commit(std::function<void(Db &)> hook);

private:
	Db(sqlite3 *h, std::string path) : h_(h), path_(std::move(path)) {}
	friend class Stmt;
	// After a statement: the hook when a write was committed since the last call.
	void committed();
	sqlite3 *h_;
	std::string path_;
	std::function<void(Db &)> hook_;
	int64_t hooked_changes_ = 0;
	bool in_hook_ = false;
};

// A prepared statement. Parameters are named in the SQL (":job") and bound
// by that name; a name the statement lacks is an error at step(). Columns
// of a row are read by their name (as the SELECT spells them).
class Stmt {
public:
	Stmt(Stmt &&o) noexcept;
	Stmt &operator=(Stmt &&) = delete;
	Stmt(const Stmt &) = delete;
	~Stmt();

	Stmt &bind(const char *name, int64_t v);
	Stmt &bind(const char *name, const std::string &v);
	Stmt &bind(const char *name, double v);
	Stmt &bind(const char *name, const char *v) { return bind(name, std::string(v)); }
	Stmt &bind(const char *name, bool v) { return bind(name, static_cast<int64_t>(v)); }
	Stmt &bind(const char *name, int v) { return bind(name, static_cast<int64_t>(v)); }
	Stmt &bind(const char *name, uint32_t v) { return bind(name, static_cast<int64_t>(v)); }

	// true: a row is ready; false: done. An error names the database.
	Result<bool> step();
	// Run to the end (a statement that returns no rows).
	Status run();
	// Step through every row, calling row(*this) for each.
	Status each(const std::function<void(const Stmt &)> &row);
	// Whether the last step() failed on a constraint (UNIQUE, NOT NULL...).
	bool constraint_failed() const { return constraint_; }

	// The current row's column by name. REQUIRES: step() returned true and
	// the statement has that column (else a programming error: aborts).
	int64_t i64(const char *col) const;
	std::string text(const char *col) const;
	double real(const char *col) const;
	bool is_null(const char *col) const;
	bool has_column(const char *col) const;

private:
	Stmt(Db *db, sqlite3_stmt *s, std::string sql) : db_(db), s_(s), sql_(std::move(sql)) {}
	friend class Db;
	int column(const char *col) const;
	int need(const char *col) const; // column(), abort when absent
	Db *db_;
	sqlite3_stmt *s_;
	std::string sql_;
	std::string bind_error_;
	bool constraint_ = false;
	mutable std::map<std::string, int> cols_;
};

// BEGIN IMMEDIATE on construction; ROLLBACK on destruction unless commit()
// succeeded. Every multi-statement journal step runs inside one.
class Transaction {
public:
	explicit Transaction(Db &db);
	~Transaction();
	Transaction(const Transaction &) = delete;
	Transaction &operator=(const Transaction &) = delete;
	// Whether BEGIN succeeded (else every statement runs outside it: the
	// caller must stop).
	const Status &status() const { return begun_; }
	Status commit();

private:
	Db &db_;
	Status begun_;
	bool done_ = false;
};

} // namespace db
} // namespace onramp
