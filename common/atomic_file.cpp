#include "atomic_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.hpp"

namespace onramp {
namespace {

std::string dir_of(const std::string &path)
{
	auto pos = path.rfind('/');
	if (pos == std::string::npos)
		return ".";
	if (pos == 0)
		return "/";
	return path.substr(0, pos);
}

Status errno_status(const char *what, const std::string &path)
{
	return Status::Error(strprintf("%s %s: %s", what, path.c_str(), strerror(errno)));
}

// Closes a descriptor at the end of its scope.
struct FdCloser {
	int fd;
	~FdCloser()
	{
		if (fd >= 0)
			close(fd);
	}
};

// dir opened for work relative to it, never through a symlink; *sb its
// stat. Refused: a symlink, a non-directory, and (shared) a directory
// every account may write, where anyone could put names beside ours.
Result<int> open_state_dir(const std::string &dir, struct stat *sb, bool refuse_shared)
{
	int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		// O_DIRECTORY|O_NOFOLLOW on a symlink: ENOTDIR, or ELOOP.
		struct stat lsb;
		if (errno == ELOOP ||
		    (errno == ENOTDIR && lstat(dir.c_str(), &lsb) == 0 && S_ISLNK(lsb.st_mode)))
			return Status::Error(dir + ": a symlink, refused");
		return errno_status("open directory", dir);
	}
	if (fstat(fd, sb) != 0) {
		Status st = errno_status("stat", dir);
		close(fd);
		return st;
	}
	if (refuse_shared && (sb->st_mode & S_IWOTH)) {
		close(fd);
		return Status::Error(
		    strprintf("%s: every account may write it (mode %04o), refused", dir.c_str(),
		              static_cast<unsigned>(sb->st_mode & 07777)));
	}
	return fd;
}

// A file of this account (f, open at fd) in directory d loses the mode bits
// outside mode and takes d's group (best effort: a tightening, never a
// reason to fail the write). Not a file with another link: the directory's
// owner may have hard-linked one of root's there (prune_files keeps what
// it finds), and its mode and group are not this directory's to set.
void restrict_file(int fd, const struct stat &f, const struct stat &d, mode_t mode)
{
	if (f.st_uid != geteuid() || f.st_nlink != 1)
		return;
	if (f.st_gid != d.st_gid)
		(void)!fchown(fd, static_cast<uid_t>(-1), d.st_gid);
	if (f.st_mode & 07777 & ~mode)
		(void)fchmod(fd, f.st_mode & mode & 07777);
}

void split_path(const std::string &path, std::string *dir, std::string *base)
{
	*dir = dir_of(path);
	size_t slash = path.rfind('/');
	*base = slash == std::string::npos ? path : path.substr(slash + 1);
}

} // namespace

int open_lock_file(const std::string &path)
{
	int fd = open_nofollow(path, O_RDONLY | O_CREAT, 0640);
	if (fd < 0)
		return -1;
	// Any account that can open the file can flock it for as long as it
	// likes: a lock file a plain user may read is a lock any user can
	// hold (seen: "onrampctl admit" skipped a node whose lock a user held).
	struct stat fs, ds;
	if (fstat(fd, &fs) == 0 && stat(dir_of(path).c_str(), &ds) == 0)
		restrict_file(fd, fs, ds, 0640);
	return fd;
}

FileLock::FileLock(const std::string &path, bool wait, bool shared)
{
	fd_ = open_lock_file(path);
	if (fd_ < 0) {
		refused_ = open_nofollow_error(path, errno);
		return;
	}
	int rc;
	while ((rc = flock(fd_, (shared ? LOCK_SH : LOCK_EX) | (wait ? 0 : LOCK_NB))) != 0 &&
	       errno == EINTR) {
	}
	if (rc != 0) {
		close(fd_);
		fd_ = -1;
	}
}

FileLock::~FileLock()
{
	if (fd_ >= 0)
		close(fd_);
}

