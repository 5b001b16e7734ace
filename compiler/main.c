/*
 * main.c - the `kiln` command: parse flags, run one subcommand inside a
 * protected call, print the one-line error if there was one.
 *
 * Exit status: 0 success; 1 `kiln check` found unsupported nodes (or,
 * with --batch, shapes or a limit that do not fit);
 * 2 any error (bad model, unreadable file, bad usage, limits).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compile.h"
#include "emit.h"
#include "load.h"
#include "padproof.h"
#include "report.h"
#include "kiln_version.h"
#include "passes/passes.h"
#include "kiln/run.h"

enum { EXIT_UNSUPPORTED = 1, EXIT_ERROR = 2 };

/* The help: one row per command and per option, with the commands each
 * option goes with, so `kiln COMMAND --help` shows only its own. */
enum { C_INFO = 1, C_CHECK = 2, C_DUMP = 4, C_COMPILE = 8, C_VERIFY = 16, C_OPS = 32, C_ALL = 63 };

typedef struct HelpRow {
	const char *left, *right;     /* right: continuation lines after '\n' */
	unsigned cmds;
} HelpRow;

static const HelpRow commands_help[] = {
	{"info MODEL [--json]", "describe a model: interface, opsets, ops, weights;\n"
	                        "with --batch, the static shapes of each signature", C_INFO},
	{"check MODEL", "list the nodes kiln cannot compile; exit 1 if any; say\n"
	                "how to compile symbolic dims other than the batch; with\n"
	                "--batch, also infer shapes and plan as compile would", C_CHECK},
	{"dump MODEL", "print kiln's IR of the model (for debugging)", C_DUMP},
	{"compile MODEL --batch=B1,...", "write NAME.h, NAME.c, NAME_weights.o and NAME.o", C_COMPILE},
	{"verify CASE_DIR...", "compile ONNX backend-test cases (model.onnx and\n"
	                       "test_data_set_*), run them, compare with their outputs;\n"
	                       "with --reproducible (CASE_DIR or MODEL.onnx), compare\n"
	                       "the output bits across ISAs, batch sizes and aarch64", C_VERIFY},
	{"ops [--markdown]", "list the operators kiln compiles (docs/ops.md)", C_OPS},
};

