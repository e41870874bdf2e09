// onramp-migrate: move running checkpointing jobs to other nodes (the core
// of "onrampctl migrate", see onrampctl(8) and onramp-checkpoint(7)).
//
//   onramp-migrate migrate (--jobs IDS | --from NODES) --to FEATURE|NODES
//                  [--dry-run] [--grace S] [--ack-timeout S] [--confirm-timeout S]
//   onramp-migrate resume      finish what an interrupted run left
//   onramp-migrate status [JOB]
//
// Per job, every step is journaled (SQLite, WAL, synchronous=FULL) in
// <StateDir>/migrate.db before the next one starts:
//   PLANNED     row inserted (one active migration per job: a unique index),
//               job marked AdminComment "onramp:migrating ..."
//   DRAINED     source nodes drained "onramp:MIGRATE: job J -> TARGET"
//   SIGNALLED   "scancel --signal=SIG [--full|--batch] J" at signal_ms, as
//               the job's "onramp:signal=" comment says (else onramp.conf)
//   CHECKPOINTED a generation newer than the signal committed its manifest
//   VERIFIED    every shard verified (else: the previous verified generation
//               when the job already exited, abort when it still runs)
//   HELD        "scontrol requeuehold J" (or hold when it requeued itself)
//   STEERED     ExcNodeList=source nodes, Features=TARGET (or ExcNodeList=
//               every node but the target nodes), Switches=leaves it had
//               @ half the confirm timeout (in minutes, at least 1)
//   RELEASED    "scontrol release J"
//   DONE        running on the target, restart count risen, resumed.json
//               names the generation; marker removed
//   ABORTED     drain undone, marker removed, the job keeps running
// Exit 0 all done, 1 some migration aborted or failed, 2 bad usage.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <set>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <string>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "atomic_file.hpp"
#include "config.hpp"
#include "hostlist.hpp"
#include "log.hpp"
#include "migrate/manifest.hpp"
#include "migrate/migrate.hpp"

extern char **environ;

using namespace onramp;

namespace {

int64_t now_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
	           std::chrono::system_clock::now().time_since_epoch())
	    .count();
}

void sleep_s(double s)
{
	std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(s * 1000)));
}

// ------------------------------------------------------------ commands

struct CmdResult {
	int rc = -1;
	std::string out; // stdout and stderr
};