bool FileLock::try_exclusive()
{
	int rc = -1;
	while (fd_ >= 0 && (rc = flock(fd_, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
	}
	return fd_ >= 0 && rc == 0;
}

std::string file_stamp(const std::string &path)
{
	struct stat sb;
	if (stat(path.c_str(), &sb) != 0)
		return path + " missing";
	return strprintf("%s %lu %ld.%09ld %ld", path.c_str(), (unsigned long)sb.st_ino,
	                 (long)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec, (long)sb.st_size);
}

std::string file_change_stamp(const std::string &path, int64_t *ctime_ns)
{
	struct stat sb;
	if (ctime_ns)
		*ctime_ns = 0;
	if (stat(path.c_str(), &sb) != 0)
		return path + " missing";
	if (ctime_ns)
		*ctime_ns =
		    static_cast<int64_t>(sb.st_ctim.tv_sec) * 1000000000 + sb.st_ctim.tv_nsec;
	return strprintf("%s %lu %ld.%09ld %ld %ld.%09ld", path.c_str(), (unsigned long)sb.st_ino,
	                 (long)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec, (long)sb.st_size,
	                 (long)sb.st_ctim.tv_sec, sb.st_ctim.tv_nsec);
}

Status fsync_dir(const std::string &dir)
{
	int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno_status("open directory", dir);
	int rc = fsync(fd);
	int saved = errno;
	close(fd);
	if (rc != 0) {
		errno = saved;
		return errno_status("fsync directory", dir);
	}
	return Status::Ok();
}

namespace {

// Write data to fd (a new temporary file, closed here) with mode, synced.
Status fill_temp(int fd, const std::string &tmpl, const std::string &data, mode_t mode, gid_t group)
{
	Status st;
	const char *p = data.data();
	size_t left = data.size();
	while (left > 0) {
		ssize_t n = write(fd, p, left);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			st = errno_status("write", tmpl);
			break;
		}
		p += n;
		left -= static_cast<size_t>(n);
	}
	// The directory's group where this account may give it (root: any);
	// elsewhere the file keeps the caller's.
	if (st.ok() && group != static_cast<gid_t>(-1) &&
	    fchown(fd, static_cast<uid_t>(-1), group) != 0 && errno != EPERM)
		st = errno_status("chown", tmpl);
	if (st.ok() && fchmod(fd, mode) != 0)
		st = errno_status("chmod", tmpl);
	if (st.ok() && fsync(fd) != 0)
		st = errno_status("fsync", tmpl);
	if (close(fd) != 0 && st.ok())
		st = errno_status("close", tmpl);
	return st;
}

Status foreign_symlink(const std::string &p, uid_t uid)
{
	return Status::Error(strprintf("%s: a symlink of uid %u (neither root's nor this "
	                               "account's), refused",
	                               p.c_str(), static_cast<unsigned>(uid)));
}

} // namespace

Status write_file_atomic(const std::string &path, const std::string &data, mode_t mode,
                         FileGroup group)
{
	if (path.empty() || path.back() == '/')
		return Status::Error("write: not a file path: '" + path + "'");
	std::string tmpl = path + ".tmp.XXXXXX";
	int fd = mkostemp(&tmpl[0], O_CLOEXEC);
	if (fd < 0)
		return errno_status("create temporary file for", path);
	struct stat ds;
	gid_t gid = group == FileGroup::Directory && stat(dir_of(path).c_str(), &ds) == 0
	                ? ds.st_gid
	                : static_cast<gid_t>(-1);
	Status st = fill_temp(fd, tmpl, data, mode, gid);
	if (st.ok() && rename(tmpl.c_str(), path.c_str()) != 0)
		st = errno_status("rename into place", path);
	if (!st.ok()) {
		unlink(tmpl.c_str());
		return st;
	}
	return fsync_dir(dir_of(path));
}

Status write_file_atomic_at(int dirfd, const std::string &name, const std::string &path,
                            const std::string &data, mode_t mode)
{
	if (name.empty() || name.find('/') != std::string::npos)
		return Status::Error("write: not a file name: '" + name + "'");
	std::string tmp;
	int fd = -1;
	for (int i = 0; i < 100 && fd < 0; i++) {
		tmp = strprintf("%s.tmp.%d.%u", name.c_str(), static_cast<int>(getpid()),
		                static_cast<unsigned>(random()));
		fd = openat(dirfd, tmp.c_str(),
		            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		return errno_status("create temporary file for", path);
	Status st = fill_temp(fd, dir_of(path) + "/" + tmp, data, mode, static_cast<gid_t>(-1));
	if (st.ok() && renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0)
		st = errno_status("rename into place", path);
	if (!st.ok()) {
		unlinkat(dirfd, tmp.c_str(), 0);
		return st;
	}
	if (fsync(dirfd) != 0)
		return errno_status("fsync", dir_of(path));
	return Status::Ok();
}

Result<int> open_dir_trusted(const std::string &path)
{
	std::string p = path;
	while (p.size() > 1 && p.back() == '/')
		p.pop_back();
	struct stat before;
	if (lstat(p.c_str(), &before) != 0) {
		if (errno != ENOENT)
			return errno_status("stat", p);
		Status st = make_dirs(p);
		if (!st.ok())
			return st;
		if (lstat(p.c_str(), &before) != 0)
			return errno_status("stat", p);
	}
	if (!S_ISLNK(before.st_mode)) {
		int fd = open(p.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && (errno == ELOOP || errno == ENOTDIR))
			return Status::Error(p + ": a symlink or not a directory, refused");
		if (fd < 0)
			return errno_status("open", p);
		return fd;
	}
	if (before.st_uid != 0 && before.st_uid != geteuid())
		return foreign_symlink(p, before.st_uid);
	int fd = open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno_status("open", p);
	struct stat after;
	if (lstat(p.c_str(), &after) != 0 || after.st_dev != before.st_dev ||
	    after.st_ino != before.st_ino) {
		close(fd);
		return Status::Error(p + ": replaced while it was opened, refused");
	}
	return fd;
}

Result<int> open_subdir_nofollow(int dirfd, const std::string &name, const std::string &path)
{
	if (mkdirat(dirfd, name.c_str(), 0755) != 0 && errno != EEXIST)
		return errno_status("mkdir", path);
	int fd = openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR))
		return Status::Error(path + ": a symlink or not a directory, refused");
	if (fd < 0)
		return errno_status("open", path);
	return fd;
}

namespace {

// Read all of fd (closed here): a regular file of at most max_bytes.
Result<std::string> read_fd(int fd, const std::string &path, size_t max_bytes)
{
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		Status st = errno_status("stat", path);
		close(fd);
		return st;
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		return Status::Error(strprintf("%s: not a regular file", path.c_str()));
	}
	if (sb.st_size > 0 && static_cast<uint64_t>(sb.st_size) > max_bytes) {
		close(fd);
		return Status::Error(
		    strprintf("%s: larger than %zu bytes", path.c_str(), max_bytes));
	}
	std::string out;
	char buf[65536];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			Status st = errno_status("read", path);
			close(fd);
			return st;
		}
		if (n == 0)
			break;
		if (out.size() + static_cast<size_t>(n) > max_bytes) {
			close(fd);
			return Status::Error(
			    strprintf("%s: larger than %zu bytes", path.c_str(), max_bytes));
		}
		out.append(buf, static_cast<size_t>(n));
	}
	close(fd);
	return out;
}

} // namespace