static const HelpRow options_help[] = {
	{"--json", "machine-readable output (info); keys in docs/cli.md", C_INFO},
	{"--batch=B1,B2,...", "batch sizes: to compile (compile), to infer shapes\n"
	                      "for (info, dump, check), of the data (verify)",
	 C_INFO | C_CHECK | C_DUMP | C_COMPILE | C_VERIFY},
	{"--shape=INPUT=D0,D1", "fix every dim of an input (repeatable); one dim may\n"
	                        "be N: the batch axis (--shape x=N,50,16)",
	 C_INFO | C_CHECK | C_DUMP | C_COMPILE},
	{"--dim=SYMBOL=V", "fix a symbolic dim in every input that has it\n"
	                   "(repeatable): --dim P=100 for [N, 2, P] and [N, 4, P];\n"
	                   "several values (one dim) compile buckets for\n"
	                   "kiln_run_lengths: --dim P=16,32,64,100 (info: the largest)",
	 C_INFO | C_CHECK | C_DUMP | C_COMPILE},
	{"--pad-check=SYMBOL=B1,...", "prove that zero-padding the symbolic dim SYMBOL to the\n"
	                              "bucket sizes B1,... cannot change the outputs at real\n"
	                              "positions (docs/batching.md); exit 1 if it may",
	 C_CHECK},
	{"--mask=INPUT", "with --pad-check or buckets: INPUT is a mask (1 real,\n"
	                 "0 padded); default: the inputs with the dim named\n"
	                 "*mask* (repeatable)",
	 C_CHECK | C_COMPILE},
	{"--batch-dim=INPUT=AXIS", "the batch axis of an input (default: axis 0 when\n"
	                           "its first dim is symbolic) (repeatable)",
	 C_INFO | C_CHECK | C_DUMP | C_COMPILE},
	{"--freeze=INPUT=V0,V1,...", "fix an input's values at compile time, for inputs\n"
	                             "that decide shapes; runs check them (repeatable)",
	 C_INFO | C_CHECK | C_DUMP | C_COMPILE},
	{"--plan", "plan each signature's arena and print its size and\nlower bound (info, dump)",
	 C_INFO | C_DUMP},
	{"--svg=FILE", "with info --plan: draw each signature's buffer plan\n"
	               "(buffers over node steps x arena offset) into FILE", C_INFO},
	{"--max-memory=MB", "cap on compiler memory (default 4096); weights mapped\n"
	                    "from the model files do not count", C_ALL & ~C_OPS},
	{"--max-nodes=N", "most nodes in one graph (default 200000)",
	 C_INFO | C_CHECK | C_DUMP | C_COMPILE},
	{"--max-elements=N", "most elements in one tensor (default 2^36)",
	 C_INFO | C_CHECK | C_DUMP | C_COMPILE},
	{"--max-arena=MB", "most bytes of one arena or kiln_run context (default\n16384)",
	 C_INFO | C_CHECK | C_DUMP | C_COMPILE},
	{"--max-c-size=MB", "largest generated NAME.c (default 256)", C_COMPILE},
	{"--max-depth=N", "most levels of If/Loop/Scan subgraphs nested in one\n"
	                  "another (default 20, at most 256); all five: docs/limits.md",
	 C_INFO | C_CHECK | C_DUMP | C_COMPILE},
	{"--name=NAME", "C prefix of the generated symbols (default: the\nmodel's file name)", C_COMPILE},
	{"-o DIR, --output=DIR", "where compile writes its files (default .)", C_COMPILE},
	{"--target=TRIPLE", "target of the weights object (default: the host);\n"
	                    "for another target NAME.o is left to your toolchain", C_COMPILE},
	{"--batch-rule=B:S1,...", "run a batch of exactly B as chunks S1, ..., in order,\n"
	                          "padding only the last (repeatable); baked into\n"
	                          "the descriptor for kiln_run (docs/batching.md)", C_COMPILE},
	{"-O N, -ON", "optimization level (0-3) for the C compiler (compile 2,\nverify 1)",
	 C_COMPILE | C_VERIFY},
	{"--keep", "keep verify's build folders", C_VERIFY},
	{"--tolerance=RTOL,ATOL", "compare floats within ATOL + RTOL x |expected|\n"
	                          "(default 1e-3,1e-5), float16 and bfloat16 too\n"
	                          "(compared bit for bit without it)", C_VERIFY},
	{"--reproducible", "verify: run one compiled model under KILN_ISA=ref, avx2,\n"
	                   "avx512 (those the CPU has), at every n = 1..70 and\n"
	                   "compiled size (--batch, default 1,16,64) and under\n"
	                   "qemu-aarch64; exit 1 if any output bit differs\n"
	                   "(docs/reproducibility.md)", C_VERIFY},
	{"--no-opt", "compile without the graph optimizer", C_COMPILE | C_VERIFY},
	{"--no-pass=NAME", "skip one optimizer pass: noop, dedup, cse, einsum, fold,\n"
	                   "lastpos, mlpconv, attention, fuse, addnorm, edgeconv, dce,\n"
	                   "ewchain, f16 (repeatable)", C_COMPILE | C_VERIFY | C_INFO | C_CHECK | C_DUMP},
	{"--qdq=exact|float", "QDQ-quantized Conv/MatMul/Gemm chains: exact integer\n"
	                      "arithmetic (default exact), or float32 as written",
	 C_COMPILE | C_VERIFY | C_INFO | C_CHECK | C_DUMP},
	{"--weights-dtype=fp32|fp16|keep", "how weights are stored (default keep): fp16\n"
	                                   "halves float32 weights, fp32 folds float16->float32 Casts",
	 C_COMPILE | C_VERIFY | C_INFO | C_CHECK | C_DUMP},
	{"--passes", "info: run the optimizer and print, per pass, the nodes\n"
	             "removed or fused and the weight bytes; dump: the IR after it", C_INFO | C_DUMP},
	{"--export", "give NAME_model and NAME_run* default visibility, so a\n"
	             "shared library linking NAME.o exports them (default:\n"
	             "hidden, docs/integration.md)", C_COMPILE},
	{"--trees=auto|code|arrays", "tree ensembles as straight-line C or as node\n"
	                             "arrays; auto: C up to 4096 nodes (docs/trees.md)",
	 C_COMPILE | C_VERIFY},
	{"--zipmap=tensor", "a ZipMap (scikit-learn's probabilities as a sequence of\n"
	                    "maps) gives its [N, classes] float tensor instead; its\n"
	                    "keys are in NAME.h (docs/models.md)",
	 C_INFO | C_CHECK | C_DUMP | C_COMPILE | C_VERIFY},
	{"--winograd", "also 3x3 convolutions on maps too small for the default\n"
	               "Winograd F(2x2, 3x3) when the batch has enough tiles:\n"
	               "a sample's bits then depend on the compiled batch size\n"
	               "(docs/reproducibility.md)", C_COMPILE | C_VERIFY},
	{"--no-cc", "write NAME.h, NAME.c and NAME_weights.o only; your\n"
	            "build compiles NAME.c and links both objects", C_COMPILE},
	{"--depfile=FILE", "also write a make rule: NAME.o (--no-cc: NAME.c and\n"
	                   "NAME_weights.o) depends on the model and every\n"
	                   "external-data file read", C_COMPILE},
	{"--max-weights=BYTES", "most bytes of weights in NAME_weights.o (suffix K, M,\n"
	                        "G or T; default 256M + 4 x the model's files)",
	 C_COMPILE | C_CHECK},
	{"--shared", "build NAME.so (with libkiln, entry points exported)\n"
	             "instead of NAME.o: for dlopen and the Python module\n"
	             "(docs/python.md)", C_COMPILE},
	{"-v, --verbose", "report each stage on stderr (always, once a compile\ntakes over 2 s)",
	 C_COMPILE},
	{"-h, --help", "show this help (kiln COMMAND --help: that command's)", C_ALL},
	{"--version", "show the version", C_ALL},
};

static const char *const command_names[] = {"info", "check", "dump", "compile", "verify", "ops"};

static void help_rows(FILE *f, const HelpRow *rows, size_t n, unsigned cmds)
{
	for (size_t i = 0; i < n; i++) {
		if (!(rows[i].cmds & cmds))
			continue;
		int w = (int)strlen(rows[i].left);
		fprintf(f, "  %s%*s", rows[i].left, w <= 20 ? 22 - w : 2, "");
		for (const char *r = rows[i].right; *r; r++) {
			fputc(*r, f);
			if (*r == '\n')
				fprintf(f, "%24s", "");
		}
		fputc('\n', f);
	}
}

/* kiln --help (command NULL) or kiln COMMAND --help. */
static void print_help(FILE *f, const char *command)
{
	unsigned cmds = C_ALL;
	for (size_t i = 0; command && i < sizeof command_names / sizeof command_names[0]; i++)
		if (strcmp(command, command_names[i]) == 0)
			cmds = 1u << i;
	if (cmds == C_ALL)
		fputs("usage: kiln <command> [options] MODEL\n\n"
		      "kiln compiles ONNX models ahead of time into C and a weights object.\n\n"
		      "commands:\n", f);
	else
		fputs("usage: kiln ", f);
	if (cmds == C_ALL) {
		help_rows(f, commands_help, sizeof commands_help / sizeof commands_help[0], cmds);
	} else {
		for (size_t i = 0; i < sizeof commands_help / sizeof commands_help[0]; i++)
			if (commands_help[i].cmds & cmds)
				fprintf(f, "%s [options]\n\n%s\n", commands_help[i].left, commands_help[i].right);
	}
	fputs("\noptions:\n", f);
	help_rows(f, options_help, sizeof options_help / sizeof options_help[0], cmds);
	if (cmds & (C_COMPILE | C_VERIFY))
		fputs("\nenvironment: CC (default cc) with CFLAGS, and LD (default ld) build NAME.o\n", f);
	fputs(cmds & C_CHECK ? "\nexit status: 0 ok, 1 unsupported nodes or shapes that do not\n"
	                       "fit (check), 2 error\n"
	                     : "\nexit status: 0 ok, 2 error\n", f);
}

