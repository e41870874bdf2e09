#include "migrate/manifest.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <memory>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <unordered_set>

#include <openssl/evp.h>

#include "admit/record.hpp"
#include "atomic_file.hpp"
#include "log.hpp"
#include "number.hpp"

namespace onramp {
namespace ckpt {

const char *const kFormat = "onramp-checkpoint/1";
const char *const kManifestName = "manifest.json";

namespace {

std::string iso_utc(int64_t ms)
{
	time_t t = static_cast<time_t>(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	char buf[32];
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

int64_t now_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
	           std::chrono::system_clock::now().time_since_epoch())
	    .count();
}

bool is_hex64(const std::string &s)
{
	if (s.size() != 64)
		return false;
	for (char c : s)
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	return true;
}

unsigned pick_threads(unsigned threads, size_t jobs)
{
	if (threads == 0)
		threads = std::max(1u, std::thread::hardware_concurrency());
	return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(threads, jobs)));
}

// Run fn(i) for i in [0, n) on up to threads threads. Nothing leaves a
// worker thread (an exception there is std::terminate, inside slurmstepd
// when spank/onramp verifies): false when some fn(i) threw.
template <typename Fn> bool parallel_for(size_t n, unsigned threads, Fn fn)
{
	unsigned t = pick_threads(threads, n);
	std::atomic<size_t> next{0};
	std::atomic<bool> threw{false};
	auto worker = [&]() {
		for (size_t i; (i = next.fetch_add(1)) < n;) {
			try {
				fn(i);
			} catch (...) {
				threw = true;
			}
		}
	};
	if (t <= 1) {
		worker();
		return !threw;
	}
	std::vector<std::thread> pool;
	for (unsigned k = 0; k < t; k++) {
		try {
			pool.emplace_back(worker);
		} catch (...) { // no thread to be had: the others (or we) do the work
			break;
		}
	}
	if (pool.empty())
		worker();
	for (auto &th : pool)
		th.join();
	return !threw;
}

// fn(i) with every exception turned into an error value: nothing may leave a
// worker thread (std::terminate inside slurmstepd otherwise).
template <typename Fn> std::string guarded(Fn fn)
{
	try {
		return fn();
	} catch (const std::exception &e) {
		return std::string("internal error: ") + e.what();
	} catch (...) {
		return "internal error";
	}
}

// An owned file descriptor.
class Fd {
public:
	explicit Fd(int fd = -1) : fd_(fd) {}
	~Fd()
	{
		if (fd_ >= 0)
			close(fd_);
	}
	Fd(Fd &&o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
	Fd &operator=(Fd &&o) noexcept
	{
		std::swap(fd_, o.fd_);
		return *this;
	}
	Fd(const Fd &) = delete;
	Fd &operator=(const Fd &) = delete;
	int get() const { return fd_; }

private:
	int fd_;
};

// Whose files these are: any owner, or exactly uid.
struct Owner {
	bool check = false;
	uid_t uid = 0;
};

// fstat the fd just opened as what and check it is a directory (dir) or a
// regular file, owned by o.
Status check_fd(int fd, const std::string &what, bool dir, const Owner &o, struct stat *sb)
{
	if (fstat(fd, sb) != 0)
		return Status::Error(strprintf("%s: %s", what.c_str(), strerror(errno)));
	if (dir ? !S_ISDIR(sb->st_mode) : !S_ISREG(sb->st_mode))
		return Status::Error(what +
		                     (dir ? " is not a directory" : " is not a regular file"));
	if (o.check && sb->st_uid != o.uid)
		return Status::Error(strprintf("%s is owned by uid %u, not by uid %u", what.c_str(),
		                               static_cast<unsigned>(sb->st_uid),
		                               static_cast<unsigned>(o.uid)));
	return Status::Ok();
}

// Why openat(at, name, O_NOFOLLOW...) failed (errno), for what.
Status open_error(const std::string &what, int at, const char *name)
{
	int err = errno;
	struct stat sb;
	if (err == ELOOP || (err == ENOTDIR && fstatat(at, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
	                     S_ISLNK(sb.st_mode)))
		return Status::Error(what + " is a symlink (a checkpoint holds regular files and "
		                            "directories only)");
	if (err == ENOTDIR)
		return Status::Error(what + " is not a directory");
	return Status::Error(strprintf("%s: %s", what.c_str(), strerror(err)));
}

// Open rel (checked lexically) beneath dirfd one component at a time, never
// following a symlink nor blocking; every component is checked on its own fd.
Result<Fd> open_beneath(int dirfd, const std::string &rel, bool dir, const Owner &o,
                        struct stat *sb)
{
	Status lex = check_relative_path(rel);
	if (!lex.ok())
		return lex;
	Fd cur;
	int at = dirfd;
	size_t start = 0;
	for (;;) {
		size_t slash = rel.find('/', start);
		bool last = slash == std::string::npos;
		std::string comp = rel.substr(start, last ? std::string::npos : slash - start);
		std::string what = "'" + rel.substr(0, last ? std::string::npos : slash) + "'";
		bool want_dir = !last || dir;
		int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
		            (want_dir ? O_DIRECTORY : O_NOCTTY);
		Fd next(openat(at, comp.c_str(), flags));
		if (next.get() < 0)
			return open_error(what, at, comp.c_str());
		Status st = check_fd(next.get(), what, want_dir, o, sb);
		if (!st.ok())
			return st;
		cur = std::move(next);
		at = cur.get();
		if (last)
			return cur;
		start = slash + 1;
	}
}

// The shared limits of one verification: bytes left and a deadline.
struct Budget {
	std::atomic<int64_t> bytes_left{INT64_MAX};
	int64_t deadline_ms = INT64_MAX;
};

// SHA-256 of fd, read from its current offset to the end. With a budget,
// reading stops with an error once more than expect bytes were read (expect
// + 1 is read to see the file grew), the budget is spent, or the deadline
// has passed.
Status hash_fd(int fd, const std::string &what, Budget *budget, uint64_t expect, std::string *hex,
               uint64_t *size)
{
#ifdef POSIX_FADV_SEQUENTIAL
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
	std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX *)> md(EVP_MD_CTX_new(), EVP_MD_CTX_free);
	if (!md || !EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr))
		return Status::Error(what + ": SHA-256 failed");
	std::vector<unsigned char> buf(1 << 20);
	uint64_t total = 0;
	for (;;) {
		size_t want = buf.size();
		if (budget) {
			if (now_ms() > budget->deadline_ms)
				return Status::Error(what + ": verification deadline passed "
				                            "(CheckpointVerifyTimeout)");
			if (total > expect)
				return Status::Error(strprintf(
				    "%s: grew past the size the manifest says (%llu)", what.c_str(),
				    static_cast<unsigned long long>(expect)));
			want = static_cast<size_t>(std::min<uint64_t>(want, expect - total + 1));
			if (budget->bytes_left.fetch_sub(static_cast<int64_t>(want)) <
			    static_cast<int64_t>(want))
				return Status::Error(what + ": verification byte budget spent "
				                            "(CheckpointVerifyMaxGiB)");
		}
		ssize_t n = read(fd, buf.data(), want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return Status::Error(
			    strprintf("%s: read: %s", what.c_str(), strerror(errno)));
		}
		if (n == 0)
			break;
		total += static_cast<uint64_t>(n);
		if (!EVP_DigestUpdate(md.get(), buf.data(), static_cast<size_t>(n)))
			return Status::Error(what + ": SHA-256 failed");
	}
	unsigned char out[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	if (!EVP_DigestFinal_ex(md.get(), out, &len))
		return Status::Error(what + ": SHA-256 failed");
	static const char digits[] = "0123456789abcdef";
	hex->clear();
	for (unsigned i = 0; i < len; i++) {
		hex->push_back(digits[out[i] >> 4]);
		hex->push_back(digits[out[i] & 15]);
	}
	*size = total;
	return Status::Ok();
}

// The whole of a small file from its fd (at most max bytes).
Result<std::string> read_fd(int fd, const std::string &what, size_t max)
{
	std::string out;
	char buf[65536];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return Status::Error(
			    strprintf("%s: read: %s", what.c_str(), strerror(errno)));
		if (n == 0)
			return out;
		out.append(buf, static_cast<size_t>(n));
		if (out.size() > max)
			return Status::Error(
			    strprintf("%s: larger than %zu bytes", what.c_str(), max));
	}
}

const size_t kMaxManifestBytes = 16u << 20;

// A small JSON file (manifest.json, resumed.json) of dirfd, opened as the
// shards are and owned by o.
Result<Json> load_json_at(int dirfd, const std::string &name, const std::string &path,
                          const Owner &o)
{
	struct stat sb;
	Fd fd(
	    openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
	if (fd.get() < 0)
		return open_error(path, dirfd, name.c_str());
	Status st = check_fd(fd.get(), path, false, o, &sb);
	if (!st.ok())
		return st;
	if (static_cast<uint64_t>(sb.st_size) > kMaxManifestBytes)
		return Status::Error(
		    strprintf("%s: larger than %zu bytes", path.c_str(), kMaxManifestBytes));
	auto text = read_fd(fd.get(), path, kMaxManifestBytes);
	if (!text.ok())
		return text.status();
	return json_parse(text.value(), path);
}

// The checkpoint directory itself (symlinks on its way are the user's
// choice: root only ever opens it from a child running as the user).
Result<Fd> open_top(const std::string &dir)
{
	Fd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC));
	if (fd.get() < 0)
		return Status::Error(strprintf("%s: %s", dir.c_str(), strerror(errno)));
	return fd;
}

