#include "admit/fabric.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <dirent.h>

#include "atomic_file.hpp"
#include "log.hpp"

namespace onramp {
namespace admit {

namespace {

std::vector<std::string> list_dir(const std::string &dir)
{
	std::vector<std::string> out;
	DIR *d = opendir(dir.c_str());
	if (!d)
		return out;
	while (struct dirent *e = readdir(d)) {
		std::string n = e->d_name;
		if (n != "." && n != "..")
			out.push_back(n);
	}
	closedir(d);
	std::sort(out.begin(), out.end());
	return out;
}

std::string trim(const std::string &s)
{
	size_t b = s.find_first_not_of(" \t\r\n");
	if (b == std::string::npos)
		return "";
	return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

Result<std::string> read_small(const std::string &path)
{
	auto t = read_file(path, 4096);
	if (!t.ok())
		return t.status();
	return trim(t.value());
}

} // namespace

std::string ib_class_dir(const std::string &root)
{
	std::string r = root;
	while (!r.empty() && r.back() == '/')
		r.pop_back();
	return r + "/sys/class/infiniband";
}

std::string port_state_name(const std::string &text)
{
	std::string t = trim(text);
	size_t colon = t.find(':');
	if (colon != std::string::npos)
		t = trim(t.substr(colon + 1));
	return t;
}

bool parse_sysfs_u64(const std::string &text, uint64_t *out)
{
	std::string t = trim(text);
	if (t.empty() || t.size() > 20 || t.find_first_not_of("0123456789") != std::string::npos)
		return false;
	errno = 0;
	unsigned long long v = strtoull(t.c_str(), nullptr, 10);
	if (errno == ERANGE)
		return false;
	*out = v;
	return true;
}

double parse_rate_gbps(const std::string &text)
{
	// "<digits>[.<digits>] Gb/sec ..." and nothing else (no "inf", "1e9",
	// "0x10" that strtod would take).
	std::string t = trim(text);
	size_t n = t.find_first_not_of("0123456789.");
	std::string num = t.substr(0, n);
	if (num.empty() || num.size() > 12 || num[0] == '.' || num.back() == '.' ||
	    std::count(num.begin(), num.end(), '.') > 1 || (n != std::string::npos && t[n] != ' '))
		return 0;
	double v = strtod(num.c_str(), nullptr);
	return v > 0 ? v : 0;
}

Result<std::vector<PortObs>> read_ib_ports(const std::string &root)
{
	std::vector<PortObs> out;
	std::string cls = ib_class_dir(root);
	for (const auto &dev : list_dir(cls)) {
		std::string pdir = cls + "/" + dev + "/ports";
		std::vector<std::string> ports = list_dir(pdir);
		std::sort(ports.begin(), ports.end(),
		          [](const std::string &a, const std::string &b) {
			          return atoi(a.c_str()) < atoi(b.c_str());
		          });
		for (const auto &p : ports) {
			PortObs o;
			o.dev = dev;
			uint64_t port = 0;
			if (!parse_sysfs_u64(p, &port) || port > 65535)
				continue; // not a port directory
			o.port = static_cast<int>(port);
			std::string base = pdir + "/" + p + "/";
			auto state = read_small(base + "state");
			if (!state.ok())
				return state.status();
			o.state = state.value();
			auto phys = read_small(base + "phys_state");
			if (!phys.ok())
				return phys.status();
			o.phys_state = phys.value();
			auto rate = read_small(base + "rate");
			o.rate = rate.ok() ? rate.value() : "";
			auto ll = read_small(base + "link_layer");
			o.link_layer = ll.ok() ? ll.value() : "";
			auto ld = read_small(base + "counters/link_downed");
			if (ld.ok()) {
				uint64_t v = 0;
				if (!parse_sysfs_u64(ld.value(), &v) || v > INT64_MAX)
					return Status::Error(base + "counters/link_downed: '" +
					                     ld.value() + "' is not a number");
				o.has_link_downed = true;
				o.link_downed = static_cast<int64_t>(v);
			}
			out.push_back(o);
		}
	}
	return out;
}

std::vector<NicInfo> read_ib_nics(const std::string &root)
{
	std::vector<NicInfo> out;
	std::string cls = ib_class_dir(root);
	for (const auto &dev : list_dir(cls)) {
		NicInfo n;
		n.name = dev;
		auto fw = read_small(cls + "/" + dev + "/fw_ver");
		n.fw_ver = fw.ok() ? fw.value() : "";
		std::string net = cls + "/" + dev + "/device/net";
		for (const auto &ifname : list_dir(net)) {
			auto mac = read_small(net + "/" + ifname + "/address");
			if (mac.ok()) {
				n.mac = mac.value();
				break;
			}
		}
		out.push_back(n);
	}
	return out;
}

} // namespace admit
} // namespace onramp