enum { MAX_LIST = 256 };

typedef struct Options {
	const char *command;
	const char *model;
	bool json;
	bool markdown;                /* ops */
	bool plan;
	bool keep;
	bool passes;                  /* info/dump --passes */
	bool export_api;              /* compile --export */
	bool help;                    /* -h, --help: after parsing, for the command given */
	bool verbose;                 /* -v: report compile stages */
	bool no_cc;                   /* compile --no-cc */
	bool zipmap_tensor;           /* --zipmap=tensor (ops/ml.c) */
	bool winograd;                /* compile --winograd (ops/conv_algo.c) */
	bool reproducible;            /* verify --reproducible (reproduce.c) */
	bool shared;                  /* compile --shared */
	int trees;                    /* compile, verify --trees (EmitTrees) */
	PassOptions popts;            /* --no-opt, --no-pass, --weights-dtype */
	int opt_level;
	const char *name, *outdir, *target;
	const char *svg;              /* info --plan --svg FILE */
	const char *depfile;          /* compile --depfile FILE */
	uint64_t max_weight_bytes;    /* compile --max-weights; 0: the default */
	char **paths;                 /* verify: every CASE_DIR */
	int npaths;
	size_t max_memory_mb;
	double rtol, atol;            /* verify --tolerance; rtol < 0: the default */
	Limits limits;                /* --max-nodes, --max-elements, --max-arena, --max-c-size, --max-depth */
	int64_t batches[MAX_LIST];
	int nbatches;
	ShapeOverride shapes[MAX_LIST];
	BatchDim batch_dims[MAX_LIST];
	DimValue dims[MAX_LIST];
	int64_t buckets[MAX_LIST];    /* --dim SYMBOL=v1,v2,...: the one dim with several values */
	int nbuckets;
	const char *bucket_symbol;
	Freeze freezes[MAX_LIST];
	const char *rules[MAX_LIST];  /* --batch-rule */
	int nrules;
	char *pad_symbol;             /* check --pad-check SYMBOL=B1,... */
	int64_t pad_buckets[MAX_LIST];
	int npad_buckets;
	const char *masks[MAX_LIST];  /* --mask */
	int nmasks;
	BindOptions bind;
} Options;

static int cmp_int64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Parses "N" or "N,N,...": positive integers; returns the count or -1. */
static int parse_int_list(const char *s, int64_t *out, int max, int64_t min)
{
	int n = 0;
	while (*s) {
		char *end;
		errno = 0;
		long long v = strtoll(s, &end, 10);
		if (end == s || errno || v < min || v > (1LL << 31) || n == max)
			return -1;
		out[n++] = v;
		s = end;
		if (*s == ',' && s[1])
			s++;
		else if (*s)
			return -1;
	}
	return n;
}

/* --shape's dims: integers, and at most one name (N, batch, ...) that marks
 * the batch axis, which keeps its per-signature size. Returns the rank or -1. */
static int parse_shape_dims(const char *s, int64_t *out, int *batch_axis)
{
	char buf[256], *tok, *save = NULL;
	*batch_axis = -1;
	if (strlen(s) >= sizeof buf)
		return -1;
	strcpy(buf, s);
	int n = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == KILN_MAX_RANK)
			return -1;
		if ((*tok >= 'A' && *tok <= 'Z') || (*tok >= 'a' && *tok <= 'z') || *tok == '_') {
			if (*batch_axis >= 0)
				return -1;
			*batch_axis = n;
			out[n++] = 1;  /* replaced by the batch size of each signature */
		} else if (parse_int_list(tok, &out[n], 1, 0) == 1) {
			n++;
		} else {
			return -1;
		}
	}
	return n;
}

/* A flag's value: "--flag=value" or "--flag value". NULL if it is not this flag. */
static const char *flag_value(int argc, char **argv, int *i, const char *flag, bool *missing)
{
	size_t n = strlen(flag);
	const char *a = argv[*i];
	if (strncmp(a, flag, n) != 0 || (a[n] != '=' && a[n]))
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (*i + 1 < argc)
		return argv[++*i];
	*missing = true;
	return "";
}

static int usage_error(const char *fmt, const char *arg)
{
	fputs("kiln: error: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\nTry 'kiln --help'.\n", stderr);
	return EXIT_ERROR;
}

/* The flag of the help's options nearest to an unknown one, if it is a likely
 * misspelling: at most 2 edits (insertions, deletions, substitutions, or a
 * swap of neighbours) away, and fewer than a third of its letters; else NULL. */
static const char *nearest_flag(const char *arg, char *buf, size_t bufsize)
{
	char given[64];
	size_t n = strcspn(arg, "=");
	if (n >= sizeof given)
		return NULL;
	memcpy(given, arg, n);
	given[n] = 0;
	int best = 3;
	const char *found = NULL;
	for (size_t i = 0; i < sizeof options_help / sizeof options_help[0]; i++) {
		/* the flags of a row: "-o DIR, --output=DIR" holds -o and --output */
		for (const char *p = options_help[i].left; (p = strchr(p, '-')) != NULL;) {
			size_t len = strcspn(p, "=, ");
			char flag[64];
			if (len < sizeof flag && len > 1) {
				memcpy(flag, p, len);
				flag[len] = 0;
				/* optimal string alignment distance, rows of at most 64 */
				int d[3][65], m = (int)strlen(flag), k = (int)n;
				for (int b = 0; b <= m; b++)
					d[0][b] = b;
				int *prev2 = NULL, *prev = d[0];
				for (int a = 1; a <= k; a++) {
					int *cur = d[a % 3];
					cur[0] = a;
					for (int b = 1; b <= m; b++) {
						int cost = given[a - 1] != flag[b - 1];
						int v = prev[b - 1] + cost;
						if (prev[b] + 1 < v)
							v = prev[b] + 1;
						if (cur[b - 1] + 1 < v)
							v = cur[b - 1] + 1;
						if (prev2 && a > 1 && b > 1 && given[a - 1] == flag[b - 2] &&
						    given[a - 2] == flag[b - 1] && prev2[b - 2] + 1 < v)
							v = prev2[b - 2] + 1;
						cur[b] = v;
					}
					prev2 = prev;
					prev = cur;
				}
				int dist = prev[m];
				if (dist < best && dist * 3 < m - 1 && strcmp(flag, given) != 0) {
					best = dist;
					snprintf(buf, bufsize, "%s", flag);
					found = buf;
				}
			}
			p += len;
		}
	}
	return found;
}

