// The one admin check and the one reason prefix (common/admin.hpp, onramp.h).
#include "unit.hpp"

#include <cstring>

#include "admin.hpp"
#include "onramp.h"

using namespace onramp;

static void root_and_slurm_user_are_admins_nobody_else(void **)
{
	assert_true(is_slurm_admin(0, 64030));
	assert_true(is_slurm_admin(64030, 64030));
	assert_false(is_slurm_admin(1000, 64030));
	assert_false(is_slurm_admin(64031, 64030));
	// SlurmUser=root (the uid a tool assumes when slurmctld cannot be read).
	assert_true(is_slurm_admin(0, 0));
	assert_false(is_slurm_admin(1000, 0));
}

// The shell tools take the prefix from onramp-lib.sh: it must be onramp.h's.
static void the_shell_tools_use_the_same_reason_prefix(void **)
{
	FILE *f = fopen(ONRAMP_SRCDIR "/contrib/libexec/onramp-lib.sh", "r");
	assert_non_null(f);
	char buf[512];
	std::string found;
	int n = 0;
	while (fgets(buf, sizeof(buf), f))
		if (strncmp(buf, "ONRAMP_REASON_PREFIX=", 21) == 0) {
			found = buf;
			n++;
		}
	fclose(f);
	assert_int_equal(n, 1);
	assert_string_equal(found.c_str(), "ONRAMP_REASON_PREFIX=\"" ONRAMP_REASON_PREFIX "\"\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(root_and_slurm_user_are_admins_nobody_else),
	    cmocka_unit_test(the_shell_tools_use_the_same_reason_prefix),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