// The manifest of generation in j (read from path), validated.
Result<Manifest> manifest_of(const json_t *j, uint64_t generation, const std::string &path)
{
	auto m = Manifest::from_json(j, path);
	if (!m.ok())
		return m.status();
	if (m->generation != generation)
		return Status::Error(
		    strprintf("%s: generation: %llu does not match its directory %llu",
		              path.c_str(), static_cast<unsigned long long>(m->generation),
		              static_cast<unsigned long long>(generation)));
	return m;
}

// <dir>/<generation> opened, and its manifest read. o: the owner required
// of everything; unchecked, the generation directory's owner becomes it.
Result<Manifest> open_generation(const std::string &dir, uint64_t generation, Owner *o, Fd *gfd)
{
	auto top = open_top(dir);
	if (!top.ok())
		return top.status();
	std::string gname = std::to_string(generation);
	std::string gpath = generation_dir(dir, generation);
	Fd g(openat(top->get(), gname.c_str(),
	            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
	if (g.get() < 0)
		return open_error(gpath, top->get(), gname.c_str());
	struct stat sb;
	Status st = check_fd(g.get(), gpath, true, *o, &sb);
	if (!st.ok())
		return st;
	if (!o->check) {
		o->check = true;
		o->uid = sb.st_uid;
	}
	std::string path = manifest_path(dir, generation);
	auto j = load_json_at(g.get(), kManifestName, path, *o);
	if (!j.ok())
		return j.status();
	auto m = manifest_of(j.value().get(), generation, path);
	if (!m.ok())
		return m.status();
	*gfd = std::move(g);
	return m;
}

const char *const kResumedName = "resumed.json";

// The owner lim requires: its uid, else whoever owns what is opened first.
Owner owner_of(const VerifyLimits &lim)
{
	Owner o;
	if (lim.uid >= 0) {
		o.check = true;
		o.uid = static_cast<uid_t>(lim.uid);
	}
	return o;
}

// The numeric subdirectories of the directory open as topfd, newest first.
Status generation_names(int topfd, const std::string &dir, std::vector<uint64_t> *out)
{
	int dfd = fcntl(topfd, F_DUPFD_CLOEXEC, 0);
	DIR *d = dfd < 0 ? nullptr : fdopendir(dfd);
	if (!d) {
		Status st = Status::Error(strprintf("%s: %s", dir.c_str(), strerror(errno)));
		if (dfd >= 0)
			close(dfd);
		return st;
	}
	for (;;) {
		errno = 0;
		struct dirent *e = readdir(d);
		if (!e) {
			int err = errno;
			closedir(d);
			if (err)
				return Status::Error(
				    strprintf("%s: readdir: %s", dir.c_str(), strerror(err)));
			break;
		}
		const char *n = e->d_name;
		if (!*n || strlen(n) > 18 || strspn(n, "0123456789") != strlen(n))
			continue;
		struct stat sb;
		if (fstatat(topfd, n, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode))
			out->push_back(strtoull(n, nullptr, 10));
	}
	std::sort(out->rbegin(), out->rend());
	return Status::Ok();
}

// scan() in this process: the newest kMaxScanned generations and whether
// each has a manifest (looked for beneath the generation directory opened
// without following a symlink); none when dir does not exist.
Result<std::vector<Generation>> scan_here(const std::string &dir)
{
	std::vector<Generation> out;
	Fd top(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC));
	if (top.get() < 0) {
		if (errno == ENOENT)
			return out;
		return Status::Error(strprintf("%s: %s", dir.c_str(), strerror(errno)));
	}
	std::vector<uint64_t> gens;
	Status st = generation_names(top.get(), dir, &gens);
	if (!st.ok())
		return st;
	if (gens.size() > kMaxScanned)
		gens.resize(kMaxScanned);
	for (uint64_t n : gens) {
		Fd g(openat(top.get(), std::to_string(n).c_str(),
		            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
		if (g.get() < 0)
			continue; // gone or replaced meanwhile: not a generation
		struct stat sb;
		Generation x;
		x.number = n;
		x.committed = fstatat(g.get(), kManifestName, &sb, AT_SYMLINK_NOFOLLOW) == 0;
		out.push_back(x);
	}
	return out;
}

Json generations_to_json(const std::vector<Generation> &gens)
{
	Json arr = Json::array();
	for (const auto &g : gens) {
		Json o = Json::object();
		o.set("generation", static_cast<int64_t>(g.number));
		o.set_bool("committed", g.committed);
		arr.push(o);
	}
	Json j = Json::object();
	j.set("generations", arr);
	return j;
}

// A listing as scan() returns it: at most kMaxScanned generations, newest
// first, each once.
Result<std::vector<Generation>> generations_from_json(const json_t *j, const std::string &origin)
{
	JsonReader r(origin);
	std::vector<Generation> out;
	if (!r.expect_object(j, ""))
		return r.status();
	r.only_keys(j, "", {"generations"});
	const json_t *arr = r.arr(j, "", "generations");
	if (arr && json_array_size(arr) > kMaxScanned)
		r.error("generations", strprintf("lists more than %zu", kMaxScanned));
	for (size_t i = 0; arr && i < json_array_size(arr) && !r.failed(); i++) {
		std::string p = JsonReader::index("generations", i);
		const json_t *o = json_array_get(arr, i);
		if (!r.expect_object(o, p))
			break;
		r.only_keys(o, p, {"generation", "committed"});
		int64_t n = r.integer(o, p, "generation");
		Generation g;
		g.committed = r.boolean_or(o, p, "committed", false);
		if (r.failed())
			break;
		if (n < 0 || (!out.empty() && static_cast<uint64_t>(n) >= out.back().number))
			r.error(JsonReader::join(p, "generation"),
			        "is negative or not below the one before");
		g.number = static_cast<uint64_t>(n);
		out.push_back(g);
	}
	if (r.failed())
		return r.status();
	return out;
}

Json resumed_to_json(const Resumed &r)
{
	Json j = Json::object();
	j.set("generation", static_cast<int64_t>(r.generation));
	j.set("step", r.step);
	j.set("restart_count", r.restart_count);
	j.set("time_ms", r.time_ms);
	return j;
}

Result<Resumed> resumed_from_json(const json_t *j, const std::string &origin)
{
	JsonReader r(origin);
	Resumed out;
	if (!r.expect_object(j, ""))
		return r.status();
	int64_t gen = r.integer(j, "", "generation");
	if (!r.failed() && gen < 0)
		r.error("generation", "must not be negative");
	out.generation = static_cast<uint64_t>(gen);
	out.step = r.integer(j, "", "step");
	out.restart_count = r.integer_or(j, "", "restart_count", 0);
	out.time_ms = r.integer_or(j, "", "time_ms", 0);
	if (r.failed())
		return r.status();
	return out;
}

// What a look reads (see LookAt), for its errors.
enum class LookAt { List, Manifest, Resumed };
const char *const kLookNames[] = {"list", "manifest", "resumed"};

std::string look_path(LookAt what, const std::string &dir, uint64_t generation)
{
	switch (what) {
	case LookAt::List:
		return dir;
	case LookAt::Manifest:
		return manifest_path(dir, generation);
	case LookAt::Resumed:
		break;
	}
	return dir + "/" + kResumedName;
}

// One look in this process, files owned by o (unchecked: by the generation
// directory's owner for a manifest, dir's for resumed.json): the answer as
// JSON text, already validated.
Result<std::string> look_here(LookAt what, const std::string &dir, uint64_t generation, Owner o)
{
	std::string path = look_path(what, dir, generation);
	if (what == LookAt::List) {
		auto g = scan_here(dir);
		if (!g.ok())
			return g.status();
		return generations_to_json(g.value()).dump();
	}
	if (what == LookAt::Manifest) {
		Fd gfd;
		auto m = open_generation(dir, generation, &o, &gfd);
		if (!m.ok())
			return m.status();
		return m->to_json().dump();
	}
	auto top = open_top(dir);
	if (!top.ok())
		return top.status();
	struct stat sb;
	if (!o.check && fstat(top->get(), &sb) == 0) {
		o.check = true;
		o.uid = sb.st_uid;
	}
	auto j = load_json_at(top->get(), kResumedName, path, o);
	if (!j.ok())
		return j.status();
	auto r = resumed_from_json(j->get(), path);
	if (!r.ok())
		return r.status();
	return resumed_to_json(r.value()).dump();
}

} // namespace

Json Manifest::to_json() const
{
	Json j = Json::object();
	j.set("format", kFormat);
	j.set("generation", static_cast<int64_t>(generation));
	j.set("step", step);
	j.set("time", time);
	j.set("time_ms", time_ms);
	Json arr = Json::array();
	for (const auto &s : shards) {
		Json o = Json::object();
		o.set("path", s.path);
		o.set("size", static_cast<int64_t>(s.size));
		o.set("sha256", s.sha256);
		arr.push(o);
	}
	j.set("shards", arr);
	return j;
}

Result<Manifest> Manifest::from_json(const json_t *j, const std::string &origin)
{
	JsonReader r(origin);
	Manifest m;
	if (!r.expect_object(j, ""))
		return r.status();
	r.only_keys(j, "", {"format", "generation", "step", "time", "time_ms", "shards"});
	std::string fmt = r.str(j, "", "format");
	if (!r.failed() && fmt != kFormat)
		r.error("format", "'" + fmt + "' is not " + kFormat);
	int64_t gen = r.integer(j, "", "generation");
	if (!r.failed() && gen < 0)
		r.error("generation", "must not be negative");
	m.generation = static_cast<uint64_t>(gen);
	m.step = r.integer(j, "", "step");
	if (!r.failed() && m.step < 0)
		r.error("step", "must not be negative");
	m.time = r.str(j, "", "time");
	m.time_ms = r.integer(j, "", "time_ms");
	const json_t *arr = r.arr(j, "", "shards");
	if (arr) {
		std::unordered_set<std::string> seen;
		for (size_t i = 0; i < json_array_size(arr) && !r.failed(); i++) {
			std::string p = JsonReader::index("shards", i);
			const json_t *o = json_array_get(arr, i);
			if (!r.expect_object(o, p))
				break;
			r.only_keys(o, p, {"path", "size", "sha256"});
			Shard s;
			s.path = r.str(o, p, "path");
			int64_t size = r.integer(o, p, "size");
			s.sha256 = r.str(o, p, "sha256");
			if (r.failed())
				break;
			Status ps = check_relative_path(s.path);
			if (!ps.ok())
				r.error(JsonReader::join(p, "path"), ps.message());
			else if (size < 0)
				r.error(JsonReader::join(p, "size"), "must not be negative");
			else if (!is_hex64(s.sha256))
				r.error(JsonReader::join(p, "sha256"),
				        "is not 64 lower-case hex digits");
			s.size = static_cast<uint64_t>(size);
			if (!seen.insert(s.path).second)
				r.error(JsonReader::join(p, "path"),
				        "'" + s.path + "' is listed twice");
			m.shards.push_back(std::move(s));
		}
		if (!r.failed() && m.shards.empty())
			r.error("shards", "is empty (a checkpoint has at least one shard)");
	}
	if (!r.failed() && m.time_ms < 0)
		r.error("time_ms", "must not be negative");
	if (!r.failed()) {
		// The one spelling commit writes: iso_time(time_ms / 1000).
		long long t = admit::parse_iso_time(m.time);
		if (t < 0 || admit::iso_time(t) != m.time)
			r.error("time", "'" + m.time + "' is not a UTC time YYYY-MM-DDTHH:MM:SSZ");
		else if (t != m.time_ms / 1000)
			r.error("time",
			        "'" + m.time + "' is not time_ms " + std::to_string(m.time_ms));
	}
	if (r.failed())
		return r.status();
	return m;
}

std::string generation_dir(const std::string &dir, uint64_t generation)
{
	return dir + "/" + std::to_string(generation);
}

std::string manifest_path(const std::string &dir, uint64_t generation)
{
	return generation_dir(dir, generation) + "/" + kManifestName;
}

Status check_relative_path(const std::string &rel)
{
	if (rel.empty())
		return Status::Error("empty path");
	if (rel[0] == '/')
		return Status::Error("'" + rel + "' is absolute (shard paths are relative)");
	size_t start = 0;
	while (start <= rel.size()) {
		size_t slash = rel.find('/', start);
		std::string comp = rel.substr(start, slash == std::string::npos ? std::string::npos
		                                                                : slash - start);
		if (comp.empty() || comp == ".")
			return Status::Error("'" + rel + "' has an empty or '.' component");
		if (comp == "..")
			return Status::Error("'" + rel +
			                     "' leaves the checkpoint directory ('..')");
		if (slash == std::string::npos)
			break;
		start = slash + 1;
	}
	if (rel == kManifestName)
		return Status::Error("'" + rel + "' is the manifest itself");
	for (char c : rel)
		if (static_cast<unsigned char>(c) < 0x20)
			return Status::Error("'" + rel + "' contains a control character");
	return Status::Ok();
}

Result<std::string> shard_file(const std::string &dir, uint64_t generation, const std::string &rel)
{
	auto top = open_top(generation_dir(dir, generation));
	if (!top.ok())
		return top.status();
	struct stat sb;
	auto fd = open_beneath(top->get(), rel, false, Owner(), &sb);
	if (!fd.ok())
		return fd.status();
	return generation_dir(dir, generation) + "/" + rel;
}

Status sha256_file(const std::string &path, std::string *hex, uint64_t *size)
{
	Fd fd(open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
	if (fd.get() < 0)
		return Status::Error(strprintf("%s: %s", path.c_str(), strerror(errno)));
	struct stat sb;
	Status st = check_fd(fd.get(), path, false, Owner(), &sb);
	if (!st.ok())
		return st;
	return hash_fd(fd.get(), path, nullptr, 0, hex, size);
}

std::vector<uint64_t> list_generations(const std::string &dir)
{
	std::vector<uint64_t> out;
	auto top = open_top(dir);
	if (top.ok())
		(void)generation_names(top->get(), dir, &out);
	return out;
}

uint64_t next_generation(const std::string &dir)
{
	auto g = list_generations(dir);
	return g.empty() ? 1 : g.front() + 1;
}

Result<Manifest> commit(const std::string &dir, uint64_t generation, int64_t step,
                        const std::vector<std::string> &shards, unsigned threads)
{
	if (step < 0)
		return Status::Error("commit: step must not be negative");
	if (shards.empty())
		return Status::Error("commit: no shards");
	Manifest m;
	m.generation = generation;
	m.step = step;
	m.shards.resize(shards.size());
	std::unordered_set<std::string> seen;
	for (size_t i = 0; i < shards.size(); i++) {
		if (!seen.insert(shards[i]).second)
			return Status::Error("commit: shard '" + shards[i] + "' given twice");
		m.shards[i].path = shards[i];
	}
	auto top = open_top(generation_dir(dir, generation));
	if (!top.ok())
		return Status::Error("commit: " + top.status().message());
	std::vector<std::string> errs(shards.size());
	bool ran = parallel_for(shards.size(), threads, [&](size_t i) {
		errs[i] = guarded([&]() -> std::string {
			struct stat sb;
			auto fd = open_beneath(top->get(), shards[i], false, Owner(), &sb);
			if (!fd.ok())
				return fd.status().message();
			Status st = hash_fd(fd->get(), "'" + shards[i] + "'", nullptr, 0,
			                    &m.shards[i].sha256, &m.shards[i].size);
			if (!st.ok())
				return st.message();
			// The shard's data must be durable before the manifest names it.
			(void)fsync(fd->get());
			return "";
		});
	});
	if (!ran)
		return Status::Error("commit: internal error while hashing");
	for (size_t i = 0; i < errs.size(); i++)
		if (!errs[i].empty())
			return Status::Error("commit: shard " + shards[i] + ": " + errs[i]);
	m.time_ms = now_ms();
	m.time = iso_utc(m.time_ms);
	Status st =
	    write_file_atomic(manifest_path(dir, generation), m.to_json().dump(true) + "\n");
	if (!st.ok())
		return Status::Error("commit: " + st.message());
	(void)fsync_dir(dir);
	return m;
}

namespace {

// Verify in this process: the manifest, the budget, then every shard opened
// beneath the generation directory and hashed from the fd that was checked.
Result<Manifest> verify_here(const std::string &dir, uint64_t generation, const VerifyLimits &lim,
                             unsigned threads)
{
	Budget budget;
	budget.deadline_ms = lim.timeout_ms > 0 ? now_ms() + lim.timeout_ms : INT64_MAX;
	Owner o = owner_of(lim);
	Fd gfd;
	auto m = open_generation(dir, generation, &o, &gfd);
	if (!m.ok())
		return m.status();
	const Manifest &man = m.value();
	uint64_t total = 0;
	for (const auto &s : man.shards)
		total = s.size > UINT64_MAX - total ? UINT64_MAX : total + s.size;
	if (total > lim.max_bytes)
		return Status::Error(
		    strprintf("generation %llu: its shards total %llu bytes, more than the %llu a "
		              "verification may read (CheckpointVerifyMaxGiB)",
		              static_cast<unsigned long long>(generation),
		              static_cast<unsigned long long>(total),
		              static_cast<unsigned long long>(lim.max_bytes)));
	budget.bytes_left = static_cast<int64_t>(std::min<uint64_t>(lim.max_bytes, INT64_MAX));
	std::vector<std::string> errs(man.shards.size());
	bool ran = parallel_for(man.shards.size(), threads, [&](size_t i) {
		errs[i] = guarded([&]() -> std::string {
			const Shard &s = man.shards[i];
			struct stat sb;
			auto fd = open_beneath(gfd.get(), s.path, false, o, &sb);
			if (!fd.ok())
				return fd.status().message();
			if (static_cast<uint64_t>(sb.st_size) != s.size)
				return strprintf("size %lld, manifest says %llu",
				                 static_cast<long long>(sb.st_size),
				                 static_cast<unsigned long long>(s.size));
			std::string hex;
			uint64_t size = 0;
			Status st =
			    hash_fd(fd->get(), "'" + s.path + "'", &budget, s.size, &hex, &size);
			if (!st.ok())
				return st.message();
			if (size != s.size)
				return strprintf("size %llu, manifest says %llu",
				                 static_cast<unsigned long long>(size),
				                 static_cast<unsigned long long>(s.size));
			if (hex != s.sha256)
				return "SHA-256 mismatch (" + hex + ", manifest says " + s.sha256 +
				       ")";
			return "";
		});
	});
	if (!ran)
		return Status::Error(strprintf("generation %llu: internal error while hashing",
		                               static_cast<unsigned long long>(generation)));
	for (size_t i = 0; i < errs.size(); i++)
		if (!errs[i].empty())
			return Status::Error(strprintf("generation %llu: shard %s: %s",
			                               static_cast<unsigned long long>(generation),
			                               man.shards[i].path.c_str(),
			                               errs[i].c_str()));
	return m;
}

// Whose privileges a root look takes: lim's uid, else the owner of gpath
// (the generation directory, or the checkpoint directory; lstat: a symlink
// is refused later anyway).
Status pick_user(const std::string &gpath, const VerifyLimits &lim, uid_t *uid,
                 std::vector<gid_t> *groups)
{
	struct stat sb;
	if (lim.uid >= 0) {
		*uid = static_cast<uid_t>(lim.uid);
	} else {
		if (lstat(gpath.c_str(), &sb) != 0)
			return Status::Error(strprintf("%s: %s", gpath.c_str(), strerror(errno)));
		*uid = sb.st_uid;
	}
	groups->clear();
	struct passwd pw, *res = nullptr;
	std::vector<char> buf(16384);
	if (getpwuid_r(*uid, &pw, buf.data(), buf.size(), &res) == 0 && res) {
		gid_t primary = lim.gid >= 0 ? static_cast<gid_t>(lim.gid) : pw.pw_gid;
		int n = 64;
		std::vector<gid_t> g(static_cast<size_t>(n));
		if (getgrouplist(pw.pw_name, primary, g.data(), &n) < 0) {
			g.resize(static_cast<size_t>(n));
			if (getgrouplist(pw.pw_name, primary, g.data(), &n) < 0)
				n = 0;
		}
		g.resize(static_cast<size_t>(std::max(n, 0)));
		groups->push_back(primary);
		for (gid_t x : g)
			if (x != primary)
				groups->push_back(x);
		return Status::Ok();
	}
	if (lim.gid >= 0) {
		groups->push_back(static_cast<gid_t>(lim.gid));
	} else {
		if (lstat(gpath.c_str(), &sb) != 0)
			return Status::Error(strprintf("%s: %s", gpath.c_str(), strerror(errno)));
		groups->push_back(sb.st_gid);
	}
	return Status::Ok();
}

#ifndef ONRAMP_BINDIR
#define ONRAMP_BINDIR "/usr/bin"
#endif

std::string g_verifier;

void write_all(int fd, const std::string &s)
{
	size_t off = 0;
	while (off < s.size()) {
		ssize_t n = write(fd, s.data() + off, s.size() - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		off += static_cast<size_t>(n);
	}
}

// The verifying program (see set_verifier).
std::string verifier_path()
{
	if (!g_verifier.empty())
		return g_verifier;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		std::string self(exe, static_cast<size_t>(n));
		std::string beside = self.substr(0, self.rfind('/') + 1) + "onramp-ckpt";
		if (access(beside.c_str(), X_OK) == 0)
			return beside;
	}
	return ONRAMP_BINDIR "/onramp-ckpt";
}

// Root: run the verifying program with args (after its name) in a child
// that becomes uid with groups, and read its answer ("O" + the payload or
// "E" + an error, at most max bytes) for at most timeout_ms (0: no limit).
// The payload, or the error (what names the work); *late when the deadline
// passed (the child is killed).
Result<std::string> run_as_user(const std::vector<std::string> &args, uid_t uid,
                                const std::vector<gid_t> &groups, int64_t timeout_ms, size_t max,
                                const std::string &what, bool *late)
{
	// Everything the child needs is built before the fork: from fork to
	// execve it makes system calls only (no malloc, no locks, no libc
	// wrapper that coordinates threads).
	std::string prog = verifier_path();
	std::vector<std::string> all = {prog};
	all.insert(all.end(), args.begin(), args.end());
	std::vector<char *> argv;
	for (auto &a : all)
		argv.push_back(&a[0]);
	argv.push_back(nullptr);
	char env0[] = "PATH=/usr/bin:/bin";
	char env1[] = "LC_ALL=C";
	char *envp[] = {env0, env1, nullptr};
	gid_t gid = groups[0];
	*late = false;
	// Opened as root: the user needs to be able to run the program, not to
	// reach it (a build tree under a private directory, say).
	Fd exe(open(prog.c_str(), O_RDONLY | O_CLOEXEC));
	if (exe.get() < 0)
		return Status::Error(
		    strprintf("%s: %s: %s", what.c_str(), prog.c_str(), strerror(errno)));
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		return Status::Error(strprintf("%s: pipe: %s", what.c_str(), strerror(errno)));
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return Status::Error(strprintf("%s: fork: %s", what.c_str(), strerror(errno)));
	}
	if (pid == 0) {
		// Groups, gid, uid, for good (the real and saved ids too).
		if (dup2(p[1], STDOUT_FILENO) < 0 ||
		    syscall(SYS_setgroups, groups.size(), groups.data()) != 0 ||
		    syscall(SYS_setresgid, gid, gid, gid) != 0 ||
		    syscall(SYS_setresuid, uid, uid, uid) != 0 ||
		    prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
			_exit(126);
		fexecve(exe.get(), argv.data(), envp);
		_exit(127);
	}
	close(p[1]);
	Fd rd(p[0]);
	int64_t deadline = timeout_ms > 0 ? now_ms() + timeout_ms : INT64_MAX;
	std::string out;
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			*late = true;
			break;
		}
		struct pollfd pfd = {rd.get(), POLLIN, 0};
		int r = poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left, 60000)));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		char buf[65536];
		ssize_t n = read(rd.get(), buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		out.append(buf, static_cast<size_t>(n));
		if (out.size() > max) {
			out = "E" + what + ": the child's answer is too large";
			break;
		}
	}
	(void)kill(pid, SIGKILL);
	while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
	}
	if (*late)
		return Status::Error(what + ": no answer in time");
	if (out.empty())
		return Status::Error(what + ": the child (" + prog + " " + args[0] + ", as uid " +
		                     std::to_string(uid) + ") ended without an answer");
	if (out[0] != 'O')
		return Status::Error(out.substr(1));
	return out.substr(1);
}

