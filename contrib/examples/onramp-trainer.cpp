// onramp-trainer: the reference job for migration (onramp-checkpoint(7)).
//
// Trains logistic regression by minibatch SGD on synthetic data generated
// from --seed; everything (data, minibatches, arithmetic order) is a pure
// function of the seed and the step, so a run resumed from a checkpoint
// continues the exact loss trajectory of an uninterrupted one.
//
//   onramp-trainer [--steps N] [--seed S] [--step-ms MS] [--ckpt-every N]
//                  [--loss-log FILE] [--ignore-signal] [--test-corrupt-shard]
//                  [--test-slow-checkpoint MS]
//
// --ignore-signal ignores the warning signal; --test-corrupt-shard flips a
// byte of weights.bin after committing the checkpoint taken on the signal
// (a test double for a disk that corrupts data after the write);
// --test-slow-checkpoint waits MS milliseconds between writing the shards
// of the checkpoint taken on the signal and committing its manifest (a test
// double for a slow file system).
//
// Environment:
//   ONRAMP_CKPT_DIR         checkpoint directory (required)
//   ONRAMP_CKPT_SIGNAL      warning signal, "USR2" (default), "SIGUSR1",
//                           "TERM", a number; "@SECONDS" is ignored
//   ONRAMP_RESUME_MANIFEST  resume from this manifest (else the newest
//                           verified generation of ONRAMP_CKPT_DIR)
//   SLURM_RESTART_COUNT     recorded in resumed.json
//   ONRAMP_CKPT_KEEP        retention in seconds (default 7200, the default
//                           RollbackWindow): older generations are pruned
//                           after each checkpoint, never the newest verified
//
// Loss log (default $ONRAMP_CKPT_DIR/loss.log), appended, one line per step:
//   "<step> <loss>\n"   step from 1, loss the mean log-loss over the whole
//   data set after that step, printed with %.17g. After a resume the steps
//   following the checkpoint appear again; the last line for a step counts.
//
// On the warning signal it finishes the current step, commits a checkpoint
// generation (shards weights.bin and state.json) and exits 0 so Slurm can
// requeue the job. Exit 0 also when all steps are done, 1 on errors.
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <time.h>
#include <vector>

#include "atomic_file.hpp"
#include "json.hpp"
#include "log.hpp"
#include "migrate/manifest.hpp"
#include "migrate/migrate.hpp"
#include "number.hpp"

using namespace onramp;

