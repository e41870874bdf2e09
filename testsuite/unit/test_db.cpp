// common/db: WAL + synchronous=FULL, named binds, columns by name,
// transactions that roll back unless committed, errors naming the file.
#include "unit.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include "db/db.hpp"

using namespace onramp;

static std::unique_ptr<db::Db> fresh(std::string *path)
{
	*path = unit_tmpdir() + "/t.db";
	auto d = db::Db::open(*path);
	assert_true(d.ok());
	assert_true(d.value()
	                ->exec("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT NOT NULL "
	                       "UNIQUE, n INTEGER NOT NULL)")
	                .ok());
	return std::move(d.value());
}

static void test_pragmas(void **)
{
	std::string path;
	auto d = fresh(&path);
	auto s = d->prepare("PRAGMA journal_mode");
	assert_true(s.ok());
	assert_true(s->step().value());
	assert_string_equal(s->text("journal_mode").c_str(), "wal");
	auto f = d->prepare("PRAGMA synchronous");
	assert_true(f->step().value());
	assert_int_equal(f->i64("synchronous"), 2); // FULL
}

static void test_bind_and_read_by_name(void **)
{
	std::string path;
	auto d = fresh(&path);
	auto ins = d->prepare("INSERT INTO t(name, n) VALUES(:name, :n)");
	assert_true(ins.ok());
	// A value with quotes, a NUL-free newline and SQL text is data, not SQL.
	std::string hostile = "x'); DROP TABLE t; --\nNodeList=node[1-8]";
	assert_true(ins->bind(":name", hostile).bind(":n", int64_t(7)).run().ok());
	assert_int_equal(d->last_insert_id(), 1);
	auto q = d->prepare("SELECT n, name AS label FROM t WHERE n = :n");
	q->bind(":n", 7);
	assert_true(q->step().value());
	assert_string_equal(q->text("label").c_str(), hostile.c_str());
	assert_int_equal(q->i64("n"), 7);
	assert_false(q->has_column("name"));
	assert_false(q->step().value());
}

static void test_errors_name_the_file(void **)
{
	std::string path;
	auto d = fresh(&path);
	auto bad = d->prepare("SELEC nothing");
	assert_false(bad.ok());
	assert_contains(bad.status().message(), path.c_str());
	auto ins = d->prepare("INSERT INTO t(name, n) VALUES(:name, :n)");
	assert_true(ins->bind(":name", "a").bind(":n", 1).run().ok());
	auto dup = d->prepare("INSERT INTO t(name, n) VALUES(:name, :n)");
	Status st = dup->bind(":name", "a").bind(":n", 2).run();
	assert_false(st.ok());
	assert_true(dup->constraint_failed());
	assert_contains(st.message(), path.c_str());
	auto unknown = d->prepare("INSERT INTO t(name, n) VALUES(:name, :n)");
	st = unknown->bind(":nmae", "b").bind(":n", 3).run();
	assert_false(st.ok());
	assert_contains(st.message(), "no parameter :nmae");
	auto missing = db::Db::open("/nonexistent-dir/x.db");
	assert_false(missing.ok());
	assert_contains(missing.status().message(), "/nonexistent-dir/x.db");
}

static int64_t count(db::Db &d)
{
	auto q = d.prepare("SELECT count(*) AS c FROM t");
	assert_true(q->step().value());
	return q->i64("c");
}

