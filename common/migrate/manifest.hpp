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
// empty, "." or ".." components are refused, and a shard (or a directory
// on its way) that is a symlink resolving outside <dir> is refused.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// "<dir>/<generation>".
std::string generation_dir(const std::string &dir, uint64_t generation);
// "<dir>/<generation>/manifest.json".
std::string manifest_path(const std::string &dir, uint64_t generation);

// Is rel an acceptable shard path (lexically)? The error says why.
Status check_relative_path(const std::string &rel);
// The shard's full path, after the lexical check and a check that the
// resolved path lies inside dir (symlinks pointing out are refused).
Result<std::string> shard_file(const std::string &dir, uint64_t generation, const std::string &rel);

// Lower-case hex SHA-256 and size of a file (OpenSSL EVP, streamed).
Status sha256_file(const std::string &path, std::string *hex, uint64_t *size);

// Generations present under dir (numeric subdirectories), newest first,
// whether committed or not.
std::vector<uint64_t> list_generations(const std::string &dir);
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
Result<Manifest> verify(const std::string &dir, uint64_t generation, unsigned threads = 0);
// Read and validate the manifest only (no hashing).
Result<Manifest> read_manifest(const std::string &dir, uint64_t generation);

// The newest generation that verifies. Generations that fail are skipped
// and, when skipped is given, their errors are appended to it. An error
// when none verifies.
Result<Manifest> latest(const std::string &dir, std::vector<std::string> *skipped = nullptr,
                        unsigned threads = 0);

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
Result<Resumed> read_resumed(const std::string &dir);
// Resolve a manifest path ("<dir>/<generation>/manifest.json") into dir
// and generation.
Status split_manifest_path(const std::string &path, std::string *dir, uint64_t *generation);

} // namespace ckpt
} // namespace onramp