// Root: verify in a child that becomes the user and runs verify_child_main
// in a fresh program, under the deadline.
Result<Manifest> verify_as_user(const std::string &dir, uint64_t generation,
                                const VerifyLimits &lim, unsigned threads, uid_t uid,
                                const std::vector<gid_t> &groups)
{
	bool late = false;
	auto out = run_as_user({"verify-child", dir, std::to_string(generation),
	                        std::to_string(lim.max_bytes), std::to_string(lim.timeout_ms),
	                        std::to_string(threads), std::to_string(uid)},
	                       uid, groups, lim.timeout_ms > 0 ? lim.timeout_ms + 5000 : 0,
	                       2 * kMaxManifestBytes, "verify", &late);
	if (late)
		return Status::Error(strprintf("generation %llu: verification deadline passed "
		                               "(CheckpointVerifyTimeout)",
		                               static_cast<unsigned long long>(generation)));
	if (!out.ok())
		return out.status();
	auto j = json_parse(out.value(), manifest_path(dir, generation));
	if (!j.ok())
		return j.status();
	return Manifest::from_json(j.value().get(), manifest_path(dir, generation));
}

// One look as lim's user: in this process, or as root in a child that
// became him (onramp-ckpt look-child) within lim.look_timeout_ms. The
// answer's JSON, to be validated again.
Result<Json> look(LookAt what, const std::string &dir, uint64_t generation, const VerifyLimits &lim)
{
	std::string path = look_path(what, dir, generation);
	uid_t uid = 0;
	std::vector<gid_t> groups;
	if (geteuid() == 0) {
		Status st =
		    pick_user(what == LookAt::Manifest ? generation_dir(dir, generation) : dir, lim,
		              &uid, &groups);
		if (!st.ok())
			return st;
	}
	Result<std::string> text = Status::Error("");
	if (uid == 0) {
		text = look_here(what, dir, generation, owner_of(lim));
	} else {
		bool late = false;
		text = run_as_user({"look-child", kLookNames[static_cast<int>(what)], dir,
		                    std::to_string(generation), std::to_string(uid)},
		                   uid, groups, lim.look_timeout_ms, 2 * kMaxManifestBytes, path,
		                   &late);
		if (late)
			return Status::Error(strprintf("%s: no answer within %lld ms from the "
			                               "child that reads it as uid %u (a "
			                               "stalled file system?)",
			                               path.c_str(),
			                               static_cast<long long>(lim.look_timeout_ms),
			                               static_cast<unsigned>(uid)));
	}
	if (!text.ok())
		return text.status();
	return json_parse(text.value(), path);
}

