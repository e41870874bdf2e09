// The tools' option parser (common/cli.hpp): values in both spellings,
// flags, arguments kept in order, and errors that name the option.
#include "unit.hpp"

#include <vector>

#include "cli.hpp"

using namespace onramp;

// argv from words (argv[0] is the program).
struct Argv {
	std::vector<std::string> words;
	std::vector<char *> ptrs;
	explicit Argv(std::vector<std::string> w) : words(std::move(w))
	{
		for (auto &s : words)
			ptrs.push_back(&s[0]);
		ptrs.push_back(nullptr);
	}
	int argc() const { return static_cast<int>(words.size()); }
	char **argv() { return ptrs.data(); }
};

static void values_in_both_spellings_and_flags(void **)
{
	std::string conf = "default", node;
	bool json = false, dry = false;
	cli::Parser p;
	p.value("conf", &conf).value("node", &node).flag("json", &json).flag("dry-run", &dry);
	Argv a({"tool", "--node", "node1", "--json", "--conf=/etc/x.conf"});
	Status st = p.parse(a.argc(), a.argv());
	assert_true(st.ok());
	assert_string_equal(conf.c_str(), "/etc/x.conf");
	assert_string_equal(node.c_str(), "node1");
	assert_true(json);
	assert_false(dry);
}

static void arguments_are_kept_in_order_and_after_double_dash(void **)
{
	std::string node;
	std::vector<std::string> rest;
	cli::Parser p;
	p.value("node", &node);
	Argv a({"tool", "a", "--node", "n1", "b", "--", "--node", "c"});
	assert_true(p.parse(a.argc(), a.argv(), &rest).ok());
	assert_string_equal(node.c_str(), "n1");
	assert_int_equal(rest.size(), 4);
	assert_string_equal(rest[0].c_str(), "a");
	assert_string_equal(rest[1].c_str(), "b");
	assert_string_equal(rest[2].c_str(), "--node");
	assert_string_equal(rest[3].c_str(), "c");
}

static void errors_name_the_option(void **)
{
	std::string conf;
	cli::Parser p;
	p.value("conf", &conf);
	Argv missing({"tool", "--conf"});
	Status st = p.parse(missing.argc(), missing.argv());
	assert_false(st.ok());
	assert_string_equal(st.message().c_str(), "--conf needs a value");
	Argv unknown({"tool", "--bogus", "x"});
	st = p.parse(unknown.argc(), unknown.argv());
	assert_false(st.ok());
	assert_string_equal(st.message().c_str(), "unknown option '--bogus'");
	Argv extra({"tool", "stray"});
	st = p.parse(extra.argc(), extra.argv());
	assert_false(st.ok());
	assert_string_equal(st.message().c_str(), "unexpected argument 'stray'");
}

static void a_setter_refuses_a_value(void **)
{
	cli::Parser p;
	p.value("port", [](const std::string &v) {
		return v == "80" ? Status::Ok() : Status::Error("'" + v + "' is not a port");
	});
	Argv good({"tool", "--port", "80"});
	assert_true(p.parse(good.argc(), good.argv()).ok());
	Argv bad({"tool", "--port=x"});
	Status st = p.parse(bad.argc(), bad.argv());
	assert_false(st.ok());
	assert_string_equal(st.message().c_str(), "--port: 'x' is not a port");
	cli::Parser named;
	named.value("port", [](const std::string &v) {
		return Status::Error("--port: bad value '" + v + "'");
	});
	st = named.parse(bad.argc(), bad.argv());
	assert_string_equal(st.message().c_str(), "--port: bad value 'x'");
}