CmdResult run(const std::vector<std::string> &argv)
{
	CmdResult r;
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0)
		return r;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	std::vector<char *> av;
	for (const auto &a : argv)
		av.push_back(const_cast<char *>(a.c_str()));
	av.push_back(nullptr);
	pid_t pid;
	int err = posix_spawnp(&pid, av[0], &fa, nullptr, av.data(), environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (err != 0) {
		close(fds[0]);
		r.out = argv[0] + ": " + strerror(err);
		return r;
	}
	char buf[4096];
	ssize_t n;
	while ((n = read(fds[0], buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			r.out.append(buf, static_cast<size_t>(n));
	close(fds[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	while (!r.out.empty() && r.out.back() == '\n')
		r.out.pop_back();
	return r;
}

std::string join(const std::vector<std::string> &v, const char *sep = " ")
{
	std::string s;
	for (const auto &x : v)
		s += (s.empty() ? "" : sep) + x;
	return s;
}

// How long a Slurm command that cannot reach slurmctld is retried
// (MigrateCtldTimeout): a restart or failover of slurmctld in the middle
// of a migration only delays it.
int64_t g_ctld_wait_s = 600;

bool ctld_unreachable(const CmdResult &r)
{
	if (r.rc == 0)
		return false;
	static const char *const kDown[] = {"Unable to contact slurm controller",
	                                    "Socket timed out",
	                                    "Zero Bytes were transmitted",
	                                    "Connection refused",
	                                    "Communication connection failure",
	                                    "Transport endpoint is not connected",
	                                    "in standby mode"};
	for (const char *d : kDown)
		if (r.out.find(d) != std::string::npos)
			return true;
	return false;
}

// Run a Slurm client command; while slurmctld does not answer, retry with
// backoff (0.5 s doubling up to 5 s) for up to g_ctld_wait_s. Every command
// onramp-migrate sends is safe to repeat (the callers check the outcome).
CmdResult slurm(const std::vector<std::string> &argv)
{
	CmdResult r = run(argv);
	if (!ctld_unreachable(r))
		return r;
	log_warn("slurmctld does not answer (%s: %s); retrying for up to %llds", argv[0].c_str(),
	         r.out.c_str(), static_cast<long long>(g_ctld_wait_s));
	int64_t deadline = now_ms() + g_ctld_wait_s * 1000;
	double wait = 0.5;
	while (now_ms() < deadline) {
		sleep_s(wait);
		wait = std::min(wait * 2, 5.0);
		r = run(argv);
		if (!ctld_unreachable(r)) {
			log_info("slurmctld answers again (%s)", argv[0].c_str());
			return r;
		}
	}
	return r;
}

// Run a Slurm command that changes something; logs and returns its Status.
Status act(const std::vector<std::string> &argv)
{
	CmdResult r = slurm(argv);
	log_debug("ran: %s -> %d %s", join(argv).c_str(), r.rc, r.out.c_str());
	if (r.rc != 0)
		return Status::Error(join(argv) + ": " + (r.out.empty() ? "failed" : r.out));
	return Status::Ok();
}

// "Key=value Key2=va lue ..." of scontrol -o: a key starts after a blank
// and is [A-Za-z][A-Za-z0-9_:/]* followed by '='.
std::map<std::string, std::string> parse_kv(const std::string &line)
{
	std::map<std::string, std::string> out;
	std::vector<size_t> starts;
	for (size_t i = 0; i < line.size(); i++) {
		if (i > 0 && line[i - 1] != ' ')
			continue;
		if (!isalpha(static_cast<unsigned char>(line[i])))
			continue;
		size_t j = i;
		while (j < line.size() && (isalnum(static_cast<unsigned char>(line[j])) ||
		                           line[j] == '_' || line[j] == ':' || line[j] == '/'))
			j++;
		if (j < line.size() && line[j] == '=')
			starts.push_back(i);
	}
	for (size_t k = 0; k < starts.size(); k++) {
		size_t s = starts[k];
		size_t end = k + 1 < starts.size() ? starts[k + 1] - 1 : line.size();
		size_t eq = line.find('=', s);
		out[line.substr(s, eq - s)] = line.substr(eq + 1, end - eq - 1);
	}
	return out;
}

struct JobInfo {
	bool found = false;
	std::string state, nodes, comment, admin_comment, features, user;
	int restarts = 0;
	bool requeue = false, batch = false;
	uid_t uid = 0;
	std::string raw;
};

JobInfo job_info(uint32_t job)
{
	JobInfo j;
	CmdResult r = slurm({"scontrol", "-o", "show", "job", std::to_string(job)});
	if (r.rc != 0 || r.out.find("JobId=") == std::string::npos)
		return j;
	j.raw = r.out.substr(0, r.out.find('\n'));
	auto kv = parse_kv(j.raw);
	j.found = true;
	j.state = kv["JobState"];
	j.nodes = kv["NodeList"] == "(null)" ? "" : kv["NodeList"];
	j.comment = kv["Comment"] == "(null)" ? "" : kv["Comment"];
	j.admin_comment = kv["AdminComment"] == "(null)" ? "" : kv["AdminComment"];
	j.features = kv["Features"] == "(null)" ? "" : kv["Features"];
	j.restarts = atoi(kv["Restarts"].c_str());
	j.requeue = kv["Requeue"] == "1";
	j.batch = kv["BatchFlag"] == "1";
	j.user = kv["UserId"];
	auto lp = j.user.find('(');
	if (lp != std::string::npos)
		j.uid = static_cast<uid_t>(atol(j.user.c_str() + lp + 1));
	return j;
}

bool state_running(const std::string &s)
{
	return s == "RUNNING" || s == "CONFIGURING";
}
bool state_finished(const std::string &s)
{
	return s == "COMPLETED" || s == "FAILED" || s == "CANCELLED" || s == "TIMEOUT" ||
	       s == "NODE_FAIL" || s == "PREEMPTED" || s == "BOOT_FAIL" || s == "DEADLINE" ||
	       s == "OUT_OF_MEMORY";
}

std::string ckpt_dir_of(const JobInfo &j)
{
	return migrate::comment_value(j.comment, migrate::kCkptCommentKey);
}

// The job's comment from "Comment=" on: parse_kv cuts it at the blank of
// "...; onramp:signal=...", which looks like a key of its own.
std::string comment_from(const JobInfo &j)
{
	auto c = j.raw.find(" Comment=");
	return c == std::string::npos ? j.comment : j.raw.substr(c + 9);
}

// The checkpoint signal and whom it reaches, as job_submit/onramp recorded
// them in the job's comment: "scancel --signal=SIG [--batch|--full] J".
std::vector<std::string> signal_args(const JobInfo &j, int sig, const Config &cfg,
                                     const std::string &jid)
{
	int recorded;
	migrate::SignalTarget t;
	migrate::checkpoint_signal_of(comment_from(j), cfg, &recorded, &t);
	return migrate::scancel_signal_args(sig, t, jid);
}

std::string node_reason(const std::string &node)
{
	CmdResult r = slurm({"scontrol", "-o", "show", "node", node});
	auto kv = parse_kv(r.out);
	std::string reason = kv["Reason"];
	auto b = reason.rfind(" [");
	if (b != std::string::npos)
		reason.resize(b);
	return reason == "(null)" ? "" : reason;
}

std::string node_features(const std::string &node)
{
	CmdResult r = slurm({"scontrol", "-o", "show", "node", node});
	return parse_kv(r.out)["ActiveFeatures"];
}

std::vector<std::string> expand(const std::string &hl)
{
	if (hl.empty())
		return {};
	auto r = hostlist_expand(hl);
	return r.ok() ? r.value() : std::vector<std::string>{};
}

// Leaf switches (topology Level=0) each node hangs off.
std::map<std::string, std::string> node_leaves()
{
	std::map<std::string, std::string> out;
	CmdResult r = slurm({"scontrol", "show", "topology"});
	size_t pos = 0;
	while (pos < r.out.size()) {
		size_t nl = r.out.find('\n', pos);
		std::string line =
		    r.out.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
		pos = nl == std::string::npos ? r.out.size() : nl + 1;
		auto kv = parse_kv(line);
		if (kv["Level"] != "0")
			continue;
		for (const auto &n : expand(kv["NodeName"].empty() ? kv["Nodes"] : kv["NodeName"]))
			out[n] = kv["SwitchName"];
	}
	return out;
}

// --------------------------------------------------------------- journal

class Journal {
public:
	~Journal()
	{
		if (db_)
			sqlite3_close(db_);
	}
	Status open(const std::string &path)
	{
		if (sqlite3_open_v2(path.c_str(), &db_,
		                    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
		                        SQLITE_OPEN_FULLMUTEX,
		                    nullptr) != SQLITE_OK)
			return Status::Error(path + ": " +
			                     (db_ ? sqlite3_errmsg(db_) : "cannot open"));
		sqlite3_busy_timeout(db_, 10000);
		return exec(
		    "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
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
		    " state TEXT NOT NULL, message TEXT NOT NULL);");
	}
	Status exec(const std::string &sql)
	{
		char *err = nullptr;
		if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
			Status s = Status::Error(std::string("journal: ") + (err ? err : "error"));
			sqlite3_free(err);
			return s;
		}
		return Status::Ok();
	}
	sqlite3 *db() { return db_; }
	std::mutex mu;

private:
	sqlite3 *db_ = nullptr;
};

struct Migration {
	int64_t id = 0;
	uint32_t job = 0;
	std::string state, src, target, ckpt_dir, drained, admin_comment, old_features, error;
	bool target_nodes = false, from_mode = false;
	int64_t base_gen = 0, gen = 0, signal_ms = 0, restarts = 0, leaves = 0;
	int sig = SIGUSR2;
	int64_t ack_s = 60, grace_s = 300, confirm_s = 300;
};

class Stmt {
public:
	Stmt(sqlite3 *db, const char *sql) { sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
	~Stmt() { sqlite3_finalize(s_); }
	Stmt &bind(int i, int64_t v)
	{
		sqlite3_bind_int64(s_, i, v);
		return *this;
	}
	Stmt &bind(int i, const std::string &v)
	{
		sqlite3_bind_text(s_, i, v.c_str(), -1, SQLITE_TRANSIENT);
		return *this;
	}
	int step() { return sqlite3_step(s_); }
	int64_t i64(int c) { return sqlite3_column_int64(s_, c); }
	std::string text(int c)
	{
		const unsigned char *t = sqlite3_column_text(s_, c);
		return t ? reinterpret_cast<const char *>(t) : "";
	}
	bool ok() const { return s_ != nullptr; }

private:
	sqlite3_stmt *s_ = nullptr;
};

const char *kCols = "id, job, state, src, target, target_nodes, from_mode, ckpt_dir, base_gen, gen,"
                    " signal_ms, restarts, drained, admin_comment, old_features, leaves, sig,"
                    " ack_s, grace_s, confirm_s, error";

Migration row(Stmt &s)
{
	Migration m;
	m.id = s.i64(0);
	m.job = static_cast<uint32_t>(s.i64(1));
	m.state = s.text(2);
	m.src = s.text(3);
	m.target = s.text(4);
	m.target_nodes = s.i64(5);
	m.from_mode = s.i64(6);
	m.ckpt_dir = s.text(7);
	m.base_gen = s.i64(8);
	m.gen = s.i64(9);
	m.signal_ms = s.i64(10);
	m.restarts = s.i64(11);
	m.drained = s.text(12);
	m.admin_comment = s.text(13);
	m.old_features = s.text(14);
	m.leaves = s.i64(15);
	m.sig = static_cast<int>(s.i64(16));
	m.ack_s = s.i64(17);
	m.grace_s = s.i64(18);
	m.confirm_s = s.i64(19);
	m.error = s.text(20);
	return m;
}

// Test hooks, for the tests' simulated crashes only (unset in production,
// where they do nothing): ONRAMP_MIGRATE_CRASH_BEFORE=STATE exits with
// status 99 after the actions that lead to STATE but before STATE is
// journaled, ONRAMP_MIGRATE_CRASH_AFTER=STATE right after it is journaled.
// STATE is a journal state (PLANNED, DRAINED, ..., RELEASED, DONE, ABORTED).
void maybe_crash(const char *when, const std::string &state)
{
	std::string var = std::string("ONRAMP_MIGRATE_CRASH_") + when;
	const char *c = getenv(var.c_str());
	if (c && state == c) {
		log_warn("%s=%s: exiting now (test hook)", var.c_str(), c);
		_exit(99);
	}
}

// Serialises the decisions on source nodes (drain, undo of a drain, and the
// journal write that ends a migration) between the threads and processes
// that drive migrations, so that of two migrations draining one node the
// last to finish resumes it. An flock on a fresh descriptor: threads of one
// process exclude each other too.
class DrainLock {
public:
	explicit DrainLock(const std::string &statedir)
	{
		std::string dir = statedir + "/locks";
		(void)make_dirs(dir, 0755);
		fd_ = open((dir + "/drain.lock").c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
		while (fd_ >= 0 && flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
		}
	}
	~DrainLock()
	{
		if (fd_ >= 0)
			close(fd_);
	}
	DrainLock(const DrainLock &) = delete;
	DrainLock &operator=(const DrainLock &) = delete;

private:
	int fd_ = -1;
};

class Migrator {
public:
	Migrator(Journal &j, const Config &cfg) : j_(j), cfg_(cfg) {}

	// Journal the new state (and the fields that go with it).
	Status save(Migration &m, const std::string &state, const std::string &msg)
	{
		maybe_crash("BEFORE", state);
		std::lock_guard<std::mutex> g(j_.mu);
		m.state = state;
		int64_t t = now_ms();
		Stmt s(j_.db(), "UPDATE migrations SET state=?1, gen=?2, signal_ms=?3, drained=?4,"
		                " leaves=?5, error=?6, updated_ms=?7, old_features=?8,"
		                " active=?9 WHERE id=?10");
		s.bind(1, state).bind(2, m.gen).bind(3, m.signal_ms).bind(4, m.drained);
		s.bind(5, m.leaves).bind(6, m.error).bind(7, t).bind(8, m.old_features);
		s.bind(9, static_cast<int64_t>(state == "DONE" || state == "ABORTED" ? 0 : 1));
		s.bind(10, m.id);
		if (s.step() != SQLITE_DONE)
			return Status::Error(std::string("journal: ") + sqlite3_errmsg(j_.db()));
		Stmt e(j_.db(), "INSERT INTO events(migration, time_ms, state, message)"
		                " VALUES(?1, ?2, ?3, ?4)");
		e.bind(1, m.id).bind(2, t).bind(3, state).bind(4, msg);
		e.step();
		log_info("job %u: %s%s%s", m.job, state.c_str(), msg.empty() ? "" : ": ",
		         msg.c_str());
		maybe_crash("AFTER", state);
		return Status::Ok();
	}

	// Insert a PLANNED row; refused when the job already has an active one.
	Status plan(Migration &m)
	{
		maybe_crash("BEFORE", "PLANNED");
		std::lock_guard<std::mutex> g(j_.mu);
		int64_t t = now_ms();
		Stmt s(j_.db(),
		       "INSERT INTO migrations(job, state, src, target, target_nodes,"
		       " from_mode, ckpt_dir, base_gen, restarts, admin_comment, sig, ack_s,"
		       " grace_s, confirm_s, created_ms, updated_ms, old_features, leaves)"
		       " VALUES(?1,'PLANNED',?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?14,?15,"
		       "?16)");
		s.bind(1, m.job).bind(2, m.src).bind(3, m.target).bind(4, m.target_nodes);
		s.bind(5, m.from_mode).bind(6, m.ckpt_dir).bind(7, m.base_gen).bind(8, m.restarts);
		s.bind(9, m.admin_comment).bind(10, m.sig).bind(11, m.ack_s).bind(12, m.grace_s);
		s.bind(13, m.confirm_s).bind(14, t).bind(15, m.old_features).bind(16, m.leaves);
		int rc = s.step();
		if (rc == SQLITE_CONSTRAINT) {
			Stmt q(j_.db(),
			       "SELECT id, state FROM migrations WHERE job=?1 AND active=1");
			q.bind(1, m.job);
			q.step();
			return Status::Error(
			    strprintf("job %u is already being migrated (migration %lld, "
			              "state %s); not starting a second one",
			              m.job, static_cast<long long>(q.i64(0)), q.text(1).c_str()));
		}
		if (rc != SQLITE_DONE)
			return Status::Error(std::string("journal: ") + sqlite3_errmsg(j_.db()));
		m.id = sqlite3_last_insert_rowid(j_.db());
		m.state = "PLANNED";
		log_info("job %u: PLANNED: migration %lld from %s to %s", m.job,
		         static_cast<long long>(m.id), m.src.c_str(), m.target.c_str());
		maybe_crash("AFTER", "PLANNED");
		return Status::Ok();
	}

	std::vector<Migration> active()
	{
		std::lock_guard<std::mutex> g(j_.mu);
		std::vector<Migration> out;
		Stmt s(j_.db(), (std::string("SELECT ") + kCols +
		                 " FROM migrations WHERE active=1 ORDER BY id")
		                    .c_str());
		while (s.step() == SQLITE_ROW)
			out.push_back(row(s));
		return out;
	}

	// How many migrations of the job completed (MigrateMaxPerJob).
	int64_t done_count(uint32_t job)
	{
		std::lock_guard<std::mutex> g(j_.mu);
		Stmt s(j_.db(), "SELECT count(*) FROM migrations WHERE job=?1 AND state='DONE'");
		s.bind(1, job);
		return s.step() == SQLITE_ROW ? s.i64(0) : 0;
	}

	// Nodes drained by other active migrations (never undrained under them).
	std::set<std::string> nodes_held_by_others(int64_t id)
	{
		std::set<std::string> out;
		for (const auto &m : active())
			if (m.id != id)
				for (const auto &n : expand(m.drained))
					out.insert(n);
		return out;
	}

	// Drive m from its journaled state to DONE or ABORTED.
	bool drive(Migration &m);
	bool drive_locked(Migration &m);

private:
	Status fail_abort(Migration &m, const std::string &why);
	std::string drain_sources(Migration &m);
	void undo_drain(Migration &m, bool only_ours = true);
	void restore_marker(Migration &m);
	Journal &j_;
	const Config &cfg_;
};

void Migrator::restore_marker(Migration &m)
{
	JobInfo j = job_info(m.job);
	if (j.found && j.admin_comment.find(migrate::kMigratingMarker) != std::string::npos)
		(void)act({"scontrol", "update", "jobid=" + std::to_string(m.job),
		           "AdminComment=" + m.admin_comment});
}

// Drain m's source nodes (under a DrainLock); m.drained lists the nodes
// this migration holds. Returns the error of a failed drain, else "".
std::string Migrator::drain_sources(Migration &m)
{
	std::vector<std::string> drained;
	std::string reason = strprintf("onramp:MIGRATE: job %u to %s", m.job, m.target.c_str());
	const std::string prefix = "onramp:", ours = "onramp:MIGRATE:";
	std::string failed;
	for (const auto &n : expand(m.src)) {
		std::string r = node_reason(n);
		if (!r.empty() && r.compare(0, prefix.size(), prefix) != 0) {
			log_info("node %s: keeping the admin's reason '%s'", n.c_str(), r.c_str());
			continue;
		}
		if (!r.empty() && r.compare(0, ours.size(), ours) != 0)
			continue; // another onramp flow drained it: not ours to undo
		if (r.empty()) {
			Status s = act({"scontrol", "update", "nodename=" + n, "state=drain",
			                "reason=" + reason});
			if (!s.ok()) {
				failed = s.message();
				break;
			}
		}
		drained.push_back(n);
	}
	m.drained = hostlist_compress(drained);
	return failed;
}

void Migrator::undo_drain(Migration &m, bool)
{
	auto others = nodes_held_by_others(m.id);
	std::string prefix = "onramp:MIGRATE:";
	for (const auto &n : expand(m.drained)) {
		if (others.count(n))
			continue;
		std::string r = node_reason(n);
		if (r.compare(0, prefix.size(), prefix) != 0) {
			log_info("node %s: reason '%s' is not this migration's; left as is",
			         n.c_str(), r.c_str());
			continue;
		}
		Status s = act({"scontrol", "update", "nodename=" + n, "state=resume"});
		if (!s.ok())
			log_warn("node %s: %s", n.c_str(), s.message().c_str());
	}
}

Status Migrator::fail_abort(Migration &m, const std::string &why)
{
	m.error = why;
	log_error("job %u: migration aborted: %s", m.job, why.c_str());
	restore_marker(m);
	DrainLock lock(cfg_.str("StateDir"));
	undo_drain(m);
	return save(m, "ABORTED", why);
}

bool Migrator::drive(Migration &m)
{
	// One driver per migration: a --resume next to a live run skips it.
	std::string lockdir = cfg_.str("StateDir") + "/locks";
	(void)make_dirs(lockdir, 0755);
	std::string lockpath = strprintf("%s/migrate.%u.lock", lockdir.c_str(), m.job);
	int lfd = open(lockpath.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
	if (lfd < 0 || flock(lfd, LOCK_EX | LOCK_NB) != 0) {
		m.error = strprintf("migration %lld is being driven by another onrampctl; skipped",
		                    static_cast<long long>(m.id));
		log_warn("job %u: %s", m.job, m.error.c_str());
		if (lfd >= 0)
			close(lfd);
		return false;
	}
	// Re-read the row: the state may have moved on since it was listed.
	for (const auto &a : active())
		if (a.id == m.id)
			m = a;
	bool ok = drive_locked(m);
	close(lfd);
	return ok;
}

bool Migrator::drive_locked(Migration &m)
{
	const std::string jid = std::to_string(m.job);
	auto aborted = [&](const std::string &why) {
		(void)fail_abort(m, why);
		return false;
	};
	auto step = [&](const std::string &state, const std::string &msg) {
		Status s = save(m, state, msg);
		if (!s.ok()) {
			log_error("job %u: %s", m.job, s.message().c_str());
			return false;
		}
		return true;
	};

	if (m.state == "PLANNED") {
		std::string marker = strprintf("%s id=%lld to=%s", migrate::kMigratingMarker,
		                               static_cast<long long>(m.id), m.target.c_str());
		Status s = act({"scontrol", "update", "jobid=" + jid, "AdminComment=" + marker});
		if (!s.ok())
			return aborted(s.message());
		// Drain the source nodes, keeping an admin's reason. Nodes already
		// drained for another migration are shared (resumed by the last).
		std::string failed;
		{
			DrainLock lock(cfg_.str("StateDir"));
			failed = drain_sources(m);
			if (failed.empty() &&
			    !step("DRAINED", "drained " + (m.drained.empty() ? "-" : m.drained)))
				return false;
		}
		if (!failed.empty())
			return aborted(failed); // undoes what was drained so far
	}

	if (m.state == "DRAINED") {
		JobInfo j = job_info(m.job);
		if (!j.found)
			return aborted("job " + jid + " is gone");
		if (state_finished(j.state))
			return aborted("job " + jid + " ended by itself (" + j.state +
			               ") before it was signalled; nothing to migrate");
		m.signal_ms = now_ms();
		if (!step("SIGNALLING", "")) // signal_ms journaled before the signal
			return false;
		if (state_running(j.state)) {
			Status s = act(signal_args(j, m.sig, cfg_, jid));
			if (!s.ok())
				return aborted(s.message());
		}
		if (!step("SIGNALLED", strprintf("signal %d (%s): %s", m.sig, j.state.c_str(),
		                                 join(signal_args(j, m.sig, cfg_, jid)).c_str())))
			return false;
	}
	if (m.state == "SIGNALLING") {
		// Crashed between journaling signal_ms and the signal: send it again.
		JobInfo j = job_info(m.job);
		if (j.found && state_running(j.state))
			(void)act(signal_args(j, m.sig, cfg_, jid));
		if (!step("SIGNALLED", "signal sent again after a restart"))
			return false;
	}

	if (m.state == "SIGNALLED") {
		// Wait for a generation newer than the signal: started within
		// ack_s, committed within ack_s + grace_s.
		int64_t ack_deadline = m.signal_ms + m.ack_s * 1000;
		int64_t deadline = ack_deadline + m.grace_s * 1000;
		int64_t ended_ms = 0;
		for (;;) {
			uint64_t newest = 0;
			bool committed = false;
			for (uint64_t g : ckpt::list_generations(m.ckpt_dir)) {
				if (static_cast<int64_t>(g) <= m.base_gen)
					break;
				struct stat sb;
				if (!newest)
					newest = g;
				if (stat(ckpt::manifest_path(m.ckpt_dir, g).c_str(), &sb) == 0) {
					newest = g;
					committed = true;
					break;
				}
			}
			if (committed) {
				m.gen = static_cast<int64_t>(newest);
				break;
			}
			int64_t t = now_ms();
			JobInfo j = job_info(m.job);
			if (j.found && j.state == "PENDING") {
				// Requeued by itself meanwhile: steer it from the newest
				// verified generation it has.
				m.gen = 0;
				break;
			}
			if (!j.found || state_finished(j.state)) {
				if (!ended_ms)
					ended_ms = t;
				if (t - ended_ms > 5000) {
					if (!newest)
						return aborted("job " + jid + " ended (" + j.state +
						               ") without a new checkpoint; "
						               "nothing to migrate");
					m.gen = 0;
					break;
				}
			}
			if (!newest && t > ack_deadline)
				return aborted(
				    strprintf("no new checkpoint generation in %s within %llds "
				              "of the signal; the job keeps running",
				              m.ckpt_dir.c_str(), static_cast<long long>(m.ack_s)));
			if (t > deadline)
				return aborted(
				    strprintf("generation %llu was not committed within %llds",
				              static_cast<unsigned long long>(newest),
				              static_cast<long long>(m.ack_s + m.grace_s)));
			sleep_s(0.5);
		}
		if (!step("CHECKPOINTED",
		          m.gen ? strprintf("generation %lld committed",
		                            static_cast<long long>(m.gen))
		                : std::string("no new generation (the job stopped by itself)")))
			return false;
	}

	if (m.state == "CHECKPOINTED") {
		std::string note;
		if (m.gen) {
			auto v = ckpt::verify(m.ckpt_dir, static_cast<uint64_t>(m.gen));
			if (!v.ok()) {
				note = v.status().message();
				log_error("job %u: %s", m.job, note.c_str());
				JobInfo j = job_info(m.job);
				if (j.found && state_running(j.state))
					return aborted("new checkpoint is bad (" + note +
					               ") and the job still runs; not moving it");
				m.gen = 0;
			}
		}
		if (!m.gen) {
			auto l = ckpt::latest(m.ckpt_dir);
			if (!l.ok())
				return aborted("no verified checkpoint generation in " +
				               m.ckpt_dir +
				               (note.empty() ? "" : " (" + note + ")"));
			m.gen = static_cast<int64_t>(l->generation);
			note += (note.empty() ? "" : "; ") +
			        strprintf("using the previous verified generation %lld",
			                  static_cast<long long>(m.gen));
		}
		auto man = ckpt::read_manifest(m.ckpt_dir, static_cast<uint64_t>(m.gen));
		if (!step("VERIFIED",
		          strprintf("generation %lld step %lld", static_cast<long long>(m.gen),
		                    static_cast<long long>(man.ok() ? man->step : -1)) +
		              (note.empty() ? "" : " (" + note + ")")))
			return false;
	}

	if (m.state == "VERIFIED") {
		JobInfo j = job_info(m.job);
		if (!j.found)
			return aborted("job " + jid + " is gone (purged?)");
		Status s;
		if (j.state == "PENDING")
			s = act({"scontrol", "hold", jid});
		else
			s = act({"scontrol", "requeuehold", jid});
		if (!s.ok()) {
			j = job_info(m.job);
			if (!(j.found && j.state == "PENDING"))
				return aborted(s.message());
		}
		// Wait until the requeue went through.
		for (int i = 0; i < 120; i++) {
			j = job_info(m.job);
			if (j.found && j.state == "PENDING")
				break;
			sleep_s(0.5);
		}
		if (!step("HELD", j.state))
			return false;
	}

	if (m.state == "HELD") {
		std::vector<std::string> args = {"scontrol", "update", "jobid=" + jid,
		                                 "ExcNodeList=" + m.src};
		if (m.target_nodes) {
			// Exclude every node but the targets.
			CmdResult r = slurm({"sinfo", "-h", "-N", "-o", "%N"});
			std::set<std::string> all, tgt;
			for (const auto &n : expand(m.target))
				tgt.insert(n);
			size_t p = 0;
			while (p < r.out.size()) {
				size_t nl = r.out.find('\n', p);
				std::string n = r.out.substr(
				    p, nl == std::string::npos ? std::string::npos : nl - p);
				p = nl == std::string::npos ? r.out.size() : nl + 1;
				if (!n.empty() && !tgt.count(n))
					all.insert(n);
			}
			args[3] =
			    "ExcNodeList=" +
			    hostlist_compress(std::vector<std::string>(all.begin(), all.end()));
			args.push_back("Features=");
		} else {
			args.push_back("Features=" + m.target);
		}
		// Keep the job's shape: at most as many leaf switches as before.
		// Without "@WAIT" Slurm keeps the job's own switch wait, which is
		// 0 for a job submitted without --switches, i.e. the count would
		// be dropped at once when the target cannot satisfy it right now.
		// Wait up to half the confirm timeout (Slurm caps it at
		// SchedulerParameters=max_switch_wait, default 300 s).
		if (m.leaves > 0)
			args.push_back(strprintf(
			    "Switches=%lld@%lld", static_cast<long long>(m.leaves),
			    static_cast<long long>(std::max<int64_t>(1, m.confirm_s / 120))));
		Status s = act(args);
		if (!s.ok()) {
			// Never leave the job held: release it where it may run.
			(void)act({"scontrol", "release", jid});
			return aborted("cannot steer the job: " + s.message() +
			               " (released unsteered; it resumes from its checkpoint)");
		}
		if (!step("STEERED", join(std::vector<std::string>(args.begin() + 3, args.end()))))
			return false;
	}

	if (m.state == "STEERED") {
		Status s = act({"scontrol", "release", jid});
		if (!s.ok()) {
			JobInfo j = job_info(m.job);
			if (!j.found || j.state == "PENDING")
				log_warn("job %u: %s", m.job, s.message().c_str());
		}
		if (!step("RELEASED", ""))
			return false;
	}

	if (m.state == "RELEASED") {
		int64_t deadline = now_ms() + m.confirm_s * 1000;
		std::set<std::string> tgt;
		if (m.target_nodes)
			for (const auto &n : expand(m.target))
				tgt.insert(n);
		std::string where;
		for (;;) {
			JobInfo j = job_info(m.job);
			bool on_target = false;
			if (j.found && state_running(j.state) && j.restarts > m.restarts) {
				on_target = true;
				for (const auto &n : expand(j.nodes)) {
					if (m.target_nodes ? !tgt.count(n) : false)
						on_target = false;
					if (!m.target_nodes) {
						std::string f = "," + node_features(n) + ",";
						if (f.find("," + m.target + ",") ==
						    std::string::npos)
							on_target = false;
					}
				}
				where = j.nodes;
			}
			auto r = ckpt::read_resumed(m.ckpt_dir);
			bool resumed = r.ok() && r->time_ms >= m.signal_ms &&
			               static_cast<int64_t>(r->generation) == m.gen;
			if (on_target && resumed)
				break;
			if (j.found && state_finished(j.state) && j.restarts > m.restarts &&
			    !on_target) {
				m.error = "job ended after the release (" + j.state + ")";
				break;
			}
			if (now_ms() > deadline) {
				m.error = strprintf(
				    "not confirmed within %llds (job %s on %s, resumed.json %s)",
				    static_cast<long long>(m.confirm_s), j.state.c_str(),
				    j.nodes.c_str(),
				    r.ok()
				        ? strprintf("generation %llu",
				                    static_cast<unsigned long long>(r->generation))
				              .c_str()
				        : "missing");
				break;
			}
			sleep_s(1);
		}
		restore_marker(m);
		DrainLock lock(cfg_.str("StateDir"));
		if (!m.from_mode)
			undo_drain(m); // --jobs: the nodes were drained only for the move
		if (!m.error.empty()) {
			(void)save(m, "DONE", "moved, but " + m.error);
			log_error("job %u: %s", m.job, m.error.c_str());
			return false;
		}
		(void)save(m, "DONE",
		           strprintf("running on %s, resumed from generation %lld", where.c_str(),
		                     static_cast<long long>(m.gen)));
		return true;
	}
	return m.state == "DONE";
}

bool is_admin()
{
	if (getuid() == 0)
		return true;
	CmdResult r = slurm({"scontrol", "show", "config"});
	auto p = r.out.find("SlurmUser");
	if (p == std::string::npos)
		return false;
	auto eq = r.out.find('=', p);
	auto lp = r.out.find('(', eq);
	if (eq == std::string::npos || lp == std::string::npos)
		return false;
	return static_cast<uid_t>(atol(r.out.c_str() + lp + 1)) == getuid();
}

int usage(FILE *f)
{
	fprintf(f, "usage: onramp-migrate migrate (--jobs IDS | --from NODES) --to FEATURE|NODES\n"
	           "                      [--dry-run] [--grace S] [--ack-timeout S] "
	           "[--confirm-timeout S] [--rollback]\n"
	           "  IDS: job ids, ARRAYID_TASK for one array task, or an array's id for\n"
	           "  all its running tasks (each moves under its own job id)\n"
	           "       onramp-migrate resume\n"
	           "       onramp-migrate status [JOB]\n");
	return f == stdout ? 0 : 2;
}

bool looks_like_nodes(const std::string &t)
{
	auto n = expand(t);
	if (n.empty())
		return false;
	CmdResult r = slurm({"scontrol", "-o", "show", "node", n[0]});
	return r.rc == 0 && r.out.find("NodeName=" + n[0] + " ") != std::string::npos;
}

// One --jobs entry: a job id, ARRAYID_TASK (one array task) or an array's
// id (every running task); each array task moves under its own job id. An
// entry squeue does not show running is passed on as given when numeric, so
// the caller reports its state.
bool is_job_id(const std::string &t)
{
	return !t.empty() && t.size() <= 10 &&
	       t.find_first_not_of("0123456789") == std::string::npos;
}

// The job ids of squeue -o %A output (one per line) onto ids.
void append_job_ids(const std::string &out, std::vector<uint32_t> *ids)
{
	for (size_t p = 0; p < out.size();) {
		size_t nl = out.find('\n', p);
		std::string id =
		    out.substr(p, nl == std::string::npos ? std::string::npos : nl - p);
		if (is_job_id(id))
			ids->push_back(static_cast<uint32_t>(atol(id.c_str())));
		p = nl == std::string::npos ? out.size() : nl + 1;
	}
}

Status resolve_job_ids(const std::string &entry, std::vector<uint32_t> *ids)
{
	size_t us = entry.find('_');
	if (!is_job_id(entry.substr(0, us)) ||
	    (us != std::string::npos && !is_job_id(entry.substr(us + 1))))
		return Status::Error("'" + entry + "' is not a job id (N or ARRAYID_TASK)");
	CmdResult r = slurm({"squeue", "-h", "-t", "RUNNING,CONFIGURING", "-j", entry, "-o", "%A"});
	size_t before = ids->size();
	if (r.rc == 0)
		append_job_ids(r.out, ids);
	if (ids->size() > before)
		return Status::Ok();
	if (us != std::string::npos)
		return Status::Error("array task " + entry + " is not running");
	ids->push_back(static_cast<uint32_t>(atol(entry.c_str())));
	return Status::Ok();
}

int cmd_status(Journal &jr, const std::string &job)
{
	std::string sql = std::string("SELECT ") + kCols + " FROM migrations" +
	                  (job.empty() ? "" : " WHERE job=?1") + " ORDER BY id";
	Stmt s(jr.db(), sql.c_str());
	if (!job.empty())
		s.bind(1, atoll(job.c_str()));
	printf("%-5s %-8s %-12s %-14s %-10s %-5s %s\n", "ID", "JOB", "STATE", "FROM", "TO", "GEN",
	       "ERROR");
	while (s.step() == SQLITE_ROW) {
		Migration m = row(s);
		printf("%-5lld %-8u %-12s %-14s %-10s %-5lld %s\n", static_cast<long long>(m.id),
		       m.job, m.state.c_str(), m.src.c_str(), m.target.c_str(),
		       static_cast<long long>(m.gen), m.error.c_str());
	}
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	log_set_program("onrampctl migrate");
	if (argc < 2)
		return usage(stderr);
	std::string cmd = argv[1];
	if (cmd == "-h" || cmd == "--help")
		return usage(stdout);
	std::string jobs, from, to;
	bool dry = false, rollback = false;
	int64_t grace = -1, ack = -1, confirm = -1;
	std::vector<std::string> rest;
	for (int i = 2; i < argc; i++) {
		std::string a = argv[i];
		auto val = [&]() -> std::string {
			if (i + 1 >= argc) {
				log_error("%s needs a value", a.c_str());
				exit(2);
			}
			return argv[++i];
		};
		auto dur = [&]() -> int64_t {
			auto d = parse_duration(val());
			if (!d.ok() || d.value() <= 0) {
				log_error("%s: %s", a.c_str(),
				          d.ok() ? "must be positive"
				                 : d.status().message().c_str());
				exit(2);
			}
			return d.value();
		};
		if (a == "--jobs")
			jobs = val();
		else if (a == "--from")
			from = val();
		else if (a == "--to")
			to = val();
		else if (a == "--dry-run")
			dry = true;
		else if (a == "--rollback")
			rollback = true; // onrampctl rollback: exempt from MigrateMaxPerJob
		else if (a == "--grace")
			grace = dur();
		else if (a == "--ack-timeout")
			ack = dur();
		else if (a == "--confirm-timeout")
			confirm = dur();
		else if (a == "-h" || a == "--help")
			return usage(stdout);
		else if (!a.empty() && a[0] == '-') {
			log_error("unknown option '%s'", a.c_str());
			return usage(stderr);
		} else
			rest.push_back(a);
	}
	auto cfg = Config::load(default_conf_path());
	if (!cfg.ok()) {
		log_error("%s", cfg.status().message().c_str());
		return 2;
	}
	std::string statedir = cfg->str("StateDir");
	g_ctld_wait_s = cfg->seconds("MigrateCtldTimeout");
	if (cmd != "status" && !is_admin()) {
		log_error("only root or SlurmUser may migrate jobs");
		return 2;
	}
	Status st = make_dirs(statedir, 0700);
	Journal jr;
	if (st.ok())
		st = jr.open(statedir + "/migrate.db");
	if (!st.ok()) {
		log_error("%s", st.message().c_str());
		return 1;
	}
	if (cmd == "status")
		return cmd_status(jr, rest.empty() ? "" : rest[0]);
	Migrator mg(jr, cfg.value());
	std::vector<Migration> todo;
	if (cmd == "resume") {
		todo = mg.active();
		if (todo.empty())
			log_info("nothing to resume");
	} else if (cmd == "migrate") {
		if (jobs.empty() == from.empty()) {
			log_error("give exactly one of --jobs IDS and --from NODES");
			return 2;
		}
		if (to.empty()) {
			log_error("--to FEATURE|NODES is required");
			return 2;
		}
		int sig = SIGUSR2;
		if (!migrate::parse_signal_spec(cfg->str("MigrateSignal"), &sig, nullptr).ok()) {
			log_error("onramp.conf: MigrateSignal is invalid");
			return 2;
		}
		std::vector<uint32_t> ids;
		if (!jobs.empty()) {
			size_t p = 0;
			while (p <= jobs.size()) {
				size_t c = jobs.find(',', p);
				std::string id = jobs.substr(
				    p, c == std::string::npos ? std::string::npos : c - p);
				Status rs = resolve_job_ids(id, &ids);
				if (!rs.ok()) {
					log_error("--jobs: %s", rs.message().c_str());
					return 2;
				}
				if (c == std::string::npos)
					break;
				p = c + 1;
			}
		} else {
			if (expand(from).empty()) {
				log_error("--from: bad hostlist '%s'", from.c_str());
				return 2;
			}
			CmdResult r =
			    slurm({"squeue", "-h", "-t", "RUNNING", "-w", from, "-o", "%A"});
			if (r.rc != 0) {
				log_error("squeue: %s", r.out.c_str());
				return 1;
			}
			append_job_ids(r.out, &ids);
			if (ids.empty())
				log_info("no running jobs on %s", from.c_str());
		}
		std::set<uint32_t> seen;
		ids.erase(std::remove_if(ids.begin(), ids.end(),
		                         [&](uint32_t id) { return !seen.insert(id).second; }),
		          ids.end());
		bool to_nodes = looks_like_nodes(to);
		auto leaves = node_leaves();
		std::map<std::string, uint32_t> m_dirs; // checkpoint directory -> job
		int bad = 0;
		for (uint32_t id : ids) {
			JobInfo j = job_info(id);
			if (!j.found) {
				log_error("job %u: no such job", id);
				bad = 1;
				continue;
			}
			Migration m;
			m.job = id;
			m.ckpt_dir = ckpt_dir_of(j);
			if (m.ckpt_dir.empty() || !j.requeue || !j.batch) {
				log_error("job %u: not migratable (%s)", id,
				          m.ckpt_dir.empty()
				              ? "no onramp:ckpt=DIR in its comment"
				              : (!j.batch ? "not a batch job" : "not requeueable"));
				bad = 1;
				continue;
			}
			if (!state_running(j.state)) {
				log_error("job %u: is %s, not running", id, j.state.c_str());
				bad = 1;
				continue;
			}
			if (!rollback) {
				int64_t done = mg.done_count(id),
				        cap = cfg->integer("MigrateMaxPerJob");
				if (done >= cap) {
					log_error("job %u: already migrated %lld times "
					          "(MigrateMaxPerJob=%lld); not moving it again "
					          "(onrampctl rollback is still allowed)",
					          id, static_cast<long long>(done),
					          static_cast<long long>(cap));
					bad = 1;
					continue;
				}
			}
			if (!m_dirs.insert({m.ckpt_dir, id}).second) {
				log_error("job %u: shares its checkpoint directory %s with job %u; "
				          "give each job (array task) its own",
				          id, m.ckpt_dir.c_str(), m_dirs[m.ckpt_dir]);
				bad = 1;
				continue;
			}
			std::vector<std::string> jn = expand(j.nodes), src;
			if (!from.empty()) {
				auto fn = expand(from);
				for (const auto &n : jn)
					if (std::find(fn.begin(), fn.end(), n) != fn.end())
						src.push_back(n);
			} else {
				src = jn;
			}
			std::set<std::string> lv;
			for (const auto &n : jn)
				if (leaves.count(n))
					lv.insert(leaves[n]);
			m.src = hostlist_compress(src);
			m.target = to;
			m.target_nodes = to_nodes;
			m.from_mode = !from.empty();
			auto gens = ckpt::list_generations(m.ckpt_dir);
			m.base_gen = gens.empty() ? 0 : static_cast<int64_t>(gens.front());
			m.restarts = j.restarts;
			m.admin_comment = j.admin_comment;
			m.old_features = j.features;
			m.leaves = static_cast<int64_t>(lv.size());
			migrate::SignalTarget tgt;
			migrate::checkpoint_signal_of(comment_from(j), cfg.value(), &m.sig, &tgt);
			m.ack_s = ack > 0 ? ack : cfg->seconds("MigrateAckTimeout");
			m.grace_s = grace > 0 ? grace : cfg->seconds("MigrateGrace");
			m.confirm_s = confirm > 0 ? confirm : cfg->seconds("MigrateConfirmTimeout");
			if (dry) {
				printf("job %u: would move from %s to %s%s (checkpoints %s, newest "
				       "generation "
				       "%lld, %lld leaf switch%s, signal %d, ack %llds, grace "
				       "%llds)\n",
				       id, m.src.c_str(), to.c_str(),
				       to_nodes ? " (nodes)" : " (feature)", m.ckpt_dir.c_str(),
				       static_cast<long long>(m.base_gen),
				       static_cast<long long>(m.leaves), m.leaves == 1 ? "" : "es",
				       m.sig, static_cast<long long>(m.ack_s),
				       static_cast<long long>(m.grace_s));
				continue;
			}
			Status ps = mg.plan(m);
			if (!ps.ok()) {
				log_error("%s", ps.message().c_str());
				bad = 1;
				continue;
			}
			todo.push_back(m);
		}
		if (dry)
			return bad;
		if (bad && todo.empty())
			return 1;
	} else {
		return usage(stderr);
	}
	// Every job moves in its own thread; the journal serialises writes.
	std::vector<int> ok(todo.size(), 0);
	std::vector<std::thread> th;
	for (size_t i = 0; i < todo.size(); i++)
		th.emplace_back([&, i]() { ok[i] = mg.drive(todo[i]) ? 1 : 0; });
	for (auto &t : th)
		t.join();
	int rc = 0;
	for (size_t i = 0; i < todo.size(); i++) {
		printf("job %u: %s%s%s\n", todo[i].job, todo[i].state.c_str(),
		       todo[i].error.empty() ? "" : ": ", todo[i].error.c_str());
		if (!ok[i])
			rc = 1;
	}
	return rc;
}
