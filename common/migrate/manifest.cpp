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
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include <openssl/evp.h>

#include "atomic_file.hpp"
#include "log.hpp"

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

// Run fn(i) for i in [0, n) on up to threads threads.
template <typename Fn> void parallel_for(size_t n, unsigned threads, Fn fn)
{
	unsigned t = pick_threads(threads, n);
	std::atomic<size_t> next{0};
	auto worker = [&]() {
		for (size_t i; (i = next.fetch_add(1)) < n;)
			fn(i);
	};
	if (t <= 1) {
		worker();
		return;
	}
	std::vector<std::thread> pool;
	for (unsigned k = 0; k < t; k++)
		pool.emplace_back(worker);
	for (auto &th : pool)
		th.join();
}

Result<std::string> real_path(const std::string &p)
{
	char buf[PATH_MAX];
	if (!realpath(p.c_str(), buf))
		return Status::Error(strprintf("%s: %s", p.c_str(), strerror(errno)));
	return std::string(buf);
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
			for (const auto &o2 : m.shards)
				if (o2.path == s.path)
					r.error(JsonReader::join(p, "path"),
					        "'" + s.path + "' is listed twice");
			m.shards.push_back(std::move(s));
		}
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
	Status st = check_relative_path(rel);
	if (!st.ok())
		return st;
	std::string full = generation_dir(dir, generation) + "/" + rel;
	auto root = real_path(dir);
	if (!root.ok())
		return root.status();
	auto rp = real_path(full);
	if (!rp.ok())
		return rp.status();
	if (rp.value().compare(0, root.value().size() + 1, root.value() + "/") != 0)
		return Status::Error("'" + rel + "' resolves to " + rp.value() +
		                     ", outside the checkpoint directory " + root.value());
	struct stat sb;
	if (stat(rp.value().c_str(), &sb) != 0 || !S_ISREG(sb.st_mode))
		return Status::Error("'" + rel + "' is not a regular file");
	return full;
}

Status sha256_file(const std::string &path, std::string *hex, uint64_t *size)
{
	int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return Status::Error(strprintf("%s: %s", path.c_str(), strerror(errno)));
#ifdef POSIX_FADV_SEQUENTIAL
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	bool ok = md && EVP_DigestInit_ex(md, EVP_sha256(), nullptr);
	std::vector<unsigned char> buf(1 << 20);
	uint64_t total = 0;
	std::string err;
	while (ok) {
		ssize_t n = read(fd, buf.data(), buf.size());
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = strprintf("%s: read: %s", path.c_str(), strerror(errno));
			ok = false;
			break;
		}
		if (n == 0)
			break;
		total += static_cast<uint64_t>(n);
		ok = EVP_DigestUpdate(md, buf.data(), static_cast<size_t>(n));
	}
	unsigned char out[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	if (ok)
		ok = EVP_DigestFinal_ex(md, out, &len);
	EVP_MD_CTX_free(md);
	close(fd);
	if (!ok)
		return Status::Error(err.empty() ? path + ": SHA-256 failed" : err);
	static const char digits[] = "0123456789abcdef";
	hex->clear();
	for (unsigned i = 0; i < len; i++) {
		hex->push_back(digits[out[i] >> 4]);
		hex->push_back(digits[out[i] & 15]);
	}
	*size = total;
	return Status::Ok();
}

std::vector<uint64_t> list_generations(const std::string &dir)
{
	std::vector<uint64_t> out;
	DIR *d = opendir(dir.c_str());
	if (!d)
		return out;
	while (struct dirent *e = readdir(d)) {
		const char *n = e->d_name;
		if (!*n || strlen(n) > 18)
			continue;
		bool digits = true;
		for (const char *p = n; *p; p++)
			digits = digits && *p >= '0' && *p <= '9';
		if (!digits)
			continue;
		struct stat sb;
		if (stat((dir + "/" + n).c_str(), &sb) == 0 && S_ISDIR(sb.st_mode))
			out.push_back(strtoull(n, nullptr, 10));
	}
	closedir(d);
	std::sort(out.rbegin(), out.rend());
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
	std::vector<Status> errs(shards.size());
	for (size_t i = 0; i < shards.size(); i++) {
		for (size_t k = 0; k < i; k++)
			if (shards[k] == shards[i])
				return Status::Error("commit: shard '" + shards[i] +
				                     "' given twice");
		m.shards[i].path = shards[i];
	}
	parallel_for(shards.size(), threads, [&](size_t i) {
		auto f = shard_file(dir, generation, shards[i]);
		if (!f.ok()) {
			errs[i] = Status::Error("shard " + shards[i] + ": " + f.status().message());
			return;
		}
		errs[i] = sha256_file(f.value(), &m.shards[i].sha256, &m.shards[i].size);
	});
	for (const auto &e : errs)
		if (!e.ok())
			return Status::Error("commit: " + e.message());
	// The shards' data must be durable before the manifest names them.
	for (const auto &s : shards) {
		int fd =
		    open((generation_dir(dir, generation) + "/" + s).c_str(), O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			(void)fsync(fd);
			close(fd);
		}
	}
	m.time_ms = now_ms();
	m.time = iso_utc(m.time_ms);
	Status st =
	    write_file_atomic(manifest_path(dir, generation), m.to_json().dump(true) + "\n");
	if (!st.ok())
		return Status::Error("commit: " + st.message());
	(void)fsync_dir(dir);
	return m;
}