Result<std::string> read_file(const std::string &path, size_t max_bytes)
{
	// O_NONBLOCK: a FIFO (or a device) in place of the file must not
	// block the caller, which may be a daemon under its locks.
	int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		int err = errno;
		Status st = errno_status("open", path);
		// Say what it is when that is why (a root-only FIFO in place of
		// the file, read by an unprivileged slurmctld), as root is told.
		struct stat sb;
		if (err == EACCES && stat(path.c_str(), &sb) == 0 && !S_ISREG(sb.st_mode))
			return Status::Error(strprintf("%s: not a regular file", path.c_str()));
		return st;
	}
	return read_fd(fd, path, max_bytes);
}

Result<std::string> read_file_at(int dirfd, const std::string &name, const std::string &path,
                                 size_t max_bytes)
{
	int fd =
	    openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return errno_status("open", path);
	return read_fd(fd, path, max_bytes);
}

Status refuse_foreign_symlink(const std::string &path)
{
	std::string p = path;
	while (p.size() > 1 && p.back() == '/')
		p.pop_back();
	struct stat sb;
	if (lstat(p.c_str(), &sb) != 0)
		return errno == ENOENT ? Status::Ok() : errno_status("stat", p);
	if (S_ISLNK(sb.st_mode) && sb.st_uid != 0 && sb.st_uid != geteuid())
		return foreign_symlink(p, sb.st_uid);
	return Status::Ok();
}

