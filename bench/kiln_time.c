/*
 * kiln_time.c - one timing run of a kiln-compiled model for bench/compare.sh
 * (the ONNX Runtime side is ort_time.js; they read the same input files and
 * write their outputs for the same comparison).
 *
 * Linked with a model compiled as `--name bench` at one batch size B. Reads
 * every input from IN_DIR/NAME.bin (raw little-endian, exactly the bytes the
 * descriptor says at B; NAME is the input's name with every character other
 * than [A-Za-z0-9_] replaced by '_'), runs warm-up calls (at least one and
 * at least a fifth of MIN_TIME), then times calls (CLOCK_MONOTONIC) until at
 * least MIN_CALLS calls and MIN_TIME seconds have passed: one by one, or in
 * groups whose mean is one sample when a call takes under 20 us; a call
 * longer than SLOW seconds is timed once. Writes
 * the last call's outputs to OUT_DIR/NAME.bin and prints one JSON object:
 *
 *   {"engine": "kiln", "batch": B, "calls": n, "group": g, "median_ns": ..., "p10_ns": ...,
 *    "p90_ns": ..., "min_ns": ..., "mean_ns": ..., "cpu_median_ns": ...,
 *    "cpu_mean_ns": ...,
 *    "rss_before": bytes, "rss_after": bytes,
 *    "hwm": bytes, "arena_bytes": bytes, "isa": kernel variant (kiln_isa_name)}
 *
 * Every call (or group) is timed by the wall clock and by the process's CPU
 * time, which leaves out the time the process waited while another one held
 * the core: median_ns and cpu_median_ns are the medians of those; mean_ns
 * and cpu_mean_ns the totals over all timed calls divided by their number.
 * rss_before is read after the inputs and outputs are allocated and filled,
 * before the arena exists and before the first call touches the weights;
 * rss_after after the last timed call; hwm is the process's peak (VmHWM).
 *
 * usage: kiln_time MIN_TIME MIN_CALLS SLOW IN_DIR OUT_DIR
 * exit: 0 ok, 2 bad arguments or input files, 3 the model returned an error
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln/kernels.h"
#include "kiln/run.h"
#include "timing.h"
#include "bench.h"

#define MAX_IO 64
#define MAX_SAMPLES ((size_t)1 << 18)
#define GROUP_NS 20000.0

static void file_name(char *dst, size_t cap, const char *dir, const char *name)
{
	int n = snprintf(dst, cap, "%s/", dir);
	size_t i = n > 0 ? (size_t)n : 0;
	for (const char *p = name; *p && i + 5 < cap; p++) {
		char c = *p;
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
		dst[i++] = ok ? c : '_';
	}
	memcpy(dst + i, ".bin", 5);
}

/* Resident and peak-resident bytes from /proc/self/status (0 if absent). */
static void rss(uint64_t *now, uint64_t *hwm)
{
	*now = *hwm = 0;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return;
	char line[256];
	unsigned long long kb;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			*now = (uint64_t)kb * 1024;
		else if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
			*hwm = (uint64_t)kb * 1024;
	}
	fclose(f);
}

