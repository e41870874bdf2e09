// The checkpoint protocol (onramp-checkpoint(7)).
//
// A job checkpoints into <dir>/<generation>/ (generation: a decimal number,
// larger is newer): it writes its shards there, then commits the generation
// by writing <dir>/<generation>/manifest.json crash-safely (temp file, fsync,
// rename, fsync dir). A generation without a manifest does not exist; one
// whose manifest fails verification is never used.
//
// manifest.json:
//   {"format": "onramp-checkpoint/1", "generation": 7, "step": 1200,
//    "time": "2026-01-01T12:00:00Z", "time_ms": 1767268800000,
//    "shards": [{"path": "model.bin", "size": 4096, "sha256": "<hex>"}]}
// Shard paths are relative to the generation directory; absolute paths,
// empty, "." or ".." components are refused. The generation directory, the
// manifest, every shard and every directory on a shard's way must be what
// it says, never a symlink: regular files and directories, all owned by one
// user (the job's).
//
// Root reads these files on the user's behalf (onramp-migrate). Every file
// is opened relative to a directory fd, component by component, with
// O_NOFOLLOW|O_NONBLOCK, checked with fstat on that same fd (type, owner,
// size) and read from it; run as root, every look into the directory
// (scan, read_manifest, read_resumed, verify, latest) happens in a child
// that has dropped to the user's uid, gid and groups before it opens
// anything, under a deadline (and, to verify, a byte budget: VerifyLimits);
// root parses only the child's bounded answer and validates it again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config.hpp"
#include "json.hpp"
#include "status.hpp"

namespace onramp {
namespace ckpt {

extern const char *const kFormat;       // "onramp-checkpoint/1"
extern const char *const kManifestName; // "manifest.json"

struct Shard {
	std::string path; // relative to the generation directory
	uint64_t size = 0;
	std::string sha256; // lower-case hex
};

struct Manifest {
	uint64_t generation = 0;
	int64_t step = 0;
	std::string time;    // ISO 8601 UTC
	int64_t time_ms = 0; // commit time, ms since the epoch
	std::vector<Shard> shards;

