// Common includes for the CMocka unit tests (C++).
#pragma once

#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ftw.h>
#include <unistd.h>
#include <string>
#include <vector>
extern "C" {
#include <cmocka.h>
}

// The directories unit_tmpdir() made in this process, removed at its exit
// (nftw without following links: a test may leave a symlink to anything);
// a forked child that exits removes nothing.
inline std::vector<std::string> &unit_tmpdirs()
{
	static std::vector<std::string> dirs;
	return dirs;
}
inline pid_t &unit_tmpdirs_owner()
{
	static pid_t pid = 0;
	return pid;
}
inline void unit_remove_tmpdirs()
{
	if (getpid() != unit_tmpdirs_owner())
		return;
	auto rm = [](const char *path, const struct stat *, int, struct FTW *) {
		::remove(path);
		return 0;
	};
	for (const auto &d : unit_tmpdirs())
		nftw(d.c_str(), rm, 16, FTW_DEPTH | FTW_PHYS);
}

// A fresh temporary directory for one test, removed when the test program
// exits.
inline std::string unit_tmpdir()
{
	char tmpl[] = "/tmp/onramp-unit.XXXXXX";
	char *d = mkdtemp(tmpl);
	if (!d)
		abort();
	if (unit_tmpdirs().empty()) {
		unit_tmpdirs_owner() = getpid();
		atexit(unit_remove_tmpdirs);
	}
	unit_tmpdirs().push_back(d);
	return d;
}

#define assert_contains(haystack, needle)                                                          \
	do {                                                                                       \
		std::string h__(haystack);                                                         \
		if (h__.find(needle) == std::string::npos) {                                       \
			print_error("'%s' does not contain '%s'\n", h__.c_str(), (needle));        \
			fail();                                                                    \
		}                                                                                  \
	} while (0)