static void *alloc64(size_t n)
{
	void *p = aligned_alloc(64, (n + 63) / 64 * 64 + 64);
	if (!p) {
		fprintf(stderr, "kiln_time: out of memory (%zu bytes)\n", n);
		exit(2);
	}
	return p;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: kiln_time MIN_TIME MIN_CALLS SLOW IN_DIR OUT_DIR\n");
		return 2;
	}
	double min_ns = atof(argv[1]) * 1e9;
	long min_calls = atol(argv[2]);
	double slow_ns = atof(argv[3]) * 1e9;
	const char *in_dir = argv[4], *out_dir = argv[5];
	const kiln_model *m = &bench_model;
	if (m->nbatches != 1 || m->ninputs > MAX_IO || m->noutputs > MAX_IO) {
		fprintf(stderr, "kiln_time: expects one compiled batch size and at most %d inputs/outputs\n",
		        MAX_IO);
		return 2;
	}
	int64_t b = m->batches[0];
	const void *ins[MAX_IO];
	void *outs[MAX_IO];
	char path[4096];
	for (int k = 0; k < m->ninputs; k++) {
		size_t n = kiln_tensor_bytes(&m->inputs[k], b);
		void *p = alloc64(n);
		file_name(path, sizeof path, in_dir, m->inputs[k].name);
		FILE *f = fopen(path, "rb");
		size_t got = f ? fread(p, 1, n, f) : 0;
		int extra = f ? fgetc(f) != EOF : 0;
		if (f)
			fclose(f);
		if (got != n || extra) {
			fprintf(stderr, "kiln_time: %s: expected exactly %zu bytes\n", path, n);
			return 2;
		}
		ins[k] = p;
	}
	for (int k = 0; k < m->noutputs; k++) {
		size_t n = kiln_tensor_bytes(&m->outputs[k], b);
		outs[k] = alloc64(n);
		memset(outs[k], 0, n);
	}
	/* Timing samples: allocated and touched before rss_before, so that they
	 * do not count as the model's memory. */
	double *t = alloc64(2 * MAX_SAMPLES * sizeof *t), *tc = t + MAX_SAMPLES;
	memset(t, 0, 2 * MAX_SAMPLES * sizeof *t);
	uint64_t rss_before, rss_after, hwm;
	rss(&rss_before, &hwm);

	void *arena = alloc64(m->arena_bytes[0]);
	double start = now_ns();
	long warm = 0;
	do {
		int st = m->run[0](arena, ins, outs);
		if (st != 0) {
			fprintf(stderr, "kiln_time: the model returned status %d\n", st);
			return 3;
		}
		warm++;
	} while (now_ns() - start < 0.2 * min_ns);
	/* Calls shorter than GROUP_NS are timed in groups of g calls (each
	 * sample is the group's time / g), so the clock's own cost and the
	 * sample count stay small. */
	double est = (now_ns() - start) / (double)warm;
	long g = est < GROUP_NS ? (long)(GROUP_NS / est) + 1 : 1;
	if (est > slow_ns) /* a call over SLOW seconds: one timed call is enough */
		min_calls = 1;

	size_t n = 0;
	double cpu0 = cpu_ns();
	start = now_ns();
	while (n < MAX_SAMPLES && ((long)n * g < min_calls || now_ns() - start < min_ns)) {
		double s = now_ns(), c = cpu_ns();
		for (long i = 0; i < g; i++)
			m->run[0](arena, ins, outs);
		tc[n] = (cpu_ns() - c) / (double)g;
		t[n++] = (now_ns() - s) / (double)g;
	}
	double wall_mean = (now_ns() - start) / (double)(n * (size_t)g);
	double cpu_mean = (cpu_ns() - cpu0) / (double)(n * (size_t)g);
	rss(&rss_after, &hwm);
	qsort(t, n, sizeof *t, cmp_double);
	qsort(tc, n, sizeof *tc, cmp_double);

	for (int k = 0; k < m->noutputs; k++) {
		file_name(path, sizeof path, out_dir, m->outputs[k].name);
		FILE *f = fopen(path, "wb");
		size_t bytes = kiln_tensor_bytes(&m->outputs[k], b);
		if (!f || fwrite(outs[k], 1, bytes, f) != bytes || fclose(f) != 0) {
			fprintf(stderr, "kiln_time: cannot write %s\n", path);
			return 2;
		}
	}
	printf("{\"engine\": \"kiln\", \"batch\": %lld, \"calls\": %zu, \"group\": %ld, \"warmup_calls\": %ld, "
	       "\"median_ns\": %.0f, \"p10_ns\": %.0f, \"p90_ns\": %.0f, \"min_ns\": %.0f, "
	       "\"mean_ns\": %.0f, \"cpu_median_ns\": %.0f, \"cpu_mean_ns\": %.0f, "
	       "\"rss_before\": %llu, \"rss_after\": %llu, \"hwm\": %llu, \"arena_bytes\": %llu, \"isa\": \"%s\"}\n",
	       (long long)b, n * (size_t)g, g, warm, t[n / 2], t[n / 10], t[n * 9 / 10], t[0],
	       wall_mean, tc[n / 2], cpu_mean,
	       (unsigned long long)rss_before, (unsigned long long)rss_after, (unsigned long long)hwm,
	       (unsigned long long)m->arena_bytes[0], kiln_isa_name());
	free(t);
	free(arena);
	for (int k = 0; k < m->ninputs; k++)
		free((void *)ins[k]);
	for (int k = 0; k < m->noutputs; k++)
		free(outs[k]);
	return 0;
}
