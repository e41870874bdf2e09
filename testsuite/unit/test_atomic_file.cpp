// Crash-safe writer: content replaced whole, no temp files left, errors named.
#include "unit.hpp"

#include <atomic>
#include <cerrno>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <set>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "atomic_file.hpp"

using namespace onramp;

static int count_entries(const std::string &dir)
{
	DIR *d = opendir(dir.c_str());
	int n = 0;
	while (struct dirent *e = readdir(d))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void replace_whole_and_leave_no_temp(void **)
{
	std::string dir = unit_tmpdir(), f = dir + "/record.json";
	assert_true(write_file_atomic(f, "first", 0600).ok());
	assert_true(write_file_atomic(f, "second version", 0600).ok());
	assert_string_equal(read_file(f).value().c_str(), "second version");
	assert_int_equal(count_entries(dir), 1);
	struct stat sb;
	assert_int_equal(stat(f.c_str(), &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
}

// Root opening a lock or log file in a directory another account can
// write: a symlink at the file or at its directory fails, the target
// untouched; a plain file is created and opened.
static void open_nofollow_refuses_a_symlinked_file_or_directory(void **)
{
	std::string dir = unit_tmpdir(), victim = dir + "/victim", vdir = dir + "/victim.d";
	assert_true(write_file_atomic(victim, "root's", 0600).ok());
	assert_int_equal(mkdir(vdir.c_str(), 0700), 0);
	assert_int_equal(mkdir((dir + "/locks").c_str(), 0755), 0);
	assert_int_equal(symlink(victim.c_str(), (dir + "/locks/a.lock").c_str()), 0);
	assert_int_equal(symlink((dir + "/nowhere").c_str(), (dir + "/locks/b.lock").c_str()), 0);
	assert_int_equal(symlink(vdir.c_str(), (dir + "/linked").c_str()), 0);
	for (const char *p : {"/locks/a.lock", "/locks/b.lock", "/linked/c.lock"}) {
		errno = 0;
		int fd = open_nofollow(dir + p, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0)
			print_error("%s was opened\n", p);
		assert_true(fd < 0);
		assert_true(errno == ELOOP || errno == ENOTDIR);
	}
	assert_string_equal(read_file(victim).value().c_str(), "root's");
	assert_int_equal(access((dir + "/nowhere").c_str(), F_OK), -1);
	assert_int_equal(count_entries(vdir), 0);
	int fd = open_nofollow(dir + "/locks/d.lock", O_RDONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_true((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
	close(fd);
}

// A FIFO planted where root opens a lock or log file must not block it
// (an open of a FIFO waits for the other end: a lock's --lock-wait, the
// prolog's run, would never end), and a hard link to another file must not
// be written through (root's append would land in the link's target).
// Each open runs in a child that a hang guard kills, so a hang fails the
// test instead of stalling it.
static void open_nofollow_refuses_a_fifo_or_a_hard_link(void **)
{
	std::string dir = unit_tmpdir(), victim = dir + "/victim";
	assert_int_equal(mkfifo((dir + "/a.lock").c_str(), 0644), 0);
	assert_true(write_file_atomic(victim, "root's", 0644).ok());
	assert_int_equal(link(victim.c_str(), (dir + "/b.log").c_str()), 0);
	struct Case {
		const char *name;
		int flags;
	} cases[] = {{"/a.lock", O_RDONLY | O_CREAT},
	             {"/a.lock", O_WRONLY | O_CREAT | O_APPEND},
	             {"/b.log", O_WRONLY | O_CREAT | O_APPEND}};
	for (const auto &c : cases) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			alarm(20);
			int fd = open_nofollow(dir + c.name, c.flags, 0644);
			if (fd >= 0 && write(fd, "appended", 8) < 0)
				_exit(3);
			_exit(fd < 0 ? 0 : 1);
		}
		int status = 0;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			print_error("%s (flags %#x): %s\n", c.name, c.flags,
			            WIFSIGNALED(status) ? "blocked" : "opened");
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	assert_string_equal(read_file(victim).value().c_str(), "root's");
	// A regular file with one link is still opened, in blocking mode.
	int fd = open_nofollow(dir + "/c.log", O_WRONLY | O_CREAT | O_APPEND, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	close(fd);
}

// A directory root makes, or removes a name in, inside one another account
// can write: a symlink there is refused and its target keeps its entries.
static void make_dir_and_unlink_refuse_a_symlinked_directory(void **)
{
	std::string dir = unit_tmpdir(), vdir = dir + "/victim.d";
	assert_int_equal(mkdir(vdir.c_str(), 0700), 0);
	assert_true(write_file_atomic(vdir + "/1.start", "root's").ok());
	assert_int_equal(symlink(vdir.c_str(), (dir + "/jobs").c_str()), 0);
	Status st = make_dir_nofollow(dir + "/jobs");
	assert_false(st.ok());
	assert_contains(st.message(), (dir + "/jobs: a symlink").c_str());
	errno = 0;
	assert_int_equal(unlink_nofollow(dir + "/jobs/1.start"), -1);
	assert_true(errno == ELOOP || errno == ENOTDIR);
	assert_int_equal(count_entries(vdir), 1);
	assert_true(make_dir_nofollow(dir + "/a/jobs").ok());
	assert_true(make_dir_nofollow(dir + "/a/jobs").ok());
	assert_true(write_file_atomic(dir + "/a/jobs/2.start", "x").ok());
	assert_int_equal(unlink_nofollow(dir + "/a/jobs/2.start"), 0);
	assert_int_equal(count_entries(dir + "/a/jobs"), 0);
}

static void errors_name_the_path(void **)
{
	Status st = write_file_atomic("/nonexistent-dir/x.json", "x");
	assert_false(st.ok());
	assert_contains(st.message(), "/nonexistent-dir/x.json");
	auto r = read_file("/nonexistent-dir/x.json");
	assert_false(r.ok());
	assert_contains(r.status().message(), "No such file");
}

static void read_file_refuses_oversize(void **)
{
	std::string dir = unit_tmpdir(), f = dir + "/big";
	assert_true(write_file_atomic(f, std::string(4096, 'x')).ok());
	assert_false(read_file(f, 100).ok());
	assert_true(read_file(f, 4096).ok());
}

static void make_dirs_nested(void **)
{
	std::string dir = unit_tmpdir() + "/a/b/c";
	assert_true(make_dirs(dir).ok());
	assert_true(make_dirs(dir).ok());
	assert_true(write_file_atomic(dir + "/f", "x").ok());
	assert_false(make_dirs(dir + "/f").ok());
}

static mode_t mode_of(const std::string &path)
{
	struct stat sb;
	if (lstat(path.c_str(), &sb) != 0) {
		print_error("%s: cannot stat\n", path.c_str());
		fail();
	}
	return sb.st_mode & 07777;
}

// Set path's mtime (not following a symlink) to now - age_s.
static void age(const std::string &path, int age_s)
{
	struct timespec t[2];
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= age_s;
	t[1] = t[0];
	assert_int_equal(utimensat(AT_FDCWD, path.c_str(), t, AT_SYMLINK_NOFOLLOW), 0);
}

static std::set<std::string> names(const std::string &dir)
{
	auto v = list_dir(dir);
	return std::set<std::string>(v.begin(), v.end());
}

// Inventory-bearing files are never world-readable, whatever the umask:
// write_file_atomic gives exactly the mode asked; a private directory is
// made 0750, an existing loose one tightened, a sticky shared one left.
static void modes_hold_with_umask_0(void **)
{
	mode_t old = umask(0);
	std::string dir = unit_tmpdir(), priv = dir + "/node/state";
	assert_true(make_private_dir(priv).ok());
	assert_int_equal(mode_of(priv), 0750);
	assert_int_equal(mode_of(dir + "/node"), 0755);
	assert_true(write_file_atomic(priv + "/r.json", "x", 0640).ok());
	assert_int_equal(mode_of(priv + "/r.json"), 0640);
	assert_int_equal(chmod(priv.c_str(), 0777), 0);
	assert_true(make_private_dir(priv + "/").ok());
	assert_int_equal(mode_of(priv), 0770);
	std::string shared = dir + "/tmp";
	assert_int_equal(mkdir(shared.c_str(), 01777), 0);
	assert_true(make_private_dir(shared).ok());
	assert_int_equal(mode_of(shared), 01777);
	assert_int_equal(symlink(priv.c_str(), (dir + "/linked").c_str()), 0);
	Status st = make_private_dir(dir + "/linked");
	assert_false(st.ok());
	assert_contains(st.message(), "symlink");
	assert_int_equal(mode_of(priv), 0770);
	umask(old);
}

// FileGroup::Directory: a file root writes in SlurmUser's directory takes
// that directory's group, so SlurmUser reads it back at 0640.
static void write_file_atomic_takes_the_directorys_group(void **)
{
	if (geteuid() != 0)
		skip();
	struct passwd *pw = getpwnam("nobody");
	if (!pw)
		skip();
	std::string dir = unit_tmpdir();
	assert_int_equal(chown(dir.c_str(), pw->pw_uid, pw->pw_gid), 0);
	assert_true(write_file_atomic(dir + "/r.json", "x", 0640, FileGroup::Directory).ok());
	assert_true(write_file_atomic(dir + "/c.json", "x", 0640).ok());
	struct stat sb;
	assert_int_equal(stat((dir + "/r.json").c_str(), &sb), 0);
	assert_int_equal(sb.st_gid, pw->pw_gid);
	assert_int_equal(sb.st_uid, 0);
	assert_int_equal(stat((dir + "/c.json").c_str(), &sb), 0);
	assert_int_equal(sb.st_gid, getegid());
}

// open_log: past the cap the log becomes .1 (the previous .1 replaced),
// below it it grows; a new log is 0640 even with umask 0, an existing
// looser one is tightened.
static void open_log_rotates_at_the_cap(void **)
{
	mode_t old = umask(0);
	std::string dir = unit_tmpdir(), log = dir + "/jobcheck.log";
	auto fd = open_log(log, 10, 0640);
	assert_true(fd.ok());
	assert_int_equal(write(fd.value(), "0123456789", 10), 10);
	close(fd.value());
	assert_int_equal(mode_of(log), 0640);
	fd = open_log(log, 10, 0640);
	assert_true((fcntl(fd.value(), F_GETFD) & FD_CLOEXEC) != 0);
	close(fd.value());
	// At the cap (not past it): appended to.
	fd = open_log(log, 10, 0640);
	assert_int_equal(write(fd.value(), "A", 1), 1);
	close(fd.value());
	assert_string_equal(read_file(log).value().c_str(), "0123456789A");
	assert_int_equal(access((log + ".1").c_str(), F_OK), -1);
	// Past it: renamed to .1, a fresh log.
	assert_true(write_file_atomic(log + ".1", "older", 0644).ok());
	fd = open_log(log, 10, 0640);
	assert_true(fd.ok());
	assert_int_equal(write(fd.value(), "B", 1), 1);
	close(fd.value());
	assert_string_equal(read_file(log).value().c_str(), "B");
	assert_string_equal(read_file(log + ".1").value().c_str(), "0123456789A");
	assert_int_equal(chmod(log.c_str(), 0666), 0);
	fd = open_log(log, 10, 0640);
	assert_true(fd.ok());
	close(fd.value());
	assert_int_equal(mode_of(log), 0640);
	// A log root and SlurmUser share is created 0660 under any umask.
	umask(022);
	fd = open_log(dir + "/orchestrate.log", 10, 0660);
	assert_true(fd.ok());
	close(fd.value());
	assert_int_equal(mode_of(dir + "/orchestrate.log"), 0660);
	umask(old);
}

// Root appending in a directory another account owns: a symlink at the
// log, at its .1 or at the directory is neither followed nor given what
// it points at; a hard link, a FIFO (never blocking) and a directory
// every account may write are refused.
static void open_log_follows_no_symlink(void **)
{
	std::string dir = unit_tmpdir(), victim = dir + "/victim", logs = dir + "/logs";
	std::string big(64, 'v');
	assert_true(write_file_atomic(victim, big, 0600).ok());
	assert_int_equal(mkdir(logs.c_str(), 0755), 0);
	// The log a symlink (to a file past the cap): not rotated, not opened.
	assert_int_equal(symlink(victim.c_str(), (logs + "/a.log").c_str()), 0);
	auto fd = open_log(logs + "/a.log", 10, 0640);
	assert_false(fd.ok());
	assert_contains(fd.status().message(), "symlink");
	assert_int_equal(mode_of(logs + "/a.log"), 0777); // still the link
	assert_int_equal(access((logs + "/a.log.1").c_str(), F_OK), -1);
	// Its .1 a symlink: the rotation replaces the link, the victim stays.
	assert_true(write_file_atomic(logs + "/b.log", big, 0640).ok());
	assert_int_equal(symlink(victim.c_str(), (logs + "/b.log.1").c_str()), 0);
	fd = open_log(logs + "/b.log", 10, 0640);
	assert_true(fd.ok());
	close(fd.value());
	struct stat sb;
	assert_int_equal(lstat((logs + "/b.log.1").c_str(), &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	// The directory a symlink.
	assert_int_equal(symlink(logs.c_str(), (dir + "/linked").c_str()), 0);
	fd = open_log(dir + "/linked/c.log", 10, 0640);
	assert_false(fd.ok());
	assert_contains(fd.status().message(), "symlink");
	assert_int_equal(access((logs + "/c.log").c_str(), F_OK), -1);
	// A hard link to another file; a FIFO.
	assert_int_equal(link(victim.c_str(), (logs + "/d.log").c_str()), 0);
	fd = open_log(logs + "/d.log", 1 << 20, 0640);
	assert_false(fd.ok());
	assert_contains(fd.status().message(), "hard links");
	assert_int_equal(mkfifo((logs + "/e.log").c_str(), 0644), 0);
	fd = open_log(logs + "/e.log", 1 << 20, 0640);
	assert_false(fd.ok());
	assert_string_equal(read_file(victim).value().c_str(), big.c_str());
	assert_int_equal(mode_of(victim), 0600);
	// A directory every account may write.
	assert_int_equal(chmod(logs.c_str(), 0777), 0);
	fd = open_log(logs + "/f.log", 1 << 20, 0640);
	assert_false(fd.ok());
	assert_contains(fd.status().message(), "every account may write");
}

// prune_files keeps the newest N matching regular files and those
// protected; other names and symlinks are left alone, never followed; the
// kept ones are tightened to keep_mode.
static void prune_files_keeps_the_newest_and_the_protected(void **)
{
	std::string dir = unit_tmpdir(), v = dir + "/verdicts", victim = dir + "/victim.json";
	assert_int_equal(mkdir(v.c_str(), 0750), 0);
	assert_true(write_file_atomic(victim, "root's", 0600).ok());
	age(victim, 9000);
	for (int i = 1; i <= 6; i++) {
		std::string f = v + "/verdict." + std::to_string(i) + ".json";
		assert_true(write_file_atomic(f, std::to_string(i), 0644).ok());
		age(f, 1000 - i * 100); // verdict.6 the newest
	}
	assert_true(write_file_atomic(v + "/notes.txt", "mine", 0644).ok());
	assert_true(write_file_atomic(v + "/verdict.x.json.tmp.abc", "tmp", 0644).ok());
	age(v + "/notes.txt", 9000);
	assert_int_equal(symlink(victim.c_str(), (v + "/verdict.0.json").c_str()), 0);
	age(v + "/verdict.0.json", 9000);
	assert_int_equal(mkdir((v + "/verdict.d.json").c_str(), 0755), 0);
	PruneSpec spec;
	spec.prefix = "verdict.";
	spec.suffix = ".json";
	spec.keep = 3;
	spec.keep_mode = 0640;
	std::vector<std::string> asked;
	spec.protect = [&](int, const std::string &name) {
		asked.push_back(name);
		return name == "verdict.2.json";
	};
	auto n = prune_files(v, spec);
	assert_true(n.ok());
	assert_int_equal(n.value(), 2);
	std::set<std::string> want = {"verdict.6.json", "verdict.5.json", "verdict.4.json",
	                              "verdict.2.json", "notes.txt",      "verdict.x.json.tmp.abc",
	                              "verdict.0.json", "verdict.d.json"};
	assert_true(names(v) == want);
	// Only the ones past the newest three were asked about.
	assert_int_equal(asked.size(), 3);
	for (const char *k : {"verdict.6.json", "verdict.4.json", "verdict.2.json"})
		assert_int_equal(mode_of(v + "/" + k), 0640);
	assert_int_equal(mode_of(v + "/notes.txt"), 0644);
	assert_string_equal(read_file(victim).value().c_str(), "root's");
	assert_int_equal(mode_of(victim), 0600);
	// Nothing more to do; a symlinked directory is refused.
	assert_int_equal(prune_files(v, spec).value(), 0);
	assert_int_equal(symlink(v.c_str(), (dir + "/linked").c_str()), 0);
	assert_false(prune_files(dir + "/linked", spec).ok());
}

// A kept file with another link is not this directory's own: SlurmUser,
// who owns verdicts/, hard-links a root-owned file there (any file where
// fs.protected_hardlinks is 0) and root's prune gave it keep_mode and the
// directory's group (seen live: a root:root 0644 file became root:slurm
// 0640; /etc/shadow would have become readable by SlurmUser).
static void prune_files_leaves_a_hard_linked_file_alone(void **)
{
	std::string dir = unit_tmpdir(), v = dir + "/verdicts", victim = dir + "/passwd";
	assert_int_equal(mkdir(v.c_str(), 0750), 0);
	assert_true(write_file_atomic(victim, "root's", 0644).ok());
	assert_int_equal(link(victim.c_str(), (v + "/verdict.9.json").c_str()), 0);
	struct stat before, after;
	assert_int_equal(stat(victim.c_str(), &before), 0);
	PruneSpec spec;
	spec.prefix = "verdict.";
	spec.suffix = ".json";
	spec.keep = 3;
	spec.keep_mode = 0640;
	assert_true(prune_files(v, spec).ok());
	assert_int_equal(stat(victim.c_str(), &after), 0);
	assert_int_equal(after.st_mode & 07777, 0644);
	assert_int_equal(after.st_gid, before.st_gid);
}

// A lock file no other account can open: an flock needs only a read
// descriptor, so a plain user who could read StateDir/locks/admit.NODE.lock
// held it and "onrampctl admit NODE" skipped the node ("an admission is
// already running"), for as long as the user liked. Created 0640 (the
// directory's group: SlurmUser's), an old world-readable one tightened.
static void lock_files_are_not_readable_by_others(void **)
{
	std::string dir = unit_tmpdir(), fresh = dir + "/admit.n1.lock", old = dir + "/drain.lock";
	umask(022);
	{
		FileLock l(fresh, false);
		assert_true(l.held());
	}
	assert_int_equal(mode_of(fresh) & 0777, 0640);
	assert_true(write_file_atomic(old, "", 0644).ok());
	{
		FileLock l(old, false);
		assert_true(l.held());
	}
	assert_int_equal(mode_of(old) & 0777, 0640);
	int fd = open_lock_file(dir + "/admit.n2.lock");
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mode_of(dir + "/admit.n2.lock") & 0777, 0640);
	if (geteuid() != 0)
		return;
	// As another account (nobody, in no group of the directory): no open.
	struct passwd *pw = getpwnam("nobody");
	if (!pw)
		return;
	assert_int_equal(chmod(dir.c_str(), 0755), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, nullptr) != 0 || setgid(pw->pw_gid) != 0 ||
		    setuid(pw->pw_uid) != 0)
			_exit(3);
		_exit(open(fresh.c_str(), O_RDONLY) < 0 && errno == EACCES ? 0 : 1);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

// The prolog's start marker (NodeStateDir/jobs/JOB.start): jobs/ is
// root's, in a directory SlurmUser owns, so SlurmUser can exchange it with
// a symlink (renameat2 RENAME_EXCHANGE, no gap) between root's check and
// its write. Checked and then written by path, root created JOB.start in
// the symlink's target (seen live on the second job); written through the
// directory opened once, never.
static void a_symlink_swapped_in_for_a_private_dir_gets_no_file(void **)
{
	std::string t = unit_tmpdir(), jobs = t + "/jobs", link = t + "/jobs.link";
	assert_int_equal(mkdir((t + "/victim").c_str(), 0700), 0);
	assert_int_equal(mkdir(jobs.c_str(), 0750), 0);
	assert_int_equal(symlink((t + "/victim").c_str(), link.c_str()), 0);
	std::atomic<bool> stop{false};
	std::thread swapper([&] {
		while (!stop)
			renameat2(AT_FDCWD, jobs.c_str(), AT_FDCWD, link.c_str(), RENAME_EXCHANGE);
	});
	// 20000 writes, and more until one found the real directory.
	int ok = 0;
	for (int i = 0; i < 20000 || (ok == 0 && i < 200000); i++)
		ok +=
		    write_file_in_private_dir(jobs, std::to_string(i) + ".start", "1\n", 0640).ok();
	stop = true;
	swapper.join();
	assert_true(list_dir(t + "/victim").empty());
	assert_true(ok > 0); // the real directory was written to in between
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(replace_whole_and_leave_no_temp),
	    cmocka_unit_test(errors_name_the_path),
	    cmocka_unit_test(open_nofollow_refuses_a_symlinked_file_or_directory),
	    cmocka_unit_test(open_nofollow_refuses_a_fifo_or_a_hard_link),
	    cmocka_unit_test(make_dir_and_unlink_refuse_a_symlinked_directory),
	    cmocka_unit_test(read_file_refuses_oversize),
	    cmocka_unit_test(make_dirs_nested),
	    cmocka_unit_test(modes_hold_with_umask_0),
	    cmocka_unit_test(write_file_atomic_takes_the_directorys_group),
	    cmocka_unit_test(open_log_rotates_at_the_cap),
	    cmocka_unit_test(open_log_follows_no_symlink),
	    cmocka_unit_test(prune_files_keeps_the_newest_and_the_protected),
	    cmocka_unit_test(prune_files_leaves_a_hard_linked_file_alone),
	    cmocka_unit_test(lock_files_are_not_readable_by_others),
	    cmocka_unit_test(a_symlink_swapped_in_for_a_private_dir_gets_no_file),
	};
	return cmocka_run_group_tests_name("atomic_file", tests, NULL, NULL);
}
