// Common includes for the CMocka unit tests (C++).
#pragma once

#include <cstdarg>
#include <cstddef>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
extern "C" {
#include <cmocka.h>
}

// A fresh temporary directory for one test.
inline std::string unit_tmpdir()
{
	char tmpl[] = "/tmp/onramp-unit.XXXXXX";
	char *d = mkdtemp(tmpl);
	if (!d)
		abort();
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
