/*
 * host.c - loads two plugins whose models are both called `data` and prints
 * what each computes on fixed inputs, in hexadecimal floats.
 *   host (linked with -lplugin_a -lplugin_b): calls them directly;
 *   host DIR (built with -DUSE_DLOPEN): dlopens DIR/libplugin_a.so and
 *   DIR/libplugin_b.so with RTLD_NOW | RTLD_GLOBAL.
 * ref.c prints the same for one model linked alone; the outputs must match.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*eval_fn)(int64_t n, const float *in, float *out);
typedef void (*elems_fn)(int *nin, int *nout);

#ifdef USE_DLOPEN
#include <dlfcn.h>
#else
int plugin_a_eval(int64_t n, const float *in, float *out);
void plugin_a_elems(int *nin, int *nout);
int plugin_b_eval(int64_t n, const float *in, float *out);
void plugin_b_elems(int *nin, int *nout);
#endif

/* Prints "name n: v0 v1 ..." for n = 0..11 rows of inputs sin(0.37 i). */
int print_outputs(const char *name, eval_fn eval, int nin, int nout);
int print_outputs(const char *name, eval_fn eval, int nin, int nout)
{
	enum { MAXN = 11 };
	float *in = malloc(sizeof(float) * MAXN * (size_t)nin);
	float *out = malloc(sizeof(float) * MAXN * (size_t)nout);
	if (!in || !out)
		return 1;
	for (int i = 0; i < MAXN * nin; i++)
		in[i] = (float)sin(0.37 * i);
	int rc = 0;
	for (int64_t n = 0; n <= MAXN; n++) {
		int st = eval(n, in, out);
		if (st) {
			printf("%s %d: status %d\n", name, (int)n, st);
			rc = 1;
			continue;
		}
		printf("%s %d:", name, (int)n);
		for (int i = 0; i < n * nout; i++)
			printf(" %a", (double)out[i]);
		printf("\n");
	}
	free(in);
	free(out);
	return rc;
}

#ifndef REF
int main(int argc, char **argv)
{
	eval_fn eval[2];
	elems_fn elems[2];
#ifdef USE_DLOPEN
	if (argc != 2)
		return 2;
	const char *names[2] = {"a", "b"};
	for (int k = 0; k < 2; k++) {
		char path[4096], sym[64];
		snprintf(path, sizeof path, "%s/libplugin_%s.so", argv[1], names[k]);
		void *so = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
		if (!so) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 2;
		}
		snprintf(sym, sizeof sym, "plugin_%s_eval", names[k]);
		*(void **)&eval[k] = dlsym(so, sym);
		snprintf(sym, sizeof sym, "plugin_%s_elems", names[k]);
		*(void **)&elems[k] = dlsym(so, sym);
		if (!eval[k] || !elems[k]) {
			fprintf(stderr, "dlsym: %s\n", dlerror());
			return 2;
		}
	}
#else
	(void)argc;
	(void)argv;
	eval[0] = plugin_a_eval, elems[0] = plugin_a_elems;
	eval[1] = plugin_b_eval, elems[1] = plugin_b_elems;
#endif
	int rc = 0;
	for (int k = 0; k < 2; k++) {
		int nin, nout;
		elems[k](&nin, &nout);
		rc |= print_outputs(k ? "b" : "a", eval[k], nin, nout);
	}
	return rc;
}
#endif