/* The limits of docs/limits.md: true if argv[*i] is one (bad: its value is not
 * a number in range). Sizes in MiB are stored in bytes. */
static bool limit_flag(int argc, char **argv, int *i, Limits *l, bool *missing, bool *bad)
{
	static const struct {
		const char *flag;
		size_t field;
		int shift;
		int64_t max;
	} flags[] = {
		{"--max-nodes", offsetof(Limits, max_nodes), 0, INT64_MAX},
		{"--max-elements", offsetof(Limits, max_elements), 0, INT64_MAX},
		{"--max-arena", offsetof(Limits, max_arena_bytes), 20, INT64_MAX >> 20},
		{"--max-c-size", offsetof(Limits, max_c_bytes), 20, INT64_MAX >> 20},
		{"--max-depth", offsetof(Limits, max_depth), 0, KILN_MAX_DEPTH_CAP},
	};
	for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++) {
		const char *v = flag_value(argc, argv, i, flags[k].flag, missing);
		if (!v)
			continue;
		char *end;
		errno = 0;
		long long n = strtoll(v, &end, 10);
		*bad = !*missing && (!*v || *end || errno || n < 1 || n > flags[k].max);
		if (!*bad)
			*(int64_t *)((char *)l + flags[k].field) = (int64_t)n << flags[k].shift;
		return true;
	}
	return false;
}

/* A size in bytes: digits and an optional binary suffix K, M, G or T (also
 * KiB, MB...). false if it is not one, is 0, or does not fit 64 bits. */
static bool parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	if (*s < '0' || *s > '9')
		return false;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || v == 0)
		return false;
	int shift = 0;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	case 'T': case 't': shift = 40; end++; break;
	default: break;
	}
	if (shift && *end == 'i')
		end++;
	if (shift && (*end == 'B' || *end == 'b'))
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return false;
	*out = (uint64_t)v << shift;
	return true;
}