	Json to_json() const;
	// Validates every field; errors name origin and the field
	// ("manifest.json: shards[1].sha256: ...").
	static Result<Manifest> from_json(const json_t *j, const std::string &origin);
};

// The default deadline of one look into a user's directory (30 s).
constexpr int64_t kLookTimeoutMs = 30 * 1000;

// What a verification may cost, and whose files it reads.
struct VerifyLimits {
	// Total bytes the manifest may name (and be read); onramp.conf
	// CheckpointVerifyMaxGiB.
	uint64_t max_bytes = 4096ull << 30;
	// Wall-clock limit of the whole verification; onramp.conf
	// CheckpointVerifyTimeout.
	int64_t timeout_ms = 3600 * 1000;
	// The job's user: every file must be his and, when run as root, is read
	// with his privileges. -1: the owner of the generation directory.
	int64_t uid = -1;
	// -1: the user's primary group (the directory's group when the user has
	// no passwd entry).
	int64_t gid = -1;
	// Wall-clock limit of one look that reads no shard (scan, read_manifest,
	// read_resumed): a user's stalled file system (autofs, NFS, FUSE) costs
	// root at most this. As root only (the child is killed); 0: none.
	int64_t look_timeout_ms = kLookTimeoutMs;
};
// The budget and deadline from onramp.conf (uid and gid left at -1; a
// look's deadline no longer than a verification's).
VerifyLimits verify_limits(const Config &cfg);

// "<dir>/<generation>".
std::string generation_dir(const std::string &dir, uint64_t generation);
// "<dir>/<generation>/manifest.json".
std::string manifest_path(const std::string &dir, uint64_t generation);

// Is rel an acceptable shard path (lexically)? The error says why.
Status check_relative_path(const std::string &rel);
// The shard's full path, after the lexical check and a walk from dir that
// finds only directories and a regular file, no symlink. Never open the
// returned path as root: the walk and the open are not one operation.
Result<std::string> shard_file(const std::string &dir, uint64_t generation, const std::string &rel);

// Lower-case hex SHA-256 and size of a file (OpenSSL EVP, streamed).
Status sha256_file(const std::string &path, std::string *hex, uint64_t *size);

// Generations present under dir (numeric subdirectories), newest first,
// whether committed or not. In this process, unbounded: the job's own view
// of its directory (commit, prune); root looks with scan().
std::vector<uint64_t> list_generations(const std::string &dir);
// A generation found by scan(): its number, and whether its manifest exists
// (lstat: committed, not yet verified).
struct Generation {
	uint64_t number = 0;
	bool committed = false;
};
// At most this many generations, the newest, come back from scan().
constexpr size_t kMaxScanned = 1024;
// list_generations() with each one's commit, read as lim's user (see
// VerifyLimits::uid; -1: dir's owner): as root in a child that became him,
// within lim.look_timeout_ms. A missing dir holds none; a dir the user
// cannot read, that is no directory or that does not answer in time is an
// error naming it.
Result<std::vector<Generation>> scan(const std::string &dir, const VerifyLimits &lim);
// One more than the largest generation present (1 when none).
uint64_t next_generation(const std::string &dir);

// Hash the given shards of <dir>/<generation>/ (threads in parallel; 0:
// one per core) and commit the generation by writing its manifest
// crash-safely. REQUIRES: the shards are complete and will not change.
Result<Manifest> commit(const std::string &dir, uint64_t generation, int64_t step,
                        const std::vector<std::string> &shards, unsigned threads = 0);

// Read <dir>/<generation>/manifest.json and check every shard's size and
// SHA-256 (threads in parallel; 0: one per core). The error names the
// first bad shard ("shard model.bin: SHA-256 mismatch ...").
// With default VerifyLimits.
Result<Manifest> verify(const std::string &dir, uint64_t generation, unsigned threads = 0);
// Under lim: the sizes the manifest names must fit lim.max_bytes, the whole
// verification must end within lim.timeout_ms, and every file must belong
// to the user (see VerifyLimits::uid). As root, the hashing runs in a child
// process with the user's privileges.
Result<Manifest> verify(const std::string &dir, uint64_t generation, const VerifyLimits &lim,
                        unsigned threads = 0);
// As root, the child becomes the user and runs a fresh program, onramp-ckpt
// verify-child (never library code in a forked copy of the caller: a
// caller's other thread may hold one of libc's locks at the fork, which the
// copy would then wait on forever). The program: set_verifier()'s, else
// onramp-ckpt beside the running program, else the installed one.
void set_verifier(const std::string &path);
// onramp-ckpt's "verify-child DIR GENERATION MAX_BYTES TIMEOUT_MS THREADS
// UID" (argv after the command): verify as this unprivileged process and
// write "O" + the manifest's JSON or "E" + the error to stdout. Returns the
// exit status.
int verify_child_main(const std::vector<std::string> &args);
// onramp-ckpt's "look-child list|manifest|resumed DIR GENERATION UID": one
// look of scan(), read_manifest() or read_resumed() as this unprivileged
// process; writes "O" + the answer's JSON or "E" + the error to stdout.
// Returns the exit status.
int look_child_main(const std::vector<std::string> &args);
// Read and validate the manifest only (no hashing): opened without following
// a symlink or blocking, a regular file of at most 16 MiB owned by lim's
// user (-1: the owner of its generation directory), read as him within
// lim.look_timeout_ms (see scan()).
Result<Manifest> read_manifest(const std::string &dir, uint64_t generation,
                               const VerifyLimits &lim = VerifyLimits());

// The newest generation that verifies. Generations that fail are skipped
// and, when skipped is given, their errors are appended to it. An error
// when none verifies. With limits, the timeout bounds the whole walk (each
// generation gets what is left), and at most kLatestMaxTried committed
// generations are verified.
constexpr int kLatestMaxTried = 4;
Result<Manifest> latest(const std::string &dir, std::vector<std::string> *skipped = nullptr,
                        unsigned threads = 0);
// The same, each generation verified under lim.
Result<Manifest> latest(const std::string &dir, const VerifyLimits &lim,
                        std::vector<std::string> *skipped = nullptr, unsigned threads = 0);

// Retention (RollbackWindow): remove generations whose manifest is older
// than keep_seconds before now_ms, and uncommitted or unreadable ones whose
// directory is that old, but never the newest generation that verifies nor
// anything newer than it. Symlinks are never followed. Returns the removed
// generations. Meant for the job itself (onramp-ckpt prune), never for root
// in a user's directory.
Result<std::vector<uint64_t>> prune(const std::string &dir, int64_t keep_seconds, int64_t now_ms,
                                    unsigned threads = 0);

// A resumed job states which generation it resumed from: <dir>/resumed.json
// {"generation": G, "step": S, "restart_count": N, "time_ms": T}, written
// crash-safely. onrampctl migrate confirms a migration with it.
struct Resumed {
	uint64_t generation = 0;
	int64_t step = 0;
	int64_t restart_count = 0;
	int64_t time_ms = 0;
};
Status mark_resumed(const std::string &dir, const Resumed &r);
// Read as read_manifest() reads a manifest (no symlink, no FIFO, bounded, as
// lim's user within lim.look_timeout_ms, owned by him; -1: by the owner of
// dir).
Result<Resumed> read_resumed(const std::string &dir, const VerifyLimits &lim = VerifyLimits());
// Resolve a manifest path ("<dir>/<generation>/manifest.json") into dir
// and generation.
Status split_manifest_path(const std::string &path, std::string *dir, uint64_t *generation);

} // namespace ckpt
} // namespace onramp
