// common/db/shared: the lease of a journal in SharedStateDir (acquire,
// refuse a live one of another host, take over an expired one, renew,
// release, share it between processes of one host) and the journal's copy
// there (consistent, never WAL, its generation compared on resume).
#include "unit.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include "atomic_file.hpp"
#include "db/db.hpp"
#include "db/shared.hpp"

using namespace onramp;

namespace {

constexpr int64_t kLease = 60;
constexpr int64_t kNow = 1700000000;

db::LeaseInfo host(const char *name, const char *boot = "boot-1", int64_t pid = 100)
{
	db::LeaseInfo h;
	h.host = name;
	h.boot_id = boot;
	h.pid = pid;
	return h;
}

db::LeaseInfo on_disk(const std::string &path)
{
	auto t = read_file(path);
	assert_true(t.ok());
	auto l = db::parse_lease(t.value(), path);
	assert_true(l.ok());
	return l.value();
}

// dir holds one file, the lease, and it is host's: no temp or aside file
// left behind.
void only_lease_of(const std::string &dir, const char *host)
{
	assert_string_equal(on_disk(dir + "/j.lease").host.c_str(), host);
	assert_int_equal(list_dir(dir).size(), 1);
}

bool exists(const std::string &path)
{
	struct stat sb;
	return lstat(path.c_str(), &sb) == 0;
}

int64_t count_rows(db::Db &d)
{
	auto q = d.prepare("SELECT count(*) AS n FROM t");
	assert_true(q.ok());
	assert_true(q->step().value());
	return q->i64("n");
}

std::unique_ptr<db::Db> open_db(const std::string &path)
{
	auto d = db::Db::open(path);
	assert_true(d.ok());
	return std::move(d.value());
}

void insert(db::Db &d, const char *name)
{
	auto s = d.prepare("INSERT INTO t(name) VALUES(:n)");
	assert_true(s.ok());
	assert_true(s->bind(":n", name).run().ok());
}

// Two admin hosts on one machine: each its StateDir, one SharedStateDir.
struct Site {
	std::string shared = unit_tmpdir(), a = unit_tmpdir(), b = unit_tmpdir();
	std::string path_a = a + "/j.db", path_b = b + "/j.db";
	Result<std::unique_ptr<db::SharedJournal>>
	attach(const std::string &local, const char *name, db::Prefer p = db::Prefer::Newest)
	{
		return db::SharedJournal::attach(shared, kLease, local, dir_of(local), p,
		                                 host(name, "boot-1", getpid()));
	}
	static std::string dir_of(const std::string &p) { return p.substr(0, p.rfind('/')); }
	// Host A attached, its journal *d (a table t) followed.
	std::unique_ptr<db::SharedJournal> host_a(std::unique_ptr<db::Db> *d)
	{
		auto a = attach(path_a, "hostA");
		assert_true(a.ok());
		*d = open_db(path_a);
		assert_true((*d)->exec("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT)").ok());
		assert_true(a.value()->follow(**d).ok());
		return std::move(a.value());
	}
};

} // namespace

static void test_lease_acquire_refuse_live_and_release(void **)
{
	std::string dir = unit_tmpdir();
	auto a = db::Lease::acquire(dir, "j.lease", kLease, host("hostA"), kNow);
	assert_true(a.ok());
	db::LeaseInfo l = on_disk(dir + "/j.lease");
	assert_string_equal(l.host.c_str(), "hostA");
	assert_int_equal(l.pid, 100);
	assert_int_equal(l.started, kNow);
	assert_int_equal(l.expires, kNow + kLease);
	// Another host, while it is live (even past expires, within the margin).
	auto b = db::Lease::acquire(dir, "j.lease", kLease, host("hostB"),
	                            kNow + kLease + db::lease_margin(kLease));
	assert_false(b.ok());
	assert_contains(b.status().message(), (dir + "/j.lease: held by hostA (pid 100").c_str());
	assert_contains(b.status().message(), "another admin host drives this journal");
	assert_string_equal(on_disk(dir + "/j.lease").host.c_str(), "hostA");
	// Released: free for the other host, nothing taken over.
	assert_true(a.value()->release().ok());
	assert_false(exists(dir + "/j.lease"));
	std::string from = "x";
	b = db::Lease::acquire(dir, "j.lease", kLease, host("hostB"), kNow + 1, &from);
	assert_true(b.ok());
	assert_string_equal(from.c_str(), "");
	only_lease_of(dir, "hostB");
}

