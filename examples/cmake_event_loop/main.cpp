// main.cpp - an event loop in the style of a CMSSW job: 4 threads, each with
// its own events, every event with 0 to 300 jets, and two plugins (the jet
// tagger and the regressor, both built from models named `net`) run on
// every event. Every jet's batched result is checked against the plugin's
// batch-1 call (within 1e-5 relative + 1e-6 absolute: batched GEMMs may add
// in another order). Built twice: event_loop links both plugins;
// event_loop_dlopen (USE_DLOPEN) loads them with dlopen(RTLD_NOW | RTLD_GLOBAL)
// from the folder given as its argument.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

using shape_fn = void (*)(int *, int *);
using evaluate_fn = int (*)(std::int64_t, const float *, float *);
using evaluate_one_fn = int (*)(const float *, float *);

struct Plugin {
	const char *name;
	shape_fn shape;
	evaluate_fn evaluate;
	evaluate_one_fn evaluate_one;
};

#ifdef USE_DLOPEN
#include <dlfcn.h>

template <class F> static F lookup(void *so, const std::string &name)
{
	void *p = dlsym(so, name.c_str());
	if (!p) {
		std::fprintf(stderr, "dlsym %s: %s\n", name.c_str(), dlerror());
		std::exit(2);
	}
	return reinterpret_cast<F>(p);
}

static Plugin load(const std::string &dir, const char *name)
{
	std::string path = dir + "/lib" + name + ".so";
	void *so = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
	if (!so) {
		std::fprintf(stderr, "dlopen %s: %s\n", path.c_str(), dlerror());
		std::exit(2);
	}
	std::string n = name;
	return {name, lookup<shape_fn>(so, n + "_shape"), lookup<evaluate_fn>(so, n + "_evaluate"),
	        lookup<evaluate_one_fn>(so, n + "_evaluate_one")};
}
#else
extern "C" {
void tagger_shape(int *, int *);
int tagger_evaluate(std::int64_t, const float *, float *);
int tagger_evaluate_one(const float *, float *);
void regressor_shape(int *, int *);
int regressor_evaluate(std::int64_t, const float *, float *);
int regressor_evaluate_one(const float *, float *);
}
#endif

int main(int argc, char **argv)
{
#ifdef USE_DLOPEN
	if (argc != 2) {
		std::fprintf(stderr, "usage: %s PLUGIN_DIR\n", argv[0]);
		return 2;
	}
	const Plugin plugins[] = {load(argv[1], "tagger"), load(argv[1], "regressor")};
#else
	(void)argc;
	(void)argv;
	const Plugin plugins[] = {
		{"tagger", tagger_shape, tagger_evaluate, tagger_evaluate_one},
		{"regressor", regressor_shape, regressor_evaluate, regressor_evaluate_one}};
#endif
	const int nthreads = 4, nevents = 400, maxjets = 300, nfeatures = 16;
	std::vector<long> jets_seen(nthreads), bad(nthreads);
	std::vector<std::thread> threads;
	for (int t = 0; t < nthreads; t++)
		threads.emplace_back([&, t] {
			std::vector<float> features, out, one;
			for (int e = t; e < nevents; e += nthreads) {
				std::mt19937 rng(static_cast<unsigned>(e));
				int njets = static_cast<int>(rng() % (maxjets + 1));
				if (e % 50 == 0)
					njets = e % 100 ? maxjets : 0;   // the extremes, for sure
				std::normal_distribution<float> gauss(0.f, 1.f);
				features.resize(static_cast<std::size_t>(njets) * nfeatures);
				for (float &f : features)
					f = gauss(rng);
				for (const Plugin &p : plugins) {
					int nin, nout;
					p.shape(&nin, &nout);
					if (nin != nfeatures) {
						bad[t]++;
						continue;
					}
					out.assign(static_cast<std::size_t>(njets) * nout, NAN);
					one.resize(static_cast<std::size_t>(nout));
					if (p.evaluate(njets, features.data(), out.data()) != 0) {
						bad[t]++;
						continue;
					}
					for (int j = 0; j < njets; j++) {
						if (p.evaluate_one(&features[static_cast<std::size_t>(j) * nin], one.data()) != 0) {
							bad[t]++;
							continue;
						}
						for (int k = 0; k < nout; k++) {
							float got = out[static_cast<std::size_t>(j) * nout + k], want = one[k];
							if (!(std::fabs(got - want) <= 1e-6f + 1e-5f * std::fabs(want))) {
								if (bad[t]++ < 5)
									std::printf("%s: event %d jet %d value %d: %g, batch 1 gives %g\n",
									            p.name, e, j, k, static_cast<double>(got),
									            static_cast<double>(want));
							}
						}
					}
				}
				jets_seen[t] += njets;
			}
		});
	for (std::thread &th : threads)
		th.join();
	long jets = 0, errors = 0;
	for (int t = 0; t < nthreads; t++)
		jets += jets_seen[t], errors += bad[t];
	std::printf("%d events, %ld jets, %d threads, 2 models named net: %s (%ld mismatches)\n", nevents,
	            jets, nthreads, errors ? "FAILED" : "all match batch 1", errors);
	return errors != 0;
}
