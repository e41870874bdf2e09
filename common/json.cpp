#include "json.hpp"

#include <cmath>
#include <cstdlib>

#include "atomic_file.hpp"
#include "log.hpp"

namespace onramp {

Json &Json::set(const char *key, Json v)
{
	if (json_is_object(j_))
		json_object_set(j_, key, v.get() ? v.get() : json_null());
	return *this;
}
Json &Json::set(const char *key, const std::string &v)
{
	return set(key, adopt(json_stringn(v.data(), v.size())));
}
Json &Json::set(const char *key, const char *v)
{
	return v ? set(key, std::string(v)) : set_null(key);
}
Json &Json::set(const char *key, double v)
{
	// JSON has no NaN/Inf: an unmeasurable value is null.
	return std::isfinite(v) ? set(key, adopt(json_real(v))) : set_null(key);
}
Json &Json::set(const char *key, int64_t v)
{
	return set(key, adopt(json_integer(v)));
}
Json &Json::set_bool(const char *key, bool v)
{
	return set(key, adopt(json_boolean(v)));
}
Json &Json::set_null(const char *key)
{
	return set(key, adopt(json_null()));
}
Json &Json::push(Json v)
{
	if (json_is_array(j_))
		json_array_append(j_, v.get() ? v.get() : json_null());
	return *this;
}
Json &Json::push(const std::string &v)
{
	return push(adopt(json_stringn(v.data(), v.size())));
}

Json Json::array(const std::vector<std::string> &items)
{
	Json a = array();
	for (const auto &s : items)
		a.push(s);
	return a;
}

std::string Json::dump(bool pretty) const
{
	if (!j_)
		return "null";
	size_t flags = JSON_PRESERVE_ORDER | JSON_ENCODE_ANY | JSON_REAL_PRECISION(10);
	flags |= pretty ? JSON_INDENT(2) : JSON_COMPACT;
	char *s = json_dumps(j_, flags);
	if (!s)
		return "null";
	std::string r(s);
	free(s);
	return r;
}

Result<Json> json_parse(const std::string &text, const std::string &origin)
{
	json_error_t err;
	json_t *j = json_loadb(text.data(), text.size(), JSON_REJECT_DUPLICATES, &err);
	if (!j)
		return Status::Error(strprintf("%s:%d:%d: invalid JSON: %s", origin.c_str(),
		                               err.line, err.column, err.text));
	return Json::adopt(j);
}

Result<Json> json_load_file(const std::string &path)
{
	auto text = read_file(path);
	if (!text.ok())
		return text.status();
	return json_parse(text.value(), path);
}

std::string JsonReader::join(const std::string &path, const char *key)
{
	return path.empty() ? std::string(key) : path + "." + key;
}

std::string JsonReader::index(const std::string &path, size_t i)
{
	return path + "[" + std::to_string(i) + "]";
}

void JsonReader::error(const std::string &path, const std::string &msg)
{
	if (status_.ok())
		status_ = Status::Error(origin_ + ": field '" + (path.empty() ? "(root)" : path) +
		                        "': " + msg);
}

bool JsonReader::expect_object(const json_t *j, const std::string &path)
{
	if (json_is_object(j))
		return true;
	error(path, "expected an object");
	return false;
}

const json_t *JsonReader::field(const json_t *obj, const std::string &path, const char *key,
                                bool required)
{
	const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : nullptr;
	if (!v || json_is_null(v)) {
		if (required)
			error(join(path, key), "missing");
		return nullptr;
	}
	return v;
}

std::string JsonReader::str(const json_t *obj, const std::string &path, const char *key)
{
	const json_t *v = field(obj, path, key, true);
	if (!v)
		return "";
	if (!json_is_string(v)) {
		error(join(path, key), "expected a string");
		return "";
	}
	return std::string(json_string_value(v), json_string_length(v));
}

std::string JsonReader::str_or(const json_t *obj, const std::string &path, const char *key,
                               const std::string &def)
{
	return field(obj, path, key, false) ? str(obj, path, key) : def;
}

double JsonReader::num(const json_t *obj, const std::string &path, const char *key)
{
	const json_t *v = field(obj, path, key, true);
	if (!v)
		return 0;
	if (!json_is_number(v)) {
		error(join(path, key), "expected a number");
		return 0;
	}
	return json_number_value(v);
}

double JsonReader::num_or(const json_t *obj, const std::string &path, const char *key, double def)
{
	return field(obj, path, key, false) ? num(obj, path, key) : def;
}

int64_t JsonReader::integer(const json_t *obj, const std::string &path, const char *key)
{
	const json_t *v = field(obj, path, key, true);
	if (!v)
		return 0;
	if (!json_is_integer(v)) {
		error(join(path, key), "expected an integer");
		return 0;
	}
	return json_integer_value(v);
}

int64_t JsonReader::integer_or(const json_t *obj, const std::string &path, const char *key,
                               int64_t def)
{
	return field(obj, path, key, false) ? integer(obj, path, key) : def;
}

bool JsonReader::boolean_or(const json_t *obj, const std::string &path, const char *key, bool def)
{
	const json_t *v = field(obj, path, key, false);
	if (!v)
		return def;
	if (!json_is_boolean(v)) {
		error(join(path, key), "expected true or false");
		return def;
	}
	return json_is_true(v);
}

const json_t *JsonReader::obj(const json_t *o, const std::string &path, const char *key,
                              bool required)
{
	const json_t *v = field(o, path, key, required);
	if (v && !json_is_object(v)) {
		error(join(path, key), "expected an object");
		return nullptr;
	}
	return v;
}

const json_t *JsonReader::arr(const json_t *o, const std::string &path, const char *key,
                              bool required)
{
	const json_t *v = field(o, path, key, required);
	if (v && !json_is_array(v)) {
		error(join(path, key), "expected an array");
		return nullptr;
	}
	return v;
}

std::vector<std::string> JsonReader::str_list(const json_t *o, const std::string &path,
                                              const char *key, bool required)
{
	std::vector<std::string> out;
	const json_t *a = arr(o, path, key, required);
	if (!a)
		return out;
	size_t i;
	const json_t *v;
	json_array_foreach(a, i, v)
	{
		if (!json_is_string(v)) {
			error(index(join(path, key), i), "expected a string");
			return out;
		}
		out.emplace_back(json_string_value(v));
	}
	return out;
}

void JsonReader::only_keys(const json_t *o, const std::string &path,
                           std::initializer_list<const char *> known)
{
	if (!json_is_object(o))
		return;
	const char *k;
	const json_t *v;
	json_object_foreach(const_cast<json_t *>(o), k, v)
	{
		bool ok = false;
		for (const char *n : known)
			ok = ok || std::string(n) == k;
		if (!ok) {
			error(join(path, k), "unknown field");
			return;
		}
	}
}

} // namespace onramp
