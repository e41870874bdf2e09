// Strict numbers (common/number.hpp): the whole text or an error naming it.
#include "unit.hpp"

#include "number.hpp"

using namespace onramp;

static void integers_are_the_whole_text(void **)
{
	assert_int_equal(parse_int("0").value(), 0);
	assert_int_equal(parse_int("42").value(), 42);
	assert_int_equal(parse_int("-7").value(), -7);
	assert_int_equal(parse_int("007").value(), 7);
	for (const char *bad : {"", "-", "1.9", "1.0", "1,5", "1e3", "0x10", " 5", "5 ", "+5",
	                        "12abc", "abc", "--1", "5\n", "NaN", "inf"}) {
		auto r = parse_int(bad);
		if (r.ok())
			fail_msg("'%s' was taken for %lld", bad, static_cast<long long>(r.value()));
		const std::string quoted = std::string("'") + bad + "'";
		assert_contains(r.status().message(), quoted.c_str());
		assert_contains(r.status().message(), "not an integer");
	}
}

static void integers_out_of_range_or_overflowing_are_refused(void **)
{
	assert_int_equal(parse_int("9223372036854775807").value(), INT64_MAX);
	assert_int_equal(parse_int("-9223372036854775808").value(), INT64_MIN);
	for (const char *big :
	     {"9223372036854775808", "99999999999999999999999", "-9223372036854775809"}) {
		auto r = parse_int(big);
		assert_false(r.ok());
		assert_contains(r.status().message(), "out of range");
	}
	assert_int_equal(parse_int("65535", 1, 65535).value(), 65535);
	auto r = parse_int("65536", 1, 65535);
	assert_false(r.ok());
	assert_contains(r.status().message(), "'65536' is out of range [1, 65535]");
	assert_false(parse_int("0", 1, 65535).ok());
	assert_false(parse_int("4294967297", 0, INT32_MAX).ok()); // not wrapped to 1
}

static void numbers_are_finite_and_the_whole_text(void **)
{
	assert_true(parse_number("0.25").value() == 0.25);
	assert_true(parse_number(".5").value() == 0.5);
	assert_true(parse_number("-2").value() == -2);
	assert_true(parse_number("1e3").value() == 1000);
	for (const char *bad : {"", "-", ".", "abc", "0.5x", " 0.5", "0.5 ", "+1", "inf", "-inf",
	                        "nan", "0x1p3", "1e999", "1,5", "e5", "1..2"}) {
		auto r = parse_number(bad);
		if (r.ok())
			fail_msg("'%s' was taken for %g", bad, r.value());
		assert_contains(r.status().message(), "not a number");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(integers_are_the_whole_text),
	    cmocka_unit_test(integers_out_of_range_or_overflowing_are_refused),
	    cmocka_unit_test(numbers_are_finite_and_the_whole_text),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
