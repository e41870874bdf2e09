#include "atomic_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
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

} // namespace

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

Status write_file_atomic(const std::string &path, const std::string &data, mode_t mode)
{
	if (path.empty() || path.back() == '/')
		return Status::Error("write: not a file path: '" + path + "'");
	std::string tmpl = path + ".tmp.XXXXXX";
	int fd = mkostemp(&tmpl[0], O_CLOEXEC);
	if (fd < 0)
		return errno_status("create temporary file for", path);
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
	if (st.ok() && fchmod(fd, mode) != 0)
		st = errno_status("chmod", tmpl);
	if (st.ok() && fsync(fd) != 0)
		st = errno_status("fsync", tmpl);
	if (close(fd) != 0 && st.ok())
		st = errno_status("close", tmpl);
	if (st.ok() && rename(tmpl.c_str(), path.c_str()) != 0)
		st = errno_status("rename into place", path);
	if (!st.ok()) {
		unlink(tmpl.c_str());
		return st;
	}
	return fsync_dir(dir_of(path));
}

Result<std::string> read_file(const std::string &path, size_t max_bytes)
{
	// O_NONBLOCK: a FIFO (or a device) in place of the file must not
	// block the caller, which may be a daemon under its locks.
	int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat sb;
	if (fd < 0) {
		int err = errno;
		Status st = errno_status("open", path);
		// Say what it is when that is why (a root-only FIFO in place of
		// the file, read by an unprivileged slurmctld), as root is told.
		if (err == EACCES && stat(path.c_str(), &sb) == 0 && !S_ISREG(sb.st_mode))
			return Status::Error(strprintf("%s: not a regular file", path.c_str()));
		return st;
	}
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

int open_nofollow(const std::string &path, int flags, mode_t mode)
{
	size_t slash = path.rfind('/');
	std::string dir =
	    slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
	std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
	if (base.empty()) {
		errno = EISDIR;
		return -1;
	}
	int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	int fd = openat(dfd, base.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
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