/* Returns -1 to go on, else an exit status. */
static int parse_args(int argc, char **argv, Options *o)
{
	o->max_memory_mb = 4096;
	o->rtol = -1;
	o->limits = kiln_default_limits;
	o->opt_level = -1;
	bool no_more_flags = false;
	o->bind.shapes = o->shapes;
	o->bind.batch_dims = o->batch_dims;
	o->bind.freezes = o->freezes;
	o->bind.dims = o->dims;
	o->bind.check_declared = true;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		bool missing = false, bad = false;
		if (!no_more_flags && a[0] == '-' && a[1]) {
			if (strcmp(a, "--") == 0) {
				no_more_flags = true;
			} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
				o->help = true;
			} else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
				o->verbose = true;
			} else if (strcmp(a, "--version") == 0) {
				printf("kiln %s\n", KILN_VERSION_STRING);
				return 0;
			} else if (strcmp(a, "--json") == 0) {
				o->json = true;
			} else if (strcmp(a, "--plan") == 0) {
				o->plan = true;
			} else if (strcmp(a, "--markdown") == 0) {
				o->markdown = true;
			} else if (strcmp(a, "--keep") == 0) {
				o->keep = true;
			} else if (strcmp(a, "--no-opt") == 0) {
				o->popts.no_opt = true;
			} else if (strcmp(a, "--passes") == 0) {
				o->passes = true;
			} else if (strcmp(a, "--export") == 0) {
				o->export_api = true;
			} else if (strcmp(a, "--no-cc") == 0) {
				o->no_cc = true;
			} else if ((v = flag_value(argc, argv, &i, "--zipmap", &missing))) {
				if (strcmp(v, "tensor") == 0)
					o->zipmap_tensor = true;
				else if (!missing)
					return usage_error("--zipmap takes tensor, got '%s'", v);
			} else if (strcmp(a, "--winograd") == 0) {
				o->winograd = true;
			} else if (strcmp(a, "--reproducible") == 0) {
				o->reproducible = true;
			} else if (strcmp(a, "--shared") == 0) {
				o->shared = true;
			} else if ((v = flag_value(argc, argv, &i, "--trees", &missing))) {
				if (strcmp(v, "auto") == 0)
					o->trees = TREES_AUTO;
				else if (strcmp(v, "code") == 0)
					o->trees = TREES_CODE;
				else if (strcmp(v, "arrays") == 0)
					o->trees = TREES_ARRAYS;
				else if (!missing)
					return usage_error("--trees takes auto, code or arrays, got '%s'", v);
			} else if ((v = flag_value(argc, argv, &i, "--no-pass", &missing))) {
				int id = pass_lookup(v);
				if (id == NONE && !missing)
					return usage_error("--no-pass: unknown pass '%s' (noop, dedup, cse, einsum, "
					                   "fold, lastpos, mlpconv, attention, fuse, addnorm, edgeconv, convchain, "
					                   "scatterrows, dce, "
					                   "ewchain, "
					                   "f16)", v);
				if (id != NONE)
					o->popts.disabled[id] = true;
			} else if ((v = flag_value(argc, argv, &i, "--qdq", &missing))) {
				if (!missing && strcmp(v, "exact") != 0 && strcmp(v, "float") != 0)
					return usage_error("--qdq needs exact or float, got '%s'", v);
				if (!missing)
					o->popts.qdq_float = strcmp(v, "float") == 0;
			} else if ((v = flag_value(argc, argv, &i, "--weights-dtype", &missing))) {
				if (!missing && !weights_dtype_parse(v, &o->popts.weights_dtype))
					return usage_error("--weights-dtype needs fp32, fp16 or keep, got '%s'", v);
			} else if ((v = flag_value(argc, argv, &i, "--depfile", &missing))) {
				if (!missing && !*v)
					return usage_error("%s needs a file name", a);
				o->depfile = v;
			} else if ((v = flag_value(argc, argv, &i, "--max-weights", &missing))) {
				if (!missing && !parse_size(v, &o->max_weight_bytes))
					return usage_error("--max-weights needs a size in bytes like 512M or 4G, "
					                   "got '%s'", v);
			} else if ((v = flag_value(argc, argv, &i, "--svg", &missing))) {
				o->svg = v;
			} else if ((v = flag_value(argc, argv, &i, "--name", &missing))) {
				o->name = v;
			} else if ((v = flag_value(argc, argv, &i, "--output", &missing)) ||
			           (v = flag_value(argc, argv, &i, "-o", &missing))) {
				o->outdir = v;
			} else if ((v = flag_value(argc, argv, &i, "--target", &missing))) {
				o->target = v;
			} else if (strncmp(a, "-O", 2) == 0 && a[2] >= '0' && a[2] <= '3' && !a[3]) {
				o->opt_level = a[2] - '0';
			} else if (strcmp(a, "-O") == 0) {
				/* -O N as well as -ON */
				if (i + 1 == argc)
					return usage_error("%s needs a value", a);
				v = argv[++i];
				if (v[0] < '0' || v[0] > '3' || v[1])
					return usage_error("-O needs a level 0 to 3, got '%s'", v);
				o->opt_level = v[0] - '0';
			} else if ((v = flag_value(argc, argv, &i, "--batch-rule", &missing))) {
				if (o->nrules == MAX_LIST)
					return usage_error("too many --batch-rule flags at '%s'", v);
				o->rules[o->nrules++] = v;
			} else if ((v = flag_value(argc, argv, &i, "--batch", &missing))) {
				o->nbatches = parse_int_list(v, o->batches, MAX_LIST, 1);
				if (o->nbatches <= 0)
					return usage_error("--batch needs sizes like 1,8,64, got '%s'", v);
				for (int x = 0; x < o->nbatches; x++)
					for (int y = 0; y < x; y++)
						if (o->batches[x] == o->batches[y])
							return usage_error("--batch lists a size twice: '%s'", v);
			} else if ((v = flag_value(argc, argv, &i, "--shape", &missing))) {
				const char *eq = strrchr(v, '=');
				ShapeOverride *so = &o->shapes[o->bind.nshapes];
				if (!eq || eq == v || o->bind.nshapes == MAX_LIST)
					return usage_error("--shape needs INPUT=D0,D1,..., got '%s'", v);
				int batch_axis;
				so->rank = parse_shape_dims(eq + 1, so->dims, &batch_axis);
				if (so->rank < 0 && eq[1])
					return usage_error("--shape needs INPUT=D0,D1,... (one dim may be N, the "
					                   "batch axis), got '%s'", v);
				so->rank = so->rank < 0 ? 0 : so->rank;
				so->input = strndup(v, (size_t)(eq - v));
				o->bind.nshapes++;
				if (batch_axis >= 0) {  /* as --batch-dim INPUT=AXIS */
					if (o->bind.nbatch_dims == MAX_LIST)
						return usage_error("too many --batch-dim and --shape flags at '%s'", v);
					o->batch_dims[o->bind.nbatch_dims++] =
						(BatchDim){.input = strndup(v, (size_t)(eq - v)), .axis = batch_axis};
				}
			} else if ((v = flag_value(argc, argv, &i, "--freeze", &missing))) {
				const char *eq = strchr(v, '=');
				if (!eq || eq == v || o->bind.nfreezes == MAX_LIST)
					return usage_error("--freeze needs INPUT=V0,V1,..., got '%s'", v);
				o->freezes[o->bind.nfreezes++] =
					(Freeze){.input = strndup(v, (size_t)(eq - v)), .text = eq + 1};
			} else if ((v = flag_value(argc, argv, &i, "--dim", &missing))) {
				const char *eq = strrchr(v, '=');
				int64_t values[MAX_LIST];
				int nv = eq ? parse_int_list(eq + 1, values, MAX_LIST, 0) : -1;
				if (!eq || eq == v || o->bind.ndims == MAX_LIST || nv < 1)
					return usage_error("--dim needs SYMBOL=VALUE or SYMBOL=V1,V2,..., got '%s'", v);
				if (nv > 1) {   /* buckets: compiled at each value (docs/batching.md) */
					if (o->nbuckets)
						return usage_error("--dim '%s': only one dim may have several values "
						                   "(buckets)", v);
					qsort(values, (size_t)nv, sizeof values[0], cmp_int64);
					for (int k = 0; k < nv; k++)
						if (values[k] < 1 || (k && values[k] == values[k - 1]))
							return usage_error("--dim '%s': bucket sizes must be distinct and "
							                   "positive", v);
					if (nv > KILN_BUCKETS_MAX)
						return usage_error("--dim '%s': at most 16 buckets (KILN_BUCKETS_MAX)", v);
					memcpy(o->buckets, values, (size_t)nv * sizeof values[0]);
					o->nbuckets = nv;
				}
				o->dims[o->bind.ndims++] =
					(DimValue){.symbol = strndup(v, (size_t)(eq - v)), .value = values[nv - 1]};
				if (nv > 1)
					o->bucket_symbol = o->dims[o->bind.ndims - 1].symbol;
			} else if ((v = flag_value(argc, argv, &i, "--pad-check", &missing))) {
				const char *eq = strrchr(v, '=');
				if (!eq || eq == v || o->pad_symbol ||
				    (o->npad_buckets = parse_int_list(eq + 1, o->pad_buckets, MAX_LIST, 1)) <= 0)
					return usage_error("--pad-check needs SYMBOL=B1,B2,... once, got '%s'", v);
				o->pad_symbol = strndup(v, (size_t)(eq - v));
			} else if ((v = flag_value(argc, argv, &i, "--mask", &missing))) {
				if (o->nmasks == MAX_LIST || !*v)
					return usage_error("--mask needs an input name, got '%s'", v);
				o->masks[o->nmasks++] = v;
			} else if ((v = flag_value(argc, argv, &i, "--batch-dim", &missing))) {
				const char *eq = strrchr(v, '=');
				int64_t axis;
				BatchDim *bd = &o->batch_dims[o->bind.nbatch_dims];
				if (!eq || eq == v || o->bind.nbatch_dims == MAX_LIST ||
				    parse_int_list(eq + 1, &axis, 1, 0) != 1 || axis >= KILN_MAX_RANK)
					return usage_error("--batch-dim needs INPUT=AXIS, got '%s'", v);
				bd->input = strndup(v, (size_t)(eq - v));
				bd->axis = (int)axis;
				o->bind.nbatch_dims++;
			} else if (limit_flag(argc, argv, &i, &o->limits, &missing, &bad)) {
				if (bad)
					return usage_error(strncmp(a, "--max-depth", 11) == 0
					                   ? "%s needs a whole number from 1 to 256"
					                   : "%s needs a positive whole number", a);
			} else if ((v = flag_value(argc, argv, &i, "--tolerance", &missing))) {
				char *end, *end2 = NULL;
				errno = 0;
				o->rtol = strtod(v, &end);
				if (*end == ',')
					o->atol = strtod(end + 1, &end2);
				bool bad_tol = !*v || *end != ',' || end2 == end + 1 || *end2 || errno ||
				               !(o->rtol >= 0 && o->rtol < HUGE_VAL) ||
				               !(o->atol >= 0 && o->atol < HUGE_VAL);
				if (bad_tol && !missing)
					return usage_error("--tolerance needs RTOL,ATOL (two numbers >= 0), got '%s'",
					                   v);
			} else if ((v = flag_value(argc, argv, &i, "--max-memory", &missing))) {
				char *end;
				errno = 0;
				unsigned long long mb = strtoull(v, &end, 10);
				if (!*v || *end || errno || mb == 0 || mb > (SIZE_MAX >> 20))
					return usage_error("--max-memory needs a size in MiB, got '%s'", v);
				o->max_memory_mb = (size_t)mb;
			} else {
				char near[64];
				if (nearest_flag(a, near, sizeof near)) {
					fprintf(stderr, "kiln: error: unknown option '%s' (did you mean '%s'?)\n"
					        "Try 'kiln --help'.\n", a, near);
					return EXIT_ERROR;
				}
				return usage_error("unknown option '%s'", a);
			}
			if (missing)
				return usage_error("%s needs a value", a);
		} else if (!o->command) {
			o->command = a;
		} else if (!o->model) {
			o->model = a;
			o->paths = argv + i;
			o->npaths = 1;
		} else if (strcmp(o->command, "verify") == 0 && argv + i == o->paths + o->npaths) {
			o->npaths++;  /* consecutive case folders */
		} else {
			return usage_error("unexpected argument '%s'", a);
		}
	}
	if (o->help) {
		print_help(stdout, o->command);
		return 0;
	}
	if (!o->command)
		return usage_error("%s", "no command given");
	if (strcmp(o->command, "info") && strcmp(o->command, "check") && strcmp(o->command, "dump") &&
	    strcmp(o->command, "compile") && strcmp(o->command, "verify") && strcmp(o->command, "ops"))
		return usage_error("unknown command '%s'", o->command);
	if (o->markdown && strcmp(o->command, "ops"))
		return usage_error("--markdown goes with 'ops', not '%s'", o->command);
	if (strcmp(o->command, "ops") == 0 && o->model)
		return usage_error("'ops' takes no MODEL, got '%s'", o->model);
	if (strcmp(o->command, "ops") == 0)
		return -1;
	if (o->opt_level < 0)
		o->opt_level = strcmp(o->command, "verify") == 0 ? 1 : 2;
	if (o->passes && ((strcmp(o->command, "info") && strcmp(o->command, "dump")) || o->json))
		return usage_error("--passes goes with 'info' (not --json) or 'dump', not '%s'",
		                   o->json ? "--json" : o->command);
	if (o->nrules && strcmp(o->command, "compile"))
		return usage_error("--batch-rule goes with 'compile', not '%s'", o->command);
	if (o->svg && (strcmp(o->command, "info") || !o->plan || o->json))
		return usage_error("%s", "--svg FILE goes with 'info --plan' (not --json)");
	if (o->trees != TREES_AUTO && strcmp(o->command, "compile") && strcmp(o->command, "verify"))
		return usage_error("--trees goes with 'compile' or 'verify', not '%s'", o->command);
	if ((o->export_api || o->no_cc || o->verbose || o->depfile || o->shared) &&
	    strcmp(o->command, "compile"))
		return usage_error("--export, --no-cc, --depfile, --shared and -v go with 'compile', "
		                   "not '%s'", o->command);
	if (o->rtol >= 0 && strcmp(o->command, "verify"))
		return usage_error("--tolerance goes with 'verify', not '%s'", o->command);
	if (o->winograd && strcmp(o->command, "compile") && strcmp(o->command, "verify"))
		return usage_error("--winograd goes with 'compile' or 'verify', not '%s'", o->command);
	if (o->reproducible && strcmp(o->command, "verify"))
		return usage_error("--reproducible goes with 'verify', not '%s'", o->command);
	if (o->reproducible && o->nbatches > 16)
		return usage_error("%s", "verify --reproducible compiles at most 16 batch sizes");
	for (int b = 0; o->reproducible && b < o->nbatches; b++)
		if (o->batches[b] > 256)
			return usage_error("%s", "verify --reproducible runs batch sizes up to 256");
	if (o->max_weight_bytes && strcmp(o->command, "compile") && strcmp(o->command, "check"))
		return usage_error("--max-weights goes with 'compile' or 'check', not '%s'", o->command);
	if (o->shared && (o->no_cc || o->target))
		return usage_error("--shared builds NAME.so for this host: not with %s",
		                   o->no_cc ? "--no-cc" : "--target");
	if (strcmp(o->command, "compile") == 0 && !o->nbatches)
		return usage_error("%s", "compile needs --batch, e.g. --batch=1,8");
	if (!o->model)
		return usage_error("'%s' needs a MODEL file", o->command);
	if (o->pad_symbol && strcmp(o->command, "check"))
		return usage_error("--pad-check goes with 'check', not '%s'", o->command);
	if (o->nmasks && !o->pad_symbol && !o->nbuckets)
		return usage_error("%s", "--mask goes with --pad-check or with buckets (--dim SYMBOL=V1,V2,...)");
	if (o->json && strcmp(o->command, "info"))
		return usage_error("--json goes with 'info', not '%s'", o->command);
	if (o->plan && (strcmp(o->command, "check") == 0 || strcmp(o->command, "verify") == 0))
		return usage_error("--plan goes with 'info' or 'dump', not '%s'", o->command);
	if ((o->nbatches || o->bind.nshapes || o->bind.nbatch_dims || o->bind.nfreezes ||
	     o->bind.ndims) && strcmp(o->command, "verify") == 0 &&
	    !((o->nbatches == 1 || o->reproducible) && !o->bind.nshapes && !o->bind.nbatch_dims && !o->bind.nfreezes &&
	      !o->bind.ndims))
		return usage_error("--shape, --dim, --batch-dim and --freeze go with 'info', 'check', "
		                   "'dump' or 'compile', not '%s'; verify takes one --batch", o->command);
	/* Shapes without --batch: one signature; the batch only matters for symbolic axes. */
	if (!o->nbatches && !o->pad_symbol && (o->bind.nshapes || o->bind.nbatch_dims ||
	                                       o->bind.nfreezes || o->bind.ndims || o->plan))
		o->batches[o->nbatches++] = 1;
	/* check --pad-check binds its dim: with --batch, the signatures are at
	 * the largest bucket, and the check's advice is only for dims still open */
	if (o->pad_symbol && o->bind.ndims < MAX_LIST) {
		int64_t hi = 0;
		for (int i = 0; i < o->npad_buckets; i++)
			hi = o->pad_buckets[i] > hi ? o->pad_buckets[i] : hi;
		o->dims[o->bind.ndims++] = (DimValue){.symbol = strdup(o->pad_symbol), .value = hi};
	}
	return -1;
}

