#include "admit/kernel_log.hpp"

#include <cerrno>
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

// Time since boot of one log line, or -1 when it has none.
double line_time(const std::string &line, size_t *msg_start)
{
	*msg_start = 0;
	if (!line.empty() && line[0] == '[') {
		size_t close = line.find(']');
		if (close == std::string::npos)
			return -1;
		*msg_start = close + 1;
		return strtod(line.c_str() + 1, nullptr);
	}
	// kmsg: prio,seq,usec,flags[,...];message
	size_t semi = line.find(';');
	if (semi == std::string::npos)
		return -1;
	size_t c1 = line.find(',');
	size_t c2 = c1 == std::string::npos ? c1 : line.find(',', c1 + 1);
	if (c2 == std::string::npos || c2 > semi)
		return -1;
	*msg_start = semi + 1;
	return strtod(line.c_str() + c2 + 1, nullptr) / 1e6;
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
		size_t msg = 0;
		double t = line_time(line, &msg);
		size_t x = line.find("NVRM: Xid (", msg);
		if (t < 0 || x == std::string::npos)
			continue;
		size_t open = x + strlen("NVRM: Xid (");
		size_t close = line.find("):", open);
		if (close == std::string::npos)
			continue;
		std::string gpu = line.substr(open, close - open);
		if (gpu.compare(0, 4, "PCI:") == 0)
			gpu = gpu.substr(4);
		char *end = nullptr;
		long xid = strtol(line.c_str() + close + 2, &end, 10);
		if (end == line.c_str() + close + 2 || xid <= 0)
			continue;
		double age = now_s - t;
		if (age < 0)
			age = 0;
		if (age > window_s)
			continue;
		out.push_back(XidEvent{static_cast<int>(xid), gpu, age});
	}
	return out;
}

Result<std::string> read_kernel_log(const std::string &path)
{
	struct stat sb;
	if (stat(path.c_str(), &sb) != 0)
		return Status::Error(strprintf("kernel log %s: %s", path.c_str(), strerror(errno)));
	if (!S_ISCHR(sb.st_mode)) {
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
