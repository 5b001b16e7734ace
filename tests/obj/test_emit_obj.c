/*
 * test_emit_obj.c - emit_weights_object on its own. usage: test_emit_obj OUTDIR
 *
 * Writes into OUTDIR:
 *   host.o, host2.o  the same symbols twice for the host (must be identical)
 *   aarch64.o        the same symbols for aarch64-linux-gnu
 * and checks the error cases (bad triple, bad name, duplicate name, bad
 * alignment, unwritable path): each must return -1 with a non-empty one-line
 * message and leave no file behind. run.sh inspects and links the objects.
 *
 * Symbols (check.c in run.sh tests the same patterns):
 *   kiln_w_a      256 bytes, a[i] = i
 *   kiln_w_b      1000 bytes, b[i] = (i * 7 + 3) & 255, passed unaligned
 *   kiln_w_c      300 bytes, c[i] = 0 for 100 <= i < 200, else (i * 13 + 1) & 255
 *   kiln_w_empty  0 bytes (written as one zero byte)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emit_obj.h"

static int passed, failed;

static void check(int ok, const char *what, const char *detail)
{
	if (ok) {
		passed++;
	} else {
		failed++;
		printf("FAIL: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	}
}

static char *join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);
	if (!p)
		abort();
	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* Reads a whole file; NULL if it cannot. */
static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	unsigned char *buf = NULL;
	size_t cap = 0, n = 0;
	for (;;) {
		if (n == cap) {
			cap = cap ? 2 * cap : 65536;
			unsigned char *b = realloc(buf, cap);
			if (!b)
				abort();
			buf = b;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	*len = n;
	return buf;
}

static int same_file(const char *p, const char *q)
{
	size_t n1, n2;
	unsigned char *a = slurp(p, &n1), *b = slurp(q, &n2);
	int same = a && b && n1 == n2 && memcmp(a, b, n1) == 0;
	free(a);
	free(b);
	return same;
}

static int good_err(const char *err)
{
	return err[0] && !strchr(err, '\n');
}

/* Expect failure with a one-line message starting with want (if given), and no file at path. */
static void expect_fail(const char *what, const char *path, const char *triple,
                        const ObjSymbol *syms, size_t n, const char *want)
{
	char err[512];
	unlink(path);
	memset(err, 0, sizeof err);
	int rc = emit_weights_object(path, triple, syms, n, err, sizeof err);
	check(rc == -1, what, "return value");
	check(good_err(err), what, "message empty or more than one line");
	if (want)
		check(strncmp(err, want, strlen(want)) == 0, what, err);
	check(access(path, F_OK) != 0, what, "file created");
	printf("%s -> %s\n", what, err);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_emit_obj OUTDIR\n");
		return 2;
	}
	const char *dir = argv[1];
	unsigned char a[256], c[300];
	unsigned char *braw = malloc(1000 + 8);
	if (!braw)
		return 2;
	unsigned char *b = braw + 1; /* never 2-aligned, let alone 64 */
	for (int i = 0; i < 256; i++)
		a[i] = (unsigned char)i;
	for (int i = 0; i < 1000; i++)
		b[i] = (unsigned char)((i * 7 + 3) & 255);
	for (int i = 0; i < 300; i++)
		c[i] = i >= 100 && i < 200 ? 0 : (unsigned char)((i * 13 + 1) & 255);
	ObjSymbol syms[] = {
		{ "kiln_w_a", a, sizeof a, 64, 0, NULL, NULL },
		{ "kiln_w_b", b, 1000, 64, 0, NULL, NULL },
		{ "kiln_w_c", c, sizeof c, 64, 0, NULL, NULL },
		{ "kiln_w_empty", NULL, 0, 64, 0, NULL, NULL },
	};
	size_t nsyms = sizeof syms / sizeof syms[0];
	char err[512];
	char *host = join(dir, "host.o"), *host2 = join(dir, "host2.o");
	char *arm = join(dir, "aarch64.o"), *bad = join(dir, "bad.o");

	/* (a) host object, (b) again: same bytes */
	unlink(host);
	unlink(host2);
	int rc = emit_weights_object(host, NULL, syms, nsyms, err, sizeof err);
	check(rc == 0, "host object", err);
	rc = emit_weights_object(host2, "", syms, nsyms, err, sizeof err);
	check(rc == 0, "host object again", err);
	check(same_file(host, host2), "determinism", "host.o and host2.o differ");

	/* (c) cross object */
	unlink(arm);
	rc = emit_weights_object(arm, "aarch64-linux-gnu", syms, nsyms, err, sizeof err);
	check(rc == 0, "aarch64 object", err);

	/* a hidden symbol (kiln's models): global in the object, hidden
	 * visibility, so no shared library linking it exports it */
	ObjSymbol hid[] = { { "kiln_w_hidden", a, 16, 64, 1, NULL, NULL } };
	char *hidden = join(dir, "hidden.o");
	unlink(hidden);
	rc = emit_weights_object(hidden, NULL, hid, 1, err, sizeof err);
	check(rc == 0, "hidden symbol", err);
	free(hidden);

	/* no symbols at all: still a valid (empty) object */
	char *none = join(dir, "none.o");
	rc = emit_weights_object(none, "x86_64-linux-gnu", NULL, 0, err, sizeof err);
	check(rc == 0, "object without symbols", err);
	free(none);

	/* (d) errors */
	expect_fail("bad triple", bad, "foo", syms, nsyms, "unknown target triple \"foo\": ");
	ObjSymbol badname[] = { { "kiln_w_a", a, 4, 64, 0, NULL, NULL }, { "1abc", a, 4, 64, 0, NULL, NULL } };
	expect_fail("bad name", bad, NULL, badname, 2, "symbol 1: name \"1abc\" is not a C identifier");
	ObjSymbol dotted[] = { { "kiln.w", a, 4, 64, 0, NULL, NULL } };
	expect_fail("dotted name", bad, NULL, dotted, 1, NULL);
	ObjSymbol empty_name[] = { { "", a, 4, 64, 0, NULL, NULL } };
	expect_fail("empty name", bad, NULL, empty_name, 1, NULL);
	ObjSymbol dup[] = { { "kiln_w_a", a, 4, 64, 0, NULL, NULL }, { "kiln_w_b", b, 4, 64, 0, NULL, NULL }, { "kiln_w_a", a, 8, 64, 0, NULL, NULL } };
	expect_fail("duplicate name", bad, NULL, dup, 3, "symbol 2: duplicate name \"kiln_w_a\"");
	ObjSymbol badalign[] = { { "kiln_w_a", a, 4, 48, 0, NULL, NULL } };
	expect_fail("bad alignment", bad, NULL, badalign, 1, NULL);
	ObjSymbol nobytes[] = { { "kiln_w_a", NULL, 4, 64, 0, NULL, NULL } };
	expect_fail("NULL bytes", bad, NULL, nobytes, 1, NULL);
	expect_fail("unwritable path", "/nonexistent/x.o", NULL, syms, nsyms,
	            "cannot write \"/nonexistent/x.o\": ");

	free(host);
	free(host2);
	free(arm);
	free(bad);
	free(braw);
	printf("test_emit_obj: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
