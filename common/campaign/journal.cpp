#include "campaign/journal.hpp"

#include "db/db.hpp"
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

// "journal: what: ..." as before the move to common/db.
Status err(const char *what, const Status &st)
{
	return Status::Error(std::string("journal: ") + what + ": " + st.message());
}

CampaignRow campaign_row(const db::Stmt &q)
{
	CampaignRow c;
	c.id = q.text("id");
	c.nodes = q.text("nodes");
	c.fraction = q.real("fraction");
	c.min_pass = q.real("min_pass");
	c.boot_timeout = q.i64("boot_timeout");
	c.state = q.text("state");
	c.status = q.text("status");
	c.created = q.i64("created");
	c.updated = q.i64("updated");
	return c;
}

const char kCampaignCols[] =
    "SELECT id, nodes, fraction, min_pass, boot_timeout, state, status, created, updated "
    "FROM expand_campaigns";

// Prepare sql, bind with bind(stmt), call row(stmt) for every row.
template <typename B, typename R>
Status query(db::Db &d, const char *what, const std::string &sql, B bind, R row)
{
	auto q = d.prepare(sql);
	if (!q.ok())
		return err(what, q.status());
	bind(q.value());
	Status st = q->each(row);
	return st.ok() ? st : err(what, st);
}

// Prepare sql, bind, run (no rows).
template <typename B> Status update(db::Db &d, const char *what, const std::string &sql, B bind)
{
	return query(d, what, sql, bind, [](const db::Stmt &) {});
}

} // namespace

Journal::Journal(std::unique_ptr<db::Db> db) : db_(std::move(db)) {}

Journal::~Journal() = default;

Result<std::unique_ptr<Journal>> Journal::open_readonly(const std::string &path)
{
	auto d = db::Db::open(path, 2000, true);
	if (!d.ok())
		return d.status();
	return std::unique_ptr<Journal>(new Journal(std::move(d.value())));
}

Result<std::unique_ptr<Journal>> Journal::open(const std::string &path)
{
	auto d = db::Db::open(path);
	if (!d.ok())
		return d.status();
	Status st = d.value()->exec(kSchema);
	if (!st.ok())
		return st;
	return std::unique_ptr<Journal>(new Journal(std::move(d.value())));
}

Result<bool> Journal::create(const CampaignRow &c, const std::vector<Wave> &waves, int64_t now)
{
	db::Transaction t(*db_);
	if (!t.status().ok())
		return t.status();
	bool exists = false;
	Status st = query(
	    *db_, "create", "SELECT 1 AS one FROM expand_campaigns WHERE id = :id",
	    [&](db::Stmt &q) { q.bind(":id", c.id); }, [&](const db::Stmt &) { exists = true; });
	if (!st.ok())
		return st;
	if (exists)
		return false;
	st = update(
	    *db_, "create campaign",
	    "INSERT INTO expand_campaigns (id, nodes, fraction, min_pass, boot_timeout, "
	    "state, status, created, updated) VALUES (:id, :nodes, :fraction, :min_pass, "
	    ":boot_timeout, :state, :status, :now, :now)",
	    [&](db::Stmt &q) {
		    q.bind(":id", c.id).bind(":nodes", c.nodes).bind(":fraction", c.fraction);
		    q.bind(":min_pass", c.min_pass).bind(":boot_timeout", c.boot_timeout);
		    q.bind(":state", c.state).bind(":status", c.status).bind(":now", now);
	    });
	for (size_t k = 0; st.ok() && k < waves.size(); k++) {
		const int64_t wave = static_cast<int64_t>(k + 1);
		st = update(*db_, "create wave",
		            "INSERT INTO expand_waves (campaign, wave, state) "
		            "VALUES (:id, :wave, 'planned')",
		            [&](db::Stmt &q) { q.bind(":id", c.id).bind(":wave", wave); });
		for (size_t i = 0; st.ok() && i < waves[k].size(); i++) {
			const Member &m = waves[k][i];
			st = update(
			    *db_, "create node",
			    "INSERT INTO expand_nodes (campaign, node, rack, wave, state, "
			    "t_planned) VALUES (:id, :node, :rack, :wave, 'planned', :now)",
			    [&](db::Stmt &q) {
				    q.bind(":id", c.id).bind(":node", m.node).bind(":rack", m.rack);
				    q.bind(":wave", wave).bind(":now", now);
			    });
			if (st.ok())
				st = update(*db_, "create event",
				            "INSERT INTO expand_events VALUES (:id, :node, "
				            "'planned', :now)",
				            [&](db::Stmt &q) {
					            q.bind(":id", c.id)
					                .bind(":node", m.node)
					                .bind(":now", now);
				            });
		}
	}
	if (!st.ok())
		return st;
	if (!(st = t.commit()).ok())
		return st;
	return true;
}

