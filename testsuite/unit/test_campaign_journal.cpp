// The campaign journal: tables created once beside others' tables,
// idempotent transitions, state that survives closing (a crash) and
// reopening, overlap detection, pairs.
#include "unit.hpp"

#include <unistd.h>

#include <sqlite3.h>

#include "campaign/journal.hpp"

using namespace onramp;
using namespace onramp::campaign;

static std::vector<Wave> two_waves()
{
	return {{{"node1", "leaf1"}, {"node5", "leaf2"}}, {{"node2", "leaf1"}, {"node6", "leaf2"}}};
}

static std::unique_ptr<Journal> open_in(const std::string &dir)
{
	auto j = Journal::open(dir + "/onramp.db");
	assert_true(j.ok());
	return std::move(j.value());
}

// A journal in dir with campaign c1 (node[1-2,5-6], two waves) created at t=100.
static std::unique_ptr<Journal> with_c1(const std::string &dir)
{
	auto j = open_in(dir);
	CampaignRow c;
	c.id = "c1";
	c.nodes = "node[1-2,5-6]";
	assert_true(j->create(c, two_waves(), 100).ok());
	return j;
}

static void create_is_once_and_keeps_others_tables(void **)
{
	std::string dir = unit_tmpdir();
	// Another flow's table in the same file is left alone.
	sqlite3 *db;
	assert_int_equal(sqlite3_open((dir + "/onramp.db").c_str(), &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
	                              "CREATE TABLE migrate_jobs (id TEXT); "
	                              "INSERT INTO migrate_jobs VALUES ('j1')",
	                              nullptr, nullptr, nullptr),
	                 SQLITE_OK);
	sqlite3_close(db);
	auto j = open_in(dir);
	CampaignRow c;
	c.id = "c1";
	c.nodes = "node[1-2,5-6]";
	auto r = j->create(c, two_waves(), 100);
	assert_true(r.ok() && r.value());
	r = j->create(c, two_waves(), 200);
	assert_true(r.ok() && !r.value());
	auto nodes = j->nodes("c1");
	assert_int_equal(nodes->size(), 4);
	assert_int_equal(nodes.value()[0].wave, 1);
	assert_string_equal(nodes.value()[0].state.c_str(), "planned");
	assert_int_equal(nodes.value()[0].times["planned"], 100);
	assert_int_equal(j->waves("c1")->size(), 2);
	j.reset();
	assert_int_equal(sqlite3_open((dir + "/onramp.db").c_str(), &db), SQLITE_OK);
	sqlite3_stmt *s;
	sqlite3_prepare_v2(db, "SELECT count(*) FROM migrate_jobs", -1, &s, nullptr);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(s, 0), 1);
	sqlite3_finalize(s);
	sqlite3_close(db);
}

static void transitions_are_idempotent_and_count_reboots(void **)
{
	auto j = with_c1(unit_tmpdir());
	assert_true(j->set_node("c1", "node1", "rebooting", "", "", 110).ok());
	assert_true(j->set_node("c1", "node1", "rebooting", "", "", 120).ok()); // no-op
	assert_true(j->set_node("c1", "node1", "booted", "", "", 130).ok());
	assert_true(j->set_node("c1", "node1", "drained", "NCCL_BW_LOW", "busbw 1 < 2", 140).ok());
	auto n = j->nodes("c1")->at(0);
	assert_string_equal(n.state.c_str(), "drained");
	assert_string_equal(n.code.c_str(), "NCCL_BW_LOW");
	assert_int_equal(n.reboots, 1);
	assert_int_equal(n.times["rebooting"], 110);
	// After the admin's fix the node is rebooted once more.
	assert_true(j->set_node("c1", "node1", "rebooting", "", "", 150).ok());
	n = j->nodes("c1")->at(0);
	assert_int_equal(n.reboots, 2);
	assert_int_equal(j->events("c1")->size(), 4 + 4); // 4 planned + 4 transitions
	auto bad = j->set_node("c1", "node1", "flying", "", "", 1);
	assert_false(bad.ok());
	assert_false(j->set_node("c1", "node99", "booted", "", "", 1).ok());
}

static void state_survives_a_crash(void **)
{
	std::string dir = unit_tmpdir();
	{
		auto j = with_c1(dir);
		assert_true(j->set_wave("c1", 1, "open", 101).ok());
		assert_true(j->set_node("c1", "node1", "admitted", "", "", 120).ok());
		assert_true(j->set_campaign("c1", "paused", "why", 130).ok());
		// No clean shutdown: the handle goes away as if the process died.
	}
	auto j = open_in(dir);
	bool found = false;
	auto c = j->campaign("c1", &found);
	assert_true(found);
	assert_string_equal(c->state.c_str(), "paused");
	assert_string_equal(c->status.c_str(), "why");
	assert_string_equal(j->nodes("c1")->at(0).state.c_str(), "admitted");
	assert_string_equal(j->waves("c1")->at(0).state.c_str(), "open");
	assert_int_equal(j->waves("c1")->at(0).opened, 101);
	assert_true(j->set_wave("c1", 1, "open", 999).ok()); // reopening keeps the first time
	assert_int_equal(j->waves("c1")->at(0).opened, 101);
	j->campaign("nope", &found);
	assert_false(found);
}