// A child's answer on stdout: a usage error, an error when this process is
// not uid only, else fn's ("O" + payload or "E" + error).
template <typename Fn>
int child_answer(const char *cmd, const char *usage, bool ok, uid_t uid, Fn fn)
{
	std::string out;
	if (!ok) {
		out = strprintf("E%s: usage: %s", cmd, usage);
	} else if (getuid() != uid || geteuid() != uid || (uid != 0 && setuid(0) == 0)) {
		out = strprintf("E%s: not running as uid %u only", cmd, static_cast<unsigned>(uid));
	} else {
		out = guarded(fn);
		if (out.empty() || (out[0] != 'O' && out[0] != 'E'))
			out = "E" + out;
	}
	write_all(STDOUT_FILENO, out);
	return 0;
}

} // namespace

void set_verifier(const std::string &path)
{
	g_verifier = path;
}

int verify_child_main(const std::vector<std::string> &args)
{
	std::vector<Result<int64_t>> n;
	for (size_t i = 1; i < args.size(); i++)
		n.push_back(parse_int(args[i], 0, i == 4 ? 1024 : i == 5 ? UINT32_MAX : INT64_MAX));
	bool ok = args.size() == 6 &&
	          std::all_of(n.begin(), n.end(), [](const Result<int64_t> &r) { return r.ok(); });
	uid_t uid = ok ? static_cast<uid_t>(n[4].value()) : 0;
	return child_answer(
	    "verify-child", "DIR GENERATION MAX_BYTES TIMEOUT_MS THREADS UID", ok, uid,
	    [&]() -> std::string {
		    VerifyLimits l;
		    l.max_bytes = static_cast<uint64_t>(n[1].value());
		    l.timeout_ms = n[2].value();
		    l.uid = static_cast<int64_t>(uid);
		    auto r = verify_here(args[0], static_cast<uint64_t>(n[0].value()), l,
		                         static_cast<unsigned>(n[3].value()));
		    return r.ok() ? "O" + r->to_json().dump() : "E" + r.status().message();
	    });
}

