/*
 * pages.h - what the bench probes share to compare 4 KiB and 2 MiB pages:
 * fresh anonymous memory aligned to 2 MiB with madvise advice, and the
 * process's AnonHugePages (how much the kernel gave as huge pages).
 */
#ifndef KILN_BENCH_PAGES_H
#define KILN_BENCH_PAGES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* bytes of fresh memory at a 2 MiB boundary, given advice (MADV_HUGEPAGE
 * or MADV_NOHUGEPAGE); never freed. Exits if mmap fails. */
static inline void *aligned_pages(size_t bytes, int advice)
{
	size_t huge = (size_t)2 << 20, len = (bytes + huge - 1) / huge * huge + huge;
	char *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		fprintf(stderr, "mmap of %zu bytes failed\n", len);
		exit(1);
	}
	char *p = (char *)(((uintptr_t)map + huge - 1) & ~(uintptr_t)(huge - 1));
	madvise(p, len - huge, advice);
	return p;
}

/* Prints indent, then "huge pages: " and the AnonHugePages of smaps_rollup */
static inline void print_huge_pages(const char *indent)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "AnonHugePages:", 14))
			printf("%shuge pages: %s", indent, line + 14 + strspn(line + 14, " "));
	if (f)
		fclose(f);
}

#endif