/* A compile's stages on stderr: with -v, or once it has taken over 2 s
 * (then the earlier stages too), so a long compile shows where it is. */
typedef struct Stages {
	struct timespec start, last;
	bool verbose, shown;
	int npending;
	const char *pending[8];
	double pending_s[8];
} Stages;

static double seconds_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) * 1e-9;
}

static void stage_done(void *ud, const char *what)
{
	Stages *st = ud;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double step = seconds_between(&st->last, &now), total = seconds_between(&st->start, &now);
	st->last = now;
	if (!st->verbose && !st->shown && total <= 2.0) {
		if (st->npending < 8) {
			st->pending[st->npending] = what;
			st->pending_s[st->npending++] = step;
		}
		return;
	}
	for (int i = 0; i < st->npending; i++)
		fprintf(stderr, "kiln: %s: %.2f s\n", st->pending[i], st->pending_s[i]);
	st->npending = 0;
	st->shown = true;
	fprintf(stderr, "kiln: %s: %.2f s (%.2f s so far)\n", what, step, total);
}

static int run_compile(const Options *o, Model *m, Stages *stages)
{
	CompileOptions co = {.name = o->name, .outdir = o->outdir, .target = o->target,
	                     .batches = o->batches, .nbatches = o->nbatches, .bind = &o->bind,
	                     .opt_level = o->opt_level, .rules = o->rules, .nrules = o->nrules,
	                     .passes = &o->popts, .export_api = o->export_api, .no_cc = o->no_cc,
	                     .trees = o->trees, .depfile = o->depfile,
	                     .max_weight_bytes = o->max_weight_bytes, .shared = o->shared,
	                     .bucket_symbol = o->bucket_symbol, .bucket_values = o->buckets,
	                     .nbuckets = o->nbuckets, .masks = o->masks, .nmasks = o->nmasks,
	                     .evaluate_padding = pad_evaluate, .stage = stage_done, .stage_ud = stages};
	CompileResult cr;
	compile_model(m, &co, &cr);
	printf("%s\n%s\n%s (%d symbols, %llu bytes)\n", cr.h_path, cr.c_path, cr.weights_path,
	       cr.nsymbols, (unsigned long long)cr.weight_bytes);
	if (cr.so_path)
		printf("%s (load this one)\n", cr.so_path);
	else if (cr.o_path)
		printf("%s (link this one)\n", cr.o_path);
	printf("arena: %lld bytes at the largest batch size\n", (long long)cr.arena_bytes);
	printf("context: %llu bytes per thread for kiln_run (%s)\n",
	       (unsigned long long)cr.context_bytes,
	       cr.batch_independent ? "any batch size" : "compiled batch sizes only");
	if (!cr.batch_independent)
		fprintf(stderr, "kiln: warning: %s: only the compiled batch sizes can run: %s\n", o->model,
		        cr.batch_mixing);
	return 0;
}

