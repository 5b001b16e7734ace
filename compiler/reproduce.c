/*
 * reproduce.c - `kiln verify --reproducible`: the same output bits under
 * every instruction set, at every batch size and under stitching, and on
 * aarch64 (issue 30, docs/reproducibility.md).
 *
 * For each case (a folder with model.onnx and test_data_set_0, whose inputs
 * are used, or a .onnx file, given random float inputs) the model is
 * compiled once for this host and linked with a small runner program that
 * kiln writes (RUNNER_C below). The runner is run as a child process under
 * KILN_ISA=ref, avx2 and avx512, as far as the CPU has them (the runner says
 * which variant libkiln picked, so a variant is never compared with
 * itself), on the same samples. When the model has a batch axis it runs
 * every n = 1..70 and every compiled batch size on the first n samples
 * through kiln_run (compiled sizes and stitched ones), then every sample
 * alone. The checks:
 *   isa ref=X     every output byte of all those runs is the same under X;
 *   rows X        row r of each batch of n equals sample r run alone, under X;
 *   aarch64       the model compiled with --target aarch64-linux-gnu, linked
 *                 with a cross-built libkiln and run under qemu-aarch64, on
 *                 the compiled sizes, n = 57 and four samples alone: the
 *                 same bytes as x86-64's ref.
 * One line per check with the FNV-1a 64 hash of the bytes compared, notes
 * for checks that cannot run here (no AVX-512, no cross toolchain), and a
 * verdict naming the first differing output and element. Everything runs
 * in a temporary folder (--keep keeps it).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compile.h"
#include "load.h"
#include "sig.h"
#include "kiln/model.h"

extern char **environ;

enum { MAX_IO = 64, MAX_RUNS = 512, STITCH_MAX = 70, A64_SINGLES = 4 };

/* The runner, compiled with -DMODEL=m_model -include m.h:
 *   runner                       describe the model (below) and exit
 *   runner ROWS IN... OUT RUN... each RUN "n:first" runs kiln_run on samples
 *                                first..first+n-1, "once" the first compiled
 *                                size's entry point on the whole inputs;
 *                                OUT gets every output's bytes, run by run.
 * Each IN file holds ROWS samples (an input with a batch axis) or the whole
 * input. The description, on stdout: "isa NAME", then per input "in DTYPE
 * AXIS BYTES", per output "out DTYPE AXIS BYTES OUTER" (BYTES at n = 1;
 * OUTER the elements before the batch axis), "batches B...". */
