// The one crash-safe file writer: write to a temp file in the target's
// directory, fsync it, rename it over the target, fsync the directory.
// A reader sees the old content or the new one, never a torn file, and
// after a crash the new content is durable once this returned Ok.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

#include "status.hpp"

namespace onramp {

Status write_file_atomic(const std::string &path, const std::string &data, mode_t mode = 0644);

// Read a whole regular file; refuses anything else (a FIFO, a directory, a
// device: opened non-blocking, checked on the descriptor) and files larger
// than max_bytes.
Result<std::string> read_file(const std::string &path, size_t max_bytes = 64u << 20);

// Open path without following a symlink at its last two components: its
// directory is opened O_DIRECTORY|O_NOFOLLOW and the file relative to it
// with flags|O_NOFOLLOW|O_CLOEXEC. For root code opening a file in a
// directory another account can write (StateDir/locks, a campaign log): a
// symlink there, to the directory or the file, fails (ELOOP or ENOTDIR)
// instead of letting root create, truncate or append to its target. -1 and
// errno on failure, like open(2).
int open_nofollow(const std::string &path, int flags, mode_t mode = 0644);

// mkdir -p with mode for created directories.
Status make_dirs(const std::string &path, mode_t mode = 0755);

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
