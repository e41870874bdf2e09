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

Result<std::unique_ptr<Journal>> Journal::open_read_only(const std::string &path)
{
	auto db = db::Db::open(path, 2000, true);
	if (!db.ok())
		return db.status();
	return std::unique_ptr<Journal>(new Journal(std::move(db.value())));
}

Result<std::map<std::string, int64_t>> Journal::count_by_state()
{
	std::lock_guard<std::mutex> g(mu_);
	auto s = db_->prepare("SELECT state, COUNT(*) AS n FROM migrations GROUP BY state");
	if (!s.ok())
		return s.status();
	std::map<std::string, int64_t> out;
	Status st = s->each([&](const db::Stmt &row) { out[row.text("state")] = row.i64("n"); });
	if (!st.ok())
		return st;
	return out;
}

Result<std::vector<Journal::Span>> Journal::spans()
{
	std::lock_guard<std::mutex> g(mu_);
	auto s = db_->prepare("SELECT m.id AS id, m.job AS job, m.state AS state,"
	                      " MAX(ev.time_ms) - MIN(ev.time_ms) AS ms FROM migrations m"
	                      " JOIN events ev ON ev.migration = m.id GROUP BY m.id ORDER BY m.id");
	if (!s.ok())
		return s.status();
	std::vector<Span> out;
	Status st = s->each([&](const db::Stmt &row) {
		Span sp;
		sp.id = row.i64("id");
		sp.job = static_cast<uint32_t>(row.i64("job"));
		sp.state = row.text("state");
		sp.seconds = static_cast<double>(row.i64("ms")) / 1000.0;
		out.push_back(sp);
	});
	if (!st.ok())
		return st;
	return out;
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
	Status st = s->each([&](const db::Stmt &row) {
		Migration m;
		m.id = row.i64("id");
		m.job = static_cast<uint32_t>(row.i64("job"));
		m.state = row.text("state");
		m.src = row.text("src");
		m.target = row.text("target");
		m.target_nodes = row.i64("target_nodes") != 0;
		m.from_mode = row.i64("from_mode") != 0;
		m.ckpt_dir = row.text("ckpt_dir");
		m.base_gen = row.i64("base_gen");
		m.gen = row.i64("gen");
		m.signal_ms = row.i64("signal_ms");
		m.restarts = row.i64("restarts");
		m.drained = row.text("drained");
		m.admin_comment = row.text("admin_comment");
		m.old_features = row.text("old_features");
		m.leaves = row.i64("leaves");
		m.sig = static_cast<int>(row.i64("sig"));
		m.ack_s = row.i64("ack_s");
		m.grace_s = row.i64("grace_s");
		m.confirm_s = row.i64("confirm_s");
		m.error = row.text("error");
		m.created_ms = row.i64("created_ms");
		m.updated_ms = row.i64("updated_ms");
		out.push_back(std::move(m));
	});
	if (!st.ok())
		return st;
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