Result<Manifest> read_manifest(const std::string &dir, uint64_t generation)
{
	std::string path = manifest_path(dir, generation);
	auto j = json_load_file(path);
	if (!j.ok())
		return j.status();
	auto m = Manifest::from_json(j.value().get(), path);
	if (!m.ok())
		return m.status();
	if (m->generation != generation)
		return Status::Error(
		    strprintf("%s: generation: %llu does not match its directory %llu",
		              path.c_str(), static_cast<unsigned long long>(m->generation),
		              static_cast<unsigned long long>(generation)));
	return m;
}

Result<Manifest> verify(const std::string &dir, uint64_t generation, unsigned threads)
{
	auto m = read_manifest(dir, generation);
	if (!m.ok())
		return m.status();
	const Manifest &man = m.value();
	std::vector<std::string> errs(man.shards.size());
	parallel_for(man.shards.size(), threads, [&](size_t i) {
		const Shard &s = man.shards[i];
		auto f = shard_file(dir, generation, s.path);
		if (!f.ok()) {
			errs[i] = f.status().message();
			return;
		}
		struct stat sb;
		if (stat(f.value().c_str(), &sb) == 0 &&
		    static_cast<uint64_t>(sb.st_size) != s.size) {
			errs[i] = strprintf("size %lld, manifest says %llu",
			                    static_cast<long long>(sb.st_size),
			                    static_cast<unsigned long long>(s.size));
			return;
		}
		std::string hex;
		uint64_t size = 0;
		Status st = sha256_file(f.value(), &hex, &size);
		if (!st.ok())
			errs[i] = st.message();
		else if (size != s.size)
			errs[i] = strprintf("size %llu, manifest says %llu",
			                    static_cast<unsigned long long>(size),
			                    static_cast<unsigned long long>(s.size));
		else if (hex != s.sha256)
			errs[i] = "SHA-256 mismatch (" + hex + ", manifest says " + s.sha256 + ")";
	});
	for (size_t i = 0; i < errs.size(); i++)
		if (!errs[i].empty())
			return Status::Error(strprintf("generation %llu: shard %s: %s",
			                               static_cast<unsigned long long>(generation),
			                               man.shards[i].path.c_str(),
			                               errs[i].c_str()));
	return m;
}

Result<Manifest> latest(const std::string &dir, std::vector<std::string> *skipped, unsigned threads)
{
	auto gens = list_generations(dir);
	for (uint64_t g : gens) {
		struct stat sb;
		if (stat(manifest_path(dir, g).c_str(), &sb) != 0)
			continue; // not committed (yet)
		auto m = verify(dir, g, threads);
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
	Json j = Json::object();
	j.set("generation", static_cast<int64_t>(r.generation));
	j.set("step", r.step);
	j.set("restart_count", r.restart_count);
	j.set("time_ms", r.time_ms ? r.time_ms : now_ms());
	return write_file_atomic(dir + "/resumed.json", j.dump() + "\n");
}

Result<Resumed> read_resumed(const std::string &dir)
{
	std::string path = dir + "/resumed.json";
	auto j = json_load_file(path);
	if (!j.ok())
		return j.status();
	JsonReader r(path);
	Resumed out;
	if (!r.expect_object(j->get(), ""))
		return r.status();
	out.generation = static_cast<uint64_t>(r.integer(j->get(), "", "generation"));
	out.step = r.integer(j->get(), "", "step");
	out.restart_count = r.integer_or(j->get(), "", "restart_count", 0);
	out.time_ms = r.integer_or(j->get(), "", "time_ms", 0);
	if (r.failed())
		return r.status();
	return out;
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