static const char RUNNER_C[] =
	"/* kiln verify --reproducible's runner, written by kiln. */\n"
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"#include <kiln/kernels.h>\n"
	"#include <kiln/run.h>\n"
	"\n"
	"enum { MAX_IO = 64 };\n"
	"\n"
	"static unsigned long long outer_of(const kiln_tensor_desc *t)\n"
	"{\n"
	"\tunsigned long long o = 1;\n"
	"\tfor (int k = 0; k < t->batch_axis; k++)\n"
	"\t\to *= (unsigned long long)t->dims[k];\n"
	"\treturn o;\n"
	"}\n"
	"\n"
	"static void *read_all(const char *path, unsigned long long bytes)\n"
	"{\n"
	"\tchar *p = malloc(bytes + 64);\n"
	"\tFILE *f = fopen(path, \"rb\");\n"
	"\tif (!p || !f || fread(p, 1, bytes, f) != bytes) {\n"
	"\t\tfprintf(stderr, \"runner: cannot read %llu bytes from %s\\n\", bytes, path);\n"
	"\t\texit(1);\n"
	"\t}\n"
	"\tfclose(f);\n"
	"\treturn p;\n"
	"}\n"
	"\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tconst kiln_model *m = &MODEL;\n"
	"\tint ni = m->ninputs, no = m->noutputs;\n"
	"\tprintf(\"isa %s\\n\", kiln_isa_name());\n"
	"\tfor (int i = 0; i < ni; i++)\n"
	"\t\tprintf(\"in %d %d %llu\\n\", m->inputs[i].dtype, m->inputs[i].batch_axis,\n"
	"\t\t       (unsigned long long)kiln_tensor_bytes(&m->inputs[i], 1));\n"
	"\tfor (int i = 0; i < no; i++)\n"
	"\t\tprintf(\"out %d %d %llu %llu\\n\", m->outputs[i].dtype, m->outputs[i].batch_axis,\n"
	"\t\t       (unsigned long long)kiln_tensor_bytes(&m->outputs[i], 1), outer_of(&m->outputs[i]));\n"
	"\tprintf(\"batches\");\n"
	"\tfor (int b = 0; b < m->nbatches; b++)\n"
	"\t\tprintf(\" %lld\", (long long)m->batches[b]);\n"
	"\tprintf(\"\\n\");\n"
	"\tif (argc == 1)\n"
	"\t\treturn 0;\n"
	"\tif (ni > MAX_IO || no > MAX_IO || argc < 3 + ni) {\n"
	"\t\tfprintf(stderr, \"runner: usage: runner ROWS IN... OUT RUN...\\n\");\n"
	"\t\treturn 2;\n"
	"\t}\n"
	"\tlong long rows = atoll(argv[1]);\n"
	"\tchar *x[MAX_IO];\n"
	"\tvoid *staged[MAX_IO], *y[MAX_IO];\n"
	"\tfor (int i = 0; i < ni; i++) {\n"
	"\t\tunsigned long long b1 = kiln_tensor_bytes(&m->inputs[i], 1);\n"
	"\t\tx[i] = read_all(argv[2 + i], m->inputs[i].batch_axis >= 0 ? b1 * rows : b1);\n"
	"\t\tstaged[i] = malloc(kiln_tensor_bytes(&m->inputs[i], rows) + 64);\n"
	"\t}\n"
	"\tfor (int i = 0; i < no; i++)\n"
	"\t\ty[i] = malloc(kiln_tensor_bytes(&m->outputs[i], rows) + 64);\n"
	"\tFILE *out = fopen(argv[2 + ni], \"wb\");\n"
	"\tif (!out) {\n"
	"\t\tfprintf(stderr, \"runner: cannot write %s\\n\", argv[2 + ni]);\n"
	"\t\treturn 1;\n"
	"\t}\n"
	"\tkiln_context *ctx;\n"
	"\tint st = kiln_context_create(&ctx, m);\n"
	"\tif (st != KILN_OK) {\n"
	"\t\tfprintf(stderr, \"runner: kiln_context_create: %s\\n\", kiln_status_string(st));\n"
	"\t\treturn 1;\n"
	"\t}\n"
	"\tfor (int t = 3 + ni; t < argc; t++) {\n"
	"\t\tlong long n = 1, first = 0;\n"
	"\t\tint once = strcmp(argv[t], \"once\") == 0;\n"
	"\t\tif (!once && (sscanf(argv[t], \"%lld:%lld\", &n, &first) != 2 || n < 1 || first < 0 ||\n"
	"\t\t              n + first > rows)) {\n"
	"\t\t\tfprintf(stderr, \"runner: bad run %s\\n\", argv[t]);\n"
	"\t\t\treturn 2;\n"
	"\t\t}\n"
	"\t\tkiln_input in[MAX_IO];\n"
	"\t\tkiln_output o[MAX_IO];\n"
	"\t\tconst void *inp[MAX_IO];\n"
	"\t\tvoid *outp[MAX_IO];\n"
	"\t\tfor (int i = 0; i < ni; i++) {\n"
	"\t\t\tconst kiln_tensor_desc *d = &m->inputs[i];\n"
	"\t\t\tunsigned long long b1 = kiln_tensor_bytes(d, 1), outer = d->batch_axis >= 0 ? outer_of(d) : 1;\n"
	"\t\t\tunsigned long long inner = b1 / outer;\n"
	"\t\t\tif (once || d->batch_axis < 0) {\n"
	"\t\t\t\tmemcpy(staged[i], x[i], b1);\n"
	"\t\t\t} else {\n"
	"\t\t\t\t/* sample first + k's slice q goes to (q * n + k) * inner */\n"
	"\t\t\t\tfor (long long k = 0; k < n; k++)\n"
	"\t\t\t\t\tfor (unsigned long long q = 0; q < outer; q++)\n"
	"\t\t\t\t\t\tmemcpy((char *)staged[i] + (q * n + k) * inner,\n"
	"\t\t\t\t\t\t       x[i] + (first + k) * b1 + q * inner, inner);\n"
	"\t\t\t}\n"
	"\t\t\tin[i] = (kiln_input){staged[i], d->dtype, kiln_tensor_bytes(d, n)};\n"
	"\t\t\tinp[i] = staged[i];\n"
	"\t\t}\n"
	"\t\tfor (int i = 0; i < no; i++) {\n"
	"\t\t\to[i] = (kiln_output){y[i], m->outputs[i].dtype, kiln_tensor_bytes(&m->outputs[i], n)};\n"
	"\t\t\toutp[i] = y[i];\n"
	"\t\t\tmemset(y[i], 0xa5, o[i].bytes);\n"
	"\t\t}\n"
	"\t\tif (once) {\n"
	"\t\t\tchar *arena = malloc(m->max_arena_bytes + 128);\n"
	"\t\t\tvoid *al = arena + (64 - (size_t)arena % 64) % 64;\n"
	"\t\t\tst = arena ? m->run[0](al, inp, outp) : KILN_NO_MEMORY;\n"
	"\t\t\tfree(arena);\n"
	"\t\t} else {\n"
	"\t\t\tst = kiln_run(ctx, n, in, o);\n"
	"\t\t}\n"
	"\t\tif (st != KILN_OK) {\n"
	"\t\t\tfprintf(stderr, \"runner: run %s: %s\\n\", argv[t], kiln_status_string(st));\n"
	"\t\t\treturn 1;\n"
	"\t\t}\n"
	"\t\tfor (int i = 0; i < no; i++)\n"
	"\t\t\tif (fwrite(y[i], 1, o[i].bytes, out) != o[i].bytes) {\n"
	"\t\t\t\tfprintf(stderr, \"runner: cannot write %s\\n\", argv[2 + ni]);\n"
	"\t\t\t\treturn 1;\n"
	"\t\t\t}\n"
	"\t}\n"
	"\tkiln_context_destroy(ctx);\n"
	"\tfor (int i = 0; i < ni; i++) {\n"
	"\t\tfree(x[i]);\n"
	"\t\tfree(staged[i]);\n"
	"\t}\n"
	"\tfor (int i = 0; i < no; i++)\n"
	"\t\tfree(y[i]);\n"
	"\treturn fclose(out) == 0 ? 0 : 1;\n"
	"}\n";

typedef struct Io {
	int dtype, axis;        /* axis: the batch axis, or -1 */
	uint64_t bytes1;        /* at n = 1 */
	uint64_t outer;         /* outputs: elements before the batch axis */
} Io;

/* What the runner says about the model it was linked with. */
typedef struct Desc {
	char isa[16];
	int ni, no, nb;
	Io in[MAX_IO], out[MAX_IO];
	int64_t batches[64];
} Desc;

/* A list of runs (n samples from first; n = 0: "once") and their bytes. */
typedef struct Runs {
	int count;
	int64_t n[MAX_RUNS], first[MAX_RUNS];
	uint64_t off[MAX_RUNS + 1];   /* each run's bytes start here in blob */
	unsigned char *blob;
} Runs;

typedef struct Case {
	const char *path;          /* as given */
	const char *model_path;
	const char *tmp;
	const VerifyOptions *vo;
	Arena *a;
	Diag *d;
	FILE *out;
	Model *m;
	const char *names[MAX_IO]; /* output names, from the model */
	int rt_in[MAX_IO], nin;
	Tensor data[MAX_IO];       /* test_data_set_0's inputs (a case folder) */
	const int64_t *batches;    /* the sizes to compile */
	int nbatches;
	bool batch_axis;           /* an input's first dim is symbolic: the batch */
	bool have_data;
	int64_t rows;              /* samples */
	char frozen[MAX_IO][256];  /* inputs frozen to their data (value-dependent shapes) */
	int nfrozen;
	int nchecks, ndiffer;
} Case;

/* ---- small tools ---------------------------------------------------------- */

