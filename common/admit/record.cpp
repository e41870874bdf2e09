#include "admit/record.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "atomic_file.hpp"
#include "log.hpp"
#include "onramp.h"

namespace onramp {
namespace admit {

const char *const kRecordPass = "PASS";
const char *const kRecordFail = "FAIL";
const char *const kRecordRevoked = "REVOKED";
const char *const kRecordInconclusive = "INCONCLUSIVE";

namespace {
// The most bytes a record (and so the verdict it holds) may have.
constexpr size_t kRecordMaxBytes = 4u << 20;
} // namespace

std::string record_path(const Config &cfg, const std::string &node)
{
	return expand_node(cfg.str("NodeStateDir"), node) + "/admission.json";
}

std::string verdicts_dir(const Config &cfg, const std::string &node)
{
	return expand_node(cfg.str("NodeStateDir"), node) + "/verdicts";
}

Result<std::string> baseline_path(const Config &cfg)
{
	if (!cfg.is_set("Sku"))
		return Status::Error(
		    cfg.origin() +
		    ": key 'Sku' is not set (the baseline is <BaselineDir>/<Sku>.json)");
	return cfg.str("BaselineDir") + "/" + cfg.str("Sku") + ".json";
}

static std::string trim(const std::string &s)
{
	size_t b = s.find_first_not_of(" \t\r\n");
	if (b == std::string::npos)
		return "";
	size_t e = s.find_last_not_of(" \t\r\n");
	return s.substr(b, e - b + 1);
}

Result<std::string> read_boot_id(const Config &cfg, const std::string &node)
{
	std::string path = expand_node(cfg.str("BootIdFile"), node);
	auto text = read_file(path, 4096);
	if (!text.ok())
		return Status::Error("boot id: " + text.status().message());
	std::string id = trim(text.value());
	if (id.empty())
		return Status::Error("boot id: " + path + " is empty");
	return id;
}

static std::string hex(const unsigned char *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	std::string s;
	s.reserve(n * 2);
	for (size_t i = 0; i < n; i++) {
		s += digits[p[i] >> 4];
		s += digits[p[i] & 15];
	}
	return s;
}

std::string sha256_hex(const std::string &bytes)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	if (!EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr))
		return "";
	return hex(md, len);
}

namespace {

struct DigestKey {
	dev_t dev;
	ino_t ino;
	off_t size;
	time_t mtime_s;
	long mtime_ns;
	bool operator==(const DigestKey &o) const
	{
		return dev == o.dev && ino == o.ino && size == o.size && mtime_s == o.mtime_s &&
		       mtime_ns == o.mtime_ns;
	}
};

std::mutex g_digest_mu;
std::map<std::string, std::pair<DigestKey, std::string>> g_digests;

} // namespace

Result<std::string> file_digest(const std::string &path)
{
	int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return Status::Error(strprintf("open %s: %s", path.c_str(), strerror(errno)));
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		Status st = Status::Error(strprintf("stat %s: %s", path.c_str(), strerror(errno)));
		close(fd);
		return st;
	}
	DigestKey key{sb.st_dev, sb.st_ino, sb.st_size, sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec};
	{
		std::lock_guard<std::mutex> g(g_digest_mu);
		auto it = g_digests.find(path);
		if (it != g_digests.end() && it->second.first == key) {
			close(fd);
			return it->second.second;
		}
	}
	if (!S_ISREG(sb.st_mode) || sb.st_size > (16 << 20)) {
		close(fd);
		return Status::Error(path + ": not a regular file of at most 16 MiB");
	}
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	bool ok = md && EVP_DigestInit_ex(md, EVP_sha256(), nullptr);
	char buf[65536];
	Status st;
	while (ok) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			st = Status::Error(strprintf("read %s: %s", path.c_str(), strerror(errno)));
			break;
		}
		if (n == 0)
			break;
		ok = EVP_DigestUpdate(md, buf, static_cast<size_t>(n));
	}
	unsigned char out[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	if (ok && st.ok())
		ok = EVP_DigestFinal_ex(md, out, &len);
	EVP_MD_CTX_free(md);
	close(fd);
	if (!st.ok())
		return st;
	if (!ok)
		return Status::Error(path + ": SHA-256 failed");
	std::string digest = hex(out, len);
	std::lock_guard<std::mutex> g(g_digest_mu);
	g_digests[path] = {key, digest};
	return digest;
}

