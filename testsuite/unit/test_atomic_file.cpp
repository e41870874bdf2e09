// Crash-safe writer: content replaced whole, no temp files left, errors named.
#include "unit.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include "atomic_file.hpp"

using namespace onramp;

static int count_entries(const std::string &dir)
{
	DIR *d = opendir(dir.c_str());
	int n = 0;
	while (struct dirent *e = readdir(d))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void replace_whole_and_leave_no_temp(void **)
{
	std::string dir = unit_tmpdir(), f = dir + "/record.json";
	assert_true(write_file_atomic(f, "first", 0600).ok());
	assert_true(write_file_atomic(f, "second version", 0600).ok());
	assert_string_equal(read_file(f).value().c_str(), "second version");
	assert_int_equal(count_entries(dir), 1);
	struct stat sb;
	assert_int_equal(stat(f.c_str(), &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
}

static void errors_name_the_path(void **)
{
	Status st = write_file_atomic("/nonexistent-dir/x.json", "x");
	assert_false(st.ok());
	assert_contains(st.message(), "/nonexistent-dir/x.json");
	auto r = read_file("/nonexistent-dir/x.json");
	assert_false(r.ok());
	assert_contains(r.status().message(), "No such file");
}

static void read_file_refuses_oversize(void **)
{
	std::string dir = unit_tmpdir(), f = dir + "/big";
	assert_true(write_file_atomic(f, std::string(4096, 'x')).ok());
	assert_false(read_file(f, 100).ok());
	assert_true(read_file(f, 4096).ok());
}

static void make_dirs_nested(void **)
{
	std::string dir = unit_tmpdir() + "/a/b/c";
	assert_true(make_dirs(dir).ok());
	assert_true(make_dirs(dir).ok());
	assert_true(write_file_atomic(dir + "/f", "x").ok());
	assert_false(make_dirs(dir + "/f").ok());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(replace_whole_and_leave_no_temp),
	    cmocka_unit_test(errors_name_the_path),
	    cmocka_unit_test(read_file_refuses_oversize),
	    cmocka_unit_test(make_dirs_nested),
	};
	return cmocka_run_group_tests_name("atomic_file", tests, NULL, NULL);
}
