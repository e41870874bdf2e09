// Shared state for high-availability admin hosts (onramp.conf
// SharedStateDir=): the one module, used by the campaign and the migration
// tools alike, that lets a flow started on one admin host be resumed on
// another.
//
// - A journal stays a WAL database on the local disk of the host that runs
//   the flow (StateDir). After each committed write the tool exports a
//   consistent copy of it into SharedStateDir (Db::snapshot_to: SQLite's
//   online backup, rollback-journal mode, never WAL), written to a temp
//   file, fsync'd and rename(2)d over <SharedStateDir>/<journal name>:
//   readers on any host see the previous copy or the next one, whole.
// - Each copy carries a generation (Db::generation), one more than the
//   previous export. A host whose local journal is missing or older than
//   the shared copy imports it before it writes; a shared copy older than
//   the local journal is refused unless the admin chooses (Prefer).
// - A lease per journal (<SharedStateDir>/<journal name>.lease, JSON: host,
//   boot_id, pid, token, started, renewed, expires) keeps two hosts from
//   driving one journal: taken when the tool starts, renewed at every
//   export and by a timer every LeaseSeconds/3, released when the last
//   process of the host that uses it ends. The lease belongs to a host (its
//   name and boot id): processes of one host share it; a host that rebooted
//   (new boot id) holds nothing. A live lease of another host is refused,
//   naming the holder and when it expires; an expired one (expires plus a
//   clock-skew margin in the past) is taken over and the old holder logged.
//   The lease files are created with O_EXCL under a unique name and put in
//   place with link(2) (fails when a lease exists) or rename(2), both atomic
//   on NFS; a takeover moves the stale file aside first and checks it moved
//   the one it judged stale.
//
// Hosts must keep their clocks in step (NTP): the margin (lease_margin)
// covers a skew below it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "atomic_file.hpp"
#include "status.hpp"

namespace onramp {
class Config;
namespace db {

class Db;

// A lease file's content.
struct LeaseInfo {
	std::string host, boot_id, token; // token: new at each write of the file
	int64_t pid = 0, started = 0, renewed = 0, expires = 0;
};
std::string lease_text(const LeaseInfo &l);
Result<LeaseInfo> parse_lease(const std::string &text, const std::string &origin);
// This process as a holder: the host name ($ONRAMP_LEASE_HOST when set: a
// hook for the tests, which run two "hosts" on one machine; else
// gethostname), the kernel's boot id, the pid.
LeaseInfo lease_self();
// Seconds past a lease's expiry before another host takes it over: a tenth
// of the lease, at least 1 s, at most 30 s.
int64_t lease_margin(int64_t lease_s);

class Lease {
public:
	// Take the lease file dir/name for lease_s seconds as me at now (seconds
	// since the epoch). Refused (an error naming the holder and its expiry)
	// when another host holds a live one; *taken_from (when given) gets
	// "host (pid P, expired at T)" when an expired or stale lease was taken
	// over, else "".
	static Result<std::unique_ptr<Lease>> acquire(const std::string &dir,
	                                              const std::string &name, int64_t lease_s,
	                                              const LeaseInfo &me, int64_t now,
	                                              std::string *taken_from = nullptr);
	~Lease(); // stops the timer; the file stays (release() removes it)
	Lease(const Lease &) = delete;
	Lease &operator=(const Lease &) = delete;

	// Push the expiry to now + lease_s. Error, and lost() from then on,
	// when the file is no longer this host's (another host took it over).
	Status renew(int64_t now);
	// Remove the file when it is still this host's.
	Status release();
	// Renew every lease_s/3 seconds from a thread, until the object ends.
	void keep_renewed();
	bool lost() const { return lost_; }
	const std::string &path() const { return path_; }

private:
	Lease(int dirfd, std::string dir, std::string name, int64_t lease_s, LeaseInfo me);
	Status write_mine(int64_t now, bool create_only, bool *exists);
	int dirfd_;
	std::string dir_, name_, path_;
	int64_t lease_s_;
	LeaseInfo me_;
	std::atomic<bool> lost_{false};
	std::mutex mu_;
	std::condition_variable cv_;
	bool stop_ = false;
	std::thread timer_;
};

// What to do when the shared copy is older than the local journal (or to
// force one side).
enum class Prefer { Newest, Local, Shared };
// "local" or "shared" (the tools' --prefer-journal).
Result<Prefer> parse_prefer(const std::string &text);

// SharedStateDir is usable: an absolute path to a directory (not a symlink)
// owned by owner and writable by no group or other account.
Status check_shared_dir(const std::string &dir, uid_t owner);

class SharedJournal {
public:
	// nullptr when cfg sets no SharedStateDir. Else take the lease of
	// local_path's journal (its file name) and bring the local journal up
	// to date from the shared copy: imported when the local one is missing
	// or older (or prefer is Shared); a shared copy older than the local
	// journal is an error unless prefer is Local. Lock files go to
	// <StateDir>/locks.
	static Result<std::unique_ptr<SharedJournal>>
	attach(const Config &cfg, const std::string &local_path, Prefer prefer);
	// The same with the settings given (tests).
	static Result<std::unique_ptr<SharedJournal>>
	attach(const std::string &shared_dir, int64_t lease_s, const std::string &local_path,
	       const std::string &lock_dir, Prefer prefer, const LeaseInfo &me);
	// Export db (the journal opened on local_path) now when the shared copy
	// lags, and after each write it commits from then on. A failed export is
	// logged and retried at the next commit; a lost lease ends the process
	// (exit 75): another host drives the journal now.
	Status follow(Db &db);
	// Export one copy now (generation + 1) and renew the lease.
	Status publish(Db &db);
	// The shared copy and the lease.
	const std::string &shared_path() const { return shared_path_; }
	Lease &lease() { return *lease_; }
	// Releases the lease when no other process of this host uses it.
	~SharedJournal();

private:
	SharedJournal() = default;
	std::string dir_, name_, shared_path_, local_path_, lock_dir_;
	std::unique_ptr<FileLock> users_; // shared flock: this host's processes
	std::unique_ptr<Lease> lease_;
	bool lagging_ = false; // the shared copy is older than the local journal
};

} // namespace db
} // namespace onramp
