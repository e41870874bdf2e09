// A throw-away onramp installation for the admission tests: onramp.conf,
// the shipped baselines and sim profiles, a boot id file and a state dir,
// all under a fresh temporary directory.
#pragma once

#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomic_file.hpp"
#include "config.hpp"
#include "unit.hpp"

#ifndef ONRAMP_SRCDIR
#error "ONRAMP_SRCDIR must be defined by the build"
#endif

inline std::string src_path(const std::string &rel)
{
	return std::string(ONRAMP_SRCDIR) + "/" + rel;
}

inline std::string admit_binary()
{
	return std::string(ONRAMP_BUILDDIR) + "/node_features/onramp-admit";
}

inline void put(const std::string &path, const std::string &text)
{
	size_t slash = path.rfind('/');
	if (!onramp::make_dirs(path.substr(0, slash)).ok() ||
	    !onramp::write_file_atomic(path, text).ok()) {
		print_error("cannot write %s\n", path.c_str());
		fail();
	}
}

inline std::string slurp(const std::string &path)
{
	auto t = onramp::read_file(path);
	return t.ok() ? t.value() : std::string();
}

// Run the onramp-admit program with args; its exit status and output.
struct Run {
	int rc = -1;
	std::string out, err;
};

inline Run run_admit(const std::string &args)
{
	std::string dir = unit_tmpdir();
	std::string cmd = admit_binary() + " " + args + " >" + dir + "/out 2>" + dir + "/err";
	int st = system(cmd.c_str());
	Run r;
	r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	r.out = slurp(dir + "/out");
	r.err = slurp(dir + "/err");
	return r;
}

struct AdmitFixture {
	std::string dir, conf, baselines, profiles, boot_dir, state_dir;

	// backend "sim" or "real"; extra is appended to onramp.conf.
	explicit AdmitFixture(const std::string &backend = "sim", const std::string &extra = "")
	{
		dir = unit_tmpdir();
		conf = dir + "/onramp.conf";
		baselines = dir + "/baselines";
		profiles = dir + "/profiles";
		boot_dir = dir + "/boot";
		state_dir = dir + "/state";
		for (const char *b : {"SIM-8GPU", "H200-SXM-8"})
			put(baselines + "/" + b + ".json",
			    slurp(src_path(std::string("etc/baselines/") + b + ".json")));
		put(conf, "GpuBackend=" + backend + "\nSimProfileDir=" + profiles +
		              "\nBaselineDir=" + baselines +
		              "\nSku=" + (backend == "sim" ? "SIM-8GPU" : "H200-SXM-8") +
		              "\nNodeStateDir=" + state_dir + "/%n\nBootIdFile=" + boot_dir +
		              "/%n\nCheckTimeout=30\n" + extra);
	}

	// Node node simulates the shipped profile name (etc/sim-profiles).
	void profile(const std::string &node, const std::string &name)
	{
		put(profiles + "/" + node + ".json",
		    slurp(src_path("etc/sim-profiles/" + name + ".json")));
	}
	void boot(const std::string &node, const std::string &id)
	{
		put(boot_dir + "/" + node, id);
	}
	onramp::Config config() const
	{
		auto c = onramp::Config::load(conf);
		if (!c.ok()) {
			print_error("%s\n", c.status().message().c_str());
			fail();
		}
		return c.value();
	}
	std::string record(const std::string &node) const
	{
		return state_dir + "/" + node + "/admission.json";
	}
};