static uint64_t fnv1a(const unsigned char *p, uint64_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (uint64_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static bool executable(const char *path)
{
	return access(path, X_OK) == 0;
}

/* name as posix_spawnp would find it: a path, or a file in $PATH. */
static bool on_path(Arena *a, const char *name)
{
	if (strchr(name, '/'))
		return executable(name);
	const char *path = getenv("PATH");
	char *copy = arena_strdup(a, path ? path : "/usr/bin:/bin");
	char *save = NULL;
	for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save))
		if (executable(arena_printf(a, "%s/%s", *dir ? dir : ".", name)))
			return true;
	return false;
}

/* Run argv to completion with KILN_ISA=isa (none: NULL), stdout and stderr
 * into files; the exit status, 128 + a signal, or -1 if it did not start. */
static int spawn(Arena *a, const char *const *argv, const char *isa, const char *out_path,
                 const char *err_path)
{
	int nenv = 0;
	while (environ[nenv])
		nenv++;
	char **env = arena_alloc(a, sizeof *env * (size_t)(nenv + 2));
	int k = 0;
	for (int i = 0; i < nenv; i++)
		if (strncmp(environ[i], "KILN_ISA=", 9) != 0)
			env[k++] = environ[i];
	if (isa)
		env[k++] = arena_printf(a, "KILN_ISA=%s", isa);
	env[k] = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	pid_t pid;
	int err = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, env);
	posix_spawn_file_actions_destroy(&fa);
	if (err) {
		errno = err;
		return -1;
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A whole file into the arena (size in *n); NULL if unreadable. */
static unsigned char *slurp(Arena *a, const char *path, uint64_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *p = size >= 0 ? arena_alloc(a, (size_t)size + 1) : NULL;
	if (p && fread(p, 1, (size_t)size, f) != (size_t)size)
		p = NULL;
	fclose(f);
	if (p) {
		p[size] = 0;
		*n = (uint64_t)size;
	}
	return p;
}

/* A tool's message for an error line: the first line of its stderr that
 * says "error", else the last line. */
static const char *last_line(Arena *a, const char *err_path)
{
	uint64_t n = 0;
	char *s = (char *)slurp(a, err_path, &n);
	if (!s || !n)
		return "(no message)";
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = 0;
	char *e = strstr(s, "error");
	if (e) {
		while (e > s && e[-1] != '\n')
			e--;
		char *nl = strchr(e, '\n');
		if (nl)
			*nl = 0;
		return e;
	}
	char *nl = strrchr(s, '\n');
	return nl ? nl + 1 : s;
}

/* Run a build tool; a failure is an error naming it and its last line. */
static void build(Case *c, const char *const *argv, const char *what)
{
	const char *o = arena_printf(c->a, "%s/tool.out", c->tmp), *e = arena_printf(c->a, "%s/tool.err", c->tmp);
	int st = spawn(c->a, argv, NULL, o, e);
	if (st < 0)
		diag_fail(c->d, KILN_IO, "cannot run %s to %s: %s", argv[0], what, strerror(errno));
	if (st)
		diag_fail(c->d, KILN_INTERNAL, "%s failed to %s (status %d): %s", argv[0], what, st,
		          last_line(c->a, e));
}

/* ---- the model ------------------------------------------------------------- */

static Model *load(Case *c)
{
	Model *m = model_new(c->model_path, c->a, c->d);
	m->zipmap_tensor = c->vo->zipmap_tensor;
	m->winograd = c->vo->winograd;
	model_load(m);
	ir_verify(m->graph);
	return m;
}

/* compile_model under its own protection: false (c->d holding the error)
 * if it failed. */
static bool try_compile(Case *c, const CompileOptions *co, CompileResult *cr)
{
	jmp_buf jb, *outer = c->d->protect;
	c->d->protect = &jb;
	bool ok = setjmp(jb) == 0;
	if (ok)
		compile_model(c->m, co, cr);
	c->d->protect = outer;
	return ok;
}

/* Compile the model afresh (the optimizer specializes a loaded graph) into
 * dir for target (NULL: this host). Inputs of a case folder get its data's
 * shapes; one whose first dim the model leaves symbolic keeps that axis as
 * the batch. A case whose shapes depend on an input's values is compiled
 * again with the inputs the compiler asks for frozen to the data's values,
 * as `kiln verify` does (the runner feeds the same data). */
static CompileResult compile_for(Case *c, const char *dir, const char *target)
{
	for (;;) {
		if (c->m)
			model_close(c->m);
		c->m = NULL;
		c->m = load(c);
		Graph *g = c->m->graph;
		ShapeOverride *shapes = arena_alloc(c->a, sizeof *shapes * MAX_IO);
		BatchDim *bdims = arena_alloc(c->a, sizeof *bdims * MAX_IO);
		Freeze *freezes = arena_alloc(c->a, sizeof *freezes * MAX_IO);
		BindOptions bind = {.shapes = shapes, .batch_dims = bdims, .freezes = freezes};
		for (int i = 0; c->have_data && i < c->nin; i++) {
			const Value *v = &g->values[c->rt_in[i]];
			const Shape *s = &c->data[i].shape;
			ShapeOverride *so = &shapes[bind.nshapes++];
			so->input = v->name;
			so->rank = s->rank;
			for (int k = 0; k < s->rank; k++)
				so->dims[k] = s->dims[k].size;
			if (c->batch_axis && s->rank > 0 && v->shape.rank > 0 && v->shape.dims[0].size < 0) {
				so->dims[0] = 1;
				bdims[bind.nbatch_dims++] = (BatchDim){.input = v->name, .axis = 0};
			}
			for (int k = 0; k < c->nfrozen; k++)
				if (strcmp(c->frozen[k], v->name) == 0)
					freezes[bind.nfreezes++] = (Freeze){.input = v->name, .value = &c->data[i]};
		}
		mkdir(dir, 0700);
		CompileOptions co = {.name = "m", .outdir = dir, .target = target, .batches = c->batches,
		                     .nbatches = c->nbatches, .bind = &bind, .opt_level = c->vo->opt_level,
		                     .passes = c->vo->passes, .trees = c->vo->trees};
		CompileResult cr;
		if (try_compile(c, &co, &cr))
			return cr;
		/* Freeze what the compiler asks for: an input of the data set without
		 * a batch axis, small, not asked for before; else the error stands. */
		bool more = c->have_data && c->nfrozen < MAX_IO &&
		            freeze_asked(c->d, c->frozen[c->nfrozen], sizeof c->frozen[0]);
		for (int k = 0; more && k < c->nfrozen; k++)
			more = strcmp(c->frozen[k], c->frozen[c->nfrozen]) != 0;
		bool found = false;
		for (int i = 0; more && i < c->nin; i++)
			if (strcmp(g->values[c->rt_in[i]].name, c->frozen[c->nfrozen]) == 0) {
				bool axis = false;
				for (int k = 0; k < bind.nbatch_dims; k++)
					axis |= strcmp(bdims[k].input, c->frozen[c->nfrozen]) == 0;
				found = !axis && freeze_candidate(&c->data[i]);
			}
		if (!found)
			longjmp(*c->d->protect, 1);
		c->nfrozen++;
		c->d->status = KILN_OK;
	}
}

/* Parse the runner's description; false if it is not one. */
static bool parse_desc(const char *s, Desc *ds)
{
	memset(ds, 0, sizeof *ds);
	int used;
	if (sscanf(s, "isa %15s%n", ds->isa, &used) != 1)
		return false;
	s += used;
	for (;;) {
		while (*s == '\n')
			s++;
		int dt, ax;
		unsigned long long b, outer;
		if (sscanf(s, "in %d %d %llu%n", &dt, &ax, &b, &used) == 3 && ds->ni < MAX_IO)
			ds->in[ds->ni++] = (Io){dt, ax, b, 1};
		else if (sscanf(s, "out %d %d %llu %llu%n", &dt, &ax, &b, &outer, &used) == 4 &&
		         ds->no < MAX_IO)
			ds->out[ds->no++] = (Io){dt, ax, b, outer ? outer : 1};
		else
			break;
		s += used;
	}
	if (strncmp(s, "batches", 7) != 0)
		return false;
	s += 7;
	long long v;
	while (ds->nb < 64 && sscanf(s, " %lld%n", &v, &used) == 1) {
		ds->batches[ds->nb++] = v;
		s += used;
	}
	return ds->nb > 0;
}

/* ---- inputs and runs ---------------------------------------------------------- */

/* A fixed sequence (splitmix64), so every run and machine sees the same inputs. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The input files: a case's data (each sample a row of it, repeated
 * cyclically to c->rows samples), or random values in [-2, 2) in steps of
 * 2^-12 (exact in every float type) for a .onnx file's float inputs. */
static const char **write_inputs(Case *c, const Desc *ds)
{
	const char **files = arena_alloc(c->a, sizeof *files * (size_t)ds->ni);
	uint64_t state = 30;
	for (int i = 0; i < ds->ni; i++) {
		/* Without a batch axis every input is whole (the descriptor may count
		 * a static dim of 1 as the batch axis at batch 1). */
		Io whole = ds->in[i];
		if (!c->batch_axis)
			whole.axis = -1;
		const Io *io = &whole;
		const char *name = c->m->graph->values[c->rt_in[i]].name;
		uint64_t count = io->axis >= 0 ? (uint64_t)c->rows : 1, bytes = io->bytes1 * count;
		unsigned char *buf = arena_alloc(c->a, bytes + 1);
		if (io->axis > 0)
			diag_fail(c->d, KILN_UNSUPPORTED, "input \"%s\": its batch axis is %d; "
			          "verify --reproducible feeds samples along axis 0", name, io->axis);
		if (c->have_data) {
			const Tensor *t = &c->data[i];
			uint64_t drows = io->axis == 0 ? (uint64_t)t->shape.dims[0].size : 1;
			if (drows == 0 || t->w.nbytes != io->bytes1 * drows)
				diag_fail(c->d, KILN_INVALID_MODEL, "input \"%s\": the data set holds %llu "
				          "bytes, not a whole number of samples of %llu bytes", name,
				          (unsigned long long)t->w.nbytes, (unsigned long long)io->bytes1);
			for (uint64_t r = 0; r < count; r++)
				memcpy(buf + r * io->bytes1, (const char *)t->w.bytes + (r % drows) * io->bytes1,
				       io->bytes1);
		} else if (io->dtype == KILN_FLOAT32 || io->dtype == KILN_FLOAT64) {
			size_t es = io->dtype == KILN_FLOAT32 ? 4 : 8;
			for (uint64_t e = 0; e < bytes / es; e++) {
				double v = ((double)(next_random(&state) >> 50) - 8192.0) / 4096.0;
				float f = (float)v;
				memcpy(buf + e * es, es == 4 ? (const void *)&f : (const void *)&v, es);
			}
		} else {
			diag_fail(c->d, KILN_UNSUPPORTED, "input \"%s\" is %s: verify --reproducible makes "
			          "up float32 and float64 inputs only; give a case folder (model.onnx and "
			          "test_data_set_0/input_*.pb) with its values", name, dtype_name(io->dtype));
		}
		files[i] = arena_printf(c->a, "%s/in%d.bin", c->tmp, i);
		FILE *f = fopen(files[i], "wb");
		if (!f || fwrite(buf, 1, bytes, f) != bytes || fclose(f) != 0)
			diag_fail(c->d, KILN_IO, "cannot write %s", files[i]);
	}
	return files;
}

static void add_run(Runs *r, int64_t n, int64_t first)
{
	KILN_ASSERT(r->count < MAX_RUNS);
	r->n[r->count] = n;
	r->first[r->count++] = first;
}

static uint64_t out_bytes(const Io *io, int64_t n)
{
	return io->axis >= 0 && n > 0 ? io->bytes1 * (uint64_t)n : io->bytes1;
}

/* Run the runner (exe, through qemu when wrap) under isa on the runs. */
static void run_runner(Case *c, const char *const *prefix, const char *exe, const char **files,
                       const Desc *ds, const char *isa, Runs *r)
{
	int np = 0;
	while (prefix && prefix[np])
		np++;
	const char **argv = arena_alloc(c->a, sizeof *argv * (size_t)(np + r->count + ds->ni + 4));
	int k = 0;
	for (int i = 0; i < np; i++)
		argv[k++] = prefix[i];
	argv[k++] = exe;
	argv[k++] = arena_printf(c->a, "%lld", (long long)c->rows);
	for (int i = 0; i < ds->ni; i++)
		argv[k++] = files[i];
	const char *outp = arena_printf(c->a, "%s/out.bin", c->tmp);
	argv[k++] = outp;
	for (int t = 0; t < r->count; t++)
		argv[k++] = r->n[t] ? arena_printf(c->a, "%lld:%lld", (long long)r->n[t],
		                                   (long long)r->first[t]) : "once";
	argv[k] = NULL;
	const char *so = arena_printf(c->a, "%s/runner.out", c->tmp), *se = arena_printf(c->a, "%s/runner.err", c->tmp);
	int st = spawn(c->a, argv, isa, so, se);
	if (st < 0)
		diag_fail(c->d, KILN_IO, "cannot run %s: %s", argv[0], strerror(errno));
	if (st)
		diag_fail(c->d, KILN_INTERNAL, "the model's runner failed under KILN_ISA=%s (status %d): %s",
		          isa, st, last_line(c->a, se));
	uint64_t n = 0;
	const char *text = (const char *)slurp(c->a, so, &n);
	Desc got;
	if (!text || !parse_desc(text, &got))
		diag_fail(c->d, KILN_INTERNAL, "the model's runner under KILN_ISA=%s did not describe "
		          "the model", isa);
	if (strcmp(got.isa, isa) != 0)
		diag_fail(c->d, KILN_INTERNAL, "KILN_ISA=%s ran the %s variant", isa, got.isa);
	r->off[0] = 0;
	for (int t = 0; t < r->count; t++) {
		r->off[t + 1] = r->off[t];
		for (int o = 0; o < ds->no; o++)
			r->off[t + 1] += out_bytes(&ds->out[o], r->n[t]);
	}
	r->blob = slurp(c->a, outp, &n);
	if (!r->blob || n != r->off[r->count])
		diag_fail(c->d, KILN_INTERNAL, "the model's runner under KILN_ISA=%s wrote %llu bytes, "
		          "not %llu", isa, (unsigned long long)n, (unsigned long long)r->off[r->count]);
}

/* ---- comparing ------------------------------------------------------------------ */

/* One element of type dt at p, as text. */
static const char *element_text(Arena *a, int dt, const unsigned char *p)
{
	if (dt == KILN_FLOAT32) {
		float f;
		memcpy(&f, p, 4);
		return arena_printf(a, "%.9g", (double)f);
	}
	if (dt == KILN_FLOAT64) {
		double v;
		memcpy(&v, p, 8);
		return arena_printf(a, "%.17g", v);
	}
	size_t es = dtype_size(dt) ? dtype_size(dt) : 1;
	char *s = arena_alloc(a, 2 * es + 3);
	strcpy(s, "0x");
	for (size_t i = 0; i < es; i++)   /* little-endian: the top byte first */
		sprintf(s + 2 + 2 * i, "%02x", p[es - 1 - i]);
	return s;
}

/* The first element at which n bytes at x and y differ (-1: none). */
static int64_t first_diff(const unsigned char *x, const unsigned char *y, uint64_t n, size_t es)
{
	for (uint64_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return (int64_t)(i / es);
	return -1;
}

static size_t elem_size(int dt)
{
	size_t es = dtype_size(dt);
	return es ? es : 1;
}

static const char *run_name(Arena *a, const Runs *r, int t)
{
	if (!r->n[t])
		return "the run";
	if (r->n[t] == 1)
		return arena_printf(a, "sample %lld alone", (long long)r->first[t]);
	return arena_printf(a, "the batch of n = %lld", (long long)r->n[t]);
}

/* Runs x (under xn) and y (under yn) hold the same runs: every byte equal?
 * Prints the check's line; on a difference, the first element. */
static void same_runs(Case *c, const Desc *ds, const char *check, const Runs *x, const char *xn,
                      const Runs *y, const char *yn)
{
	uint64_t hx = fnv1a(x->blob, x->off[x->count]), hy = fnv1a(y->blob, y->off[y->count]);
	c->nchecks++;
	if (x->off[x->count] == y->off[y->count] && memcmp(x->blob, y->blob, x->off[x->count]) == 0) {
		fprintf(c->out, "  %-18s same    %016llx  (%d runs)\n", check, (unsigned long long)hx,
		        x->count);
		return;
	}
	c->ndiffer++;
	fprintf(c->out, "  %-18s DIFFERS %016llx %016llx\n", check, (unsigned long long)hx,
	        (unsigned long long)hy);
	for (int t = 0; t < x->count; t++) {
		uint64_t at = x->off[t];
		for (int o = 0; o < ds->no; o++) {
			uint64_t nb = out_bytes(&ds->out[o], x->n[t]);
			size_t es = elem_size(ds->out[o].dtype);
			int64_t e = first_diff(x->blob + at, y->blob + at, nb, es);
			if (e >= 0) {
				fprintf(c->out, "    output %d \"%s\", %s, element %lld: %s under %s, %s under %s\n",
				        o, c->names[o], run_name(c->a, x, t), (long long)e,
				        element_text(c->a, ds->out[o].dtype, x->blob + at + (uint64_t)e * es), xn,
				        element_text(c->a, ds->out[o].dtype, y->blob + at + (uint64_t)e * es), yn);
				return;
			}
			at += nb;
		}
	}
}

/* Row k of run t's output o equals sample first + k's run alone, for every
 * run and row. The output's row k: for each of its outer slices q, the
 * bytes at (q * n + k) * inner. */
static void same_rows(Case *c, const Desc *ds, const char *isa, const Runs *r, int singles_at)
{
	c->nchecks++;
	const char *check = arena_printf(c->a, "rows %s", isa);
	for (int t = 0; t < singles_at; t++) {
		int64_t n = r->n[t];
		uint64_t at = r->off[t];
		for (int o = 0; o < ds->no; o++) {
			const Io *io = &ds->out[o];
			size_t es = elem_size(io->dtype);
			uint64_t inner = io->bytes1 / io->outer, outer = io->axis >= 0 ? io->outer : 1;
			for (int64_t k = 0; k < n; k++) {
				int ts = singles_at + (int)(r->first[t] + k);
				const unsigned char *one = r->blob + r->off[ts];
				for (int o2 = 0; o2 < o; o2++)
					one += out_bytes(&ds->out[o2], 1);
				for (uint64_t q = 0; q < outer; q++) {
					const unsigned char *row = r->blob + at +
						(io->axis >= 0 ? (q * (uint64_t)n + (uint64_t)k) * inner : 0);
					int64_t e = first_diff(row, one + q * inner, io->axis >= 0 ? inner : io->bytes1, es);
					if (e < 0)
						continue;
					int64_t el = (int64_t)(q * inner / es) + e;
					c->ndiffer++;
					fprintf(c->out, "  %-18s DIFFERS\n    output %d \"%s\", row %lld of the batch "
					        "of n = %lld, element %lld of the sample: %s, alone %s (KILN_ISA=%s)\n",
					        check, o, c->names[o], (long long)k, (long long)n, (long long)el,
					        element_text(c->a, io->dtype, row + (uint64_t)e * es),
					        element_text(c->a, io->dtype, one + q * inner + (uint64_t)e * es), isa);
					return;
				}
			}
			at += out_bytes(io, n);
		}
	}
	fprintf(c->out, "  %-18s same    row r of every batch of n (%d runs, n = %lld..%lld) == "
	        "sample r alone\n", check, singles_at, (long long)r->n[0], (long long)r->n[singles_at - 1]);
}

/* ---- aarch64 ------------------------------------------------------------------ */

/* The aarch64 libkiln: $KILN_AARCH64_RUNTIME_LIB, else beside this host's
 * libkiln.a in aarch64-linux-gnu/ (tests/repro/aarch64.py builds one); NULL
 * with *why if there is none. */
static const char *a64_runtime(Arena *a, const char **why)
{
	const char *env = getenv("KILN_AARCH64_RUNTIME_LIB");
	if (env && *env) {
		if (access(env, R_OK) == 0)
			return env;
		*why = arena_printf(a, "KILN_AARCH64_RUNTIME_LIB %s is not readable", env);
		return NULL;
	}
	const char *host = compile_runtime_lib(a);
	const char *slash = strrchr(host, '/');
	const char *p = arena_printf(a, "%.*s/aarch64-linux-gnu/libkiln.a", slash ? (int)(slash - host) : 1,
	                             slash ? host : ".");
	if (access(p, R_OK) == 0)
		return p;
	*why = "no aarch64 libkiln (set KILN_AARCH64_RUNTIME_LIB; tests/repro/aarch64.py builds one)";
	return NULL;
}

static void check_aarch64(Case *c, const Desc *ds, const char **files, const Runs *ref,
                          int singles_at)
{
	const char *xcc = getenv("KILN_AARCH64_CC");
	xcc = xcc && *xcc ? xcc : "aarch64-linux-gnu-gcc";
	const char *qemu = "qemu-aarch64";
	const char *why = NULL;
	const char *lib = a64_runtime(c->a, &why);
	if (!on_path(c->a, xcc))
		why = arena_printf(c->a, "no %s", xcc);
	else if (!on_path(c->a, qemu))
		why = "no qemu-aarch64";
	if (why) {
		fprintf(c->out, "  %-18s skipped: %s\n", "aarch64", why);
		return;
	}
	const char *dir = arena_printf(c->a, "%s/a64", c->tmp);
	CompileResult cr = compile_for(c, dir, "aarch64-linux-gnu");
	const char *exe = arena_printf(c->a, "%s/runner", dir);
	const char *argv[] = {xcc, "-std=c11", "-O2", "-ffp-contract=off",
	                      arena_printf(c->a, "-I%s", compile_include_dir(c->a)),
	                      "-DMODEL=m_model", "-include", cr.h_path,
	                      arena_printf(c->a, "%s/runner.c", c->tmp), cr.c_path, cr.weights_path, lib,
	                      "-lm", "-static", "-o", exe, NULL};
	build(c, argv, "link the aarch64 runner");
	/* The compiled sizes, n = 57 (stitched unless compiled), a few samples
	 * alone: the same runs of x86-64's ref. */
	Runs *mine = arena_alloc(c->a, sizeof *mine), *theirs = arena_alloc(c->a, sizeof *theirs);
	memset(mine, 0, sizeof *mine);
	memset(theirs, 0, sizeof *theirs);
	for (int t = 0; t < ref->count; t++) {
		int64_t n = ref->n[t];
		bool take = t >= singles_at ? ref->first[t] < A64_SINGLES || singles_at == 0
		            : n == 57 || n <= 1;
		for (int b = 0; b < ds->nb && !take; b++)
			take = ds->batches[b] == n && ref->first[t] == 0;
		if (take)
			add_run(mine, n, ref->first[t]);
	}
	const char *prefix[] = {qemu, "-L", "/usr/aarch64-linux-gnu", NULL};
	run_runner(c, prefix, exe, files, ds, "ref", mine);
	/* x86-64's bytes of those runs, in that order */
	uint64_t total = mine->off[mine->count];
	theirs->blob = arena_alloc(c->a, total + 1);
	theirs->count = mine->count;
	for (int t = 0, s = 0; t < mine->count; t++) {
		while (ref->n[s] != mine->n[t] || ref->first[s] != mine->first[t])
			s++;
		theirs->n[t] = mine->n[t];
		theirs->first[t] = mine->first[t];
		theirs->off[t] = mine->off[t];
		memcpy(theirs->blob + mine->off[t], ref->blob + ref->off[s], ref->off[s + 1] - ref->off[s]);
	}
	theirs->off[mine->count] = total;
	same_runs(c, ds, "aarch64=ref", theirs, "x86-64 ref", mine, "aarch64 (qemu)");
}

/* Compile for this host into dir, link the runner (runner_c) and ask it
 * what it runs: the highest variant this CPU has, and the model's inputs and
 * outputs. */
static const char *build_host(Case *c, const char *dir, const char *runner_c, CompileResult *cr,
                              Desc *ds)
{
	Arena *a = c->a;
	*cr = compile_for(c, dir, NULL);
	const char *exe = arena_printf(a, "%s/runner", dir);
	const char *argv[64];
	int n = compile_tool_argv(a, "CC", "cc", argv, 30);
	const char *more[] = {"-std=c11", "-O1", arena_printf(a, "-I%s", compile_include_dir(a)),
	                      "-DMODEL=m_model", "-include", cr->h_path, runner_c, cr->o_path,
	                      compile_runtime_lib(a), "-lm", "-o", exe, NULL};
	memcpy(argv + n, more, sizeof more);
	n += (int)(sizeof more / sizeof more[0]) - 1;
	n += compile_tool_argv(a, "CFLAGS", "", argv + n, 58 - n);
	n += compile_tool_argv(a, "LDFLAGS", "", argv + n, 63 - n);
	argv[n] = NULL;
	build(c, argv, "link the model's runner");

	const char *so = arena_printf(a, "%s/describe.out", c->tmp), *se = arena_printf(a, "%s/describe.err", c->tmp);
	const char *dargv[] = {exe, NULL};
	int rc = spawn(a, dargv, "avx512", so, se);
	uint64_t len = 0;
	const char *text = rc == 0 ? (const char *)slurp(a, so, &len) : NULL;
	if (!text || !parse_desc(text, ds) || ds->no != c->m->graph->noutputs || ds->ni != c->nin)
		diag_fail(c->d, KILN_INTERNAL, "the model's runner did not describe the model (status %d): %s",
		          rc, last_line(a, se));
	return exe;
}

/* ---- one case ------------------------------------------------------------------ */

static const char *const ISAS[] = {"ref", "avx2", "avx512"};

static void reproduce_case(Case *c)
{
	struct stat st;
	Arena *a = c->a;
	if (stat(c->path, &st) == 0 && S_ISDIR(st.st_mode)) {
		c->model_path = arena_printf(a, "%s/model.onnx", c->path);
		c->have_data = true;
	} else {
		c->model_path = c->path;
	}
	c->d->file = c->model_path;
	c->m = load(c);
	Graph *g = c->m->graph;
	for (int i = 0; i < g->ninputs; i++)
		if (g->values[g->inputs[i]].kind == VAL_INPUT && c->nin < MAX_IO)
			c->rt_in[c->nin++] = g->inputs[i];
	if (g->noutputs > MAX_IO)
		diag_fail(c->d, KILN_LIMIT, "more than %d outputs", MAX_IO);
	for (int o = 0; o < g->noutputs; o++)
		c->names[o] = arena_strdup(a, g->values[g->outputs[o]].name);  /* outlives c->m */
	for (int i = 0; c->have_data && i < c->nin; i++) {
		const char *p = arena_printf(a, "%s/test_data_set_0/input_%d.pb", c->path, i);
		if (access(p, R_OK) != 0)
			diag_fail(c->d, KILN_IO, "%s is missing", p);
		tensor_load_file(c->m, p, &c->data[i]);
		if (c->data[i].dtype == DT_UINT16 && g->values[c->rt_in[i]].dtype == DT_BFLOAT16)
			c->data[i].dtype = DT_BFLOAT16;
		if (c->data[i].dtype != g->values[c->rt_in[i]].dtype)
			diag_fail(c->d, KILN_INVALID_MODEL, "%s has type %s; the model's input \"%s\" is %s", p,
			          dtype_name(c->data[i].dtype), g->values[c->rt_in[i]].name,
			          dtype_name(g->values[c->rt_in[i]].dtype));
		if (c->data[i].dtype == DT_STRING)
			diag_fail(c->d, KILN_UNSUPPORTED, "input \"%s\" is a string tensor: verify "
			          "--reproducible feeds numeric inputs only", g->values[c->rt_in[i]].name);
		/* The data must outlive this Model (each build loads the model anew). */
		void *copy = arena_alloc(a, c->data[i].w.nbytes + 1);
		if (c->data[i].w.nbytes)
			memcpy(copy, c->data[i].w.bytes, c->data[i].w.nbytes);
		c->data[i].w.bytes = copy;
	}

	/* A model with a batch axis (an input whose first dim it leaves open) is
	 * compiled at the sizes asked for (default 1, 16, 64), one without at 1. */
	static const int64_t one[] = {1}, dflt[] = {1, 16, 64};
	c->batches = one;
	c->nbatches = 1;
	for (int i = 0; i < c->nin; i++) {
		const Shape *s = &g->values[c->rt_in[i]].shape;
		if (s->rank > 0 && s->dims[0].size < 0 && (!c->have_data || c->data[i].shape.rank > 0)) {
			c->batch_axis = true;
			c->batches = c->vo->nbatches ? c->vo->batches : dflt;
			c->nbatches = c->vo->nbatches ? c->vo->nbatches : 3;
		}
	}

	/* Build for this host, with the runner. A case whose data makes another
	 * axis the batch (the same symbol on a later dim) is compiled at its
	 * data's shapes instead: one run. */
	const char *runner_c = arena_printf(a, "%s/runner.c", c->tmp);
	FILE *f = fopen(runner_c, "w");
	if (!f || fputs(RUNNER_C, f) < 0 || fclose(f) != 0)
		diag_fail(c->d, KILN_IO, "cannot write %s", runner_c);
	CompileResult cr;
	Desc ds;
	const char *exe = build_host(c, arena_printf(a, "%s/host", c->tmp), runner_c, &cr, &ds);
	bool later = false;
	for (int i = 0; i < ds.ni; i++)
		later |= ds.in[i].axis > 0;
	if (later && c->have_data && c->batch_axis) {
		c->batch_axis = false;
		c->batches = one;
		c->nbatches = 1;
		exe = build_host(c, arena_printf(a, "%s/host1", c->tmp), runner_c, &cr, &ds);
	}
	int nisa = 1;
	while (nisa < 3 && strcmp(ISAS[nisa - 1], ds.isa) != 0)
		nisa++;

	/* The runs: with a batch axis every n = 1..70 and each compiled size
	 * from sample 0, then every sample alone; without one, one run. */
	bool batched = false, rows_ok = true, every_n = true;
	const char *no_rows = NULL;
	for (int i = 0; i < ds.ni && c->batch_axis; i++)  /* (a static dim of 1 may count as one) */
		batched |= ds.in[i].axis >= 0;
	for (int o = 0; o < ds.no; o++)
		if (DT_IS_4BIT(ds.out[o].dtype) && ds.out[o].axis >= 0)
			rows_ok = false, no_rows = "a 4-bit output";
	if (batched && !cr.batch_independent)
		rows_ok = false, no_rows = arena_printf(a, "the model mixes samples (%s)",
		                                       cr.batch_mixing ? cr.batch_mixing : "?");
	Runs *runs = arena_alloc(a, sizeof *runs * 3);
	memset(runs, 0, sizeof *runs * 3);
	int64_t top = 0;
	for (int b = 0; b < ds.nb; b++)
		top = ds.batches[b] > top ? ds.batches[b] : top;
	c->rows = batched ? (top > STITCH_MAX ? top : STITCH_MAX) : 1;
	int singles_at = 0;
	if (!batched) {
		add_run(&runs[0], 0, 0);
	} else if (rows_ok) {
		/* Every n = 2..70 while their outputs take up to 256 MiB a variant;
		 * else the compiled sizes and n = 2, 3, 5, 7, 57 and 70. */
		uint64_t row = 0;
		for (int o = 0; o < ds.no; o++)
			row += ds.out[o].bytes1;
		every_n = row * (STITCH_MAX * (STITCH_MAX + 1) / 2) <= (256u << 20);
		for (int64_t k = 2; k <= c->rows; k++) {
			bool compiled = false;
			for (int b = 0; b < ds.nb; b++)
				compiled |= ds.batches[b] == k;
			if (compiled || (k <= STITCH_MAX && (every_n || k == 2 || k == 3 || k == 5 || k == 7 ||
			                                     k == 57 || k == STITCH_MAX)))
				add_run(&runs[0], k, 0);
		}
		singles_at = runs[0].count;
		for (int64_t s = 0; s < c->rows; s++)
			add_run(&runs[0], 1, s);
	} else {
		for (int b = 0; b < ds.nb; b++)
			add_run(&runs[0], ds.batches[b], 0);
	}
	for (int k = 1; k < nisa; k++) {
		runs[k].count = runs[0].count;
		memcpy(runs[k].n, runs[0].n, sizeof runs[0].n);
		memcpy(runs[k].first, runs[0].first, sizeof runs[0].first);
	}
	const char **files = write_inputs(c, &ds);

	fprintf(c->out, "%s: %s\n", c->path, !batched ? "no batch axis: one run of the inputs"
	        : arena_printf(a, "%lld samples; compiled batch sizes %s", (long long)c->rows,
	                       !rows_ok ? "only" : every_n ? "and every n = 2..70 stitched"
	                       : "and n = 2, 3, 5, 7, 57, 70 (large outputs)"));
	for (int k = 0; k < c->nfrozen; k++)
		fprintf(c->out, "  %-18s %s, to the data's values (its shapes depend on them)\n",
		        k ? "" : "frozen", c->frozen[k]);
	for (int k = 0; k < nisa; k++)
		run_runner(c, NULL, exe, files, &ds, ISAS[k], &runs[k]);
	for (int k = 1; k < nisa; k++)
		same_runs(c, &ds, arena_printf(a, "isa ref=%s", ISAS[k]), &runs[0], "ref", &runs[k], ISAS[k]);
	if (nisa < 3)
		fprintf(c->out, "  %-18s skipped: this CPU runs %s at most\n",
		        arena_printf(a, "isa ref=%s", ISAS[nisa]), ds.isa);
	for (int k = 0; k < nisa && singles_at > 0; k++)
		same_rows(c, &ds, ISAS[k], &runs[k], singles_at);
	if (batched && !rows_ok)
		fprintf(c->out, "  %-18s skipped: %s\n", "rows", no_rows);
	check_aarch64(c, &ds, files, &runs[0], singles_at);
}

/* One case in its own arena and protected call: 0 the same bits, 1 a
 * difference, 2 an error. */
static int reproduce_path(const VerifyOptions *vo, const char *path, FILE *out)
{
	Diag d = {.file = path};
	Arena a;
	arena_init(&a, vo->max_memory_bytes, &d);
	Case *volatile c = arena_alloc(&a, sizeof *c);
	*c = (Case){.path = path, .vo = vo, .a = &a, .d = &d, .out = out};
	char templ[256];
	snprintf(templ, sizeof templ, "%s/kiln-repro-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	volatile int rc = 2;
	jmp_buf jb;
	d.protect = &jb;
	if (setjmp(jb) == 0) {
		if (!mkdtemp(templ))
			diag_fail(&d, KILN_IO, "cannot create a temporary folder in %s", templ);
		c->tmp = templ;
		reproduce_case(c);
		if (c->ndiffer)
			fprintf(out, "NOT REPRODUCIBLE %s: %d of %d checks differ\n", path, c->ndiffer,
			        c->nchecks);
		else
			fprintf(out, "REPRODUCIBLE %s: %d checks, the same bits\n", path, c->nchecks);
		rc = c->ndiffer > 0;
	} else {
		fprintf(out, "ERROR %s: %s\n", path, d.msg);
	}
	d.protect = NULL;
	fflush(out);
	if (c->tmp && vo->keep)
		fprintf(stderr, "verify: kept %s\n", c->tmp);
	else if (c->tmp)
		compile_remove_tree(c->tmp);
	if (c->m)
		model_close(c->m);
	arena_free(&a);
	return rc;
}

int reproduce_run(const VerifyOptions *vo, char **paths, int npaths, FILE *out)
{
	int differ = 0, errors = 0;
	for (int i = 0; i < npaths; i++) {
		int rc = reproduce_path(vo, paths[i], out);
		differ += rc == 1;
		errors += rc == 2;
	}
	fprintf(out, "verify --reproducible: %d reproducible, %d differ, %d errors\n",
	        npaths - differ - errors, differ, errors);
	return differ ? 1 : errors ? 2 : 0;
}
