// Crash-safe writer: content replaced whole, no temp files left, errors named.
#include "unit.hpp"

#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
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

// Root opening a lock or log file in a directory another account can
// write: a symlink at the file or at its directory fails, the target
// untouched; a plain file is created and opened.
static void open_nofollow_refuses_a_symlinked_file_or_directory(void **)
{
	std::string dir = unit_tmpdir(), victim = dir + "/victim", vdir = dir + "/victim.d";
	assert_true(write_file_atomic(victim, "root's", 0600).ok());
	assert_int_equal(mkdir(vdir.c_str(), 0700), 0);
	assert_int_equal(mkdir((dir + "/locks").c_str(), 0755), 0);
	assert_int_equal(symlink(victim.c_str(), (dir + "/locks/a.lock").c_str()), 0);
	assert_int_equal(symlink((dir + "/nowhere").c_str(), (dir + "/locks/b.lock").c_str()), 0);
	assert_int_equal(symlink(vdir.c_str(), (dir + "/linked").c_str()), 0);
	for (const char *p : {"/locks/a.lock", "/locks/b.lock", "/linked/c.lock"}) {
		errno = 0;
		int fd = open_nofollow(dir + p, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0)
			print_error("%s was opened\n", p);
		assert_true(fd < 0);
		assert_true(errno == ELOOP || errno == ENOTDIR);
	}
	assert_string_equal(read_file(victim).value().c_str(), "root's");
	assert_int_equal(access((dir + "/nowhere").c_str(), F_OK), -1);
	assert_int_equal(count_entries(vdir), 0);
	int fd = open_nofollow(dir + "/locks/d.lock", O_RDONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_true((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
	close(fd);
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
	    cmocka_unit_test(open_nofollow_refuses_a_symlinked_file_or_directory),
	    cmocka_unit_test(read_file_refuses_oversize),
	    cmocka_unit_test(make_dirs_nested),
	};
	return cmocka_run_group_tests_name("atomic_file", tests, NULL, NULL);
}
