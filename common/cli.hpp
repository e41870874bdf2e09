// The one option parser for onramp's C++ tools: getopt_long underneath, so
// "--name VALUE", "--name=VALUE", flags and "--" behave as in every GNU
// tool. A tool lists its options once, each with where its value goes;
// errors are values naming the option ("--conf needs a value", "unknown
// option '--bogus'"), never an exit() from inside the parser.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "status.hpp"

namespace onramp {
namespace cli {

class Parser {
public:
	// --name VALUE: the value is stored in *out (the last one given wins).
	Parser &value(const std::string &name, std::string *out);
	// --name VALUE handed to set; an error it returns ends the parse,
	// prefixed with the option's name (unless it starts with "--name").
	Parser &value(const std::string &name, std::function<Status(const std::string &)> set);
	// --name (or -SHORT when short_name is given, e.g. 'h' for --help):
	// sets *out.
	Parser &flag(const std::string &name, bool *out, char short_name = 0);

	// Parse argv[1..argc) (argv[0] is the program, or a subcommand when a
	// tool passes argv + 1). Arguments that are not options, and all after
	// "--", are appended to *rest; without rest they are an error.
	// Options may come before, between and after the arguments (a tool's
	// "--conf F sub ARGS" and "sub ARGS --conf F" alike); a value option
	// given twice reaches its setter twice, in order. Names must be
	// spelled in full: getopt_long's unique-prefix abbreviations
	// ("--gen" for "--generation") are refused, as the tools always did.
	// Not thread-safe (getopt's globals); call it from main.
	Status parse(int argc, char **argv, std::vector<std::string> *rest = nullptr) const;

private:
	struct Option {
		std::string name;
		bool takes_value = false;
		char short_name = 0;
		std::function<Status(const std::string &)> set;
	};
	std::vector<Option> opts_;
};

// What every tool does after parse(): a parse error is logged and the usage
// printed to stderr (returns bad_usage), --help prints the usage to stdout
// (returns 0); otherwise kGoOn and the tool goes on:
//   if (int rc = cli::after_parse(parsed, help, usage); rc != cli::kGoOn)
//           return rc;
constexpr int kGoOn = -1;
int after_parse(const Status &parsed, bool help, const std::function<void(FILE *)> &usage,
                int bad_usage = 2);

} // namespace cli
} // namespace onramp
