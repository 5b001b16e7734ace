/*
 * isa_runs.h - the same bits under every ISA variant (issue 30): a test
 * binary run without arguments runs itself once per variant (KILN_ISA set,
 * argument "child"), echoes each child's output, and checks that every
 * child passed and printed the same "hash %llx" line (the FNV-1a hash of
 * every output byte it computed). A variant the CPU lacks falls back
 * (runtime/kernels/isa.h) and gives the ref bits trivially. Include after
 * harness.h, in a file that defines _POSIX_C_SOURCE 200809L (popen).
 */
#ifndef KILN_TEST_KERNELS_ISA_RUNS_H
#define KILN_TEST_KERNELS_ISA_RUNS_H

static inline int isa_runs_same(const char *argv0)
{
	static const char *isas[] = {"ref", "avx2", "avx512"};
	unsigned long long h[3] = {0};
	for (int v = 0; v < 3; v++) {
		char cmd[4096];
		snprintf(cmd, sizeof cmd, "KILN_ISA=%s '%s' child", isas[v], argv0);
		FILE *f = strchr(argv0, '\'') ? NULL : popen(cmd, "r");
		char line[256];
		int got = 0;
		while (f && fgets(line, sizeof line, f)) {
			fputs(line, stdout);
			if (sscanf(line, "hash %llx", &h[v]) == 1)
				got = 1;
		}
		int rc = f ? pclose(f) : -1;
		char what[64];
		snprintf(what, sizeof what, "KILN_ISA=%s runs and passes", isas[v]);
		CHECK(got && rc == 0, what);
		printf("%s: %016llx\n", isas[v], h[v]);
	}
	CHECK(h[1] == h[0], "avx2 gives ref's bits");
	CHECK(h[2] == h[0], "avx512 gives ref's bits");
	return harness_report();
}

#endif