int look_child_main(const std::vector<std::string> &args)
{
	int what = -1;
	for (int i = 0; args.size() == 4 && i < 3; i++)
		if (args[0] == kLookNames[i])
			what = i;
	auto gen = parse_int(args.size() == 4 ? args[2] : "", 0, INT64_MAX);
	auto uid = parse_int(args.size() == 4 ? args[3] : "", 0, UINT32_MAX);
	bool ok = what >= 0 && gen.ok() && uid.ok();
	return child_answer("look-child", "list|manifest|resumed DIR GENERATION UID", ok,
	                    ok ? static_cast<uid_t>(uid.value()) : 0, [&]() -> std::string {
		                    Owner o;
		                    o.check = true;
		                    o.uid = static_cast<uid_t>(uid.value());
		                    auto r = look_here(static_cast<LookAt>(what), args[1],
		                                       static_cast<uint64_t>(gen.value()), o);
		                    return r.ok() ? "O" + r.value() : "E" + r.status().message();
	                    });
}

Result<std::vector<Generation>> scan(const std::string &dir, const VerifyLimits &lim)
{
	auto j = look(LookAt::List, dir, 0, lim);
	if (!j.ok())
		return j.status();
	return generations_from_json(j->get(), dir);
}

Result<Manifest> read_manifest(const std::string &dir, uint64_t generation, const VerifyLimits &lim)
{
	auto j = look(LookAt::Manifest, dir, generation, lim);
	if (!j.ok())
		return j.status();
	return manifest_of(j->get(), generation, manifest_path(dir, generation));
}

