/*
 * check.h - the smallest test harness: CHECK prints the failing expression
 * with its file and line and counts it; main returns the count.
 */
#ifndef KILN_TEST_CHECK_H
#define KILN_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures, check_count;

#define CHECK(cond)                                                                  \
	do {                                                                             \
		check_count++;                                                               \
		if (!(cond)) {                                                               \
			check_failures++;                                                        \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
		}                                                                            \
	} while (0)

#define CHECK_EQ_INT(want, got)                                                        \
	do {                                                                               \
		long long w_ = (long long)(want), g_ = (long long)(got);                       \
		check_count++;                                                                 \
		if (w_ != g_) {                                                                \
			check_failures++;                                                          \
			fprintf(stderr, "%s:%d: CHECK failed: %s == %s (want %lld, got %lld)\n",   \
			        __FILE__, __LINE__, #want, #got, w_, g_);                          \
		}                                                                              \
	} while (0)

#define CHECK_STR(want, got)                                                                \
	do {                                                                                    \
		const char *w_ = (want), *g_ = (got);                                               \
		check_count++;                                                                      \
		if (!g_ || strcmp(w_, g_) != 0) {                                                   \
			check_failures++;                                                               \
			fprintf(stderr, "%s:%d: CHECK failed: %s is \"%s\", want \"%s\"\n", __FILE__,   \
			        __LINE__, #got, g_ ? g_ : "(null)", w_);                                \
		}                                                                                   \
	} while (0)

static int check_report(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
	return check_failures != 0;
}

#endif
