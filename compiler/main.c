/*
 * main.c - the `kiln` command: parse flags, run one subcommand inside a
 * protected call, print the one-line error if there was one.
 *
 * Exit status: 0 success; 1 `kiln check` found unsupported nodes;
 * 2 any error (bad model, unreadable file, bad usage, limits).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"
#include "kiln_version.h"

enum { EXIT_UNSUPPORTED = 1, EXIT_ERROR = 2 };

static const char usage[] =
	"usage: kiln <command> [options] MODEL\n"
	"\n"
	"kiln compiles ONNX models ahead of time into C and a weights object.\n"
	"\n"
	"commands:\n"
	"  info MODEL [--json]   describe a model: interface, opsets, ops, weights\n"
	"  check MODEL           list the nodes kiln cannot compile; exit 1 if any\n"
	"  dump MODEL            print kiln's IR of the model (for debugging)\n"
	"\n"
	"options:\n"
	"  --json                machine-readable output (info); keys in docs/cli.md\n"
	"  --max-memory=MB       cap on compiler memory (default 4096); weights mapped\n"
	"                        from the model files do not count\n"
	"  -h, --help            show this help\n"
	"  --version             show the version\n"
	"\n"
	"exit status: 0 ok, 1 unsupported nodes (check), 2 error\n";

typedef struct Options {
	const char *command;
	const char *model;
	bool json;
	size_t max_memory_mb;
} Options;

static int usage_error(const char *fmt, const char *arg)
{
	fputs("kiln: error: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\nTry 'kiln --help'.\n", stderr);
	return EXIT_ERROR;
}

/* Returns -1 to go on, else an exit status. */
static int parse_args(int argc, char **argv, Options *o)
{
	o->max_memory_mb = 4096;
	bool no_more_flags = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!no_more_flags && a[0] == '-' && a[1]) {
			if (strcmp(a, "--") == 0) {
				no_more_flags = true;
			} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
				fputs(usage, stdout);
				return 0;
			} else if (strcmp(a, "--version") == 0) {
				printf("kiln %s\n", KILN_VERSION_STRING);
				return 0;
			} else if (strcmp(a, "--json") == 0) {
				o->json = true;
			} else if (strncmp(a, "--max-memory", 12) == 0 && (a[12] == '=' || !a[12])) {
				const char *v = a[12] == '=' ? a + 13 : (i + 1 < argc ? argv[++i] : NULL);
				char *end;
				errno = 0;
				unsigned long long mb = v ? strtoull(v, &end, 10) : 0;
				if (!v || !*v || *end || errno || mb == 0 || mb > (SIZE_MAX >> 20))
					return usage_error("--max-memory needs a size in MiB, got '%s'",
					                   v ? v : "");
				o->max_memory_mb = (size_t)mb;
			} else {
				return usage_error("unknown option '%s'", a);
			}
		} else if (!o->command) {
			o->command = a;
		} else if (!o->model) {
			o->model = a;
		} else {
			return usage_error("unexpected argument '%s'", a);
		}
	}
	if (!o->command)
		return usage_error("%s", "no command given");
	if (strcmp(o->command, "info") && strcmp(o->command, "check") && strcmp(o->command, "dump"))
		return usage_error("unknown command '%s'", o->command);
	if (!o->model)
		return usage_error("'%s' needs a MODEL file", o->command);
	if (o->json && strcmp(o->command, "info"))
		return usage_error("--json goes with 'info', not '%s'", o->command);
	return -1;
}

static int run(const Options *o)
{
	Diag d = {.file = o->model};
	Arena arena;
	arena_init(&arena, o->max_memory_mb << 20, &d);
	jmp_buf jb;
	d.protect = &jb;
	Model *volatile m = NULL;
	volatile int rc = 0;
	if (setjmp(jb) == 0) {
		m = model_new(o->model, &arena, &d);
		model_load(m);
		ir_verify(m->graph);
		if (strcmp(o->command, "info") == 0)
			report_info(m, stdout, o->json);
		else if (strcmp(o->command, "check") == 0)
			rc = report_check(m, stdout) ? EXIT_UNSUPPORTED : 0;
		else
			ir_print(m->graph, stdout);
	} else {
		fprintf(stderr, "kiln: error: %s\n", d.msg);
		rc = EXIT_ERROR;
	}
	model_close(m);
	arena_free(&arena);
	return rc;
}

int main(int argc, char **argv)
{
	Options o = {0};
	int rc = parse_args(argc, argv, &o);
	if (rc < 0)
		rc = run(&o);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "kiln: error: writing output: %s\n", strerror(errno));
		rc = EXIT_ERROR;
	}
	return rc;
}
