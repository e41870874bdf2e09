// The one JSON layer (jansson underneath). Json owns a reference; JsonReader
// reads typed fields and remembers the first error with the file and the
// field's path ("gpus[2].uuid"), so bad input is reported precisely.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <jansson.h>

#include "status.hpp"

namespace onramp {

class Json {
public:
	Json() = default;
	// Takes ownership of one reference.
	static Json adopt(json_t *j)
	{
		Json r;
		r.j_ = j;
		return r;
	}
	static Json object() { return adopt(json_object()); }
	static Json array() { return adopt(json_array()); }
	// An array of strings.
	static Json array(const std::vector<std::string> &items);
	Json(const Json &o) : j_(json_incref(o.j_)) {}
	Json(Json &&o) noexcept : j_(o.j_) { o.j_ = nullptr; }
	Json &operator=(Json o)
	{
		std::swap(j_, o.j_);
		return *this;
	}
	~Json() { json_decref(j_); }

	json_t *get() const { return j_; }
	explicit operator bool() const { return j_ != nullptr; }

	// Object setters (no-ops on non-objects).
	Json &set(const char *key, Json v);
	Json &set(const char *key, const std::string &v);
	Json &set(const char *key, const char *v);
	Json &set(const char *key, double v);
	Json &set(const char *key, int64_t v);
	Json &set(const char *key, int v) { return set(key, static_cast<int64_t>(v)); }
	Json &set_bool(const char *key, bool v);
	Json &set_null(const char *key);
	// Array append.
	Json &push(Json v);
	Json &push(const std::string &v);

	// Compact (one line) or indented text; keys in insertion order.
	std::string dump(bool pretty = false) const;

private:
	json_t *j_ = nullptr;
};

// Parse text; errors name origin, line and column.
Result<Json> json_parse(const std::string &text, const std::string &origin);
// Read and parse a file (file I/O).
Result<Json> json_load_file(const std::string &path);

class JsonReader {
public:
	explicit JsonReader(std::string origin) : origin_(std::move(origin)) {}

	bool failed() const { return !status_.ok(); }
	const Status &status() const { return status_; }
	// Record an error about field path (first one wins).
	void error(const std::string &path, const std::string &msg);

	// Typed access to obj[key]; path is obj's own path ("" for the root).
	// Missing required fields and wrong types are recorded as errors and a
	// zero value returned; optional fields return def when missing.
	std::string str(const json_t *obj, const std::string &path, const char *key);
	std::string str_or(const json_t *obj, const std::string &path, const char *key,
	                   const std::string &def);
	double num(const json_t *obj, const std::string &path, const char *key);
	double num_or(const json_t *obj, const std::string &path, const char *key, double def);
	int64_t integer(const json_t *obj, const std::string &path, const char *key);
	int64_t integer_or(const json_t *obj, const std::string &path, const char *key,
	                   int64_t def);
	bool boolean_or(const json_t *obj, const std::string &path, const char *key, bool def);
	const json_t *obj(const json_t *obj, const std::string &path, const char *key,
	                  bool required = true);
	const json_t *arr(const json_t *obj, const std::string &path, const char *key,
	                  bool required = true);
	std::vector<std::string> str_list(const json_t *obj, const std::string &path,
	                                  const char *key, bool required = false);
	// Every key of obj must be one of known.
	void only_keys(const json_t *obj, const std::string &path,
	               std::initializer_list<const char *> known);
	// Requires the root to be an object.
	bool expect_object(const json_t *j, const std::string &path);

	static std::string join(const std::string &path, const char *key);
	static std::string index(const std::string &path, size_t i);

private:
	const json_t *field(const json_t *obj, const std::string &path, const char *key,
	                    bool required);
	std::string origin_;
	Status status_;
};

} // namespace onramp