static void overlaps_name_the_other_campaign(void **)
{
	auto j = with_c1(unit_tmpdir());
	auto o = j->overlaps("c2", {"node3", "node5"});
	assert_true(o.ok());
	assert_int_equal(o->size(), 1);
	assert_string_equal(o->at(0).c_str(), "node5 (campaign c1, running)");
	assert_true(j->overlaps("c1", {"node5"})->empty()); // its own campaign
	assert_true(j->set_campaign("c1", "done", "", 200).ok());
	assert_true(j->overlaps("c2", {"node5"})->empty());
}

static void pairs_are_added_once(void **)
{
	auto j = open_in(unit_tmpdir());
	Pair p{"node1", "leaf1", "node5", "leaf2"};
	assert_true(j->add_pair("c1", p).ok());
	assert_true(j->add_pair("c1", p).ok());
	assert_int_equal(j->pairs("c1")->size(), 1);
	assert_true(j->set_pair("c1", "node1", "node5", "pass", "120 GB/s", 5).ok());
	assert_string_equal(j->pairs("c1")->at(0).result.c_str(), "pass");
	assert_false(j->set_pair("c1", "node1", "node9", "pass", "", 5).ok());
}

static void smoke_rows_once_per_rack_and_survive_reopening(void **)
{
	std::string dir = unit_tmpdir();
	auto j = with_c1(dir);
	assert_true(j->add_smoke("c1", "leaf2", "node[5-6]").ok());
	assert_true(j->add_smoke("c1", "leaf1", "node[1-2]").ok());
	assert_true(j->add_smoke("c1", "leaf1", "node1").ok()); // ignored: leaf1 has one
	assert_true(j->set_smoke("c1", "leaf1", "42", "running", "", 7).ok());
	assert_false(j->set_smoke("c1", "leaf9", "43", "pass", "", 7).ok());
	j.reset();
	j = open_in(dir);
	auto s = j->smokes("c1");
	assert_true(s.ok());
	assert_int_equal(s->size(), 2);
	assert_string_equal(s->at(0).rack.c_str(), "leaf1");
	assert_string_equal(s->at(0).nodes.c_str(), "node[1-2]");
	assert_string_equal(s->at(0).job.c_str(), "42");
	assert_string_equal(s->at(0).result.c_str(), "running");
	assert_int_equal(s->at(0).time, 7);
	assert_string_equal(s->at(1).result.c_str(), "");
	assert_int_equal(j->smokes("other")->size(), 0);
}

// A reader (the metrics exporter) opens the journal read-only: it sees what
// the writer committed, never creates a database and cannot write.
static void a_read_only_reader_sees_the_journal_and_cannot_write(void **)
{
	std::string dir = unit_tmpdir();
	assert_false(Journal::open_readonly(dir + "/onramp.db").ok());
	assert_false(access((dir + "/onramp.db").c_str(), F_OK) == 0);
	auto w = with_c1(dir);
	assert_true(w->set_node("c1", "node1", "rebooting", "", "", 150).ok());
	auto r = Journal::open_readonly(dir + "/onramp.db");
	assert_true(r.ok());
	auto cs = r.value()->campaigns();
	assert_true(cs.ok());
	assert_int_equal(cs->size(), 1);
	assert_string_equal(cs->at(0).id.c_str(), "c1");
	auto nodes = r.value()->nodes("c1");
	assert_true(nodes.ok());
	assert_int_equal(nodes->size(), 4);
	bool seen = false;
	for (const auto &n : nodes.value())
		if (n.node == "node1") {
			seen = true;
			assert_string_equal(n.state.c_str(), "rebooting");
			assert_int_equal(n.times.at("rebooting"), 150);
		}
	assert_true(seen);
	assert_false(r.value()->set_node("c1", "node2", "rebooting", "", "", 160).ok());
}

int main()
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(create_is_once_and_keeps_others_tables),
	    cmocka_unit_test(transitions_are_idempotent_and_count_reboots),
	    cmocka_unit_test(state_survives_a_crash),
	    cmocka_unit_test(overlaps_name_the_other_campaign),
	    cmocka_unit_test(pairs_are_added_once),
	    cmocka_unit_test(smoke_rows_once_per_rack_and_survive_reopening),
	    cmocka_unit_test(a_read_only_reader_sees_the_journal_and_cannot_write),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
