// The admission record: a node's own, crash-safe statement that it passed
// (or failed) admission for one boot and one baseline. It lives at
// <NodeStateDir>/admission.json (%n in NodeStateDir expands to the node
// name) and is the source of truth for the node_features plugin and the
// prolog: admitted iff the record says PASS for the current boot id and the
// current baseline file's digest.
//
// Everything here is plain small-file I/O: no network, no Slurm calls, no
// hashing of a file whose (path, mtime, size, inode) were hashed before.
#pragma once

#include <string>
#include <sys/types.h>

#include "config.hpp"
#include "json.hpp"
#include "status.hpp"

namespace onramp {
namespace admit {

// <NodeStateDir with %n (onramp::expand_node)>/admission.json.
std::string record_path(const Config &cfg, const std::string &node);
// <NodeStateDir with %n>/verdicts: one verdict.<JOBID>.json per admission
// run (written by onramp-admission-job from onramp-admit's stdout).
std::string verdicts_dir(const Config &cfg, const std::string &node);

// Records and verdicts hold the node's hardware inventory (serials, MACs,
// UUIDs): readable by their writer (root or SlurmUser) and by the group of
// NodeStateDir (SlurmUser's), never by every account.
constexpr mode_t kRecordMode = 0640;
// <BaselineDir>/<Sku>.json; an error when Sku is not set.
Result<std::string> baseline_path(const Config &cfg);

// The node's boot identity: BootIdFile (with %n) read and trimmed of
// whitespace; an error naming the file when unreadable or empty.
Result<std::string> read_boot_id(const Config &cfg, const std::string &node);

// Lower-case hex SHA-256 of a file's bytes (OpenSSL EVP). Cached per
// (path, mtime, size, inode), so an unchanged file is not read again.
// Thread-safe.
Result<std::string> file_digest(const std::string &path);
// Lower-case hex SHA-256 of bytes.
std::string sha256_hex(const std::string &bytes);

// The record's status values.
extern const char *const kRecordPass;
extern const char *const kRecordFail;
extern const char *const kRecordRevoked;
// Admission could not measure (INCONCLUSIVE_<CHECK>, PAIR_INCONCLUSIVE):
// not admitted, not failed; the node stays fenced in its reservation.
extern const char *const kRecordInconclusive;

struct Record {
	std::string node, boot_id, baseline_digest;
	std::string status; // kRecordPass, kRecordFail, kRecordRevoked or kRecordInconclusive
	std::string code, detail, time;
	Json verdict; // the onramp-admit verdict this record came from (object)

	Json to_json() const;
	// Parses and validates (unknown fields and bad status refused).
	static Result<Record> from_json(const json_t *j, const std::string &origin);
};

// Crash-safe write of record to path (creates the directory).
Status write_record(const std::string &path, const Record &rec);
// Reads a record. *missing is set when the file does not exist (and an
// error returned).
Result<Record> read_record(const std::string &path, bool *missing = nullptr);

// Rewrite the node's record with status (kRecordRevoked by default; the
// pair test downgrades with kRecordFail), code and detail; the previous
// verdict is kept. A missing record is created so the revocation sticks.
Status revoke_record(const Config &cfg, const std::string &node, const std::string &code,
                     const std::string &detail, const std::string &status = kRecordRevoked);

// Keep the newest VerdictsKept verdicts in verdicts_dir (mtime, then name)
// and the one the node's admission record holds (its verdict, compared as
// JSON); remove the older ones. Regular files named verdict.*.json only:
// other names and symlinks are left alone, never followed. Those kept that
// this account wrote lose the mode bits outside kRecordMode and take the
// directory's group, so SlurmUser can read root's. A verdict that cannot be
// read is kept. How many were removed, or why none could be.
Result<size_t> prune_verdicts(const Config &cfg, const std::string &node);

enum class Judgement { Admitted, NotAdmitted, BaselineChanged, Unknown };
// Is node admitted for its current boot and baseline? why says why
// ("no admission record", "boot changed since admission", "admission FAIL
// NCCL_BW_LOW: ...": NotAdmitted, a node never proven for this boot;
// "baseline changed since admission": BaselineChanged, admitted under a
// baseline an admin has since edited). Unknown (could not judge) when the
// boot id, baseline or record cannot be read. Callers treat every answer
// but Admitted as not admitted; node_features/onramp fences NotAdmitted
// nodes only (a baseline edit must not drain a fleet at once).
Judgement judge(const Config &cfg, const std::string &node, std::string *why);

// "onramp:<CODE>: <detail>" for Slurm's node reason: control characters
// become blanks, and the whole is cut to at most max_bytes bytes (never
// inside a UTF-8 sequence), ending in "..." when cut.
std::string reason_string(const std::string &code, const std::string &detail,
                          size_t max_bytes = 99);
// "2025-05-01T12:00:00Z" for t (seconds since the epoch, UTC).
std::string iso_time(long long t);
// The inverse: seconds since the epoch of "YYYY-MM-DDTHH:MM:SSZ"; -1 when
// malformed.
long long parse_iso_time(const std::string &iso);

// Cut s to at most max_bytes without splitting a UTF-8 sequence.
std::string utf8_truncate(const std::string &s, size_t max_bytes);

} // namespace admit
} // namespace onramp
