// Running programs by argv: no shell, output captured, timeouts reach the
// whole process group, configured command lines split into words.
#include "unit.hpp"

#include <csignal>
#include <fcntl.h>
#include <unistd.h>

#include "proc.hpp"

using namespace onramp;

static void runs_by_argv_and_never_through_a_shell(void **)
{
	ProcResult r = run_argv({"echo", "a; touch /tmp/onramp-unit-proc-pwned", "$(id)"});
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out.c_str(), "a; touch /tmp/onramp-unit-proc-pwned $(id)");
	assert_int_not_equal(access("/tmp/onramp-unit-proc-pwned", F_OK), 0);
}

static void reports_exit_status_and_stderr_apart_when_asked(void **)
{
	ProcOptions o;
	o.separate_stderr = true;
	ProcResult r = run_argv({"sh", "-c", "echo out; echo err >&2; exit 3"}, o);
	assert_int_equal(r.rc, 3);
	assert_string_equal(r.out.c_str(), "out");
	assert_string_equal(r.err.c_str(), "err");
	ProcResult m = run_argv({"sh", "-c", "echo out; echo err >&2"});
	assert_contains(m.out, "err");
}

static void a_missing_program_is_an_error_naming_it(void **)
{
	ProcResult r = run_argv({"onramp-no-such-program"});
	assert_int_equal(r.rc, -1);
	assert_contains(r.out, "onramp-no-such-program");
}

static void a_timeout_kills_the_whole_process_group(void **)
{
	std::string dir = unit_tmpdir(), pidf = dir + "/grandchild";
	ProcOptions o;
	o.timeout_s = 0.5;
	ProcResult r =
	    run_argv({"sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $! > " + pidf + "; wait"}, o);
	assert_true(r.timed_out);
	assert_int_equal(r.rc, 128 + SIGTERM);
	FILE *f = fopen(pidf.c_str(), "r");
	assert_non_null(f);
	int pid = 0;
	assert_int_equal(fscanf(f, "%d", &pid), 1);
	fclose(f);
	usleep(100 * 1000);
	// The grandchild is gone too (or a zombie waiting for init to reap it).
	char state = 'X';
	std::string stat = "/proc/" + std::to_string(pid) + "/stat";
	if (FILE *s = fopen(stat.c_str(), "r")) {
		assert_int_equal(fscanf(s, "%*d %*s %c", &state), 1);
		fclose(s);
	}
	assert_true(state == 'X' || state == 'Z');
}

static void lines_arrive_one_by_one(void **)
{
	std::vector<std::string> lines;
	ProcOptions o;
	o.on_line = [&](const std::string &l) { lines.push_back(l); };
	run_argv({"printf", "one\\ntwo\\nthree\\n"}, o);
	assert_int_equal(lines.size(), 3);
	assert_string_equal(lines[2].c_str(), "three");
}

static void extra_environment_replaces_a_variable(void **)
{
	setenv("ONRAMP_UNIT_PROC", "old", 1);
	ProcOptions o;
	o.env = {"ONRAMP_UNIT_PROC=new"};
	ProcResult r = run_argv({"sh", "-c", "echo $ONRAMP_UNIT_PROC"}, o);
	assert_string_equal(r.out.c_str(), "new");
	// A name alone removes the variable (and no other sharing its prefix).
	setenv("ONRAMP_UNIT_PROC_2", "kept", 1);
	o.env = {"ONRAMP_UNIT_PROC"};
	r = run_argv({"sh", "-c", "echo ${ONRAMP_UNIT_PROC-unset} $ONRAMP_UNIT_PROC_2"}, o);
	assert_string_equal(r.out.c_str(), "unset kept");
	unsetenv("ONRAMP_UNIT_PROC_2");
}

// A descriptor inherited without close-on-exec (a shell's lock) is not
// passed on to the command.
static void the_command_gets_only_stdin_stdout_and_stderr(void **)
{
	int fd = open("/dev/null", O_RDONLY); // no O_CLOEXEC, as bash opens a lock
	assert_true(fd > 2);
	ProcResult r = run_argv({"sh", "-c", "test -e /proc/self/fd/" + std::to_string(fd)});
	close(fd);
	if (r.rc == 0)
		fail_msg("descriptor %d reached the command", fd);
	assert_int_equal(r.rc, 1);
}

static void command_lines_split_into_words_with_substitution(void **)
{
	auto subst = [](char c, std::string *v) {
		if (c != 'p')
			return false;
		*v = "node2; rm -rf /";
		return true;
	};
	auto w = split_command("srun -w %p --label 'a b' \"c d\" 100%% %q", subst);
	assert_true(w.ok());
	assert_int_equal(w->size(), 8);
	assert_string_equal(w.value()[2].c_str(), "node2; rm -rf /"); // one word, never a command
	assert_string_equal(w.value()[4].c_str(), "a b");
	assert_string_equal(w.value()[5].c_str(), "c d");
	assert_string_equal(w.value()[6].c_str(), "100%");
	assert_string_equal(w.value()[7].c_str(), "%q");
	assert_false(split_command("srun 'open").ok());
	assert_false(split_command("   ").ok());
}

int main()
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(runs_by_argv_and_never_through_a_shell),
	    cmocka_unit_test(reports_exit_status_and_stderr_apart_when_asked),
	    cmocka_unit_test(a_missing_program_is_an_error_naming_it),
	    cmocka_unit_test(a_timeout_kills_the_whole_process_group),
	    cmocka_unit_test(lines_arrive_one_by_one),
	    cmocka_unit_test(extra_environment_replaces_a_variable),
	    cmocka_unit_test(command_lines_split_into_words_with_substitution),
	    cmocka_unit_test(the_command_gets_only_stdin_stdout_and_stderr),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