Json Record::to_json() const
{
	Json j = Json::object();
	j.set("node", node).set("boot_id", boot_id).set("baseline_digest", baseline_digest);
	j.set("status", status).set("code", code).set("detail", detail).set("time", time);
	if (verdict)
		j.set("verdict", verdict);
	else
		j.set_null("verdict");
	return j;
}

Result<Record> Record::from_json(const json_t *j, const std::string &origin)
{
	JsonReader r(origin);
	Record rec;
	if (!r.expect_object(j, ""))
		return r.status();
	r.only_keys(
	    j, "",
	    {"node", "boot_id", "baseline_digest", "status", "code", "detail", "time", "verdict"});
	rec.node = r.str(j, "", "node");
	rec.boot_id = r.str(j, "", "boot_id");
	rec.baseline_digest = r.str(j, "", "baseline_digest");
	rec.status = r.str(j, "", "status");
	rec.code = r.str(j, "", "code");
	rec.detail = r.str_or(j, "", "detail", "");
	rec.time = r.str_or(j, "", "time", "");
	if (const json_t *v = r.obj(j, "", "verdict", false))
		rec.verdict = Json::adopt(json_incref(const_cast<json_t *>(v)));
	if (!r.failed() && rec.status != kRecordPass && rec.status != kRecordFail &&
	    rec.status != kRecordRevoked && rec.status != kRecordInconclusive)
		r.error("status",
		        "'" + rec.status + "' is not PASS, FAIL, REVOKED or INCONCLUSIVE");
	if (r.failed())
		return r.status();
	return rec;
}

Status write_record(const std::string &path, const Record &rec)
{
	// The record (its verdict) holds the node's hardware inventory:
	// serials, MACs, UUIDs. Readable by root and by SlurmUser through the
	// group of NodeStateDir (SlurmUser's), by no one else.
	size_t slash = path.rfind('/');
	if (slash != std::string::npos && slash > 0) {
		Status st = make_private_dir(path.substr(0, slash));
		if (!st.ok())
			return st;
	}
	return write_file_atomic(path, rec.to_json().dump(true) + "\n", kRecordMode,
	                         FileGroup::Directory);
}

Result<Record> read_record(const std::string &path, bool *missing)
{
	if (missing)
		*missing = false;
	auto text = read_file(path, kRecordMaxBytes);
	if (!text.ok()) {
		if (missing && access(path.c_str(), F_OK) != 0 && errno == ENOENT)
			*missing = true;
		return text.status();
	}
	auto j = json_parse(text.value(), path);
	if (!j.ok())
		return j.status();
	return Record::from_json(j->get(), path);
}

