#include "cli.hpp"

#include <getopt.h>

#include "log.hpp"

namespace onramp {
namespace cli {

Parser &Parser::value(const std::string &name, std::string *out)
{
	return value(name, [out](const std::string &v) {
		*out = v;
		return Status::Ok();
	});
}

Parser &Parser::value(const std::string &name, std::function<Status(const std::string &)> set)
{
	opts_.push_back(Option{name, true, 0, std::move(set)});
	return *this;
}

Parser &Parser::flag(const std::string &name, bool *out, char short_name)
{
	opts_.push_back(Option{name, false, short_name, [out](const std::string &) {
		                       *out = true;
		                       return Status::Ok();
	                       }});
	return *this;
}

Status Parser::parse(int argc, char **argv, std::vector<std::string> *rest) const
{
	// An option's index in opts_ is getopt's val, offset past every char.
	constexpr int kBase = 256;
	std::vector<struct option> longopts;
	for (size_t i = 0; i < opts_.size(); i++)
		longopts.push_back({opts_[i].name.c_str(),
		                    opts_[i].takes_value ? required_argument : no_argument, nullptr,
		                    kBase + static_cast<int>(i)});
	longopts.push_back({nullptr, 0, nullptr, 0});
	// "-": non-options are returned in order (as val 1), so nothing is
	// permuted; ":": a missing value is reported as ':', not printed.
	std::string shorts = "-:";
	for (const Option &o : opts_)
		if (o.short_name)
			shorts += o.short_name;
	opterr = 0;
	optind = 0; // glibc: start afresh (also after an earlier parse)
	int c, at = 1;
	while ((c = getopt_long(argc, argv, shorts.c_str(), longopts.data(), nullptr)) != -1) {
		// Nothing is permuted, so the word getopt just read starts at
		// argv[at]; "--gen" must not stand for "--generation".
		const char *word = at < argc ? argv[at] : "";
		at = optind;
		if (c >= kBase && static_cast<size_t>(c - kBase) < opts_.size() && word[0] == '-' &&
		    word[1] == '-') {
			const std::string &name = opts_[static_cast<size_t>(c - kBase)].name;
			std::string spelled(word + 2);
			if (spelled.substr(0, spelled.find('=')) != name)
				return Status::Error(std::string("unknown option '") + word + "'");
		}
		if (c != 1 && c != ':' && c < kBase) {
			for (size_t i = 0; i < opts_.size(); i++)
				if (opts_[i].short_name && c == opts_[i].short_name)
					c = kBase + static_cast<int>(i);
		}
		if (c == 1) {
			if (!rest)
				return Status::Error(std::string("unexpected argument '") + optarg +
				                     "'");
			rest->push_back(optarg);
			continue;
		}
		if (c == ':') {
			int i = optopt - kBase;
			std::string name = i >= 0 && static_cast<size_t>(i) < opts_.size()
			                       ? opts_[static_cast<size_t>(i)].name
			                       : "option";
			return Status::Error("--" + name + " needs a value");
		}
		if (c < kBase || static_cast<size_t>(c - kBase) >= opts_.size())
			return Status::Error(std::string("unknown option '") + word + "'");
		const Option &o = opts_[static_cast<size_t>(c - kBase)];
		Status st = o.set(optarg ? optarg : "");
		if (!st.ok() && st.message().rfind("--" + o.name, 0) == 0)
			return st; // it names the option already
		if (!st.ok())
			return Status::Error("--" + o.name + ": " + st.message());
	}
	for (int i = optind; i < argc; i++) {
		if (!rest)
			return Status::Error(std::string("unexpected argument '") + argv[i] + "'");
		rest->push_back(argv[i]);
	}
	return Status::Ok();
}

int after_parse(const Status &parsed, bool help, const std::function<void(FILE *)> &usage,
                int bad_usage)
{
	if (!parsed.ok()) {
		log_error("%s", parsed.message().c_str());
		usage(stderr);
		return bad_usage;
	}
	if (help) {
		usage(stdout);
		return 0;
	}
	return kGoOn;
}

} // namespace cli
} // namespace onramp
