#include "metrics/exposition.hpp"

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstring>

namespace onramp {

std::string escape_label(const std::string &v)
{
	std::string o;
	for (char c : v) {
		if (c == '\\')
			o += "\\\\";
		else if (c == '"')
			o += "\\\"";
		else if (c == '\n')
			o += "\\n";
		else
			o += c;
	}
	return o;
}

std::string format_value(double v)
{
	if (std::isnan(v))
		return "NaN";
	if (std::isinf(v))
		return v > 0 ? "+Inf" : "-Inf";
	char buf[64];
	snprintf(buf, sizeof buf, "%.17g", v);
	double back = 0;
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, v);
		if (sscanf(buf, "%lf", &back) == 1 && back == v)
			break;
	}
	return buf;
}

void Exposition::merge_text(const std::string &text, const std::string &origin)
{
	size_t pos = 0;
	int lineno = 0;
	while (pos < text.size()) {
		size_t nl = text.find('\n', pos);
		std::string line =
		    text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
		pos = nl == std::string::npos ? text.size() : nl + 1;
		lineno++;
		if (line.empty())
			continue;
		char kind[8], name[256];
		if (line[0] == '#') {
			// "# HELP name text" / "# TYPE name type"
			if (sscanf(line.c_str(), "# %7s %255s", kind, name) != 2)
				continue;
			std::string rest =
			    line.substr(std::min(line.size(), 3 + strlen(kind) + strlen(name) + 1));
			auto &f = fams_[name];
			if (std::find(order_.begin(), order_.end(), name) == order_.end())
				order_.push_back(name);
			if (!strcmp(kind, "HELP") && f.help.empty())
				f.help = rest;
			else if (!strcmp(kind, "TYPE") && f.type.empty())
				f.type = rest;
			continue;
		}
		size_t end = line.find_first_of("{ ");
		std::string fam = line.substr(0, end);
		auto it = fams_.find(fam);
		if (it == fams_.end() || end == std::string::npos) {
			read_error(origin,
			           "line " + std::to_string(lineno) + ": sample without TYPE");
			continue;
		}
		it->second.raw.push_back(line);
	}
}

void Exposition::family(const std::string &name, const std::string &type, const std::string &help)
{
	if (fams_.count(name))
		return;
	fams_[name] = Family{type, help, {}, {}};
	order_.push_back(name);
}

void Exposition::sample(const std::string &name, const Labels &labels, double value)
{
	auto it = fams_.find(name);
	if (it == fams_.end()) {
		read_error("exposition", "sample of undeclared family " + name);
		return;
	}
	it->second.samples.emplace_back(labels, value);
}

static Labels operator+(const Labels &a, const Labels &b)
{
	Labels r = a;
	r.insert(r.end(), b.begin(), b.end());
	return r;
}

void Exposition::read_error(const std::string &source, const std::string &what)
{
	read_errors_[source]++;
	errors_.push_back(source + ": " + what);
}

std::string Exposition::text() const
{
	std::string out;
	auto emit = [&](const std::string &name, const Family &f) {
		out += "# HELP " + name + " " + f.help + "\n";
		out += "# TYPE " + name + " " + f.type + "\n";
		for (const auto &r : f.raw)
			out += r + "\n";
		for (const auto &s : f.samples) {
			out += name;
			if (!s.first.empty()) {
				out += "{";
				for (size_t i = 0; i < s.first.size(); i++)
					out += (i ? "," : "") + s.first[i].first + "=\"" +
					       escape_label(s.first[i].second) + "\"";
				out += "}";
			}
			out += " " + format_value(s.second) + "\n";
		}
	};
	const std::string errname = "onramp_metrics_read_errors";
	for (const auto &n : order_)
		if (n != errname)
			emit(n, fams_.at(n));
	Family errs{
	    "gauge", "Inputs this collection could not read, by source (see the log).", {}, {}};
	auto merged = fams_.find(errname);
	if (merged != fams_.end())
		errs.raw = merged->second.raw;
	for (const auto &e : read_errors_)
		errs.samples.push_back({labels_ + Labels{{"source", e.first}}, double(e.second)});
	emit(errname, errs);
	return out;
}

} // namespace onramp