Result<CampaignRow> Journal::campaign(const std::string &id, bool *found)
{
	CampaignRow c;
	*found = false;
	Status st = query(
	    *db_, "campaign", std::string(kCampaignCols) + " WHERE id = :id",
	    [&](db::Stmt &q) { q.bind(":id", id); },
	    [&](const db::Stmt &q) {
		    c = campaign_row(q);
		    *found = true;
	    });
	if (!st.ok())
		return st;
	return c;
}

Result<std::vector<CampaignRow>> Journal::campaigns()
{
	std::vector<CampaignRow> out;
	Status st = query(
	    *db_, "campaigns", std::string(kCampaignCols) + " ORDER BY created, id",
	    [](db::Stmt &) {}, [&](const db::Stmt &q) { out.push_back(campaign_row(q)); });
	if (!st.ok())
		return st;
	return out;
}

Result<std::vector<NodeRow>> Journal::nodes(const std::string &id)
{
	std::vector<NodeRow> out;
	Status st = query(
	    *db_, "nodes",
	    "SELECT node, rack, wave, state, code, detail, reboots, t_planned, t_rebooting, "
	    "t_booted, t_admitting, t_admitted, t_drained, t_boot_timeout "
	    "FROM expand_nodes WHERE campaign = :id ORDER BY wave, rowid",
	    [&](db::Stmt &q) { q.bind(":id", id); },
	    [&](const db::Stmt &q) {
		    NodeRow n;
		    n.node = q.text("node");
		    n.rack = q.text("rack");
		    n.wave = static_cast<int>(q.i64("wave"));
		    n.state = q.text("state");
		    n.code = q.text("code");
		    n.detail = q.text("detail");
		    n.reboots = static_cast<int>(q.i64("reboots"));
		    for (int i = 0; kNodeStates[i]; i++) {
			    const std::string col = std::string("t_") + kNodeStates[i];
			    if (!q.is_null(col.c_str()))
				    n.times[kNodeStates[i]] = q.i64(col.c_str());
		    }
		    out.push_back(std::move(n));
	    });
	if (!st.ok())
		return st;
	return out;
}

Result<std::vector<WaveRow>> Journal::waves(const std::string &id)
{
	std::vector<WaveRow> out;
	Status st = query(
	    *db_, "waves",
	    "SELECT wave, state, opened, closed FROM expand_waves WHERE campaign = :id "
	    "ORDER BY wave",
	    [&](db::Stmt &q) { q.bind(":id", id); },
	    [&](const db::Stmt &q) {
		    out.push_back({static_cast<int>(q.i64("wave")), q.text("state"),
		                   q.i64("opened"), q.i64("closed")});
	    });
	if (!st.ok())
		return st;
	return out;
}

