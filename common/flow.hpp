// What every flow driver (common/migrate, common/campaign) takes from its
// caller so that a unit test can run it in virtual time and crash it at
// any journal step.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace onramp {

// Time as a driver sees it (a fake one in unit tests).
class Clock {
public:
	virtual ~Clock() = default;
	virtual int64_t now_ms()
	{
		return std::chrono::duration_cast<std::chrono::milliseconds>(
		           std::chrono::system_clock::now().time_since_epoch())
		    .count();
	}
	virtual void sleep(double seconds)
	{
		std::this_thread::sleep_for(
		    std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
	}
};

// Called around each journal write: before(STATE) after the actions that
// lead to STATE but before it is journaled, after(STATE) right after.
// The default does nothing; unit tests throw from it to simulate a crash.
class CrashHook {
public:
	virtual ~CrashHook() = default;
	virtual void before(const std::string &) {}
	virtual void after(const std::string &) {}
};

} // namespace onramp