static void test_lease_take_over_expired(void **)
{
	std::string dir = unit_tmpdir();
	auto a = db::Lease::acquire(dir, "j.lease", kLease, host("hostA"), kNow);
	assert_true(a.ok());
	std::string from;
	auto b = db::Lease::acquire(dir, "j.lease", kLease, host("hostB", "boot-2", 200),
	                            kNow + kLease + db::lease_margin(kLease) + 1, &from);
	assert_true(b.ok());
	assert_contains(from, "hostA (pid 100, expired at");
	only_lease_of(dir, "hostB");
	// The old holder finds out at its next renewal, and does not take it
	// back or remove it.
	Status st = a.value()->renew(kNow + kLease + 100);
	assert_false(st.ok());
	assert_contains(st.message(), "the lease is lost: now held by hostB (pid 200");
	assert_true(a.value()->lost());
	assert_true(a.value()->release().ok());
	only_lease_of(dir, "hostB");
}

static void test_lease_renew_keeps_it_live(void **)
{
	std::string dir = unit_tmpdir();
	auto a = db::Lease::acquire(dir, "j.lease", kLease, host("hostA"), kNow);
	assert_true(a.ok());
	assert_true(a.value()->renew(kNow + 50).ok());
	db::LeaseInfo l = on_disk(dir + "/j.lease");
	assert_int_equal(l.renewed, kNow + 50);
	assert_int_equal(l.expires, kNow + 50 + kLease);
	assert_int_equal(l.started, kNow);
	// Expired by the first term, live by the renewed one.
	auto b = db::Lease::acquire(dir, "j.lease", kLease, host("hostB"),
	                            kNow + kLease + db::lease_margin(kLease) + 1);
	assert_false(b.ok());
	assert_contains(b.status().message(), "held by hostA");
	assert_false(a.value()->lost());
}

static void test_lease_same_host_shares_rebooted_host_holds_nothing(void **)
{
	std::string dir = unit_tmpdir();
	auto a1 = db::Lease::acquire(dir, "j.lease", kLease, host("hostA", "boot-1", 100), kNow);
	assert_true(a1.ok());
	// Another process of the same host and boot: the host's lease, shared.
	auto a2 =
	    db::Lease::acquire(dir, "j.lease", kLease, host("hostA", "boot-1", 101), kNow + 1);
	assert_true(a2.ok());
	assert_true(a1.value()->renew(kNow + 2).ok());
	// The same host after a reboot: the live lease of its old boot is stale.
	std::string from;
	auto a3 =
	    db::Lease::acquire(dir, "j.lease", kLease, host("hostA", "boot-2", 7), kNow + 3, &from);
	assert_true(a3.ok());
	assert_contains(from, "hostA (pid 100, rebooted since; lease of boot boot-1)");
	assert_false(a1.value()->renew(kNow + 4).ok());
}

static void test_lease_damaged_file_is_named(void **)
{
	std::string dir = unit_tmpdir();
	assert_true(write_file_atomic(dir + "/j.lease", "{\"host\": 3}\n").ok());
	auto a = db::Lease::acquire(dir, "j.lease", kLease, host("hostA"), kNow);
	assert_false(a.ok());
	assert_contains(a.status().message(), (dir + "/j.lease").c_str());
	assert_contains(a.status().message(), "host");
	assert_contains(a.status().message(), "a damaged lease");
}