/* kiln check --batch: compile's stages through code generation
 * (compile_check), so that a model check passes does not fail compile on a
 * shape, an unsupported attribute value or element type, or a limit. Such
 * a failure is check's finding (stdout, exit 1); a broken file or an I/O
 * error stays an error (exit 2). */
static int check_signatures(const Options *o, Model *m)
{
	Diag *d = m->diag;
	jmp_buf jb, *outer = d->protect;
	CompileOptions co = {.batches = o->batches, .nbatches = o->nbatches, .bind = &o->bind,
	                     .passes = &o->popts, .trees = o->trees,
	                     .max_weight_bytes = o->max_weight_bytes,
	                     .bucket_symbol = o->bucket_symbol, .bucket_values = o->buckets,
	                     .nbuckets = o->nbuckets, .masks = o->masks, .nmasks = o->nmasks,
	                     .evaluate_padding = pad_evaluate};
	char sizes[256];
	size_t len = 0;
	for (int i = 0; i < o->nbatches && len < sizeof sizes; i++)
		len += (size_t)snprintf(sizes + len, sizeof sizes - len, "%s%lld", i ? "," : "",
		                        (long long)o->batches[i]);
	d->protect = &jb;
	if (setjmp(jb) != 0) {
		d->protect = outer;
		if (d->status != KILN_UNSUPPORTED && d->status != KILN_SHAPE_ERROR &&
		    d->status != KILN_LIMIT)
			longjmp(*outer, 1);
		printf("%s\n%s: cannot be compiled at batch %s\n", d->msg, o->model, sizes);
		return EXIT_UNSUPPORTED;
	}
	compile_check(m, &co);
	d->protect = outer;
	printf("%s: shapes inferred and buffers planned at batch %s\n", o->model, sizes);
	return 0;
}