VerifyLimits verify_limits(const Config &cfg)
{
	VerifyLimits l;
	l.max_bytes = static_cast<uint64_t>(cfg.integer("CheckpointVerifyMaxGiB")) << 30;
	l.timeout_ms = cfg.seconds("CheckpointVerifyTimeout") * 1000;
	l.look_timeout_ms = std::min(kLookTimeoutMs, l.timeout_ms);
	return l;
}

Result<Manifest> verify(const std::string &dir, uint64_t generation, unsigned threads)
{
	return verify(dir, generation, VerifyLimits(), threads);
}

Result<Manifest> verify(const std::string &dir, uint64_t generation, const VerifyLimits &lim,
                        unsigned threads)
{
	if (geteuid() != 0)
		return verify_here(dir, generation, lim, threads);
	uid_t uid = 0;
	std::vector<gid_t> groups;
	Status st = pick_user(generation_dir(dir, generation), lim, &uid, &groups);
	if (!st.ok())
		return st;
	if (uid == 0)
		return verify_here(dir, generation, lim, threads);
	return verify_as_user(dir, generation, lim, threads, uid, groups);
}

Result<Manifest> latest(const std::string &dir, std::vector<std::string> *skipped, unsigned threads)
{
	return latest(dir, VerifyLimits(), skipped, threads);
}