static void test_commit_hook_after_each_write(void **)
{
	std::string path = unit_tmpdir() + "/h.db";
	auto d = open_db(path);
	assert_true(d->exec("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT)").ok());
	int calls = 0;
	d->on_commit([&](db::Db &) { calls++; });
	insert(*d, "a"); // autocommit
	assert_int_equal(calls, 1);
	{
		db::Transaction tx(*d);
		insert(*d, "b");
		insert(*d, "c");
		assert_int_equal(calls, 1); // not before the COMMIT
		assert_true(tx.commit().ok());
	}
	assert_int_equal(calls, 2);
	assert_int_equal(count_rows(*d), 3); // a read: no call
	assert_int_equal(calls, 2);
}

static void test_snapshot_is_consistent_and_not_wal(void **)
{
	std::string dir = unit_tmpdir();
	auto d = open_db(dir + "/src.db");
	assert_true(d->exec("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT)").ok());
	insert(*d, "committed");
	// Another connection's open transaction is not in the copy.
	auto other = open_db(dir + "/src.db");
	assert_true(other->exec("BEGIN IMMEDIATE").ok());
	insert(*other, "uncommitted");
	assert_true(d->snapshot_to(dir + "/copy.db", 42).ok());
	assert_true(other->exec("COMMIT").ok());
	assert_false(exists(dir + "/copy.db-wal"));
	// The header: read/write versions 1 (rollback journal; WAL is 2).
	auto bytes = read_file(dir + "/copy.db");
	assert_true(bytes.ok() && bytes->size() > 100);
	assert_int_equal(static_cast<unsigned char>(bytes.value()[18]), 1);
	assert_int_equal(static_cast<unsigned char>(bytes.value()[19]), 1);
	auto gen = db::Db::file_generation(dir + "/copy.db");
	assert_true(gen.ok());
	assert_int_equal(gen.value(), 42);
	// Restored into a journal: the committed row only, and its generation.
	auto r = open_db(dir + "/restored.db");
	assert_true(r->restore_from(dir + "/copy.db").ok());
	assert_int_equal(count_rows(*r), 1);
	assert_int_equal(r->generation().value(), 42);
	// A damaged copy changes nothing.
	assert_true(write_file_atomic(dir + "/bad.db", std::string(8192, 'x')).ok());
	Status st = r->restore_from(dir + "/bad.db");
	assert_false(st.ok());
	assert_contains(st.message(), (dir + "/bad.db").c_str());
	assert_int_equal(count_rows(*r), 1);
}

static void test_export_then_resume_on_the_other_host(void **)
{
	Site s;
	{
		std::unique_ptr<db::Db> d;
		auto a = s.host_a(&d);
		// The first export seeds the shared copy; each commit then exports.
		assert_int_equal(db::Db::file_generation(s.shared + "/j.db").value(), 1);
		insert(*d, "one");
		insert(*d, "two");
		assert_int_equal(db::Db::file_generation(s.shared + "/j.db").value(), 3);
		assert_int_equal(d->generation().value(), 3);
		assert_true(exists(s.shared + "/j.db.lease"));
		// Host B meanwhile: refused, naming host A.
		auto b = s.attach(s.path_b, "hostB");
		assert_false(b.ok());
		assert_contains(b.status().message(), "held by hostA");
		assert_false(exists(s.path_b));
	}
	// Host A ended (its lease released): host B imports the copy.
	assert_false(exists(s.shared + "/j.db.lease"));
	auto b = s.attach(s.path_b, "hostB");
	assert_true(b.ok());
	auto d = open_db(s.path_b);
	assert_int_equal(count_rows(*d), 2);
	assert_int_equal(d->generation().value(), 3);
	assert_true(b.value()->follow(*d).ok());
	assert_int_equal(db::Db::file_generation(s.shared + "/j.db").value(), 3);
	insert(*d, "three on B");
	assert_int_equal(db::Db::file_generation(s.shared + "/j.db").value(), 4);
	assert_string_equal(on_disk(s.shared + "/j.db.lease").host.c_str(), "hostB");
	// Only the copy and the lease in SharedStateDir: no temp file.
	assert_int_equal(list_dir(s.shared).size(), 2);
}