/* kiln check --pad-check SYMBOL=B1,...: padding proven harmless, or the
 * node where it may leak (stderr, exit 1). Runs on the graph as loaded. */
static int check_padding(const Options *o, Model *m)
{
	PadOptions po = {.symbol = o->pad_symbol, .buckets = o->pad_buckets,
	                 .nbuckets = o->npad_buckets, .masks = o->masks, .nmasks = o->nmasks};
	PadCheck pc;
	pad_check(m, &o->bind, &po, &pc);
	if (!pc.proven) {   /* what the rules cannot prove is tested by evaluation */
		const char *diff, *tested;
		if (pad_evaluate(m, &o->bind, &po, &diff, &tested)) {
			printf("%s: padding on %s not proven by the rules (%s), but tested harmless by "
			       "evaluation: %s\n", o->model, o->pad_symbol, pc.why, tested);
			return 0;
		}
		fprintf(stderr, "kiln: error: %s: %s; evaluated: %s\n", o->model, pc.why,
		        diff ? diff : "no bucket run to compare");
		return EXIT_UNSUPPORTED;
	}
	int64_t lo = o->pad_buckets[0];
	for (int i = 1; i < o->npad_buckets; i++)
		lo = o->pad_buckets[i] < lo ? o->pad_buckets[i] : lo;
	if (lo < pc.minimum) {
		fprintf(stderr, "kiln: error: %s: --pad-check %s: bucket %lld is smaller than %lld, the "
		        "k of a TopK over %s\n", o->model, o->pad_symbol, (long long)lo,
		        (long long)pc.minimum, o->pad_symbol);
		return EXIT_UNSUPPORTED;
	}
	printf("%s: padding on %s proven harmless: outputs at real positions are the same at every "
	       "bucket >= max(length, %lld) (masks: %s)\n", o->model, o->pad_symbol,
	       (long long)pc.minimum, pc.nmask_inputs ? pc.masks : "none");
	return 0;
}

static int run(const Options *o)
{
	if (strcmp(o->command, "ops") == 0)
		return report_ops(stdout, o->markdown);
	if (strcmp(o->command, "verify") == 0) {
		VerifyOptions vo = {.batch = o->nbatches ? o->batches[0] : 0, .opt_level = o->opt_level,
		                    .keep = o->keep, .max_memory_bytes = o->max_memory_mb << 20,
		                    .passes = &o->popts, .trees = o->trees,
		                    .zipmap_tensor = o->zipmap_tensor, .winograd = o->winograd,
		                    .rtol = o->rtol, .atol = o->atol,
		                    .reproducible = o->reproducible, .batches = o->batches,
		                    .nbatches = o->nbatches};
		if (o->reproducible)
			return reproduce_run(&vo, o->paths, o->npaths, stdout);
		return verify_run(&vo, o->paths, o->npaths, stdout);
	}
	Diag d = {.file = o->model};
	Arena arena;
	arena_init(&arena, o->max_memory_mb << 20, &d);
	jmp_buf jb;
	d.protect = &jb;
	Model *volatile m = NULL;
	volatile int rc = 0;
	Stages stages = {.verbose = o->verbose};
	clock_gettime(CLOCK_MONOTONIC, &stages.start);
	stages.last = stages.start;
	if (setjmp(jb) == 0) {
		m = model_new(o->model, &arena, &d);
		m->limits = o->limits;
		m->zipmap_tensor = o->zipmap_tensor;
		m->winograd = o->winograd;
		model_load(m);
		if (strcmp(o->command, "compile") == 0)
			stage_done(&stages, "model loaded");
		if (m->nwarnings)
			fprintf(stderr, "kiln: warning: %s: %s%s\n", o->model, m->warning,
			        m->nwarnings > 1 ? " (and more like it)" : "");
		ir_verify(m->graph);
		InfoOptions io = {.json = o->json, .batches = o->batches, .nbatches = o->nbatches,
		                  .bind = &o->bind, .plan = o->plan,
		                  .optimize = o->passes ? NULL : &o->popts, .svg_path = o->svg};
		PassReport pr;
		if (o->passes && strcmp(o->command, "dump") == 0)
			passes_run(m, &o->popts, o->batches, o->nbatches, &o->bind, &pr);
		if (strcmp(o->command, "info") == 0) {
			report_info(m, stdout, &io);
			if (o->passes) {
				passes_run(m, &o->popts, o->batches, o->nbatches, &o->bind, &pr);
				passes_print(&pr, stdout);
			}
		}
		if (strcmp(o->command, "info") == 0)
			;
		else if (strcmp(o->command, "check") == 0) {
			rc = report_check(m, stdout, &o->bind) ? EXIT_UNSUPPORTED : 0;
			if (rc == 0 && o->pad_symbol)
				rc = check_padding(o, m);
			if (rc == 0 && o->nbatches)
				rc = check_signatures(o, m);
		}
		else if (strcmp(o->command, "compile") == 0)
			rc = run_compile(o, m, &stages);
		else
			report_dump(m, stdout, &io);
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
	for (int i = 0; i < o.bind.nshapes; i++)
		free((char *)o.shapes[i].input);
	for (int i = 0; i < o.bind.nbatch_dims; i++)
		free((char *)o.batch_dims[i].input);
	for (int i = 0; i < o.bind.nfreezes; i++)
		free((char *)o.freezes[i].input);
	for (int i = 0; i < o.bind.ndims; i++)
		free((char *)o.dims[i].symbol);
	free(o.pad_symbol);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "kiln: error: writing output: %s\n", strerror(errno));
		rc = EXIT_ERROR;
	}
	return rc;
}
