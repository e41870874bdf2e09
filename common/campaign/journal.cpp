#include "campaign/journal.hpp"

#include <cstring>
#include <sqlite3.h>

#include "log.hpp"

namespace onramp {
namespace campaign {

const char *const kNodeStates[] = {"planned",  "rebooting", "booted",       "admitting",
                                   "admitted", "drained",   "boot_timeout", nullptr};

bool valid_node_state(const std::string &s)
{
	for (int i = 0; kNodeStates[i]; i++)
		if (s == kNodeStates[i])
			return true;
	return false;
}

bool final_node_state(const std::string &s)
{
	return s == "admitted" || s == "drained" || s == "boot_timeout";
}

namespace {

const char kSchema[] = R"SQL(
CREATE TABLE IF NOT EXISTS expand_campaigns (
  id TEXT PRIMARY KEY, nodes TEXT NOT NULL, fraction REAL NOT NULL,
  min_pass REAL NOT NULL, boot_timeout INTEGER NOT NULL,
  state TEXT NOT NULL, status TEXT NOT NULL DEFAULT '',
  created INTEGER NOT NULL, updated INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS expand_nodes (
  campaign TEXT NOT NULL, node TEXT NOT NULL, rack TEXT NOT NULL,
  wave INTEGER NOT NULL, state TEXT NOT NULL,
  code TEXT NOT NULL DEFAULT '', detail TEXT NOT NULL DEFAULT '',
  reboots INTEGER NOT NULL DEFAULT 0,
  t_planned INTEGER, t_rebooting INTEGER, t_booted INTEGER, t_admitting INTEGER,
  t_admitted INTEGER, t_drained INTEGER, t_boot_timeout INTEGER,
  PRIMARY KEY (campaign, node));
CREATE TABLE IF NOT EXISTS expand_waves (
  campaign TEXT NOT NULL, wave INTEGER NOT NULL, state TEXT NOT NULL,
  opened INTEGER, closed INTEGER, PRIMARY KEY (campaign, wave));
CREATE TABLE IF NOT EXISTS expand_events (
  campaign TEXT NOT NULL, node TEXT NOT NULL, state TEXT NOT NULL,
  time INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS expand_pairs (
  campaign TEXT NOT NULL, node TEXT NOT NULL, rack TEXT NOT NULL,
  peer TEXT NOT NULL, peer_rack TEXT NOT NULL,
  result TEXT NOT NULL DEFAULT '', detail TEXT NOT NULL DEFAULT '', time INTEGER,
  PRIMARY KEY (campaign, node, peer));
CREATE TABLE IF NOT EXISTS expand_smoke (
  campaign TEXT NOT NULL, rack TEXT NOT NULL, nodes TEXT NOT NULL,
  job TEXT NOT NULL DEFAULT '', result TEXT NOT NULL DEFAULT '',
  detail TEXT NOT NULL DEFAULT '', time INTEGER,
  PRIMARY KEY (campaign, rack));
)SQL";

// One prepared statement; binds by position, finalized on destruction.
class Stmt {
public:
	Stmt(sqlite3 *db, const char *sql) : db_(db)
	{
		if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK)
			s_ = nullptr;
	}
	~Stmt() { sqlite3_finalize(s_); }
	bool ok() const { return s_ != nullptr; }
	Stmt &bind(int i, const std::string &v)
	{
		sqlite3_bind_text(s_, i, v.c_str(), -1, SQLITE_TRANSIENT);
		return *this;
	}
	Stmt &bind(int i, int64_t v)
	{
		sqlite3_bind_int64(s_, i, v);
		return *this;
	}
	Stmt &bind(int i, double v)
	{
		sqlite3_bind_double(s_, i, v);
		return *this;
	}
	// SQLITE_ROW, SQLITE_DONE or an error code.
	int step() { return sqlite3_step(s_); }
	std::string text(int c) const
	{
		const unsigned char *t = sqlite3_column_text(s_, c);
		return t ? reinterpret_cast<const char *>(t) : "";
	}
	int64_t integer(int c) const { return sqlite3_column_int64(s_, c); }
	double real(int c) const { return sqlite3_column_double(s_, c); }
	bool null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
	Status error(const char *what) const
	{
		return Status::Error(strprintf("journal: %s: %s", what, sqlite3_errmsg(db_)));
	}

private:
	sqlite3 *db_;
	sqlite3_stmt *s_ = nullptr;
};

Status run(Stmt &s, const char *what)
{
	if (!s.ok())
		return s.error(what);
	int rc = s.step();
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? Status::Ok() : s.error(what);
}

} // namespace

Journal::~Journal()
{
	sqlite3_close(db_);
}

Status Journal::exec(const std::string &sql)
{
	char *err = nullptr;
	if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
		std::string m = err ? err : sqlite3_errmsg(db_);
		sqlite3_free(err);
		return Status::Error("journal: " + m);
	}
	return Status::Ok();
}

namespace {

Result<sqlite3 *> open_db(const std::string &path, int flags, int busy_ms)
{
	sqlite3 *db = nullptr;
	int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
	if (rc != SQLITE_OK) {
		std::string m = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
		sqlite3_close(db);
		return Status::Error("journal " + path + ": " + m);
	}
	sqlite3_busy_timeout(db, busy_ms);
	return db;
}

} // namespace

Result<std::unique_ptr<Journal>> Journal::open_readonly(const std::string &path)
{
	auto db = open_db(path, SQLITE_OPEN_READONLY, 2000);
	if (!db.ok())
		return db.status();
	return std::unique_ptr<Journal>(new Journal(db.value()));
}

Result<std::unique_ptr<Journal>> Journal::open(const std::string &path)
{
	auto db = open_db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 10000);
	if (!db.ok())
		return db.status();
	std::unique_ptr<Journal> j(new Journal(db.value()));
	for (const char *sql : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", kSchema}) {
		Status st = j->exec(sql);
		if (!st.ok())
			return Status::Error(path + ": " + st.message());
	}
	return j;
}