static void a_short_help_flag_and_full_names_only(void **)
{
	bool help = false;
	std::string gen;
	cli::Parser p;
	p.flag("help", &help, 'h').value("generation", &gen);
	Argv h({"tool", "-h"});
	assert_true(p.parse(h.argc(), h.argv()).ok());
	assert_true(help);
	// getopt_long alone would take "--gen" for "--generation".
	Argv abbrev({"tool", "--gen", "3"});
	Status st = p.parse(abbrev.argc(), abbrev.argv());
	assert_false(st.ok());
	assert_string_equal(st.message().c_str(), "unknown option '--gen'");
	Argv abbrev_eq({"tool", "--gen=3"});
	st = p.parse(abbrev_eq.argc(), abbrev_eq.argv());
	assert_false(st.ok());
	assert_string_equal(st.message().c_str(), "unknown option '--gen=3'");
	Argv other_short({"tool", "-x"});
	st = p.parse(other_short.argc(), other_short.argv());
	assert_false(st.ok());
	assert_string_equal(st.message().c_str(), "unknown option '-x'");
	assert_string_equal(gen.c_str(), "");
}

static void repeated_options_reach_the_setter_in_order(void **)
{
	std::vector<std::string> peers;
	cli::Parser p;
	p.value("peer", [&peers](const std::string &v) {
		peers.push_back(v);
		return Status::Ok();
	});
	Argv a({"tool", "--peer", "a", "--peer=b", "--peer", "c"});
	assert_true(p.parse(a.argc(), a.argv()).ok());
	assert_int_equal(peers.size(), 3);
	assert_string_equal(peers[0].c_str(), "a");
	assert_string_equal(peers[1].c_str(), "b");
	assert_string_equal(peers[2].c_str(), "c");
}

static void options_before_the_subcommand_and_after_it(void **)
{
	std::string conf, window;
	std::vector<std::string> rest;
	cli::Parser p;
	p.value("conf", &conf).value("window", &window);
	// onramp-rewire's "--conf F sub ARGS" and "sub ARGS --conf F".
	Argv before({"tool", "--conf", "/c", "plan", "--window", "w1", "x"});
	assert_true(p.parse(before.argc(), before.argv(), &rest).ok());
	assert_string_equal(conf.c_str(), "/c");
	assert_string_equal(window.c_str(), "w1");
	assert_int_equal(rest.size(), 2);
	assert_string_equal(rest[0].c_str(), "plan");
	assert_string_equal(rest[1].c_str(), "x");
	rest.clear();
	Argv after({"tool", "plan", "x", "--conf=/d"});
	assert_true(p.parse(after.argc(), after.argv(), &rest).ok());
	assert_string_equal(conf.c_str(), "/d");
	assert_int_equal(rest.size(), 2);
	assert_string_equal(rest[0].c_str(), "plan");
}

// The block every tool ends its parse with: a parse error logs, prints the
// usage to stderr and gives the tool's bad-usage code; --help prints it to
// stdout and gives 0; otherwise the tool goes on (usage not printed).
static void after_parse_gives_the_exit_code_or_go_on(void **)
{
	std::vector<FILE *> printed;
	auto usage = [&printed](FILE *f) { printed.push_back(f); };
	assert_int_equal(cli::after_parse(Status::Error("unknown option '--x'"), false, usage), 2);
	assert_int_equal(cli::after_parse(Status::Error("--t needs a value"), true, usage, 3), 3);
	assert_int_equal(printed.size(), 2);
	assert_true(printed[0] == stderr && printed[1] == stderr);
	assert_int_equal(cli::after_parse(Status::Ok(), true, usage), 0);
	assert_true(printed.size() == 3 && printed[2] == stdout);
	assert_int_equal(cli::after_parse(Status::Ok(), false, usage), cli::kGoOn);
	assert_int_equal(printed.size(), 3);
	// A tool's usage that returns its exit status fits too.
	auto usage_rc = [](FILE *) { return 7; };
	assert_int_equal(cli::after_parse(Status::Error("bad"), false, usage_rc), 2);
}

int main()
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(values_in_both_spellings_and_flags),
	    cmocka_unit_test(arguments_are_kept_in_order_and_after_double_dash),
	    cmocka_unit_test(errors_name_the_option),
	    cmocka_unit_test(a_setter_refuses_a_value),
	    cmocka_unit_test(a_short_help_flag_and_full_names_only),
	    cmocka_unit_test(repeated_options_reach_the_setter_in_order),
	    cmocka_unit_test(options_before_the_subcommand_and_after_it),
	    cmocka_unit_test(after_parse_gives_the_exit_code_or_go_on),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
