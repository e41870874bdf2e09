#include "db/shared.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

#include "config.hpp"
#include "db/db.hpp"
#include "json.hpp"
#include "log.hpp"

namespace onramp {
namespace db {
namespace {

constexpr int kExitLeaseLost = 75;

std::string random_hex()
{
	std::random_device rd;
	return strprintf("%08x%08x", rd(), rd());
}

std::string base_name(const std::string &path)
{
	auto slash = path.rfind('/');
	return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string dir_name(const std::string &path)
{
	auto slash = path.rfind('/');
	return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::string when(int64_t t)
{
	char buf[64];
	time_t tt = static_cast<time_t>(t);
	struct tm tm;
	localtime_r(&tt, &tm);
	strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
	return buf;
}

Status errno_error(const std::string &path, const char *what)
{
	return Status::Error(path + ": " + what + ": " + strerror(errno));
}

// Write data to a new file name in dirfd (O_EXCL, never through a symlink),
// synced.
Status write_new(int dirfd, const std::string &dir, const std::string &name,
                 const std::string &data, mode_t mode)
{
	std::string path = dir + "/" + name;
	int fd =
	    openat(dirfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return errno_error(path, "cannot create");
	size_t off = 0;
	while (off < data.size()) {
		ssize_t n = write(fd, data.data() + off, data.size() - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			Status st = errno_error(path, "cannot write");
			close(fd);
			unlinkat(dirfd, name.c_str(), 0);
			return st;
		}
		off += static_cast<size_t>(n);
	}
	if (fsync(fd) != 0 || close(fd) != 0) {
		Status st = errno_error(path, "cannot sync");
		unlinkat(dirfd, name.c_str(), 0);
		return st;
	}
	return Status::Ok();
}

// Read name in dirfd (a regular file, never through a symlink), at most 1 MiB.
Result<std::string> read_at(int dirfd, const std::string &dir, const std::string &name,
                            size_t max = 1u << 20)
{
	std::string path = dir + "/" + name;
	int fd = openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno_error(path, "cannot open");
	struct stat sb;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return Status::Error(path + ": not a regular file");
	}
	std::string out;
	char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || out.size() + static_cast<size_t>(n) > max) {
			Status st = n < 0 ? errno_error(path, "cannot read")
			                  : Status::Error(path + ": larger than expected");
			close(fd);
			return st;
		}
		out.append(buf, static_cast<size_t>(n));
	}
	close(fd);
	return out;
}

bool same_host(const LeaseInfo &a, const LeaseInfo &b)
{
	return a.host == b.host && a.boot_id == b.boot_id;
}

std::string holder(const LeaseInfo &l)
{
	return strprintf("%s (pid %lld, boot %s, renewed %s)", l.host.c_str(),
	                 static_cast<long long>(l.pid), l.boot_id.c_str(), when(l.renewed).c_str());
}

} // namespace

std::string lease_text(const LeaseInfo &l)
{
	Json o = Json::object();
	o.set("host", l.host).set("pid", l.pid).set("boot_id", l.boot_id).set("token", l.token);
	o.set("started", l.started).set("renewed", l.renewed).set("expires", l.expires);
	return o.dump(true) + "\n";
}

Result<LeaseInfo> parse_lease(const std::string &text, const std::string &origin)
{
	auto j = json_parse(text, origin);
	if (!j.ok())
		return j.status();
	JsonReader r(origin);
	LeaseInfo l;
	if (r.expect_object(j->get(), "")) {
		l.host = r.str(j->get(), "", "host");
		l.boot_id = r.str(j->get(), "", "boot_id");
		l.token = r.str(j->get(), "", "token");
		l.pid = r.integer(j->get(), "", "pid");
		l.started = r.integer(j->get(), "", "started");
		l.renewed = r.integer(j->get(), "", "renewed");
		l.expires = r.integer(j->get(), "", "expires");
	}
	if (r.failed())
		return r.status();
	return l;
}

LeaseInfo lease_self()
{
	LeaseInfo me;
	const char *fake = getenv("ONRAMP_LEASE_HOST");
	char host[256] = "";
	if (fake && *fake)
		me.host = fake;
	else if (gethostname(host, sizeof host - 1) == 0)
		me.host = host;
	auto b = read_file("/proc/sys/kernel/random/boot_id", 4096);
	me.boot_id = b.ok() ? b.value() : "";
	while (!me.boot_id.empty() && (me.boot_id.back() == '\n' || me.boot_id.back() == ' '))
		me.boot_id.pop_back();
	me.pid = getpid();
	return me;
}

int64_t lease_margin(int64_t lease_s)
{
	int64_t m = lease_s / 10;
	return m < 1 ? 1 : m > 30 ? 30 : m;
}

Lease::Lease(int dirfd, std::string dir, std::string name, int64_t lease_s, LeaseInfo me)
    : dirfd_(dirfd), dir_(std::move(dir)), name_(std::move(name)), path_(dir_ + "/" + name_),
      lease_s_(lease_s), me_(std::move(me))
{}

Lease::~Lease()
{
	{
		std::lock_guard<std::mutex> g(mu_);
		stop_ = true;
	}
	cv_.notify_all();
	if (timer_.joinable())
		timer_.join();
	close(dirfd_);
}

// Write this host's lease: put in place with link(2) when create_only (then
// *exists tells a lease was there), else rename(2) over the current one.
Status Lease::write_mine(int64_t now, bool create_only, bool *exists)
{
	me_.token = random_hex();
	me_.renewed = now;
	me_.expires = now + lease_s_;
	if (!me_.started)
		me_.started = now;
	std::string tmp = "." + name_ + ".tmp." + me_.token;
	Status st = write_new(dirfd_, dir_, tmp, lease_text(me_), 0644);
	if (!st.ok())
		return st;
	if (exists)
		*exists = false;
	int rc = create_only ? linkat(dirfd_, tmp.c_str(), dirfd_, name_.c_str(), 0)
	                     : renameat(dirfd_, tmp.c_str(), dirfd_, name_.c_str());
	if (rc != 0 && create_only && errno == EEXIST) {
		// NFS may answer EEXIST to a retransmitted link that did succeed:
		// the temp file then has two links.
		struct stat sb;
		if (fstatat(dirfd_, tmp.c_str(), &sb, AT_SYMLINK_NOFOLLOW) == 0 && sb.st_nlink == 2)
			rc = 0;
		else if (exists)
			*exists = true;
	}
	int saved = errno;
	if (create_only || rc != 0)
		unlinkat(dirfd_, tmp.c_str(), 0);
	if (rc != 0 && !(exists && *exists)) {
		errno = saved;
		return errno_error(path_, create_only ? "cannot link" : "cannot rename");
	}
	if (rc == 0)
		(void)fsync(dirfd_);
	return Status::Ok();
}

Result<std::unique_ptr<Lease>> Lease::acquire(const std::string &dir, const std::string &name,
                                              int64_t lease_s, const LeaseInfo &me, int64_t now,
                                              std::string *taken_from)
{
	if (taken_from)
		taken_from->clear();
	int dirfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0)
		return errno_error(dir, "cannot open");
	std::unique_ptr<Lease> l(new Lease(dirfd, dir, name, lease_s, me));
	for (int tries = 0; tries < 8; tries++) {
		bool exists = false;
		Status st = l->write_mine(now, true, &exists);
		if (!st.ok())
			return st;
		if (!exists)
			return l;
		auto text = read_at(dirfd, dir, name);
		struct stat sb;
		if (!text.ok() && fstatat(dirfd, name.c_str(), &sb, AT_SYMLINK_NOFOLLOW) != 0 &&
		    errno == ENOENT)
			continue; // released meanwhile
		if (!text.ok())
			return text.status();
		auto cur = parse_lease(text.value(), l->path_);
		if (!cur.ok())
			return Status::Error(
			    cur.status().message() +
			    " (a damaged lease: remove it once no host runs this flow)");
		if (same_host(cur.value(), me)) {
			// Another process of this host (or one of this boot that died):
			// the lease is the host's, so it is ours to renew.
			st = l->write_mine(now, false, nullptr);
			if (!st.ok())
				return st;
			return l;
		}
		bool rebooted = cur->host == me.host; // same name, another boot
		int64_t deadline = cur->expires + lease_margin(lease_s);
		if (!rebooted && now <= deadline)
			return Status::Error(strprintf(
			    "%s: held by %s until %s (%lld s from now, plus a %lld s margin for "
			    "clock "
			    "skew): another admin host drives this journal; run there, or wait "
			    "until "
			    "the lease expires",
			    l->path_.c_str(), holder(cur.value()).c_str(),
			    when(cur->expires).c_str(), static_cast<long long>(cur->expires - now),
			    static_cast<long long>(lease_margin(lease_s))));
		// Take it over: move the file aside, and check it was the one judged
		// stale (not a fresh lease another taker put there meanwhile).
		std::string aside = "." + name + ".stale." + random_hex();
		if (renameat(dirfd, name.c_str(), dirfd, aside.c_str()) != 0) {
			if (errno == ENOENT)
				continue;
			return errno_error(l->path_, "cannot move the expired lease aside");
		}
		auto moved = read_at(dirfd, dir, aside);
		auto was = moved.ok() ? parse_lease(moved.value(), dir + "/" + aside)
		                      : Result<LeaseInfo>(moved.status());
		if (!was.ok() || was->token != cur->token) {
			// A fresh lease: put it back (unless yet another appeared).
			(void)linkat(dirfd, aside.c_str(), dirfd, name.c_str(), 0);
			unlinkat(dirfd, aside.c_str(), 0);
			continue;
		}
		unlinkat(dirfd, aside.c_str(), 0);
		std::string old = strprintf(
		    "%s (pid %lld, %s %s)", cur->host.c_str(), static_cast<long long>(cur->pid),
		    rebooted ? "rebooted since; lease of boot" : "expired at",
		    rebooted ? cur->boot_id.c_str() : when(cur->expires).c_str());
		log_warn("%s: taking over the lease of %s", l->path_.c_str(), old.c_str());
		if (taken_from)
			*taken_from = old;
	}
	return Status::Error(l->path_ + ": cannot take the lease: other hosts keep changing it");
}

Status Lease::renew(int64_t now)
{
	std::lock_guard<std::mutex> g(mu_);
	auto text = read_at(dirfd_, dir_, name_);
	auto cur = text.ok() ? parse_lease(text.value(), path_) : Result<LeaseInfo>(text.status());
	if (!cur.ok() || !same_host(cur.value(), me_)) {
		lost_ = true;
		return Status::Error(path_ + ": the lease is lost" +
		                     (cur.ok() ? ": now held by " + holder(cur.value())
		                               : ": " + cur.status().message()));
	}
	return write_mine(now, false, nullptr);
}

Status Lease::release()
{
	std::lock_guard<std::mutex> g(mu_);
	auto text = read_at(dirfd_, dir_, name_);
	auto cur = text.ok() ? parse_lease(text.value(), path_) : Result<LeaseInfo>(text.status());
	if (!cur.ok() || !same_host(cur.value(), me_))
		return Status::Ok(); // not ours (any more): nothing to release
	if (unlinkat(dirfd_, name_.c_str(), 0) != 0 && errno != ENOENT)
		return errno_error(path_, "cannot remove");
	(void)fsync(dirfd_);
	return Status::Ok();
}

void Lease::keep_renewed()
{
	if (timer_.joinable())
		return;
	timer_ = std::thread([this] {
		std::unique_lock<std::mutex> g(mu_);
		int64_t every = lease_s_ / 3 < 1 ? 1 : lease_s_ / 3;
		while (!stop_ && !lost_) {
			cv_.wait_for(g, std::chrono::seconds(every), [this] { return stop_; });
			if (stop_)
				break;
			g.unlock();
			Status st = renew(static_cast<int64_t>(time(nullptr)));
			if (!st.ok())
				log_error("%s", st.message().c_str());
			g.lock();
		}
	});
}

Result<Prefer> parse_prefer(const std::string &text)
{
	if (text == "local")
		return Prefer::Local;
	if (text == "shared")
		return Prefer::Shared;
	return Status::Error("'" + text + "': expected local or shared");
}

Status check_shared_dir(const std::string &dir, uid_t owner)
{
	if (dir.empty() || dir[0] != '/')
		return Status::Error(dir + ": not an absolute path");
	struct stat sb;
	if (lstat(dir.c_str(), &sb) != 0)
		return errno_error(dir, "cannot stat");
	if (S_ISLNK(sb.st_mode))
		return Status::Error(dir + ": a symbolic link; name the directory itself");
	if (!S_ISDIR(sb.st_mode))
		return Status::Error(dir + ": not a directory");
	if (sb.st_uid != owner)
		return Status::Error(strprintf(
		    "%s: owned by uid %u, not uid %u (SharedStateDir must "
		    "belong to the account that runs the flows: root)",
		    dir.c_str(), static_cast<unsigned>(sb.st_uid), static_cast<unsigned>(owner)));
	if (sb.st_mode & 022)
		return Status::Error(strprintf("%s: writable by group or others (mode %04o): "
		                               "chmod go-w it",
		                               dir.c_str(),
		                               static_cast<unsigned>(sb.st_mode & 07777)));
	return Status::Ok();
}

Result<std::unique_ptr<SharedJournal>>
SharedJournal::attach(const Config &cfg, const std::string &local_path, Prefer prefer)
{
	if (!cfg.is_set("SharedStateDir"))
		return std::unique_ptr<SharedJournal>();
	std::string lock_dir = cfg.str("StateDir") + "/locks";
	Status st = make_dirs(lock_dir, 0755);
	if (!st.ok())
		return st;
	std::string dir = cfg.str("SharedStateDir");
	st = check_shared_dir(dir, geteuid());
	if (!st.ok())
		return Status::Error(cfg.where("SharedStateDir") + ": " + st.message());
	return attach(dir, cfg.seconds("LeaseSeconds"), local_path, lock_dir, prefer, lease_self());
}

Result<std::unique_ptr<SharedJournal>>
SharedJournal::attach(const std::string &shared_dir, int64_t lease_s, const std::string &local_path,
                      const std::string &lock_dir, Prefer prefer, const LeaseInfo &me)
{
	std::unique_ptr<SharedJournal> s(new SharedJournal());
	s->dir_ = shared_dir;
	s->name_ = base_name(local_path);
	s->shared_path_ = shared_dir + "/" + s->name_;
	s->local_path_ = local_path;
	s->lock_dir_ = lock_dir;
	// Held shared for the process's life: the last process of this host to
	// end is the one that can turn it exclusive, and releases the lease.
	s->users_.reset(new FileLock(lock_dir + "/" + s->name_ + ".users.lock", true, true));
	if (!s->users_->held())
		return errno_error(lock_dir + "/" + s->name_ + ".users.lock", "cannot lock");
	std::string taken;
	auto l = Lease::acquire(shared_dir, s->name_ + ".lease", lease_s, me,
	                        static_cast<int64_t>(time(nullptr)), &taken);
	if (!l.ok())
		return l.status();
	s->lease_ = std::move(l.value());
	// From here on a failure releases the lease (the destructor).
	struct stat sb;
	if (fstatat(AT_FDCWD, s->shared_path_.c_str(), &sb, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno != ENOENT)
			return errno_error(s->shared_path_, "cannot stat");
		s->lagging_ = true; // first use: the local journal seeds it
		return s;
	}
	if (!S_ISREG(sb.st_mode))
		return Status::Error(s->shared_path_ + ": not a regular file");
	auto shared_gen = Db::file_generation(s->shared_path_);
	if (!shared_gen.ok())
		return shared_gen.status();
	FileLock one(lock_dir + "/" + s->name_ + ".export.lock", true);
	auto local = Db::open(local_path);
	if (!local.ok())
		return local.status();
	auto local_gen = local.value()->generation();
	if (!local_gen.ok())
		return local_gen.status();
	int64_t sg = shared_gen.value(), lg = local_gen.value();
	if (sg < lg && prefer == Prefer::Newest)
		return Status::Error(strprintf(
		    "%s (generation %lld) is older than the local journal %s (generation %lld): "
		    "another copy of the shared state was put back, or this host's journal went on "
		    "alone; choose with --prefer-journal local (keep %s, overwrite the shared "
		    "copy) "
		    "or --prefer-journal shared (take the shared copy, lose the local steps)",
		    s->shared_path_.c_str(), static_cast<long long>(sg), local_path.c_str(),
		    static_cast<long long>(lg), local_path.c_str()));
	if (sg > lg || (prefer == Prefer::Shared && sg != lg)) {
		Status r = local.value()->restore_from(s->shared_path_);
		if (!r.ok())
			return r;
		log_info("%s: imported %s (generation %lld; the local journal had %lld)%s%s",
		         local_path.c_str(), s->shared_path_.c_str(), static_cast<long long>(sg),
		         static_cast<long long>(lg), taken.empty() ? "" : ", left by ",
		         taken.c_str());
	} else if (sg < lg) {
		s->lagging_ = true; // --prefer-journal local: overwritten at follow()
	}
	return s;
}

Status SharedJournal::follow(Db &db)
{
	lease_->keep_renewed();
	db.on_commit([this](Db &d) {
		Status st = publish(d);
		if (st.ok())
			return;
		log_error("%s", st.message().c_str());
		if (lease_->lost()) {
			log_error(
			    "%s: another admin host drives this journal now; stopping (exit %d)",
			    local_path_.c_str(), kExitLeaseLost);
			_exit(kExitLeaseLost);
		}
	});
	if (!lagging_)
		return Status::Ok();
	Status st = publish(db);
	if (st.ok())
		lagging_ = false;
	return st;
}

Status SharedJournal::publish(Db &db)
{
	// One export at a time on this host, each of the journal as it is then:
	// a later export never puts an older copy in place.
	FileLock one(lock_dir_ + "/" + name_ + ".export.lock", true);
	if (!one.held())
		return errno_error(lock_dir_ + "/" + name_ + ".export.lock", "cannot lock");
	int64_t now = static_cast<int64_t>(time(nullptr));
	Status st = lease_->renew(now);
	if (!st.ok())
		return st;
	auto gen = db.generation();
	if (!gen.ok())
		return gen.status();
	int64_t next = gen.value() + 1;
	std::string snap = dir_name(local_path_) + "/." + name_ + ".export";
	st = db.snapshot_to(snap, next);
	auto bytes = st.ok() ? read_file(snap, 1ull << 40) : Result<std::string>(st);
	unlink(snap.c_str());
	unlink((snap + "-journal").c_str());
	if (!bytes.ok())
		return bytes.status();
	int dirfd = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0)
		return errno_error(dir_, "cannot open");
	std::string tmp = "." + name_ + ".tmp." + random_hex();
	st = write_new(dirfd, dir_, tmp, bytes.value(), 0600);
	if (st.ok() && renameat(dirfd, tmp.c_str(), dirfd, name_.c_str()) != 0) {
		st = errno_error(shared_path_, "cannot rename into place");
		unlinkat(dirfd, tmp.c_str(), 0);
	}
	if (st.ok() && fsync(dirfd) != 0)
		st = errno_error(dir_, "cannot sync");
	close(dirfd);
	if (!st.ok())
		return st;
	// The local journal follows: equal generations mean the shared copy
	// holds every step of the local journal up to its export.
	return db.set_generation(next);
}

SharedJournal::~SharedJournal()
{
	if (lease_ && users_ && users_->try_exclusive()) {
		Status st = lease_->release();
		if (!st.ok())
			log_warn("%s", st.message().c_str());
	}
}

} // namespace db
} // namespace onramp