Result<Manifest> latest(const std::string &dir, const VerifyLimits &lim,
                        std::vector<std::string> *skipped, unsigned threads)
{
	// One deadline for the whole walk, and at most kLatestMaxTried
	// committed generations verified: N torn generations used to cost N
	// full budgets (N hours) of a migration's time.
	const int64_t deadline = lim.timeout_ms > 0 ? now_ms() + lim.timeout_ms : INT64_MAX;
	VerifyLimits scan_lim = lim;
	if (lim.timeout_ms > 0 &&
	    (lim.look_timeout_ms <= 0 || lim.look_timeout_ms > lim.timeout_ms))
		scan_lim.look_timeout_ms = lim.timeout_ms;
	auto gens = scan(dir, scan_lim);
	if (!gens.ok())
		return Status::Error("no verified checkpoint generation: " +
		                     gens.status().message());
	int tried = 0;
	for (const Generation &x : gens.value()) {
		uint64_t g = x.number;
		if (!x.committed)
			continue; // not committed (yet)
		if (tried == kLatestMaxTried)
			return Status::Error(strprintf(
			    "%s: no verified checkpoint generation among the newest %d committed "
			    "ones (older generations are not tried)",
			    dir.c_str(), kLatestMaxTried));
		VerifyLimits left = lim;
		if (lim.timeout_ms > 0) {
			left.timeout_ms = deadline - now_ms();
			if (left.timeout_ms <= 0)
				return Status::Error(strprintf(
				    "%s: no verified checkpoint generation within %lld s "
				    "(generation "
				    "%llu and older not tried)",
				    dir.c_str(), static_cast<long long>(lim.timeout_ms / 1000),
				    static_cast<unsigned long long>(g)));
		}
		tried++;
		auto m = verify(dir, g, left, threads);
		if (m.ok())
			return m;
		if (skipped)
			skipped->push_back(m.status().message());
	}
	return Status::Error(dir + ": no verified checkpoint generation");
}

