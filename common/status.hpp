// Status: errors as values. Every fallible call in libonramp returns a
// Status (or a Result<T>); nothing throws across the plugin boundary.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace onramp {

class Status {
public:
	Status() = default;
	static Status Ok() { return Status(); }
	static Status Error(std::string msg) { return Status(std::move(msg)); }

	bool ok() const { return !msg_.has_value(); }
	// REQUIRES: !ok()
	const std::string &message() const { return *msg_; }
	// The message, or "ok".
	std::string str() const { return ok() ? "ok" : *msg_; }

private:
	explicit Status(std::string msg) : msg_(std::move(msg)) {}
	std::optional<std::string> msg_;
};

// A value or the Status that says why there is none.
template <typename T> class Result {
public:
	Result(T value) : value_(std::move(value)) {}
	Result(Status st) : status_(std::move(st)) {}

	bool ok() const { return value_.has_value(); }
	const Status &status() const { return status_; }
	// REQUIRES: ok()
	T &value() { return *value_; }
	const T &value() const { return *value_; }
	T *operator->() { return &*value_; }
	const T *operator->() const { return &*value_; }

private:
	std::optional<T> value_;
	Status status_;
};

} // namespace onramp