Result<bool> Journal::create(const CampaignRow &c, const std::vector<Wave> &waves, int64_t now)
{
	Status st = exec("BEGIN IMMEDIATE");
	if (!st.ok())
		return st;
	auto fail = [&](Status s) {
		exec("ROLLBACK");
		return s;
	};
	{
		Stmt q(db_, "SELECT 1 FROM expand_campaigns WHERE id = ?");
		if (!q.ok())
			return fail(q.error("create"));
		q.bind(1, c.id);
		if (q.step() == SQLITE_ROW) {
			exec("ROLLBACK");
			return false;
		}
	}
	Stmt ins(db_, "INSERT INTO expand_campaigns (id, nodes, fraction, min_pass, boot_timeout, "
	              "state, status, created, updated) VALUES (?,?,?,?,?,?,?,?,?)");
	if (!ins.ok())
		return fail(ins.error("create"));
	ins.bind(1, c.id).bind(2, c.nodes).bind(3, c.fraction).bind(4, c.min_pass);
	ins.bind(5, c.boot_timeout).bind(6, c.state).bind(7, c.status).bind(8, now).bind(9, now);
	if (!(st = run(ins, "create campaign")).ok())
		return fail(st);
	for (size_t k = 0; k < waves.size(); k++) {
		Stmt w(db_,
		       "INSERT INTO expand_waves (campaign, wave, state) VALUES (?,?,'planned')");
		w.bind(1, c.id).bind(2, static_cast<int64_t>(k + 1));
		if (!(st = run(w, "create wave")).ok())
			return fail(st);
		for (const auto &m : waves[k]) {
			Stmt n(db_, "INSERT INTO expand_nodes (campaign, node, rack, wave, state, "
			            "t_planned) VALUES (?,?,?,?,'planned',?)");
			n.bind(1, c.id).bind(2, m.node).bind(3, m.rack);
			n.bind(4, static_cast<int64_t>(k + 1)).bind(5, now);
			if (!(st = run(n, "create node")).ok())
				return fail(st);
			Stmt e(db_, "INSERT INTO expand_events VALUES (?,?,'planned',?)");
			e.bind(1, c.id).bind(2, m.node).bind(3, now);
			if (!(st = run(e, "create event")).ok())
				return fail(st);
		}
	}
	if (!(st = exec("COMMIT")).ok())
		return fail(st);
	return true;
}

static CampaignRow campaign_row(const Stmt &q)
{
	CampaignRow c;
	c.id = q.text(0);
	c.nodes = q.text(1);
	c.fraction = q.real(2);
	c.min_pass = q.real(3);
	c.boot_timeout = q.integer(4);
	c.state = q.text(5);
	c.status = q.text(6);
	c.created = q.integer(7);
	c.updated = q.integer(8);
	return c;
}

static const char kCampaignCols[] =
    "SELECT id, nodes, fraction, min_pass, boot_timeout, state, status, created, updated "
    "FROM expand_campaigns";

Result<CampaignRow> Journal::campaign(const std::string &id, bool *found)
{
	Stmt q(db_, (std::string(kCampaignCols) + " WHERE id = ?").c_str());
	if (!q.ok())
		return q.error("campaign");
	q.bind(1, id);
	int rc = q.step();
	*found = rc == SQLITE_ROW;
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return q.error("campaign");
	return *found ? campaign_row(q) : CampaignRow{};
}