namespace {

Status remove_tree(const std::string &path)
{
	struct stat sb;
	if (lstat(path.c_str(), &sb) != 0)
		return Status::Error(strprintf("%s: %s", path.c_str(), strerror(errno)));
	if (S_ISDIR(sb.st_mode)) {
		DIR *d = opendir(path.c_str());
		if (!d)
			return Status::Error(strprintf("%s: %s", path.c_str(), strerror(errno)));
		std::vector<std::string> names;
		while (struct dirent *e = readdir(d))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				names.push_back(e->d_name);
		closedir(d);
		for (const auto &n : names) {
			Status st = remove_tree(path + "/" + n);
			if (!st.ok())
				return st;
		}
		if (rmdir(path.c_str()) != 0)
			return Status::Error(strprintf("%s: %s", path.c_str(), strerror(errno)));
		return Status::Ok();
	}
	if (unlink(path.c_str()) != 0)
		return Status::Error(strprintf("%s: %s", path.c_str(), strerror(errno)));
	return Status::Ok();
}

} // namespace

Result<std::vector<uint64_t>> prune(const std::string &dir, int64_t keep_seconds, int64_t now_ms,
                                    unsigned threads)
{
	auto newest = latest(dir, nullptr, threads);
	std::vector<uint64_t> removed;
	if (!newest.ok())
		return removed; // nothing verified: keep everything
	int64_t cutoff = now_ms - keep_seconds * 1000;
	for (uint64_t g : list_generations(dir)) {
		if (g >= newest->generation)
			continue;
		std::string gdir = generation_dir(dir, g);
		struct stat sb;
		if (lstat(gdir.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode))
			continue;
		int64_t t = static_cast<int64_t>(sb.st_mtime) * 1000;
		auto m = read_manifest(dir, g);
		if (m.ok())
			t = m->time_ms;
		if (t >= cutoff)
			continue;
		Status st = remove_tree(gdir);
		if (!st.ok())
			return st;
		removed.push_back(g);
	}
	if (!removed.empty())
		(void)fsync_dir(dir);
	return removed;
}

Status mark_resumed(const std::string &dir, const Resumed &r)
{
	Resumed out = r;
	if (!out.time_ms)
		out.time_ms = now_ms();
	return write_file_atomic(dir + "/" + kResumedName, resumed_to_json(out).dump() + "\n");
}

Result<Resumed> read_resumed(const std::string &dir, const VerifyLimits &lim)
{
	auto j = look(LookAt::Resumed, dir, 0, lim);
	if (!j.ok())
		return j.status();
	return resumed_from_json(j->get(), look_path(LookAt::Resumed, dir, 0));
}

Status split_manifest_path(const std::string &path, std::string *dir, uint64_t *generation)
{
	std::string p = path;
	std::string suffix = std::string("/") + kManifestName;
	if (p.size() <= suffix.size() || p.compare(p.size() - suffix.size(), suffix.size(), suffix))
		return Status::Error("'" + path + "' does not end in /" + kManifestName);
	p.resize(p.size() - suffix.size());
	size_t slash = p.rfind('/');
	std::string g = slash == std::string::npos ? p : p.substr(slash + 1);
	if (g.empty() || g.size() > 18 || g.find_first_not_of("0123456789") != std::string::npos)
		return Status::Error("'" + path + "': '" + g + "' is not a generation number");
	*generation = strtoull(g.c_str(), nullptr, 10);
	*dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : p.substr(0, slash));
	return Status::Ok();
}

} // namespace ckpt
} // namespace onramp