namespace {

constexpr int kDims = 32;
constexpr int kSamples = 4096;
constexpr int kBatch = 64;
constexpr double kLr = 0.05;

volatile sig_atomic_t g_signalled = 0;
void on_signal(int)
{
	g_signalled = 1;
}

uint64_t splitmix(uint64_t &s)
{
	uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}
double uniform(uint64_t &s)
{
	return (splitmix(s) >> 11) * (1.0 / 9007199254740992.0);
}
double normal(uint64_t &s)
{
	double u1 = uniform(s), u2 = uniform(s);
	if (u1 < 1e-300)
		u1 = 1e-300;
	return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

struct Data {
	std::vector<double> x; // kSamples * kDims
	std::vector<double> y;
};

Data make_data(uint64_t seed)
{
	uint64_t s = seed * 0x2545f4914f6cdd1dULL + 1;
	std::vector<double> truth(kDims);
	for (auto &w : truth)
		w = normal(s);
	Data d;
	d.x.resize(kSamples * kDims);
	d.y.resize(kSamples);
	for (int i = 0; i < kSamples; i++) {
		double z = 0;
		for (int k = 0; k < kDims; k++) {
			d.x[i * kDims + k] = normal(s);
			z += truth[k] * d.x[i * kDims + k];
		}
		d.y[i] = uniform(s) < 1.0 / (1.0 + std::exp(-z)) ? 1.0 : 0.0;
	}
	return d;
}

double predict(const std::vector<double> &w, const double *x)
{
	double z = w[kDims]; // bias
	for (int k = 0; k < kDims; k++)
		z += w[k] * x[k];
	return 1.0 / (1.0 + std::exp(-z));
}

double loss(const Data &d, const std::vector<double> &w)
{
	double sum = 0;
	for (int i = 0; i < kSamples; i++) {
		double p = predict(w, &d.x[i * kDims]);
		p = std::min(std::max(p, 1e-12), 1 - 1e-12);
		sum -= d.y[i] * std::log(p) + (1 - d.y[i]) * std::log(1 - p);
	}
	return sum / kSamples;
}

void sgd_step(const Data &d, std::vector<double> &w, uint64_t seed, int64_t step)
{
	uint64_t s = seed ^ (static_cast<uint64_t>(step) * 0xd1b54a32d192ed03ULL);
	std::vector<double> g(kDims + 1, 0.0);
	for (int b = 0; b < kBatch; b++) {
		int i = static_cast<int>(splitmix(s) % kSamples);
		const double *x = &d.x[i * kDims];
		double err = predict(w, x) - d.y[i];
		for (int k = 0; k < kDims; k++)
			g[k] += err * x[k];
		g[kDims] += err;
	}
	for (int k = 0; k <= kDims; k++)
		w[k] -= kLr * g[k] / kBatch;
}

void sleep_ms(int64_t ms)
{
	struct timespec ts = {static_cast<time_t>(ms / 1000),
	                      static_cast<long>((ms % 1000) * 1000000)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

Status checkpoint(const std::string &dir, uint64_t seed, int64_t step, const std::vector<double> &w,
                  int64_t commit_delay_ms, uint64_t *gen_out)
{
	uint64_t gen = ckpt::next_generation(dir);
	std::string gdir = ckpt::generation_dir(dir, gen);
	Status st = make_dirs(gdir);
	if (st.ok())
		st = write_file_atomic(gdir + "/weights.bin",
		                       std::string(reinterpret_cast<const char *>(w.data()),
		                                   w.size() * sizeof(double)));
	if (st.ok()) {
		Json j = Json::object();
		j.set("step", step);
		j.set("seed", static_cast<int64_t>(seed));
		j.set("dims", kDims);
		st = write_file_atomic(gdir + "/state.json", j.dump() + "\n");
	}
	if (!st.ok())
		return st;
	if (commit_delay_ms > 0) {
		log_info("test: committing generation %llu in %lld ms",
		         static_cast<unsigned long long>(gen),
		         static_cast<long long>(commit_delay_ms));
		sleep_ms(commit_delay_ms);
	}
	auto m = ckpt::commit(dir, gen, step, {"weights.bin", "state.json"});
	if (!m.ok())
		return m.status();
	*gen_out = gen;
	return Status::Ok();
}

Status restore(const std::string &dir, uint64_t gen, uint64_t seed, int64_t *step,
               std::vector<double> &w)
{
	auto m = ckpt::verify(dir, gen);
	if (!m.ok())
		return m.status();
	std::string gdir = ckpt::generation_dir(dir, gen);
	auto state = json_load_file(gdir + "/state.json");
	if (!state.ok())
		return state.status();
	JsonReader r(gdir + "/state.json");
	int64_t s = r.integer(state->get(), "", "step");
	int64_t sd = r.integer(state->get(), "", "seed");
	int64_t dims = r.integer(state->get(), "", "dims");
	if (r.failed())
		return r.status();
	if (dims != kDims || static_cast<uint64_t>(sd) != seed || s != m->step)
		return Status::Error(gdir +
		                     ": checkpoint is of another run (seed/dims/step differ)");
	auto bytes = read_file(gdir + "/weights.bin");
	if (!bytes.ok())
		return bytes.status();
	if (bytes->size() != w.size() * sizeof(double))
		return Status::Error(gdir + "/weights.bin: wrong size");
	memcpy(w.data(), bytes->data(), bytes->size());
	*step = s;
	return Status::Ok();
}

} // namespace

int main(int argc, char **argv)
{
	log_set_program("onramp-trainer");
	int64_t steps = 100000, step_ms = 0, ckpt_every = 0, slow_ckpt_ms = 0;
	uint64_t seed = 1;
	bool ignore_signal = false, corrupt = false;
	const char *d = getenv("ONRAMP_CKPT_DIR");
	std::string dir = d ? d : "", loss_log;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto num = [&]() -> long long {
			if (i + 1 >= argc) {
				log_error("%s needs a value", a.c_str());
				exit(2);
			}
			auto v = parse_int(argv[++i], 0);
			if (!v.ok()) {
				log_error("%s: %s", a.c_str(), v.status().message().c_str());
				exit(2);
			}
			return v.value();
		};
		if (a == "--steps")
			steps = num();
		else if (a == "--seed")
			seed = static_cast<uint64_t>(num());
		else if (a == "--step-ms")
			step_ms = num();
		else if (a == "--ckpt-every")
			ckpt_every = num();
		else if (a == "--loss-log" && i + 1 < argc)
			loss_log = argv[++i];
		else if (a == "--ignore-signal")
			ignore_signal = true;
		else if (a == "--test-corrupt-shard")
			corrupt = true;
		else if (a == "--test-slow-checkpoint")
			slow_ckpt_ms = num();
		else {
			log_error("unknown argument '%s'", a.c_str());
			return 2;
		}
	}
	if (dir.empty()) {
		log_error("ONRAMP_CKPT_DIR is not set");
		return 2;
	}
	if (make_dirs(dir).ok() == false) {
		log_error("cannot create %s", dir.c_str());
		return 1;
	}
	if (loss_log.empty())
		loss_log = dir + "/loss.log";
	// ONRAMP_CKPT_SIGNAL is "SIG@SECS" (spank/onramp, job_submit/onramp): the
	// grammar every onramp part reads with migrate::parse_signal_spec.
	const char *spec = getenv("ONRAMP_CKPT_SIGNAL");
	int sig = SIGUSR2;
	if (spec && *spec) {
		Status sst = migrate::parse_signal_spec(spec, &sig, nullptr);
		if (!sst.ok()) {
			log_error("ONRAMP_CKPT_SIGNAL: %s", sst.message().c_str());
			return 2;
		}
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = ignore_signal ? SIG_IGN : on_signal;
	sigaction(sig, &sa, nullptr);

	Data data = make_data(seed);
	std::vector<double> w(kDims + 1, 0.0);
	int64_t step = 0;
	const char *rm = getenv("ONRAMP_RESUME_MANIFEST");
	std::string rdir = dir;
	uint64_t rgen = 0;
	if (rm && *rm) {
		Status st = ckpt::split_manifest_path(rm, &rdir, &rgen);
		if (!st.ok()) {
			log_error("ONRAMP_RESUME_MANIFEST: %s", st.message().c_str());
			return 1;
		}
	} else {
		std::vector<std::string> skipped;
		auto m = ckpt::latest(dir, &skipped);
		for (const auto &s : skipped)
			log_warn("not resuming from %s", s.c_str());
		if (m.ok())
			rgen = m->generation;
	}
	if (rgen) {
		Status st = restore(rdir, rgen, seed, &step, w);
		if (!st.ok()) {
			log_error("cannot resume: %s", st.message().c_str());
			return 1;
		}
		ckpt::Resumed r;
		r.generation = rgen;
		r.step = step;
		const char *rc = getenv("SLURM_RESTART_COUNT");
		r.restart_count = rc ? atoll(rc) : 0;
		(void)ckpt::mark_resumed(dir, r);
		log_info("resumed from generation %llu at step %lld",
		         static_cast<unsigned long long>(rgen), static_cast<long long>(step));
	} else {
		log_info("starting at step 0 (no checkpoint in %s)", dir.c_str());
	}
	FILE *lf = fopen(loss_log.c_str(), "a");
	if (!lf) {
		log_error("%s: %s", loss_log.c_str(), strerror(errno));
		return 1;
	}
	setvbuf(lf, nullptr, _IOLBF, 0);
	while (step < steps) {
		sgd_step(data, w, seed, step + 1);
		step++;
		fprintf(lf, "%lld %.17g\n", static_cast<long long>(step), loss(data, w));
		bool periodic = ckpt_every > 0 && step % ckpt_every == 0;
		if (g_signalled || periodic) {
			uint64_t gen = 0;
			Status st =
			    checkpoint(dir, seed, step, w, g_signalled ? slow_ckpt_ms : 0, &gen);
			if (!st.ok()) {
				log_error("checkpoint at step %lld failed: %s",
				          static_cast<long long>(step), st.message().c_str());
				if (g_signalled)
					return 1;
			} else {
				const char *k = getenv("ONRAMP_CKPT_KEEP");
				(void)ckpt::prune(dir, k ? atoll(k) : 7200,
				                  static_cast<int64_t>(time(nullptr)) * 1000);
				log_info("checkpoint generation %llu at step %lld%s",
				         static_cast<unsigned long long>(gen),
				         static_cast<long long>(step),
				         g_signalled ? " (signalled); exiting for requeue" : "");
			}
			if (g_signalled && corrupt && gen) {
				std::string f = ckpt::generation_dir(dir, gen) + "/weights.bin";
				FILE *cf = fopen(f.c_str(), "r+b");
				if (cf) {
					int c = fgetc(cf);
					fseek(cf, 0, SEEK_SET);
					fputc(c ^ 0xff, cf);
					fclose(cf);
					log_warn("test: corrupted %s", f.c_str());
				}
			}
			if (g_signalled) {
				fclose(lf);
				return 0;
			}
		}
		if (step_ms > 0)
			sleep_ms(step_ms);
	}
	fclose(lf);
	log_info("done: %lld steps", static_cast<long long>(step));
	return 0;
}