Result<std::vector<CampaignRow>> Journal::campaigns()
{
	Stmt q(db_, (std::string(kCampaignCols) + " ORDER BY created, id").c_str());
	if (!q.ok())
		return q.error("campaigns");
	std::vector<CampaignRow> out;
	int rc;
	while ((rc = q.step()) == SQLITE_ROW)
		out.push_back(campaign_row(q));
	if (rc != SQLITE_DONE)
		return q.error("campaigns");
	return out;
}

Result<std::vector<NodeRow>> Journal::nodes(const std::string &id)
{
	Stmt q(db_, "SELECT node, rack, wave, state, code, detail, reboots, t_planned, "
	            "t_rebooting, t_booted, t_admitting, t_admitted, t_drained, t_boot_timeout "
	            "FROM expand_nodes WHERE campaign = ? ORDER BY wave, rowid");
	if (!q.ok())
		return q.error("nodes");
	q.bind(1, id);
	std::vector<NodeRow> out;
	int rc;
	while ((rc = q.step()) == SQLITE_ROW) {
		NodeRow n;
		n.node = q.text(0);
		n.rack = q.text(1);
		n.wave = static_cast<int>(q.integer(2));
		n.state = q.text(3);
		n.code = q.text(4);
		n.detail = q.text(5);
		n.reboots = static_cast<int>(q.integer(6));
		for (int i = 0; kNodeStates[i]; i++)
			if (!q.null(7 + i))
				n.times[kNodeStates[i]] = q.integer(7 + i);
		out.push_back(std::move(n));
	}
	if (rc != SQLITE_DONE)
		return q.error("nodes");
	return out;
}

Result<std::vector<WaveRow>> Journal::waves(const std::string &id)
{
	Stmt q(db_, "SELECT wave, state, opened, closed FROM expand_waves WHERE campaign = ? "
	            "ORDER BY wave");
	if (!q.ok())
		return q.error("waves");
	q.bind(1, id);
	std::vector<WaveRow> out;
	int rc;
	while ((rc = q.step()) == SQLITE_ROW)
		out.push_back(
		    {static_cast<int>(q.integer(0)), q.text(1), q.integer(2), q.integer(3)});
	if (rc != SQLITE_DONE)
		return q.error("waves");
	return out;
}

Result<std::vector<EventRow>> Journal::events(const std::string &id)
{
	Stmt q(db_, "SELECT node, state, time FROM expand_events WHERE campaign = ? "
	            "ORDER BY time, rowid");
	if (!q.ok())
		return q.error("events");
	q.bind(1, id);
	std::vector<EventRow> out;
	int rc;
	while ((rc = q.step()) == SQLITE_ROW)
		out.push_back({q.text(0), q.text(1), q.integer(2)});
	if (rc != SQLITE_DONE)
		return q.error("events");
	return out;
}

Result<std::vector<PairRow>> Journal::pairs(const std::string &id)
{
	Stmt q(db_, "SELECT node, rack, peer, peer_rack, result, detail, time FROM expand_pairs "
	            "WHERE campaign = ? ORDER BY rowid");
	if (!q.ok())
		return q.error("pairs");
	q.bind(1, id);
	std::vector<PairRow> out;
	int rc;
	while ((rc = q.step()) == SQLITE_ROW)
		out.push_back({q.text(0), q.text(1), q.text(2), q.text(3), q.text(4), q.text(5),
		               q.integer(6)});
	if (rc != SQLITE_DONE)
		return q.error("pairs");
	return out;
}

Status Journal::set_node(const std::string &id, const std::string &node, const std::string &state,
                         const std::string &code, const std::string &detail, int64_t now)
{
	if (!valid_node_state(state))
		return Status::Error("unknown node state '" + state + "'");
	Status st = exec("BEGIN IMMEDIATE");
	if (!st.ok())
		return st;
	auto fail = [&](Status s) {
		exec("ROLLBACK");
		return s;
	};
	std::string old;
	{
		Stmt q(db_, "SELECT state FROM expand_nodes WHERE campaign = ? AND node = ?");
		if (!q.ok())
			return fail(q.error("set node"));
		q.bind(1, id).bind(2, node);
		if (q.step() != SQLITE_ROW)
			return fail(Status::Error("campaign " + id + " has no node " + node));
		old = q.text(0);
	}
	if (old == state)
		return exec("ROLLBACK");
	// state is one of kNodeStates, so the column name is safe to splice.
	std::string sql = "UPDATE expand_nodes SET state = ?, code = ?, detail = ?, t_" + state +
	                  " = ?, reboots = reboots + ? WHERE campaign = ? AND node = ?";
	Stmt u(db_, sql.c_str());
	u.bind(1, state).bind(2, code).bind(3, detail).bind(4, now);
	u.bind(5, static_cast<int64_t>(state == "rebooting" ? 1 : 0)).bind(6, id).bind(7, node);
	if (!(st = run(u, "set node")).ok())
		return fail(st);
	Stmt e(db_, "INSERT INTO expand_events VALUES (?,?,?,?)");
	e.bind(1, id).bind(2, node).bind(3, state).bind(4, now);
	if (!(st = run(e, "set node event")).ok())
		return fail(st);
	return exec("COMMIT");
}

