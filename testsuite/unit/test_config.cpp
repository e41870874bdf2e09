// onramp.conf parser: values, defaults, and errors that name file, line, key.
#include "unit.hpp"

#include "config.hpp"
#include "log.hpp"

using onramp::Config;

static void defaults_apply_when_unset(void **)
{
	auto c = Config::parse("# only a comment\n\n", "t.conf");
	assert_true(c.ok());
	assert_string_equal(c->str("AdmittedFeature").c_str(), "onramp_ok");
	assert_string_equal(c->str("GpuBackend").c_str(), "real");
	assert_false(c->is_set("GpuBackend"));
	assert_int_equal(c->seconds("RollbackWindow"), 7200);
	assert_true(c->number("NcclBusBwFraction") > 0.89 && c->number("NcclBusBwFraction") < 0.91);
}

static void values_keys_case_insensitive_several_per_line(void **)
{
	auto c = Config::parse("gpubackend=sim  AdmittedFeature=adm_ok # trailing comment\n"
	                       "RebootCommand=\"/usr/sbin/reboot -f\"\nRollbackWindow=3h\n",
	                       "t.conf");
	assert_true(c.ok());
	assert_string_equal(c->str("GpuBackend").c_str(), "sim");
	assert_string_equal(c->str("admittedfeature").c_str(), "adm_ok");
	assert_string_equal(c->str("RebootCommand").c_str(), "/usr/sbin/reboot -f");
	assert_int_equal(c->seconds("RollbackWindow"), 3 * 3600);
	assert_int_equal(c->line_of("RebootCommand"), 2);
	assert_int_equal(c->line_of("StateDir"), 0);
}

static void unknown_key_names_file_line_key(void **)
{
	auto c = Config::parse("GpuBackend=sim\n\nThisIsNotAKey=1\n", "/etc/slurm/onramp.conf");
	assert_false(c.ok());
	assert_string_equal(c.status().message().c_str(),
	                    "/etc/slurm/onramp.conf:3: unknown key 'ThisIsNotAKey'");
}

static void malformed_values_are_refused(void **)
{
	struct {
		const char *text, *expect;
	} cases[] = {
	    {"GpuBackend=gpu\n", "t.conf:1: key 'GpuBackend': 'gpu' is not one of real,sim"},
	    {"NcclBusBwFraction=1.5\n", "t.conf:1: key 'NcclBusBwFraction': 1.5 is out of range"},
	    {"NcclBusBwFraction=fast\n", "'fast' is not a number"},
	    {"\nRollbackWindow=2w\n", "t.conf:2: key 'RollbackWindow': '2w' has an unknown unit"},
	    {"StateDir=relative/path\n", "is not an absolute path"},
	    {"AdmittedFeature=bad,feature\n", "is not a valid feature name"},
	    {"just-a-word\n", "t.conf:1: 'just-a-word' is not of the form Key=Value"},
	    {"=value\n", "has no key before '='"},
	    {"RebootCommand=\"unterminated\n", "t.conf:1: unterminated quote"},
	    {"GpuBackend=sim\nGPUBACKEND=real\n",
	     "t.conf:2: key 'GpuBackend' repeated (first set at line 1)"},
	    {"AdmissionAccount=\n", "key 'AdmissionAccount': empty value"},
	    {"Sku=a\nUnadmittedFeature=onramp_ok\n",
	     "t.conf:2: key 'UnadmittedFeature': must differ from AdmittedFeature (both "
	     "onramp_ok)"},
	    {"AdmittedFeature=onramp_unadmitted\n",
	     "t.conf:1: key 'UnadmittedFeature': must differ"},
	    {"VerdictsKept=0\n", "t.conf:1: key 'VerdictsKept': 0 is out of range [1, 100000]"},
	    {"VerdictsKept=many\n", "key 'VerdictsKept': 'many' is not an integer"},
	    {"LogMaxBytes=100\n", "t.conf:1: key 'LogMaxBytes': 100 is out of range [4096,"},
	};
	for (auto &tc : cases) {
		auto c = Config::parse(tc.text, "t.conf");
		assert_false(c.ok());
		assert_contains(c.status().message(), tc.expect);
	}
}

static void durations(void **)
{
	assert_int_equal(onramp::parse_duration("90").value(), 90);
	assert_int_equal(onramp::parse_duration("15m").value(), 900);
	assert_int_equal(onramp::parse_duration("1d").value(), 86400);
	assert_false(onramp::parse_duration("").ok());
	assert_false(onramp::parse_duration("-5").ok());
	assert_false(onramp::parse_duration("h").ok());
	assert_false(onramp::parse_duration("99999999999999999999d").ok());
}

static void load_missing_file_names_it(void **)
{
	auto c = Config::load("/nonexistent/onramp.conf");
	assert_false(c.ok());
	assert_contains(c.status().message(), "/nonexistent/onramp.conf");
}

static void write_text(const std::string &path, const std::string &text)
{
	FILE *f = fopen(path.c_str(), "w");
	assert_non_null(f);
	fputs(text.c_str(), f);
	fclose(f);
}

