#include "admit/kernel_log.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.hpp"
#include "log.hpp"

namespace onramp {
namespace admit {

namespace {

bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// n hex digits at s[*i], advancing *i.
bool hex_run(const std::string &s, size_t *i, size_t n)
{
	for (size_t k = 0; k < n; k++, ++*i)
		if (*i >= s.size() || !is_hex(s[*i]))
			return false;
	return true;
}

bool lit(const std::string &s, size_t *i, const char *text)
{
	size_t n = strlen(text);
	if (s.compare(*i, n, text) != 0)
		return false;
	*i += n;
	return true;
}

// A decimal number of 1..max_digits digits at s[*i].
bool decimal(const std::string &s, size_t *i, size_t max_digits, unsigned long long *v)
{
	size_t start = *i;
	*v = 0;
	while (*i < s.size() && s[*i] >= '0' && s[*i] <= '9' && *i - start < max_digits)
		*v = *v * 10 + static_cast<unsigned>(s[(*i)++] - '0');
	return *i > start && (*i >= s.size() || s[*i] < '0' || s[*i] > '9');
}

// Seconds since boot of one record and where its message starts; false for
// a line that is not a kernel-facility record (continuation lines, user
// space's records, anything malformed).
bool kernel_record(const std::string &line, double *t, size_t *msg)
{
	size_t i = 0;
	unsigned long long pri = 0, v = 0;
	bool has_pri = false;
	if (lit(line, &i, "<")) { // dmesg --raw: <pri>[sec.usec] msg
		if (!decimal(line, &i, 4, &pri) || !lit(line, &i, ">"))
			return false;
		has_pri = true;
	}
	if (i < line.size() && line[i] == '[') { // dmesg: [ sec.usec] msg
		size_t close = line.find(']', i);
		if (close == std::string::npos)
			return false;
		std::string ts = line.substr(i + 1, close - i - 1);
		size_t b = ts.find_first_not_of(' ');
		if (b == std::string::npos)
			return false;
		size_t k = b;
		unsigned long long sec = 0, frac = 0;
		if (!decimal(ts, &k, 12, &sec))
			return false;
		double f = 0;
		if (k < ts.size()) {
			size_t d0 = k + 1;
			if (ts[k] != '.' || !decimal(ts, &++k, 9, &frac) || k != ts.size())
				return false;
			f = static_cast<double>(frac) / std::pow(10.0, static_cast<double>(k - d0));
		}
		*t = static_cast<double>(sec) + f;
		*msg = close + 1;
		if (*msg < line.size() && line[*msg] == ' ')
			++*msg;
		// A plain dmesg line carries no facility: such a file must hold
		// the kernel's records only (dmesg --kernel).
		return !has_pri || (pri >> 3) == 0;
	}
	if (has_pri)
		return false;
	// /dev/kmsg: pri,seq,usec,flags[,...];message
	if (!decimal(line, &i, 4, &pri) || !lit(line, &i, ",") || !decimal(line, &i, 20, &v) ||
	    !lit(line, &i, ",") || !decimal(line, &i, 20, &v) || !lit(line, &i, ","))
		return false;
	size_t semi = line.find(';', i);
	if (semi == std::string::npos)
		return false;
	*t = static_cast<double>(v) / 1e6;
	*msg = semi + 1;
	return (pri >> 3) == 0; // facility kern; user space writes facility >= 1
}

// The driver's own line, from the start of the message:
// "NVRM: Xid (PCI:dddd:bb:dd[.f]): N, ...". The GPU as "dddd:bb:dd[.f]".
bool driver_xid(const std::string &line, size_t msg, int *xid, std::string *gpu)
{
	size_t i = msg;
	if (!lit(line, &i, "NVRM: Xid (PCI:"))
		return false;
	size_t g = i;
	if (!hex_run(line, &i, 4) || !lit(line, &i, ":") || !hex_run(line, &i, 2) ||
	    !lit(line, &i, ":") || !hex_run(line, &i, 2))
		return false;
	if (i < line.size() && line[i] == '.') {
		++i;
		if (!hex_run(line, &i, 1))
			return false;
	}
	size_t gend = i;
	unsigned long long n = 0;
	if (!lit(line, &i, "): ") || !decimal(line, &i, 4, &n) || n == 0)
		return false;
	if (i < line.size() && line[i] != ',')
		return false;
	*xid = static_cast<int>(n);
	*gpu = line.substr(g, gend - g);
	for (auto &c : *gpu)
		c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
	return true;
}

} // namespace

std::vector<XidEvent> parse_xids(const std::string &text, double now_s, double window_s)
{
	std::vector<XidEvent> out;
	size_t pos = 0;
	while (pos < text.size()) {
		size_t nl = text.find('\n', pos);
		std::string line = text.substr(pos, nl == std::string::npos ? nl : nl - pos);
		pos = nl == std::string::npos ? text.size() : nl + 1;
		double t = 0;
		size_t msg = 0;
		int xid = 0;
		std::string gpu;
		if (!kernel_record(line, &t, &msg) || !driver_xid(line, msg, &xid, &gpu))
			continue;
		double age = now_s - t;
		if (age < 0)
			age = 0;
		if (age > window_s)
			continue;
		out.push_back(XidEvent{xid, gpu, age});
	}
	return out;
}

Result<std::string> read_kernel_log(const std::string &path)
{
	struct stat sb;
	if (stat(path.c_str(), &sb) != 0)
		return Status::Error(strprintf("kernel log %s: %s", path.c_str(), strerror(errno)));
	if (!S_ISCHR(sb.st_mode)) {
		// A dmesg-format file has no facility on its lines: every line in
		// it is taken for the kernel's, so only root may have written it.
		// One another account can write could forge an XID and drain the
		// node: refused, which makes the check inconclusive.
		if ((sb.st_uid != 0 && sb.st_uid != geteuid()) ||
		    (sb.st_mode & (S_IWGRP | S_IWOTH)))
			return Status::Error(strprintf(
			    "kernel log %s: owned by uid %u, mode %04o: a kernel log file must "
			    "belong to root (or this account) and be writable by no other account "
			    "(its lines "
			    "carry no facility)",
			    path.c_str(), static_cast<unsigned>(sb.st_uid),
			    static_cast<unsigned>(sb.st_mode & 07777)));
		auto t = read_file(path, 64u << 20);
		if (!t.ok())
			return Status::Error("kernel log: " + t.status().message());
		return t.value();
	}
	int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return Status::Error(strprintf("kernel log %s: %s", path.c_str(), strerror(errno)));
	std::string out;
	char buf[8192];
	for (int records = 0; records < 1000000; records++) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EPIPE) // overwritten while reading: go on
			continue;
		if (n <= 0)
			break;
		out.append(buf, static_cast<size_t>(n));
		if (out.back() != '\n')
			out += '\n';
		if (out.size() > (64u << 20))
			out.erase(0, out.size() - (32u << 20));
	}
	close(fd);
	return out;
}

double uptime_s()
{
	auto t = read_file("/proc/uptime", 256);
	if (!t.ok())
		return 0;
	return strtod(t.value().c_str(), nullptr);
}

} // namespace admit
} // namespace onramp
