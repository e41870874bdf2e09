// JSON layer: round trips and errors that name file, line/column or field.
#include "unit.hpp"

#include "json.hpp"

using namespace onramp;

static void parse_error_names_line_and_column(void **)
{
	auto j = json_parse("{\n  \"a\": 1,\n  \"b\": }\n", "profile.json");
	assert_false(j.ok());
	assert_contains(j.status().message(), "profile.json:3:");
	auto d = json_parse("{\"a\":1,\"a\":2}", "dup.json");
	assert_false(d.ok());
	assert_contains(d.status().message(), "duplicate");
}

static void reader_reports_first_bad_field_with_path(void **)
{
	auto j = json_parse("{\"gpus\":[{\"uuid\":\"GPU-1\"},{\"uuid\":7}],\"n\":\"x\"}", "p.json");
	assert_true(j.ok());
	JsonReader r("p.json");
	const json_t *gpus = r.arr(j->get(), "", "gpus");
	assert_non_null(gpus);
	assert_string_equal(r.str(json_array_get(gpus, 0), "gpus[0]", "uuid").c_str(), "GPU-1");
	assert_false(r.failed());
	r.str(json_array_get(gpus, 1), "gpus[1]", "uuid");
	assert_true(r.failed());
	assert_string_equal(r.status().message().c_str(),
	                    "p.json: field 'gpus[1].uuid': expected a string");
	r.num(j->get(), "", "n"); // a later error does not replace the first
	assert_contains(r.status().message(), "gpus[1].uuid");
}

static void reader_missing_unknown_and_defaults(void **)
{
	auto j = json_parse("{\"a\":1,\"extra\":true}", "f.json");
	JsonReader r("f.json");
	assert_int_equal(r.integer_or(j->get(), "", "b", 42), 42);
	assert_int_equal(r.integer(j->get(), "", "a"), 1);
	assert_false(r.failed());
	r.only_keys(j->get(), "", {"a", "b"});
	assert_string_equal(r.status().message().c_str(), "f.json: field 'extra': unknown field");
	JsonReader r2("f.json");
	r2.str(j->get(), "", "name");
	assert_string_equal(r2.status().message().c_str(), "f.json: field 'name': missing");
}

static void build_and_dump(void **)
{
	Json o = Json::object();
	o.set("node", "node1").set("n", 3).set("bw", 1.5).set_bool("ok", true);
	o.set("nan", 0.0 / 0.0);
	Json a = Json::array();
	a.push("x");
	o.set("list", a);
	assert_string_equal(o.dump().c_str(),
	                    "{\"node\":\"node1\",\"n\":3,\"bw\":1.5,\"ok\":true,\"nan\":null,"
	                    "\"list\":[\"x\"]}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(parse_error_names_line_and_column),
	    cmocka_unit_test(reader_reports_first_bad_field_with_path),
	    cmocka_unit_test(reader_missing_unknown_and_defaults),
	    cmocka_unit_test(build_and_dump),
	};
	return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
