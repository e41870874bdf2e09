#include "db/db.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "log.hpp"

namespace onramp {
namespace db {

const char *network_fs_name(long f_type)
{
	// Magic numbers of linux/magic.h and the filesystems' own headers.
	static const struct {
		unsigned long magic;
		const char *name;
	} net[] = {
	    {0x6969, "nfs"},
	    {0x517B, "smb"},
	    {0xFF534D42, "cifs"},
	    {0xFE534D42, "smb2"},
	    {0x0BD00BD0, "lustre"},
	    {0x47504653, "gpfs"},
	    {0x00C36400, "ceph"},
	    {0x5346414F, "afs"},
	    {0x6B414653, "kafs"},
	    {0x01021997, "9p"},
	    {0x7461636F, "ocfs2"},
	    {0x01161970, "gfs2"},
	    {0x65735546, "fuse"},
	    {0x564C, "ncp"},
	    {0x73757245, "coda"},
	    {0xAAD7AAEA, "panfs"},
	    {0x19830326, "fhgfs (BeeGFS)"},
	};
	for (const auto &n : net)
		if (static_cast<unsigned long>(f_type) == n.magic)
			return n.name;
	return nullptr;
}

Status check_journal_fs(const std::string &dir, long f_type)
{
	const char *fs = network_fs_name(f_type);
	if (!fs)
		return Status::Ok();
	return Status::Error(
	    dir + ": on a " + fs +
	    " filesystem: onramp's journals are SQLite databases in WAL mode, which "
	    "does not work on a network filesystem (its shared-memory index is not "
	    "shared between hosts, its locks are not reliable); keep StateDir on a local "
	    "disk of the admin host (onramp.conf(5), \"High-availability controllers\")");
}

Status check_journal_dir(const std::string &dir)
{
	struct statfs sf;
	if (statfs(dir.c_str(), &sf) != 0)
		return Status::Error(dir + ": cannot tell its filesystem: " + strerror(errno));
	return check_journal_fs(dir, static_cast<long>(sf.f_type));
}

Result<std::unique_ptr<Db>> Db::open(const std::string &path, int busy_ms, bool read_only)
{
	if (!read_only) {
		// A directory statfs cannot read is left to SQLite's own error.
		auto slash = path.rfind('/');
		std::string dir = slash == std::string::npos ? "."
		                  : slash == 0               ? "/"
		                                             : path.substr(0, slash);
		struct statfs sf;
		if (statfs(dir.c_str(), &sf) == 0) {
			Status fs = check_journal_fs(dir, static_cast<long>(sf.f_type));
			if (!fs.ok())
				return Status::Error(path + ": " + fs.message());
		}
	}
	// A hard link there (SlurmUser owns StateDir and, where
	// fs.protected_hardlinks is 0, may link any file of root's) would be
	// written through: SQLite truncates and maps the -shm, writes the -wal
	// and the database in place. Refused before SQLite opens them (a link
	// made in between is not seen: StateDir's owner can always race this).
	for (const char *suffix : {"", "-wal", "-shm", "-journal"}) {
		struct stat sb;
		std::string f = path + suffix;
		if (lstat(f.c_str(), &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_nlink != 1)
			return Status::Error(path + ": cannot open: " + f +
			                     ": has other hard links, refused");
	}
	sqlite3 *h = nullptr;
	int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	// StateDir is SlurmUser's: a symlink there in place of the database
	// would have root open its target as one, and make an empty file a
	// journal. SQLite opens the -wal, -shm and -journal files O_NOFOLLOW.
	flags |= SQLITE_OPEN_NOFOLLOW;
	int rc = sqlite3_open_v2(path.c_str(), &h, flags | SQLITE_OPEN_FULLMUTEX, nullptr);
	if (rc != SQLITE_OK) {
		std::string why = h ? sqlite3_errmsg(h) : sqlite3_errstr(rc);
		// Say which file was refused.
		for (const char *suffix : {"", "-wal", "-shm", "-journal"}) {
			struct stat sb;
			std::string f = path + suffix;
			if (lstat(f.c_str(), &sb) == 0 && !S_ISREG(sb.st_mode)) {
				why += "; " + f + ": a symlink or not a regular file, refused";
				break;
			}
		}
		sqlite3_close(h);
		return Status::Error(path + ": cannot open: " + why);
	}
	std::unique_ptr<Db> db(new Db(h, path));
	sqlite3_busy_timeout(h, busy_ms);
	if (read_only)
		return db;
	// Keep the -wal and -shm files when the last connection closes: a
	// reader that cannot create them (onramp-metrics as its own user, no
	// write access to StateDir) can open a WAL database only while they
	// exist (sqlite.org/wal.html, "Read-Only Databases").
	int persist = 1;
	sqlite3_file_control(h, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
	Status st = db->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;");
	if (!st.ok())
		return st;
	return db;
}

Db::~Db()
{
	sqlite3_close(h_);
}

Status Db::error(const std::string &what) const
{
	return Status::Error(path_ + ": " + what + ": " + sqlite3_errmsg(h_));
}

Status Db::exec(const std::string &sql)
{
	char *err = nullptr;
	if (sqlite3_exec(h_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
		Status s = Status::Error(path_ + ": " + (err ? err : "error"));
		sqlite3_free(err);
		return s;
	}
	committed();
	return Status::Ok();
}

void Db::on_commit(std::function<void(Db &)> hook)
{
	hook_ = std::move(hook);
	hooked_changes_ = sqlite3_total_changes64(h_);
}

void Db::committed()
{
	// total_changes counts rows written, committed or not: outside a
	// transaction (autocommit) a change since the last call was committed
	// (or rolled back: the hook then sees the same content again).
	if (!hook_ || in_hook_ || !sqlite3_get_autocommit(h_) ||
	    sqlite3_total_changes64(h_) == hooked_changes_)
		return;
	in_hook_ = true;
	hook_(*this);
	hooked_changes_ = sqlite3_total_changes64(h_);
	in_hook_ = false;
}

Result<int64_t> Db::generation()
{
	auto q = prepare("PRAGMA user_version");
	if (!q.ok())
		return q.status();
	auto r = q->step();
	if (!r.ok())
		return r.status();
	return r.value() ? q->i64("user_version") : 0;
}

Status Db::set_generation(int64_t gen)
{
	return exec("PRAGMA user_version = " + std::to_string(gen));
}

namespace {

// A database file opened by sqlite3 alone (not a Db: no WAL, no hook),
// closed with the object.
struct RawDb {
	sqlite3 *h = nullptr;
	~RawDb() { sqlite3_close(h); }
	Status open(const std::string &path, int flags)
	{
		if (sqlite3_open_v2(path.c_str(), &h, flags | SQLITE_OPEN_FULLMUTEX, nullptr) ==
		    SQLITE_OK)
			return Status::Ok();
		return Status::Error(path +
		                     ": cannot open: " + (h ? sqlite3_errmsg(h) : "out of memory"));
	}
	Status exec(const std::string &sql, const std::string &what)
	{
		if (sqlite3_exec(h, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK)
			return Status::Ok();
		return Status::Error(std::string(sqlite3_db_filename(h, "main")) + ": " + what +
		                     ": " + sqlite3_errmsg(h));
	}
	// The first column of the first row of sql, as text.
	Result<std::string> text(const std::string &sql)
	{
		sqlite3_stmt *s = nullptr;
		std::string out;
		int rc = sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr);
		if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
			const unsigned char *t = sqlite3_column_text(s, 0);
			out = t ? reinterpret_cast<const char *>(t) : "";
			rc = SQLITE_OK;
		}
		sqlite3_finalize(s);
		if (rc != SQLITE_OK && rc != SQLITE_DONE)
			return Status::Error(std::string(sqlite3_db_filename(h, "main")) + ": '" +
			                     sql + "': " + sqlite3_errmsg(h));
		return out;
	}
	// Open path read-only and immutable (a URI: no lock, no journal read).
	Status open_immutable(const std::string &path)
	{
		std::string uri = "file:";
		for (char c : path) // what a URI would read as its own syntax
			uri += c == '%' || c == '#' || c == '?' ? strprintf("%%%02X", c)
			                                        : std::string(1, c);
		return open(uri + "?immutable=1", SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
	}
};

Status backup(sqlite3 *dest, sqlite3 *src, const std::string &what)
{
	sqlite3_backup *b = sqlite3_backup_init(dest, "main", src, "main");
	if (!b)
		return Status::Error(what + ": " + sqlite3_errmsg(dest));
	int rc;
	while ((rc = sqlite3_backup_step(b, -1)) == SQLITE_BUSY || rc == SQLITE_LOCKED)
		sqlite3_sleep(50);
	int fin = sqlite3_backup_finish(b);
	if (rc != SQLITE_DONE || fin != SQLITE_OK)
		return Status::Error(what + ": " + sqlite3_errstr(rc != SQLITE_DONE ? rc : fin));
	return Status::Ok();
}

} // namespace

Status Db::snapshot_to(const std::string &path, int64_t gen)
{
	for (const char *suffix : {"", "-journal", "-wal", "-shm"})
		if (unlink((path + suffix).c_str()) != 0 && errno != ENOENT)
			return Status::Error(path + suffix + ": cannot remove: " + strerror(errno));
	RawDb d;
	Status st = d.open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
	if (st.ok())
		st = backup(d.h, h_, path + ": cannot copy " + path_);
	// The copy's header says WAL when the source is in WAL mode: turn it
	// into a rollback-journal database, one file.
	if (st.ok())
		st = d.exec("PRAGMA journal_mode=DELETE", "journal_mode=DELETE");
	if (st.ok())
		st = d.exec("PRAGMA synchronous=FULL; PRAGMA user_version = " + std::to_string(gen),
		            "set its generation");
	if (!st.ok())
		return st;
	auto mode = d.text("PRAGMA journal_mode");
	if (!mode.ok())
		return mode.status();
	if (mode.value() != "delete")
		return Status::Error(path + ": the copy is in journal mode '" + mode.value() +
		                     "', not 'delete'");
	return Status::Ok();
}

namespace {

// One value (the first of a PRAGMA's answer) of the database file at path,
// opened in d read-only and immutable when d is not open yet.
Result<std::string> immutable_query(RawDb &d, const std::string &path, const std::string &sql)
{
	if (!d.h) {
		Status st = d.open_immutable(path);
		if (!st.ok())
			return st;
	}
	return d.text(sql);
}

} // namespace

Status Db::restore_from(const std::string &path)
{
	RawDb src; // one descriptor: the file checked is the file restored
	auto check = immutable_query(src, path, "PRAGMA quick_check");
	if (!check.ok())
		return check.status();
	if (check.value() != "ok")
		return Status::Error(path +
		                     ": not a sound database (quick_check: " + check.value() + ")");
	Status st = backup(h_, src.h, path_ + ": cannot restore from " + path);
	if (st.ok())
		committed();
	return st;
}

Result<int64_t> Db::file_generation(const std::string &path)
{
	RawDb d;
	auto v = immutable_query(d, path, "PRAGMA user_version");
	if (!v.ok())
		return v.status();
	return static_cast<int64_t>(strtoll(v.value().c_str(), nullptr, 10));
}

Result<Stmt> Db::prepare(const std::string &sql)
{
	sqlite3_stmt *s = nullptr;
	if (sqlite3_prepare_v2(h_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
		return error("cannot prepare '" + sql + "'");
	return Stmt(this, s, sql);
}

int64_t Db::last_insert_id() const
{
	return sqlite3_last_insert_rowid(h_);
}

int64_t Db::changes() const
{
	return sqlite3_changes(h_);
}

Stmt::Stmt(Stmt &&o) noexcept
    : db_(o.db_), s_(o.s_), sql_(std::move(o.sql_)), bind_error_(std::move(o.bind_error_)),
      constraint_(o.constraint_), cols_(std::move(o.cols_))
{
	o.s_ = nullptr;
}

Stmt::~Stmt()
{
	sqlite3_finalize(s_);
}

Stmt &Stmt::bind(const char *name, int64_t v)
{
	int i = sqlite3_bind_parameter_index(s_, name);
	if (i == 0)
		bind_error_ = std::string("no parameter ") + name;
	else
		sqlite3_bind_int64(s_, i, v);
	return *this;
}

Stmt &Stmt::bind(const char *name, const std::string &v)
{
	int i = sqlite3_bind_parameter_index(s_, name);
	if (i == 0)
		bind_error_ = std::string("no parameter ") + name;
	else
		sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
	return *this;
}

Stmt &Stmt::bind(const char *name, double v)
{
	int i = sqlite3_bind_parameter_index(s_, name);
	if (i == 0)
		bind_error_ = std::string("no parameter ") + name;
	else
		sqlite3_bind_double(s_, i, v);
	return *this;
}

Result<bool> Stmt::step()
{
	constraint_ = false;
	if (!bind_error_.empty())
		return Status::Error(db_->path() + ": '" + sql_ + "': " + bind_error_);
	int rc = sqlite3_step(s_);
	if (rc == SQLITE_ROW)
		return true;
	if (rc == SQLITE_DONE) {
		db_->committed();
		return false;
	}
	constraint_ = (rc & 0xff) == SQLITE_CONSTRAINT;
	Status st = db_->error("'" + sql_ + "'");
	sqlite3_reset(s_);
	return st;
}

Status Stmt::each(const std::function<void(const Stmt &)> &row)
{
	for (;;) {
		auto r = step();
		if (!r.ok())
			return r.status();
		if (!r.value())
			return Status::Ok();
		row(*this);
	}
}

Status Stmt::run()
{
	return each([](const Stmt &) {});
}

int Stmt::column(const char *col) const
{
	if (cols_.empty())
		for (int i = 0; i < sqlite3_column_count(s_); i++)
			cols_[sqlite3_column_name(s_, i)] = i;
	auto it = cols_.find(col);
	return it == cols_.end() ? -1 : it->second;
}

bool Stmt::has_column(const char *col) const
{
	return column(col) >= 0;
}

int Stmt::need(const char *col) const
{
	int i = column(col);
	if (i < 0) {
		log_error("%s: no column '%s' in '%s'", db_->path().c_str(), col, sql_.c_str());
		abort();
	}
	return i;
}

int64_t Stmt::i64(const char *col) const
{
	return sqlite3_column_int64(s_, need(col));
}

double Stmt::real(const char *col) const
{
	return sqlite3_column_double(s_, need(col));
}

bool Stmt::is_null(const char *col) const
{
	return sqlite3_column_type(s_, need(col)) == SQLITE_NULL;
}

std::string Stmt::text(const char *col) const
{
	int i = need(col);
	const unsigned char *t = sqlite3_column_text(s_, i);
	return t ? std::string(reinterpret_cast<const char *>(t),
	                       static_cast<size_t>(sqlite3_column_bytes(s_, i)))
	         : std::string();
}

Transaction::Transaction(Db &db) : db_(db)
{
	begun_ = db_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction()
{
	if (begun_.ok() && !done_)
		(void)db_.exec("ROLLBACK");
}

Status Transaction::commit()
{
	if (!begun_.ok())
		return begun_;
	Status st = db_.exec("COMMIT");
	if (st.ok())
		done_ = true;
	return st;
}

} // namespace db
} // namespace onramp
