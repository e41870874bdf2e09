#include "migrate/journal.hpp"

#include "log.hpp"

namespace onramp {
namespace migrate {

const char *const kJournalSchema =
    "CREATE TABLE IF NOT EXISTS migrations("
    " id INTEGER PRIMARY KEY, job INTEGER NOT NULL,"
    " active INTEGER NOT NULL DEFAULT 1, state TEXT NOT NULL,"
    " src TEXT NOT NULL, target TEXT NOT NULL, target_nodes INTEGER NOT NULL,"
    " from_mode INTEGER NOT NULL, ckpt_dir TEXT NOT NULL,"
    " base_gen INTEGER NOT NULL, gen INTEGER NOT NULL DEFAULT 0,"
    " signal_ms INTEGER NOT NULL DEFAULT 0, restarts INTEGER NOT NULL,"
    " drained TEXT NOT NULL DEFAULT '', admin_comment TEXT NOT NULL DEFAULT '',"
    " old_features TEXT NOT NULL DEFAULT '', leaves INTEGER NOT NULL DEFAULT 0,"
    " sig INTEGER NOT NULL, ack_s INTEGER NOT NULL, grace_s INTEGER NOT NULL,"
    " confirm_s INTEGER NOT NULL, error TEXT NOT NULL DEFAULT '',"
    " created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);"
    "CREATE UNIQUE INDEX IF NOT EXISTS one_active_per_job"
    " ON migrations(job) WHERE active = 1;"
    "CREATE TABLE IF NOT EXISTS events(id INTEGER PRIMARY KEY,"
    " migration INTEGER NOT NULL, time_ms INTEGER NOT NULL,"
    " state TEXT NOT NULL, message TEXT NOT NULL);";

bool is_final_state(const std::string &state)
{
	return state == "DONE" || state == "ABORTED";
}

Result<std::unique_ptr<Journal>> Journal::open(const std::string &path)
{
	auto db = db::Db::open(path);
	if (!db.ok())
		return db.status();
	Status st = db.value()->exec(kJournalSchema);
	if (!st.ok())
		return st;
	return std::unique_ptr<Journal>(new Journal(std::move(db.value())));
}

Status Journal::plan(Migration &m, int64_t now_ms)
{
	std::lock_guard<std::mutex> g(mu_);
	auto s = db_->prepare(
	    "INSERT INTO migrations(job, state, src, target, target_nodes, from_mode, ckpt_dir,"
	    " base_gen, restarts, admin_comment, sig, ack_s, grace_s, confirm_s, created_ms,"
	    " updated_ms, old_features, leaves)"
	    " VALUES(:job, 'PLANNED', :src, :target, :target_nodes, :from_mode, :ckpt_dir,"
	    " :base_gen, :restarts, :admin_comment, :sig, :ack_s, :grace_s, :confirm_s, :now,"
	    " :now, :old_features, :leaves)");
	if (!s.ok())
		return s.status();
	s->bind(":job", m.job).bind(":src", m.src).bind(":target", m.target);
	s->bind(":target_nodes", m.target_nodes).bind(":from_mode", m.from_mode);
	s->bind(":ckpt_dir", m.ckpt_dir).bind(":base_gen", m.base_gen);
	s->bind(":restarts", m.restarts).bind(":admin_comment", m.admin_comment);
	s->bind(":sig", m.sig).bind(":ack_s", m.ack_s).bind(":grace_s", m.grace_s);
	s->bind(":confirm_s", m.confirm_s).bind(":now", now_ms);
	s->bind(":old_features", m.old_features).bind(":leaves", m.leaves);
	Status st = s->run();
	if (!st.ok() && s->constraint_failed()) {
		auto q = db_->prepare(
		    "SELECT id, state FROM migrations WHERE job = :job AND active = 1");
		auto row = q.ok() ? q->bind(":job", m.job).step() : Result<bool>(q.status());
		if (row.ok() && row.value())
			return Status::Error(strprintf(
			    "job %u is already being migrated (migration "
			    "%lld, state %s); not starting a second one",
			    m.job, static_cast<long long>(q->i64("id")), q->text("state").c_str()));
	}
	if (!st.ok())
		return st;
	m.id = db_->last_insert_id();
	m.state = "PLANNED";
	m.created_ms = m.updated_ms = now_ms;
	return Status::Ok();
}

Status Journal::save(Migration &m, const std::string &state, const std::string &msg, int64_t now_ms)
{
	std::lock_guard<std::mutex> g(mu_);
	db::Transaction tx(*db_);
	if (!tx.status().ok())
		return tx.status();
	auto s = db_->prepare("UPDATE migrations SET state = :state, gen = :gen,"
	                      " signal_ms = :signal_ms, drained = :drained, leaves = :leaves,"
	                      " error = :error, updated_ms = :now, old_features = :old_features,"
	                      " active = :active WHERE id = :id");
	if (!s.ok())
		return s.status();
	s->bind(":state", state).bind(":gen", m.gen).bind(":signal_ms", m.signal_ms);
	s->bind(":drained", m.drained).bind(":leaves", m.leaves).bind(":error", m.error);
	s->bind(":now", now_ms).bind(":old_features", m.old_features);
	s->bind(":active", !is_final_state(state)).bind(":id", m.id);
	Status st = s->run();
	if (!st.ok())
		return st;
	auto e = db_->prepare("INSERT INTO events(migration, time_ms, state, message)"
	                      " VALUES(:id, :now, :state, :message)");
	if (!e.ok())
		return e.status();
	e->bind(":id", m.id).bind(":now", now_ms).bind(":state", state).bind(":message", msg);
	st = e->run();
	if (!st.ok())
		return st;
	st = tx.commit();
	if (!st.ok())
		return st;
	m.state = state;
	m.updated_ms = now_ms;
	return Status::Ok();
}

Result<std::vector<Migration>> Journal::select(const std::string &where,
                                               std::optional<uint32_t> job)
{
	std::lock_guard<std::mutex> g(mu_);
	auto s = db_->prepare(
	    "SELECT id, job, state, src, target, target_nodes, from_mode, ckpt_dir, base_gen, gen,"
	    " signal_ms, restarts, drained, admin_comment, old_features, leaves, sig, ack_s,"
	    " grace_s, confirm_s, error, created_ms, updated_ms FROM migrations " +
	    where + " ORDER BY id");
	if (!s.ok())
		return s.status();
	if (job)
		s->bind(":job", *job);
	std::vector<Migration> out;
	for (;;) {
		auto r = s->step();
		if (!r.ok())
			return r.status();
		if (!r.value())
			break;
		Migration m;
		m.id = s->i64("id");
		m.job = static_cast<uint32_t>(s->i64("job"));
		m.state = s->text("state");
		m.src = s->text("src");
		m.target = s->text("target");
		m.target_nodes = s->i64("target_nodes") != 0;
		m.from_mode = s->i64("from_mode") != 0;
		m.ckpt_dir = s->text("ckpt_dir");
		m.base_gen = s->i64("base_gen");
		m.gen = s->i64("gen");
		m.signal_ms = s->i64("signal_ms");
		m.restarts = s->i64("restarts");
		m.drained = s->text("drained");
		m.admin_comment = s->text("admin_comment");
		m.old_features = s->text("old_features");
		m.leaves = s->i64("leaves");
		m.sig = static_cast<int>(s->i64("sig"));
		m.ack_s = s->i64("ack_s");
		m.grace_s = s->i64("grace_s");
		m.confirm_s = s->i64("confirm_s");
		m.error = s->text("error");
		m.created_ms = s->i64("created_ms");
		m.updated_ms = s->i64("updated_ms");
		out.push_back(std::move(m));
	}
	return out;
}

Result<std::vector<Migration>> Journal::active()
{
	return select("WHERE active = 1", std::nullopt);
}

Result<std::vector<Migration>> Journal::list(std::optional<uint32_t> job)
{
	return select(job ? "WHERE job = :job" : "", job);
}

Result<int64_t> Journal::done_count(uint32_t job)
{
	std::lock_guard<std::mutex> g(mu_);
	auto s = db_->prepare("SELECT count(*) AS n FROM migrations WHERE job = :job AND "
	                      "state = 'DONE'");
	if (!s.ok())
		return s.status();
	auto r = s->bind(":job", job).step();
	if (!r.ok())
		return r.status();
	return r.value() ? s->i64("n") : 0;
}

Result<std::string> Journal::event_message(int64_t id, const std::string &state)
{
	std::lock_guard<std::mutex> g(mu_);
	auto s = db_->prepare("SELECT message FROM events WHERE migration = :id AND state = :state"
	                      " ORDER BY id DESC LIMIT 1");
	if (!s.ok())
		return s.status();
	auto r = s->bind(":id", id).bind(":state", state).step();
	if (!r.ok())
		return r.status();
	return r.value() ? s->text("message") : std::string();
}

} // namespace migrate
} // namespace onramp