static void configless_node_reads_the_block_embedded_in_plugstack_conf(void **)
{
	std::string dir = unit_tmpdir();
	write_text(dir + "/plugstack.conf", "optional /usr/lib/slurm/spank_onramp.so\n"
	                                    "#onramp.conf|GpuBackend=sim\n"
	                                    "# a spank comment, not onramp's\n"
	                                    "#onramp.conf|XidWindow=3h\n");
	assert_true(Config::findable(dir + "/onramp.conf"));
	auto c = Config::load(dir + "/onramp.conf");
	assert_true(c.ok());
	assert_string_equal(c->str("GpuBackend").c_str(), "sim");
	assert_int_equal(c->seconds("XidWindow"), 3 * 3600);
	// Line numbers are plugstack.conf's, so errors point at the right line.
	assert_int_equal(c->line_of("XidWindow"), 4);
	assert_string_equal(c->origin().c_str(), (dir + "/plugstack.conf").c_str());
}

static void embedded_block_errors_name_plugstack_conf_and_its_line(void **)
{
	std::string dir = unit_tmpdir();
	write_text(dir + "/plugstack.conf",
	           "\n#onramp.conf|GpuBackend=sim\n#onramp.conf|Bogus=1\n");
	auto c = Config::load(dir + "/onramp.conf");
	assert_false(c.ok());
	assert_string_equal(c.status().message().c_str(),
	                    (dir + "/plugstack.conf:3: unknown key 'Bogus'").c_str());
}

static void onramp_conf_wins_over_the_embedded_block(void **)
{
	std::string dir = unit_tmpdir();
	write_text(dir + "/plugstack.conf", "#onramp.conf|GpuBackend=sim\n");
	write_text(dir + "/onramp.conf", "GpuBackend=real\n");
	auto c = Config::load(dir + "/onramp.conf");
	assert_true(c.ok());
	assert_string_equal(c->str("GpuBackend").c_str(), "real");
}

static void no_file_and_no_block_is_not_findable(void **)
{
	std::string dir = unit_tmpdir();
	assert_false(Config::findable(dir + "/onramp.conf"));
	write_text(dir + "/plugstack.conf", "optional /usr/lib/slurm/spank_onramp.so\n");
	assert_false(Config::findable(dir + "/onramp.conf"));
	auto c = Config::load(dir + "/onramp.conf");
	assert_false(c.ok());
	assert_contains(c.status().message(), "settings cannot be found");
	// An existing but unreadable or bad onramp.conf is "findable": its own
	// error, reported as before.
	write_text(dir + "/onramp.conf", "Bogus=1\n");
	assert_true(Config::findable(dir + "/onramp.conf"));
}

// LF, CRLF and a lone CR all end a line, and lines keep their numbers.
static void every_line_ending_ends_a_line(void **)
{
	for (const char *eol : {"\n", "\r\n", "\r"}) {
		std::string e = eol;
		auto c = Config::parse("# onramp.conf" + e + "Sku=h200" + e + e +
		                           "AdmittedFeature=ok" + e,
		                       "/etc/onramp.conf");
		assert_true(c.ok());
		assert_string_equal(c->str("Sku").c_str(), "h200");
		assert_string_equal(c->str("AdmittedFeature").c_str(), "ok");
		assert_int_equal(c->line_of("AdmittedFeature"), 4);
		auto bad = Config::parse("# x" + e + "Sku=a" + e + "Bogus=1", "/etc/onramp.conf");
		assert_false(bad.ok());
		assert_contains(bad.status().message(), "/etc/onramp.conf:3: unknown key 'Bogus'");
	}
	auto mixed = Config::parse("Sku=a\r\n\rAdmittedFeature=b\n", "x");
	assert_true(mixed.ok());
	assert_int_equal(mixed->line_of("AdmittedFeature"), 3);
	assert_false(Config::parse("", "x")->any_set());
	assert_false(Config::parse("# c\r# d\r", "x")->any_set());
}

static std::string g_logged;
static void capture(int, const char *msg)
{
	g_logged = msg;
}

static void a_hostile_file_never_breaks_a_log_line(void **)
{
	// A binary onramp.conf: the error quotes its bytes, the log line stays
	// one line of printable text (valid UTF-8 kept).
	auto c =
	    Config::parse(std::string("\x01\xff\nGpu\xc3\xa9=x\x1b[2J\n", 14), "/etc/onramp.conf");
	assert_false(c.ok());
	onramp_log_set_sink(capture);
	onramp::log_error("%s", c.status().message().c_str());
	onramp::log_error("%s", "a\nb\x01\xff\xc3\xa9\xe2\x82");
	onramp_log_set_sink(nullptr);
	assert_string_equal(g_logged.c_str(), "a\\x0ab\\x01\\xff\xc3\xa9\\xe2\\x82");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(defaults_apply_when_unset),
	    cmocka_unit_test(values_keys_case_insensitive_several_per_line),
	    cmocka_unit_test(unknown_key_names_file_line_key),
	    cmocka_unit_test(malformed_values_are_refused),
	    cmocka_unit_test(durations),
	    cmocka_unit_test(load_missing_file_names_it),
	    cmocka_unit_test(configless_node_reads_the_block_embedded_in_plugstack_conf),
	    cmocka_unit_test(embedded_block_errors_name_plugstack_conf_and_its_line),
	    cmocka_unit_test(onramp_conf_wins_over_the_embedded_block),
	    cmocka_unit_test(no_file_and_no_block_is_not_findable),
	    cmocka_unit_test(a_hostile_file_never_breaks_a_log_line),
	    cmocka_unit_test(every_line_ending_ends_a_line),
	};
	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