Status Journal::set_wave(const std::string &id, int wave, const std::string &state, int64_t now)
{
	const char *sql = state == "open"
	                      ? "UPDATE expand_waves SET state = ?, opened = coalesce(opened, ?) "
	                        "WHERE campaign = ? AND wave = ?"
	                      : "UPDATE expand_waves SET state = ?, closed = ? "
	                        "WHERE campaign = ? AND wave = ?";
	Stmt u(db_, sql);
	u.bind(1, state).bind(2, now).bind(3, id).bind(4, static_cast<int64_t>(wave));
	return run(u, "set wave");
}

Status Journal::set_campaign(const std::string &id, const std::string &state,
                             const std::string &status, int64_t now)
{
	Stmt u(db_, "UPDATE expand_campaigns SET state = ?, status = ?, updated = ? WHERE id = ?");
	u.bind(1, state).bind(2, status).bind(3, now).bind(4, id);
	return run(u, "set campaign");
}

Status Journal::add_pair(const std::string &id, const Pair &p)
{
	Stmt u(db_, "INSERT OR IGNORE INTO expand_pairs (campaign, node, rack, peer, peer_rack) "
	            "VALUES (?,?,?,?,?)");
	u.bind(1, id).bind(2, p.node).bind(3, p.rack).bind(4, p.peer).bind(5, p.peer_rack);
	return run(u, "add pair");
}

Status Journal::set_pair(const std::string &id, const std::string &node, const std::string &peer,
                         const std::string &result, const std::string &detail, int64_t now)
{
	Stmt u(db_, "UPDATE expand_pairs SET result = ?, detail = ?, time = ? "
	            "WHERE campaign = ? AND node = ? AND peer = ?");
	u.bind(1, result).bind(2, detail).bind(3, now).bind(4, id).bind(5, node).bind(6, peer);
	Status st = run(u, "set pair");
	if (st.ok() && sqlite3_changes(db_) == 0)
		return Status::Error("campaign " + id + " has no pair " + node + "/" + peer);
	return st;
}

Result<std::vector<SmokeRow>> Journal::smokes(const std::string &id)
{
	Stmt q(db_, "SELECT rack, nodes, job, result, detail, time FROM expand_smoke "
	            "WHERE campaign = ? ORDER BY rack");
	if (!q.ok())
		return q.error("smokes");
	q.bind(1, id);
	std::vector<SmokeRow> out;
	int rc;
	while ((rc = q.step()) == SQLITE_ROW)
		out.push_back(
		    {q.text(0), q.text(1), q.text(2), q.text(3), q.text(4), q.integer(5)});
	if (rc != SQLITE_DONE)
		return q.error("smokes");
	return out;
}

Status Journal::add_smoke(const std::string &id, const std::string &rack, const std::string &nodes)
{
	Stmt u(db_, "INSERT OR IGNORE INTO expand_smoke (campaign, rack, nodes) VALUES (?,?,?)");
	u.bind(1, id).bind(2, rack).bind(3, nodes);
	return run(u, "add smoke");
}

Status Journal::set_smoke(const std::string &id, const std::string &rack, const std::string &job,
                          const std::string &result, const std::string &detail, int64_t now)
{
	Stmt u(db_, "UPDATE expand_smoke SET job = ?, result = ?, detail = ?, time = ? "
	            "WHERE campaign = ? AND rack = ?");
	u.bind(1, job).bind(2, result).bind(3, detail).bind(4, now).bind(5, id).bind(6, rack);
	Status st = run(u, "set smoke");
	if (st.ok() && sqlite3_changes(db_) == 0)
		return Status::Error("campaign " + id + " has no smoke job for rack " + rack);
	return st;
}

Result<std::vector<std::string>> Journal::overlaps(const std::string &id,
                                                   const std::vector<std::string> &nodes)
{
	std::vector<std::string> out;
	for (const auto &n : nodes) {
		Stmt q(db_,
		       "SELECT c.id, c.state FROM expand_nodes n JOIN expand_campaigns c "
		       "ON c.id = n.campaign WHERE n.node = ? AND c.id != ? AND c.state != 'done'");
		if (!q.ok())
			return q.error("overlaps");
		q.bind(1, n).bind(2, id);
		if (q.step() == SQLITE_ROW)
			out.push_back(n + " (campaign " + q.text(0) + ", " + q.text(1) + ")");
	}
	return out;
}

} // namespace campaign
} // namespace onramp
