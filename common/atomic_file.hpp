// The one crash-safe file writer: write to a temp file in the target's
// directory, fsync it, rename it over the target, fsync the directory.
// A reader sees the old content or the new one, never a torn file, and
// after a crash the new content is durable once this returned Ok.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "status.hpp"

namespace onramp {

// Whose group a file gets: the caller's (as created), or its directory's.
// Files that hold a node's hardware inventory (records, verdicts) are not
// world-readable; root writes them in a directory SlurmUser owns, and
// giving them that directory's group lets SlurmUser read them back.
enum class FileGroup { Caller, Directory };

// The file gets exactly mode (fchmod, whatever the umask), and the group
// group says.
Status write_file_atomic(const std::string &path, const std::string &data, mode_t mode = 0644,
                         FileGroup group = FileGroup::Caller);

// write_file_atomic for name in the directory open at dirfd (the temp
// file created O_EXCL|O_NOFOLLOW there, renamed with renameat): for root
// writing in a directory another account can replace by a symlink once it
// was opened (open_dir_trusted). path names the file in errors.
Status write_file_atomic_at(int dirfd, const std::string &name, const std::string &path,
                            const std::string &data, mode_t mode = 0644);

// A descriptor (O_DIRECTORY, close-on-exec) of the directory at path, for
// root code that writes in a directory another account may replace (FleetDir
// under a StateDir SlurmUser owns): missing, it is made (make_dirs); a
// symlink is followed only when root or this account made it (an admin's
// FleetDir on shared storage) and only if the same symlink is still there
// once opened; anything else there (a symlink of another account, a name
// swapped after the check, not a directory) is an error naming path.
Result<int> open_dir_trusted(const std::string &path);
// The subdirectory name of the directory open at dirfd, made 0755 when
// missing, opened without following a symlink; path names it in errors.
Result<int> open_subdir_nofollow(int dirfd, const std::string &name, const std::string &path);

// Read a whole regular file; refuses anything else (a FIFO, a directory, a
// device: opened non-blocking, checked on the descriptor) and files larger
// than max_bytes.
Result<std::string> read_file(const std::string &path, size_t max_bytes = 64u << 20);
// The same for name in the directory open at dirfd, never following a
// symlink at name; path names it in errors.
Result<std::string> read_file_at(int dirfd, const std::string &name, const std::string &path,
                                 size_t max_bytes = 64u << 20);

// A symlink at path that neither root nor this account made (a symlink's
// owner is whoever created it) is refused: one SlurmUser put in place of a
// directory root writes into (StateDir/fleet), while an admin's own
// symlink (FleetDir on shared storage) is kept. Ok for anything else.
Status refuse_foreign_symlink(const std::string &path);

// Why open_nofollow(path) failed with err, in words naming path ("a
// symlink, refused", "not a regular file ..., refused", ...).
std::string open_nofollow_error(const std::string &path, int err);

// read_file for a path in a directory another account can write (a job's
// output in StateDir/expand): no symlink followed at its last two
// components (open_nofollow), regular files only.
Result<std::string> read_file_nofollow(const std::string &path, size_t max_bytes = 64u << 20);

// Open path without following a symlink at its last two components: its
// directory is opened O_DIRECTORY|O_NOFOLLOW and the file relative to it
// with flags|O_NOFOLLOW|O_CLOEXEC. For root code opening a file in a
// directory another account can write (StateDir/locks, a campaign log): a
// symlink there, to the directory or the file, fails (ELOOP or ENOTDIR)
// instead of letting root create, truncate or append to its target; a
// FIFO, a device or a directory fails EINVAL (or EISDIR) without blocking,
// and a file opened for writing that has another hard link fails EMLINK.
// The descriptor returned is blocking unless flags ask O_NONBLOCK. -1 and
// errno on failure, like open(2).
int open_nofollow(const std::string &path, int flags, mode_t mode = 0644);

// Create path as a new regular file (O_EXCL, mode), an old name there
// removed first, both in path's directory opened once without following a
// symlink (open_nofollow's rule): for root replacing a file in a directory
// another account owns (NodeStateDir/verdicts). A symlink, FIFO or file at
// the name is removed, never followed or opened; a directory swapped for a
// symlink after the open is neither unlinked in nor written through; a name
// planted between the removal and the create fails EEXIST. -1 and errno on
// failure, like open(2).
int create_replacing(const std::string &path, mode_t mode);

// Open the lock file path read-only (open_nofollow), created when absent:
// readable by its owner and the directory's group (SlurmUser's: root's and
// SlurmUser's runs share it), by no other account, so that no user can
// open it to hold the lock (an flock needs only a read descriptor). One of
// this account's left world-readable is tightened so. -1 and errno as
// open_nofollow.
int open_lock_file(const std::string &path);

// An flock(2) held for the object's life on a fresh descriptor of path
// (open_lock_file: created 0640 when absent), so threads of one
// process exclude each other too; released however the scope ends. The
// file is opened read-only: flock needs no write access, so root's and
// SlurmUser's runs share one lock file. Shared: LOCK_SH instead of LOCK_EX.
// wait: block until it is granted, else held() is false when another holds
// it. An flock is local to the host: never rely on one on a network
// filesystem (db/shared.hpp's lease is the lock between hosts).
class FileLock {
public:
	FileLock(const std::string &path, bool wait, bool shared = false);
	~FileLock();
	FileLock(const FileLock &) = delete;
	FileLock &operator=(const FileLock &) = delete;
	bool held() const { return fd_ >= 0; }
	// Turn a held lock into an exclusive one without waiting; false (the
	// lock kept as it was) when another descriptor holds it too.
	bool try_exclusive();
	// Why the lock file could not be opened (a symlink, a FIFO, a hard link
	// another account put there: open_nofollow_error), "" when it was,
	// held or not.
	const std::string &refused() const { return refused_; }

private:
	int fd_ = -1;
	std::string refused_;
};

// mkdir -p with mode for created directories.
Status make_dirs(const std::string &path, mode_t mode = 0755);
// For root making a directory inside one another account can write
// (NodeStateDir/jobs, StateDir/expand): its parent made as make_dirs does,
// then the directory created if missing; an error naming it when it is a
// symlink (root would write into its target) or not a directory.
Status make_dir_nofollow(const std::string &path, mode_t mode = 0755);
// onramp's shared state directories (StateDir/locks, StateDir/admit,
// NodeStateDir/verdicts), made by root for SlurmUser: created when missing
// (make_dir_nofollow), then opened O_DIRECTORY|O_NOFOLLOW relative to its
// parent and given to uid:gid through that descriptor (fchown), so a name
// swapped after the check (a symlink, a hard link to a root-owned file) is
// refused or never reached: root gives away only the directory it opened.
Status make_owned_dir(const std::string &path, uid_t uid, gid_t gid);
// unlink path's last component relative to its directory opened
// O_NOFOLLOW: a symlink put in place of that directory fails (ELOOP or
// ENOTDIR) instead of removing a name in its target. -1 and errno on
// failure, like unlink(2).
int unlink_nofollow(const std::string &path);

// A state directory that holds a node's hardware inventory (NodeStateDir,
// its verdicts/): missing parents are made 0755, the directory itself 0750;
// an existing one that other accounts may read, write or enter loses those
// bits (through a descriptor opened without following a symlink; a symlink
// there is refused; a sticky directory such as /tmp is shared by design and
// left as it is).
Status make_private_dir(const std::string &path);

// make_private_dir(dir), then name written in it with write_file_atomic_at
// through a descriptor of dir opened without following a symlink: a
// symlink swapped in place of dir after the check (its parent is another
// account's) is refused, never written through.
Status write_file_in_private_dir(const std::string &dir, const std::string &name,
                                 const std::string &data, mode_t mode);

// The log files onramp appends to (NodeStateDir/jobcheck.log,
// StateDir/trigger.log, StateDir/admit/orchestrate.log, a campaign's
// admit.log). Root appends to some of them in a directory SlurmUser owns, so
// everything happens relative to the directory opened O_DIRECTORY|O_NOFOLLOW
// (a symlink there is refused, as is a directory every account may write):
// when path is a regular file larger than max_bytes it is renamed to
// path.1 (the previous .1 goes; a symlink is never renamed nor followed),
// then path is opened O_WRONLY|O_APPEND|O_CREAT|O_NOFOLLOW|O_CLOEXEC (never
// blocking on a FIFO) and must be a regular file with one link, owned by
// this account, root or the directory's owner. A new file gets exactly
// mode, whatever the umask; a file of this account loses the bits outside
// mode and takes the directory's group. The descriptor, or why not
// (naming path).
Result<int> open_log(const std::string &path, int64_t max_bytes, mode_t mode = 0640);

// Prune a directory of generated files (the verdicts of admission runs):
// the regular files whose names start with prefix and end with suffix are
// sorted newest first (mtime, then name) and all but the keep newest are
// removed, except those protect(dirfd, name) keeps; those kept that this
// account owns lose the bits outside keep_mode (when not 0) and take the
// directory's group. Symlinks and every other name are left alone, never
// followed. The directory is opened as open_log opens it. How many files
// were removed, or why nothing could be done.
struct PruneSpec {
	std::string prefix, suffix;
	size_t keep = 0;
	std::function<bool(int dirfd, const std::string &name)> protect; // may be empty
	mode_t keep_mode = 0;
};
Result<size_t> prune_files(const std::string &dir, const PruneSpec &spec);

// The names in dir, sorted, without those starting with '.'; empty when
// dir cannot be read.
std::vector<std::string> list_dir(const std::string &dir);
// fsync a directory (after creating or renaming entries in it).
Status fsync_dir(const std::string &dir);

// "PATH INODE MTIME.NSEC SIZE" (as stat -c '%n %i %.9Y %s' prints it), or
// "PATH missing" when path cannot be stat()ed: how job_submit/onramp
// acknowledges the files it loaded (onramp.h, onramp_ctx_ack) and how
// onrampctl tells whether the plan it wrote is in force.
std::string file_stamp(const std::string &path);
// file_stamp plus the file's ctime ("PATH INODE MTIME.NSEC SIZE CTIME.NSEC"),
// for telling whether a file changed since it was last looked at: the mtime
// can be set back (cp -p, touch -r, rsync -t, tar put a file back with the
// mtime, size and inode it had before a change) but no call sets a ctime.
// *ctime_ns, when given, gets that ctime in nanoseconds since the epoch (0
// when the file is missing).
std::string file_change_stamp(const std::string &path, int64_t *ctime_ns);

} // namespace onramp
