#include "admit/fabric.hpp"

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <dirent.h>

#include "admit/baseline.hpp"
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

int parse_rate_width(const std::string &text)
{
	size_t open = text.find('(');
	if (open == std::string::npos)
		return 0;
	size_t i = open + 1, start = i;
	while (i < text.size() && i - start < 3 && text[i] >= '0' && text[i] <= '9')
		i++;
	if (i == start || i >= text.size() || text[i] != 'X')
		return 0;
	return atoi(text.substr(start, i - start).c_str());
}

double parse_pcie_speed_gts(const std::string &text)
{
	std::string t = trim(text);
	size_t sp = t.find(' ');
	if (sp == std::string::npos || t.compare(sp, 5, " GT/s") != 0)
		return 0;
	if (sp + 5 < t.size() && t[sp + 5] != ' ')
		return 0;
	return parse_rate_gbps(t.substr(0, sp));
}

int pcie_gen_of(double gts)
{
	static const double speeds[] = {2.5, 5, 8, 16, 32, 64};
	for (int i = 0; i < 6; i++)
		if (std::fabs(gts - speeds[i]) < 0.01)
			return i + 1;
	return 0;
}

PcieLinkObs read_pcie_link(const std::string &dir)
{
	PcieLinkObs o;
	auto sp = read_small(dir + "/current_link_speed");
	auto wd = read_small(dir + "/current_link_width");
	if (!sp.ok() || !wd.ok()) {
		o.why = (!sp.ok() ? sp : wd).status().message();
		return o;
	}
	o.speed_gts = parse_pcie_speed_gts(sp.value());
	o.gen = pcie_gen_of(o.speed_gts);
	uint64_t w = 0;
	if (o.speed_gts <= 0 || !parse_sysfs_u64(wd.value(), &w) || w < 1 || w > 32) {
		o.why = dir + ": link speed '" + sp.value().substr(0, 32) + "' width '" +
		        wd.value().substr(0, 32) + "' not understood";
		return o;
	}
	o.width = static_cast<int>(w);
	o.measured = true;
	return o;
}

std::string pci_device_dir(const std::string &root, const std::string &pci)
{
	// domain:bus:device.function, hex: 0000:19:00.0 (never "..").
	auto hex = [&](size_t from, size_t n) {
		for (size_t i = from; i < from + n; i++)
			if (i >= pci.size() || !isxdigit(static_cast<unsigned char>(pci[i])))
				return false;
		return true;
	};
	size_t d = pci.find(':');
	if (d == std::string::npos || d < 4 || d > 8 || pci.size() != d + 8 || !hex(0, d) ||
	    !hex(d + 1, 2) || pci[d + 3] != ':' || !hex(d + 4, 2) || pci[d + 6] != '.' ||
	    !hex(d + 7, 1))
		return "";
	std::string r = root;
	while (!r.empty() && r.back() == '/')
		r.pop_back();
	return r + "/sys/bus/pci/devices/" + pci;
}

std::vector<GpuDepthObs::Hca> read_hca_pcie(const std::string &root)
{
	std::vector<GpuDepthObs::Hca> out;
	std::string cls = ib_class_dir(root);
	for (const auto &dev : list_dir(cls)) {
		GpuDepthObs::Hca h;
		h.dev = dev;
		h.pcie = read_pcie_link(cls + "/" + dev + "/device");
		out.push_back(h);
	}
	return out;
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
			// Error counters: a missing or unreadable one (some devices
			// do not count everything) is absent, a garbled one an error.
			for (const auto &name : fabric_error_counters()) {
				std::string file = base + "counters/" + name;
				auto t = read_small(file);
				if (!t.ok())
					continue;
				uint64_t v = 0;
				if (!parse_sysfs_u64(t.value(), &v) || v > INT64_MAX)
					return Status::Error(file + ": '" +
					                     t.value().substr(0, 64) +
					                     "' is not a number");
				o.counters[name] = v;
			}
			auto ld = o.counters.find("link_downed");
			if (ld != o.counters.end()) {
				o.has_link_downed = true;
				o.link_downed = static_cast<int64_t>(ld->second);
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