Result<size_t> prune_verdicts(const Config &cfg, const std::string &node)
{
	const std::string dir = verdicts_dir(cfg, node);
	Status st = make_private_dir(dir);
	if (!st.ok())
		return st;
	auto rec = read_record(record_path(cfg, node));
	const Json held = rec.ok() ? rec->verdict : Json();
	PruneSpec spec;
	spec.prefix = "verdict.";
	spec.suffix = ".json";
	spec.keep = static_cast<size_t>(cfg.integer("VerdictsKept"));
	spec.keep_mode = kRecordMode;
	spec.protect = [&](int dirfd, const std::string &name) {
		// Larger than a record may be (read_record): not the one it holds.
		struct stat sb;
		if (!held || fstatat(dirfd, name.c_str(), &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(sb.st_mode) || static_cast<uint64_t>(sb.st_size) > kRecordMaxBytes)
			return false;
		auto text = read_file_at(dirfd, name, dir + "/" + name, kRecordMaxBytes);
		if (!text.ok())
			return true; // cannot tell: kept
		auto j = json_parse(text.value(), dir + "/" + name);
		return j.ok() && json_equal(j->get(), held.get());
	};
	return prune_files(dir, spec);
}

Status revoke_record(const Config &cfg, const std::string &node, const std::string &code,
                     const std::string &detail, const std::string &status)
{
	std::string path = record_path(cfg, node);
	bool missing = false;
	auto old = read_record(path, &missing);
	Record rec;
	if (old.ok()) {
		rec = old.value();
	} else {
		if (!missing)
			log_warn("revoke %s: replacing unreadable record: %s", node.c_str(),
			         old.status().message().c_str());
		rec.node = node;
		auto boot = read_boot_id(cfg, node);
		rec.boot_id = boot.ok() ? boot.value() : "";
	}
	rec.status = status;
	rec.code = code;
	rec.detail = detail;
	rec.time = iso_time(time(nullptr));
	return write_record(path, rec);
}

Judgement judge(const Config &cfg, const std::string &node, std::string *why)
{
	auto say = [&](Judgement j, const std::string &s) {
		if (why)
			*why = s;
		return j;
	};
	std::string path = record_path(cfg, node);
	bool missing = false;
	auto rec = read_record(path, &missing);
	if (!rec.ok()) {
		if (missing)
			return say(Judgement::NotAdmitted, "no admission record");
		return say(Judgement::Unknown,
		           "unreadable admission record: " + rec.status().message());
	}
	if (rec->node != node)
		return say(Judgement::NotAdmitted,
		           "admission record " + path + " is for node " + rec->node);
	auto boot = read_boot_id(cfg, node);
	if (!boot.ok())
		return say(Judgement::Unknown, boot.status().message());
	if (boot.value() != rec->boot_id)
		return say(Judgement::NotAdmitted, "boot changed since admission");
	// A failed or revoked record is final whatever the baseline says.
	if (rec->status != kRecordPass)
		return say(Judgement::NotAdmitted,
		           "admission " + rec->status + " " + rec->code + ": " + rec->detail);
	auto bpath = baseline_path(cfg);
	if (!bpath.ok())
		return say(Judgement::Unknown, bpath.status().message());
	auto digest = file_digest(bpath.value());
	if (!digest.ok())
		return say(Judgement::Unknown, "baseline: " + digest.status().message());
	if (digest.value() != rec->baseline_digest)
		return say(Judgement::BaselineChanged, "baseline changed since admission");
	return say(Judgement::Admitted, "admitted");
}

std::string iso_time(long long t)
{
	time_t tt = static_cast<time_t>(t);
	struct tm tm;
	gmtime_r(&tt, &tm);
	char buf[32];
	strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

long long parse_iso_time(const std::string &iso)
{
	struct tm tm = {};
	const char *end = strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end)
		return -1;
	return static_cast<long long>(timegm(&tm));
}

std::string utf8_truncate(const std::string &s, size_t max_bytes)
{
	if (s.size() <= max_bytes)
		return s;
	size_t n = max_bytes;
	// Back up over continuation bytes (10xxxxxx) to a sequence start, then
	// drop that start too unless the whole sequence fits.
	while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80)
		n--;
	return s.substr(0, n);
}

std::string reason_string(const std::string &code, const std::string &detail, size_t max_bytes)
{
	std::string r = ONRAMP_REASON_PREFIX + code + ": " + detail;
	for (auto &c : r)
		if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
			c = ' ';
	if (r.size() <= max_bytes)
		return r;
	if (max_bytes < 3)
		return utf8_truncate(r, max_bytes);
	return utf8_truncate(r, max_bytes - 3) + "...";
}

} // namespace admit
} // namespace onramp