static void test_older_shared_copy_refused_unless_chosen(void **)
{
	Site s;
	{
		std::unique_ptr<db::Db> d;
		auto a = s.host_a(&d);
		insert(*d, "one"); // generation 2 here and there
	}
	// Host B's journal went on alone to generation 5.
	{
		auto d = open_db(s.path_b);
		assert_true(d->exec("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT)").ok());
		insert(*d, "b1");
		insert(*d, "b2");
		assert_true(d->set_generation(5).ok());
	}
	auto b = s.attach(s.path_b, "hostB");
	assert_false(b.ok());
	std::string want = s.shared + "/j.db (generation 2) is older than the local journal " +
	                   s.path_b + " (generation 5)";
	assert_contains(b.status().message(), want.c_str());
	assert_contains(b.status().message(), "--prefer-journal local");
	// Refusing released the lease.
	assert_false(exists(s.shared + "/j.db.lease"));
	{
		// --prefer-journal shared: the copy replaces the local journal.
		auto sh = s.attach(s.path_b, "hostB", db::Prefer::Shared);
		assert_true(sh.ok());
		auto d = open_db(s.path_b);
		assert_int_equal(count_rows(*d), 1);
		assert_int_equal(d->generation().value(), 2);
		insert(*d, "b3"); // not followed: the local journal goes ahead alone
		assert_true(d->set_generation(5).ok());
	}
	// --prefer-journal local: the local journal overwrites the copy.
	auto lo = s.attach(s.path_b, "hostB", db::Prefer::Local);
	assert_true(lo.ok());
	auto d = open_db(s.path_b);
	assert_true(lo.value()->follow(*d).ok());
	assert_int_equal(db::Db::file_generation(s.shared + "/j.db").value(), 6);
	auto copy = open_db(unit_tmpdir() + "/check.db");
	assert_true(copy->restore_from(s.shared + "/j.db").ok());
	assert_int_equal(count_rows(*copy), 2);
}

static void test_parse_prefer_and_shared_dir(void **)
{
	assert_true(db::parse_prefer("local").value() == db::Prefer::Local);
	assert_true(db::parse_prefer("shared").value() == db::Prefer::Shared);
	assert_false(db::parse_prefer("newest").ok());
	std::string dir = unit_tmpdir();
	assert_true(db::check_shared_dir(dir, geteuid()).ok());
	assert_contains(db::check_shared_dir("relative/dir", geteuid()).message(),
	                "not an absolute path");
	assert_contains(db::check_shared_dir(dir, geteuid() + 1).message(), "owned by uid");
	assert_true(chmod(dir.c_str(), 0775) == 0);
	assert_contains(db::check_shared_dir(dir, geteuid()).message(),
	                "writable by group or others (mode 0775)");
	std::string link = unit_tmpdir() + "/link";
	assert_true(symlink(dir.c_str(), link.c_str()) == 0);
	assert_contains(db::check_shared_dir(link, geteuid()).message(), "a symbolic link");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lease_acquire_refuse_live_and_release),
	    cmocka_unit_test(test_lease_take_over_expired),
	    cmocka_unit_test(test_lease_renew_keeps_it_live),
	    cmocka_unit_test(test_lease_same_host_shares_rebooted_host_holds_nothing),
	    cmocka_unit_test(test_lease_damaged_file_is_named),
	    cmocka_unit_test(test_commit_hook_after_each_write),
	    cmocka_unit_test(test_snapshot_is_consistent_and_not_wal),
	    cmocka_unit_test(test_export_then_resume_on_the_other_host),
	    cmocka_unit_test(test_older_shared_copy_refused_unless_chosen),
	    cmocka_unit_test(test_parse_prefer_and_shared_dir),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