std::string open_nofollow_error(const std::string &path, int err)
{
	switch (err) {
	case ELOOP:
		return path + ": a symlink, refused";
	case ENOTDIR:
		return path + ": its directory is a symlink or not a directory, refused";
	case EINVAL:
		return path + ": not a regular file (a FIFO, a device, a directory), refused";
	case EMLINK:
		return path + ": a hard link to another file, refused";
	default:
		return path + ": " + strerror(err);
	}
}

Result<std::string> read_file_nofollow(const std::string &path, size_t max_bytes)
{
	int fd = open_nofollow(path, O_RDONLY | O_NOCTTY);
	if (fd < 0)
		return errno_status("open", path);
	return read_fd(fd, path, max_bytes);
}

namespace {

// open_nofollow's last step: base in the directory open at dfd.
int openat_regular(int dfd, const std::string &base, int flags, mode_t mode)
{
	// O_NONBLOCK: a FIFO planted there must not block the open (it
	// would wait for a writer or reader forever); only a regular file is
	// kept, and one opened for writing must have no other link, so root
	// never appends to a file SlurmUser hard-linked there.
	int fd = openat(dfd, base.c_str(), flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode);
	int saved = errno;
	if (fd < 0) {
		// A FIFO opened for writing without a reader fails ENXIO.
		errno = saved == ENXIO ? EINVAL : saved;
		return -1;
	}
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	if (!S_ISREG(sb.st_mode) || ((flags & O_ACCMODE) != O_RDONLY && sb.st_nlink != 1)) {
		close(fd);
		errno = S_ISREG(sb.st_mode) ? EMLINK : EINVAL;
		return -1;
	}
	if (!(flags & O_NONBLOCK) && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

// The directory of path, opened O_DIRECTORY|O_NOFOLLOW; *base: the name in
// it. -1 and errno on failure.
int open_parent_nofollow(const std::string &path, std::string *base)
{
	std::string dir;
	split_path(path, &dir, base);
	if (base->empty()) {
		errno = EISDIR;
		return -1;
	}
	return open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

} // namespace

int open_nofollow(const std::string &path, int flags, mode_t mode)
{
	std::string base;
	int dfd = open_parent_nofollow(path, &base);
	if (dfd < 0)
		return -1;
	int fd = openat_regular(dfd, base, flags, mode);
	int saved = errno;
	close(dfd);
	errno = saved;
	return fd;
}

int create_replacing(const std::string &path, mode_t mode)
{
	std::string base;
	int dfd = open_parent_nofollow(path, &base);
	if (dfd < 0)
		return -1;
	// unlinkat removes a symlink itself, never its target; a directory
	// there is EISDIR.
	int fd = -1;
	if (unlinkat(dfd, base.c_str(), 0) == 0 || errno == ENOENT)
		fd = openat_regular(dfd, base, O_WRONLY | O_CREAT | O_EXCL, mode);
	int saved = errno;
	close(dfd);
	errno = saved;
	return fd;
}

Status make_dirs(const std::string &path, mode_t mode)
{
	if (path.empty())
		return Status::Error("mkdir: empty path");
	std::string cur;
	size_t pos = 0;
	while (pos != std::string::npos) {
		pos = path.find('/', pos + 1);
		cur = path.substr(0, pos);
		if (cur.empty())
			continue;
		if (mkdir(cur.c_str(), mode) != 0 && errno != EEXIST)
			return errno_status("mkdir", cur);
	}
	struct stat sb;
	if (stat(path.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode))
		return Status::Error("mkdir " + path + ": exists and is not a directory");
	return Status::Ok();
}

Status make_private_dir(const std::string &dir)
{
	std::string path = dir, parent, base;
	while (path.size() > 1 && path.back() == '/')
		path.pop_back();
	split_path(path, &parent, &base);
	if (base.empty())
		return Status::Error("mkdir: not a directory path: '" + path + "'");
	if (parent != path) {
		Status st = make_dirs(parent, 0755);
		if (!st.ok())
			return st;
	}
	if (mkdir(path.c_str(), 0750) != 0 && errno != EEXIST)
		return errno_status("mkdir", path);
	struct stat sb;
	auto fd = open_state_dir(path, &sb, false);
	if (!fd.ok())
		return fd.status();
	FdCloser closer{fd.value()};
	if ((sb.st_mode & 007) && !(sb.st_mode & S_ISVTX) &&
	    (sb.st_uid == geteuid() || geteuid() == 0) &&
	    fchmod(fd.value(), sb.st_mode & 07770) != 0)
		return errno_status("chmod", path);
	return Status::Ok();
}

Status write_file_in_private_dir(const std::string &dir, const std::string &name,
                                 const std::string &data, mode_t mode)
{
	Status st = make_private_dir(dir);
	if (!st.ok())
		return st;
	struct stat sb;
	auto fd = open_state_dir(dir, &sb, false);
	if (!fd.ok())
		return fd.status();
	FdCloser closer{fd.value()};
	return write_file_atomic_at(fd.value(), name, dir + "/" + name, data, mode);
}

Result<int> open_log(const std::string &path, int64_t max_bytes, mode_t mode)
{
	std::string dir, base;
	split_path(path, &dir, &base);
	if (base.empty())
		return Status::Error("log: not a file path: '" + path + "'");
	struct stat ds, fs;
	auto dfd = open_state_dir(dir, &ds, true);
	if (!dfd.ok())
		return dfd.status();
	FdCloser closer{dfd.value()};
	// Past the cap the log becomes .1: renamed within the directory just
	// checked, a regular file only (a symlink is neither renamed nor
	// followed by the open below).
	if (fstatat(dfd.value(), base.c_str(), &fs, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(fs.st_mode) && fs.st_size > max_bytes &&
	    renameat(dfd.value(), base.c_str(), dfd.value(), (base + ".1").c_str()) != 0)
		return errno_status("rotate", path);
	// Created here (O_EXCL, which follows no symlink either): exactly mode,
	// whatever the umask; else the existing file, checked below.
	const int flags = O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	int fd = openat(dfd.value(), base.c_str(), flags | O_CREAT | O_EXCL, mode);
	const bool created = fd >= 0;
	if (fd < 0 && errno == EEXIST)
		fd = openat(dfd.value(), base.c_str(), flags);
	if (fd < 0) {
		if (errno == ELOOP)
			return Status::Error(path + ": a symlink, refused");
		return errno_status("open", path);
	}
	const char *bad = nullptr;
	if (fstat(fd, &fs) != 0)
		bad = "cannot be stat()ed";
	else if (!S_ISREG(fs.st_mode))
		bad = "not a regular file";
	else if (fs.st_nlink != 1)
		bad = "has other hard links";
	else if (fs.st_uid != geteuid() && fs.st_uid != 0 && fs.st_uid != ds.st_uid)
		bad = "owned by another account than this one, root or the directory's owner";
	if (bad) {
		close(fd);
		return Status::Error(path + ": " + bad + ", refused");
	}
	if (created)
		(void)fchmod(fd, mode);
	restrict_file(fd, fs, ds, mode);
	(void)fcntl(fd, F_SETFL, O_WRONLY | O_APPEND); // blocking again: a regular file
	return fd;
}

Result<size_t> prune_files(const std::string &dir, const PruneSpec &spec)
{
	struct stat ds;
	auto dfd = open_state_dir(dir, &ds, true);
	if (!dfd.ok())
		return dfd.status();
	FdCloser closer{dfd.value()};
	int lfd = dup(dfd.value());
	DIR *d = lfd >= 0 ? fdopendir(lfd) : nullptr;
	if (!d) {
		if (lfd >= 0)
			close(lfd);
		return errno_status("read directory", dir);
	}
	struct Entry {
		struct timespec mtime;
		std::string name;
	};
	std::vector<Entry> files;
	const size_t affix = spec.prefix.size() + spec.suffix.size();
	while (struct dirent *e = readdir(d)) {
		std::string n = e->d_name;
		if (n.size() <= affix || n.compare(0, spec.prefix.size(), spec.prefix) != 0 ||
		    n.compare(n.size() - spec.suffix.size(), spec.suffix.size(), spec.suffix) != 0)
			continue;
		struct stat sb;
		if (fstatat(dfd.value(), n.c_str(), &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(sb.st_mode))
			files.push_back({sb.st_mtim, n});
	}
	closedir(d);
	std::sort(files.begin(), files.end(), [](const Entry &a, const Entry &b) {
		if (a.mtime.tv_sec != b.mtime.tv_sec)
			return a.mtime.tv_sec > b.mtime.tv_sec;
		if (a.mtime.tv_nsec != b.mtime.tv_nsec)
			return a.mtime.tv_nsec > b.mtime.tv_nsec;
		return a.name > b.name;
	});
	size_t removed = 0;
	for (size_t i = 0; i < files.size(); i++) {
		const std::string &n = files[i].name;
		bool keep = i < spec.keep || (spec.protect && spec.protect(dfd.value(), n));
		// unlinkat never follows: a symlink swapped in meanwhile is what
		// goes, not its target.
		if (!keep) {
			if (unlinkat(dfd.value(), n.c_str(), 0) == 0)
				removed++;
			continue;
		}
		if (spec.keep_mode == 0)
			continue;
		int fd = openat(dfd.value(), n.c_str(),
		                O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		struct stat fs;
		if (fd >= 0 && fstat(fd, &fs) == 0 && S_ISREG(fs.st_mode))
			restrict_file(fd, fs, ds, spec.keep_mode);
		if (fd >= 0)
			close(fd);
	}
	return removed;
}

Status make_dir_nofollow(const std::string &path, mode_t mode)
{
	Status st = make_dirs(dir_of(path), mode);
	if (!st.ok())
		return st;
	if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST)
		return errno_status("mkdir", path);
	struct stat sb;
	if (lstat(path.c_str(), &sb) != 0)
		return errno_status("stat", path);
	if (!S_ISDIR(sb.st_mode))
		return Status::Error(path + ": a symlink or not a directory, refused");
	return Status::Ok();
}

Status make_owned_dir(const std::string &path, uid_t uid, gid_t gid)
{
	Status st = make_dir_nofollow(path, 0755);
	if (!st.ok())
		return st;
	int dfd = open(dir_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return errno_status("open", dir_of(path));
	size_t slash = path.rfind('/');
	int fd = openat(dfd, path.substr(slash == std::string::npos ? 0 : slash + 1).c_str(),
	                O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int saved = errno;
	close(dfd);
	if (fd < 0) {
		if (saved == ELOOP || saved == ENOTDIR)
			return Status::Error(path + ": a symlink or not a directory, refused");
		errno = saved;
		return errno_status("open", path);
	}
	struct stat sb;
	Status out = Status::Ok();
	if (fstat(fd, &sb) != 0)
		out = errno_status("stat", path);
	else if ((sb.st_uid != uid || sb.st_gid != gid) && fchown(fd, uid, gid) != 0)
		out = errno_status("chown", path);
	close(fd);
	return out;
}

int unlink_nofollow(const std::string &path)
{
	int dfd = open(dir_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	size_t slash = path.rfind('/');
	int rc = unlinkat(dfd, path.substr(slash == std::string::npos ? 0 : slash + 1).c_str(), 0);
	int saved = errno;
	close(dfd);
	errno = saved;
	return rc;
}

std::vector<std::string> list_dir(const std::string &dir)
{
	std::vector<std::string> out;
	if (DIR *d = opendir(dir.c_str())) {
		while (struct dirent *e = readdir(d))
			if (e->d_name[0] != '.')
				out.emplace_back(e->d_name);
		closedir(d);
	}
	std::sort(out.begin(), out.end());
	return out;
}

} // namespace onramp
