// onramp.conf: Slurm-style "Key=Value" configuration.
//
// Grammar (as slurm.conf): one or more Key=Value pairs per line separated by
// blanks; '#' starts a comment outside quotes; values containing blanks are
// double-quoted; keys are case-insensitive. Every key must be known to the
// schema below, may appear once, and its value is checked against its type.
// Every error names the file, the line and the key.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "status.hpp"

namespace onramp {

enum class KeyType { String, Path, Int, Double, Bool, Enum, Duration, Feature };

struct KeySpec {
	const char *name; // canonical spelling, e.g. "GpuBackend"
	KeyType type;
	const char *def;     // default value as text, or nullptr for "unset"
	const char *choices; // Enum: "real|sim"
	double min, max;     // Int/Double/Duration(seconds) bounds
	const char *help;    // one line for onramp.conf(5) and --help
};

// The schema of onramp.conf, in documentation order.
const std::vector<KeySpec> &config_schema();
const KeySpec *config_key(const std::string &name); // case-insensitive

// Where tools find onramp.conf: $ONRAMP_CONF, else onramp.conf beside
// $SLURM_CONF, else /etc/slurm/onramp.conf (Slurm's plugins use the
// directory of slurm.conf the same way).
std::string default_conf_path();

// Configless nodes (slurmd --conf-server) get the files slurmctld ships
// (slurm.conf, plugstack.conf, topology.conf, ...) in their conf cache, never
// onramp.conf. onramp's settings travel inside plugstack.conf as lines
// "#onramp.conf|Key=Value" (comments to spank): when onramp.conf does not
// exist, Config::load reads those lines of plugstack.conf beside it.
constexpr const char *kConfEmbedPrefix = "#onramp.conf|";

// Expand %n in a per-node path template.
std::string expand_node(const std::string &tmpl, const std::string &node);

// Split one line of a Slurm-style file (onramp.conf, topology.conf) into
// Key=Value tokens: blanks separate, double quotes group, '#' outside quotes
// ends the line. Error: an unterminated quote.
Status tokenize_conf_line(const std::string &line, std::vector<std::string> &out);

// The next line of text from *pos, its end (LF, CRLF or a lone CR: every
// kind an editor writes) removed; false at the end. An empty text has no
// line; a text ending in a line end has no empty line after it.
bool next_conf_line(const std::string &text, size_t *pos, std::string *line);

// Parse "90", "90s", "15m", "2h", "1d" into seconds.
Result<int64_t> parse_duration(const std::string &text);

class Config {
public:
	// Load and validate a file (file I/O).
	// When path does not exist, the lines embedded in plugstack.conf beside
	// it (kConfEmbedPrefix); errors then name plugstack.conf and its line.
	static Result<Config> load(const std::string &path);
	// Whether load(path) finds settings at all (the file, or an embedded
	// block): false means onramp runs on a node that was never given them.
	static bool findable(const std::string &path);
	// Parse text; origin names the source in error messages.
	static Result<Config> parse(const std::string &text, const std::string &origin);

	// Effective values (the default when not set). REQUIRES: key in schema.
	std::string str(const std::string &key) const;
	int64_t integer(const std::string &key) const;
	double number(const std::string &key) const;
	bool boolean(const std::string &key) const;
	int64_t seconds(const std::string &key) const;
	bool is_set(const std::string &key) const;
	// Whether the file set any key at all (blank and comment lines only: no).
	bool any_set() const { return !values_.empty(); }
	// Line where key was set (0 when defaulted).
	int line_of(const std::string &key) const;
	// "Key (origin:line)" for messages about the value of key, e.g. a path
	// that cannot be read ("Key (origin, default)" when not set).
	std::string where(const std::string &key) const;
	const std::string &origin() const { return origin_; }

private:
	struct Entry {
		std::string value;
		int line;
	};
	std::string origin_;
	std::map<std::string, Entry> values_; // canonical key -> entry
};

} // namespace onramp