// StateDir is SlurmUser's: a symlink in place of the database (to an empty
// file of root's, which SQLite would make a database) or of its -wal file
// is refused (the database naming itself), and the target stays as it was.
static void test_symlinked_database_refused(void **)
{
	std::string dir = unit_tmpdir(), victim = dir + "/victim";
	FILE *f = fopen(victim.c_str(), "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(symlink(victim.c_str(), (dir + "/a.db").c_str()), 0);
	auto a = db::Db::open(dir + "/a.db");
	assert_false(a.ok());
	assert_contains(a.status().message(), (dir + "/a.db: a symlink").c_str());
	// The -wal file is opened at the first write (SQLite's O_NOFOLLOW).
	assert_int_equal(symlink(victim.c_str(), (dir + "/b.db-wal").c_str()), 0);
	auto b = db::Db::open(dir + "/b.db");
	assert_false(b.ok() &&
	             b.value()->exec("CREATE TABLE t (x); INSERT INTO t VALUES (1)").ok());
	struct stat sb;
	assert_int_equal(stat(victim.c_str(), &sb), 0);
	assert_int_equal(sb.st_size, 0);
}

// A hard link in place of the -shm, -wal or -journal file (SlurmUser owns
// StateDir; where fs.protected_hardlinks is 0 it can link any file of
// root's there): SQLite opens it O_RDWR without O_NOFOLLOW mattering, and
// the -shm was truncated and overwritten with 32 KiB (seen live: root's
// "onramp-migrate status" destroyed a root-owned file linked there as
// migrate.db-shm). Refused, naming the file; the victim unchanged.
static void test_hard_linked_journal_files_refused(void **)
{
	for (const char *suffix : {"-shm", "-wal", "-journal"}) {
		std::string dir = unit_tmpdir(), victim = dir + "/victim", db = dir + "/m.db";
		{
			auto d = db::Db::open(db);
			assert_true(d.ok());
			assert_true(
			    d.value()->exec("CREATE TABLE t (x); INSERT INTO t VALUES (1)").ok());
		}
		FILE *f = fopen(victim.c_str(), "w");
		assert_non_null(f);
		fputs("root's", f);
		fclose(f);
		unlink((db + suffix).c_str());
		assert_int_equal(link(victim.c_str(), (db + suffix).c_str()), 0);
		auto d = db::Db::open(db);
		if (d.ok())
			(void)d.value()->exec("INSERT INTO t VALUES (2)");
		assert_false(d.ok());
		assert_contains(d.status().message(),
		                (db + suffix + ": has other hard links").c_str());
		struct stat sb;
		assert_int_equal(stat(victim.c_str(), &sb), 0);
		assert_int_equal(sb.st_size, 6);
	}
}

static void test_transactions(void **)
{
	std::string path;
	auto d = fresh(&path);
	{
		db::Transaction tx(*d);
		assert_true(tx.status().ok());
		auto ins = d->prepare("INSERT INTO t(name, n) VALUES('a', 1)");
		assert_true(ins->run().ok());
		// No commit: rolled back when tx goes.
	}
	assert_int_equal(count(*d), 0);
	{
		db::Transaction tx(*d);
		assert_true(d->prepare("INSERT INTO t(name, n) VALUES('a', 1)")->run().ok());
		assert_true(d->prepare("INSERT INTO t(name, n) VALUES('b', 2)")->run().ok());
		assert_true(tx.commit().ok());
	}
	assert_int_equal(count(*d), 2);
	// A second connection sees the committed rows (WAL, busy timeout).
	auto other = db::Db::open(path);
	assert_true(other.ok());
	assert_int_equal(count(*other.value()), 2);
	// Read-only: reads, never writes, never creates.
	auto ro = db::Db::open(path, 1000, true);
	assert_true(ro.ok());
	assert_int_equal(count(*ro.value()), 2);
	assert_false(ro.value()->exec("DELETE FROM t").ok());
	assert_int_equal(count(*d), 2);
	assert_false(db::Db::open(path + ".absent", 1000, true).ok());
}

// A journal on a network filesystem is refused before SQLite opens it in
// WAL mode; a local one (the test's tmp directory) is accepted.
static void test_network_filesystem_refused(void **)
{
	assert_string_equal(db::network_fs_name(0x6969), "nfs");
	assert_string_equal(db::network_fs_name(0xFF534D42), "cifs");
	assert_string_equal(db::network_fs_name(0x0BD00BD0), "lustre");
	assert_null(db::network_fs_name(0xEF53));     // ext2/3/4
	assert_null(db::network_fs_name(0x58465342)); // xfs
	assert_null(db::network_fs_name(0x01021994)); // tmpfs
	Status st = db::check_journal_fs("/shared/onramp", 0x6969);
	assert_false(st.ok());
	assert_contains(st.message(), "/shared/onramp: on a nfs filesystem");
	assert_contains(st.message(), "StateDir");
	assert_true(db::check_journal_fs("/var/lib/onramp", 0xEF53).ok());
	assert_true(db::check_journal_dir(unit_tmpdir()).ok());
	Status gone = db::check_journal_dir(unit_tmpdir() + "/absent");
	assert_false(gone.ok());
	assert_contains(gone.message(), "cannot tell its filesystem");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pragmas),
	    cmocka_unit_test(test_network_filesystem_refused),
	    cmocka_unit_test(test_bind_and_read_by_name),
	    cmocka_unit_test(test_errors_name_the_file),
	    cmocka_unit_test(test_transactions),
	    cmocka_unit_test(test_symlinked_database_refused),
	    cmocka_unit_test(test_hard_linked_journal_files_refused),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