Result<std::vector<EventRow>> Journal::events(const std::string &id)
{
	std::vector<EventRow> out;
	Status st = query(
	    *db_, "events",
	    "SELECT node, state, time FROM expand_events WHERE campaign = :id "
	    "ORDER BY time, rowid",
	    [&](db::Stmt &q) { q.bind(":id", id); },
	    [&](const db::Stmt &q) {
		    out.push_back({q.text("node"), q.text("state"), q.i64("time")});
	    });
	if (!st.ok())
		return st;
	return out;
}

Result<std::vector<PairRow>> Journal::pairs(const std::string &id)
{
	std::vector<PairRow> out;
	Status st = query(
	    *db_, "pairs",
	    "SELECT node, rack, peer, peer_rack, result, detail, time FROM expand_pairs "
	    "WHERE campaign = :id ORDER BY rowid",
	    [&](db::Stmt &q) { q.bind(":id", id); },
	    [&](const db::Stmt &q) {
		    out.push_back({q.text("node"), q.text("rack"), q.text("peer"),
		                   q.text("peer_rack"), q.text("result"), q.text("detail"),
		                   q.i64("time")});
	    });
	if (!st.ok())
		return st;
	return out;
}

Status Journal::set_node(const std::string &id, const std::string &node, const std::string &state,
                         const std::string &code, const std::string &detail, int64_t now)
{
	if (!valid_node_state(state))
		return Status::Error("unknown node state '" + state + "'");
	db::Transaction t(*db_);
	if (!t.status().ok())
		return t.status();
	std::string old;
	bool found = false;
	Status st = query(
	    *db_, "set node",
	    "SELECT state FROM expand_nodes WHERE campaign = :id AND node = :node",
	    [&](db::Stmt &q) { q.bind(":id", id).bind(":node", node); },
	    [&](const db::Stmt &q) {
		    old = q.text("state");
		    found = true;
	    });
	if (!st.ok())
		return st;
	if (!found)
		return Status::Error("campaign " + id + " has no node " + node);
	if (old == state)
		return Status::Ok(); // rolled back: nothing written
	// state is one of kNodeStates, so the column name is safe to splice.
	st = update(
	    *db_, "set node",
	    "UPDATE expand_nodes SET state = :state, code = :code, detail = :detail, t_" + state +
	        " = :now, reboots = reboots + :reboot WHERE campaign = :id AND node = :node",
	    [&](db::Stmt &q) {
		    q.bind(":state", state).bind(":code", code).bind(":detail", detail);
		    q.bind(":now", now).bind(":reboot", state == "rebooting" ? 1 : 0);
		    q.bind(":id", id).bind(":node", node);
	    });
	if (st.ok())
		st = update(*db_, "set node event",
		            "INSERT INTO expand_events VALUES (:id, :node, :state, :now)",
		            [&](db::Stmt &q) {
			            q.bind(":id", id).bind(":node", node).bind(":state", state);
			            q.bind(":now", now);
		            });
	return st.ok() ? t.commit() : st;
}

Status Journal::set_wave(const std::string &id, int wave, const std::string &state, int64_t now)
{
	const char *sql = state == "open"
	                      ? "UPDATE expand_waves SET state = :state, opened = "
	                        "coalesce(opened, :now) WHERE campaign = :id AND wave = :wave"
	                      : "UPDATE expand_waves SET state = :state, closed = :now "
	                        "WHERE campaign = :id AND wave = :wave";
	return update(*db_, "set wave", sql, [&](db::Stmt &q) {
		q.bind(":state", state).bind(":now", now).bind(":id", id).bind(":wave", wave);
	});
}

Status Journal::set_campaign(const std::string &id, const std::string &state,
                             const std::string &status, int64_t now)
{
	return update(*db_, "set campaign",
	              "UPDATE expand_campaigns SET state = :state, status = :status, "
	              "updated = :now WHERE id = :id",
	              [&](db::Stmt &q) {
		              q.bind(":state", state).bind(":status", status).bind(":now", now);
		              q.bind(":id", id);
	              });
}

Status Journal::add_pair(const std::string &id, const Pair &p)
{
	return update(*db_, "add pair",
	              "INSERT OR IGNORE INTO expand_pairs (campaign, node, rack, peer, peer_rack) "
	              "VALUES (:id, :node, :rack, :peer, :peer_rack)",
	              [&](db::Stmt &q) {
		              q.bind(":id", id).bind(":node", p.node).bind(":rack", p.rack);
		              q.bind(":peer", p.peer).bind(":peer_rack", p.peer_rack);
	              });
}

Status Journal::set_pair(const std::string &id, const std::string &node, const std::string &peer,
                         const std::string &result, const std::string &detail, int64_t now)
{
	Status st = update(*db_, "set pair",
	                   "UPDATE expand_pairs SET result = :result, detail = :detail, "
	                   "time = :now WHERE campaign = :id AND node = :node AND peer = :peer",
	                   [&](db::Stmt &q) {
		                   q.bind(":result", result).bind(":detail", detail);
		                   q.bind(":now", now).bind(":id", id).bind(":node", node);
		                   q.bind(":peer", peer);
	                   });
	if (st.ok() && db_->changes() == 0)
		return Status::Error("campaign " + id + " has no pair " + node + "/" + peer);
	return st;
}

Result<std::vector<SmokeRow>> Journal::smokes(const std::string &id)
{
	std::vector<SmokeRow> out;
	Status st = query(
	    *db_, "smokes",
	    "SELECT rack, nodes, job, result, detail, time FROM expand_smoke "
	    "WHERE campaign = :id ORDER BY rack",
	    [&](db::Stmt &q) { q.bind(":id", id); },
	    [&](const db::Stmt &q) {
		    out.push_back({q.text("rack"), q.text("nodes"), q.text("job"), q.text("result"),
		                   q.text("detail"), q.i64("time")});
	    });
	if (!st.ok())
		return st;
	return out;
}

Status Journal::add_smoke(const std::string &id, const std::string &rack, const std::string &nodes)
{
	return update(
	    *db_, "add smoke",
	    "INSERT OR IGNORE INTO expand_smoke (campaign, rack, nodes) "
	    "VALUES (:id, :rack, :nodes)",
	    [&](db::Stmt &q) { q.bind(":id", id).bind(":rack", rack).bind(":nodes", nodes); });
}

Status Journal::set_smoke(const std::string &id, const std::string &rack, const std::string &job,
                          const std::string &result, const std::string &detail, int64_t now)
{
	Status st = update(*db_, "set smoke",
	                   "UPDATE expand_smoke SET job = :job, result = :result, "
	                   "detail = :detail, time = :now WHERE campaign = :id AND rack = :rack",
	                   [&](db::Stmt &q) {
		                   q.bind(":job", job).bind(":result", result);
		                   q.bind(":detail", detail).bind(":now", now);
		                   q.bind(":id", id).bind(":rack", rack);
	                   });
	if (st.ok() && db_->changes() == 0)
		return Status::Error("campaign " + id + " has no smoke job for rack " + rack);
	return st;
}

Result<std::vector<std::string>> Journal::overlaps(const std::string &id,
                                                   const std::vector<std::string> &nodes)
{
	std::vector<std::string> out;
	for (const auto &n : nodes) {
		bool hit = false;
		Status st = query(
		    *db_, "overlaps",
		    "SELECT c.id AS id, c.state AS state FROM expand_nodes n JOIN expand_campaigns "
		    "c "
		    "ON c.id = n.campaign WHERE n.node = :node AND c.id != :id AND c.state != "
		    "'done'",
		    [&](db::Stmt &q) { q.bind(":node", n).bind(":id", id); },
		    [&](const db::Stmt &q) {
			    if (!hit)
				    out.push_back(n + " (campaign " + q.text("id") + ", " +
				                  q.text("state") + ")");
			    hit = true;
		    });
		if (!st.ok())
			return st;
	}
	return out;
}

} // namespace campaign
} // namespace onramp
