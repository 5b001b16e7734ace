/*
 * compile.c - `kiln compile`: the whole pipeline for one model, and the
 * builds that follow it.
 *
 *   load -> graph optimizer -> per batch size: shape inference, dead nodes
 *   (sigdce.c), buffer plan -> NAME.h, NAME.c
 *   -> NAME_weights.o (LLVM-C) -> NAME.o = cc(NAME.c) + NAME_weights.o (ld -r)
 *
 * The C compiler is $CC (default cc) with $CFLAGS after kiln's own flags,
 * and the linker $LD (default ld); both are run directly (posix_spawnp),
 * never through a shell. With --no-cc the build system compiles NAME.c
 * itself and links NAME_weights.o next to it. For `kiln verify`
 * the same steps build a shared object instead, linked with libkiln, to load
 * with dlopen. Files that stay open across long-jumping code are registered
 * on the Model, which closes them on every path.
 */
#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compile.h"
#include "emit.h"
#include "emit_obj.h"
#include "load.h"
#include "padproof.h"
#include "stitch.h"
#include "passes/passes.h"
#include "kiln/run.h"

extern char **environ;

/* ---- paths of kiln's own headers and runtime -------------------------- */

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* The prefix of an installed kiln, from the executable's own path
 * (<prefix>/<bindir>/kiln), so a moved installation still finds its files;
 * NULL when kiln does not run from a <bindir> (the build tree). */
static const char *exe_prefix(Arena *a)
{
	char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	char *slash = strrchr(buf, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	size_t nb = strlen(buf), nrel = strlen(KILN_BINDIR_REL);
	if (nrel >= nb || strcmp(buf + nb - nrel, KILN_BINDIR_REL) != 0 || buf[nb - nrel - 1] != '/')
		return NULL;
	buf[nb - nrel - 1] = 0;
	return arena_strdup(a, buf);
}

/* $KILN_INCLUDE_DIR, else the installation kiln runs from, else the source
 * tree kiln was built from, else the configured prefix: the first that
 * holds kiln/kernels.h. */
const char *compile_include_dir(Arena *a)
{
	const char *pre = exe_prefix(a);
	const char *cands[] = {getenv("KILN_INCLUDE_DIR"),
	                       pre ? arena_printf(a, "%s/%s", pre, KILN_INCLUDEDIR_REL) : NULL,
	                       KILN_SOURCE_INCLUDE_DIR, KILN_INSTALL_INCLUDE_DIR};
	for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++)
		if (cands[i] && *cands[i] && exists(arena_printf(a, "%s/kiln/kernels.h", cands[i])))
			return cands[i];
	return KILN_INSTALL_INCLUDE_DIR;
}

const char *compile_runtime_lib(Arena *a)
{
	const char *pre = exe_prefix(a);
	const char *cands[] = {getenv("KILN_RUNTIME_LIB"),
	                       pre ? arena_printf(a, "%s/%s/libkiln.a", pre, KILN_LIBDIR_REL) : NULL,
	                       KILN_BUILD_RUNTIME_LIB, KILN_INSTALL_RUNTIME_LIB};
	for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++)
		if (cands[i] && *cands[i] && exists(cands[i]))
			return cands[i];
	return KILN_INSTALL_RUNTIME_LIB;
}

/* ---- running tools ---------------------------------------------------- */

/* Split $VAR (or dflt) on spaces: CC may be "ccache gcc". */
int compile_tool_argv(Arena *a, const char *var, const char *dflt, const char **argv, int max)
{
	const char *v = getenv(var);
	if (!v || !*v)
		v = dflt;
	char *copy = arena_strdup(a, v);
	int n = 0;
	for (char *tok = strtok(copy, " \t"); tok && n < max; tok = strtok(NULL, " \t"))
		argv[n++] = tok;
	return n;
}

/* Free bytes of the file system holding dir (UINT64_MAX if unknown). */
static uint64_t free_bytes(const char *dir)
{
	struct statvfs vfs;
	if (statvfs(dir, &vfs) != 0)
		return UINT64_MAX;
	return (uint64_t)vfs.f_bavail * vfs.f_frsize;
}

/* Run a tool in a process group of its own, which the cleaner of
 * outputs.c kills if kiln dies while the tool writes into the staging
 * folder. */
static void run_tool(Model *m, const char *const *argv, const char *what, const char *dir)
{
	pid_t pid;
	posix_spawnattr_t attr;
	posix_spawnattr_init(&attr);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
	int err = posix_spawnp(&pid, argv[0], NULL, &attr, (char *const *)argv, environ);
	posix_spawnattr_destroy(&attr);
	if (err)
		diag_fail(m->diag, KILN_IO, "cannot run %s (%s) to %s: %s", argv[0],
		          argv[0][0] ? argv[0] : "?", what, strerror(err));
	outputs_tool(m, (long)pid);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			diag_fail(m->diag, KILN_IO, "waiting for %s: %s", argv[0], strerror(errno));
	outputs_tool(m, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		uint64_t left = free_bytes(dir);
		if (left < (64u << 20))
			diag_fail(m->diag, KILN_IO, "%s failed to %s (status %d); %s has %llu bytes "
			          "free", argv[0], what, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
			          dir, (unsigned long long)left);
		diag_fail(m->diag, KILN_INTERNAL,
		          "%s failed to %s (%s %d); the generated code should always build, so "
		          "unless $CC, $CFLAGS or $LD are at fault this is a bug in kiln",
		          argv[0], what, WIFEXITED(status) ? "status" : "signal",
		          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	}
}

/* ---- the pipeline ----------------------------------------------------- */

static void stage(const CompileOptions *o, const char *what)
{
	if (o->stage)
		o->stage(o->stage_ud, what);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static bool is_identifier(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_'))
			return false;
	return true;
}

/* "kiln" and "kiln_..." would make NAME_run and NAME_model collide with
 * libkiln's own functions (kiln_run, kiln_context_model). The header's
 * macros are NAME in capitals and a suffix (NAME_CONTEXT_BYTES,
 * NAME_NUM_INPUTS, NAME_IN0_DIM1...) and kiln's public macros all start
 * with KILN_: of the names in capitals, only KILN itself gives one of them
 * (KILN_CONTEXT_BYTES, kiln/run.h). The include guard is NAME_KILN_H_ and a
 * hash of NAME, which no macro of kiln's or of another model's ends like;
 * tests/hostile/outputs.py tries every name that could collide. */
static bool is_reserved(const char *name)
{
	return strcasecmp(name, "kiln") == 0 || strncmp(name, "kiln_", 5) == 0;
}

/* The default name: the model file's base name without extension, made an identifier. */
static const char *default_name(Arena *a, const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	char *s = arena_strdup(a, base);
	char *dot = strrchr(s, '.');
	if (dot && dot != s)
		*dot = 0;
	if (strcmp(s, "model") == 0) {
		/* ONNX test cases are all model.onnx: name them after their folder. */
		const char *dir = strrchr(path, '/');
		if (dir && dir > path) {
			const char *start = dir - 1;
			while (start > path && start[-1] != '/')
				start--;
			s = arena_alloc(a, (size_t)(dir - start) + 1);
			memcpy(s, start, (size_t)(dir - start));
		}
	}
	for (char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			*p = '_';
	if (!*s || (*s >= '0' && *s <= '9') || is_reserved(s))
		s = arena_printf(a, "m_%s", s);
	return s;
}

FILE *compile_open(Model *m, const char *path, const char *mode)
{
	FILE *f = path ? fopen(path, mode) : tmpfile();
	if (!f)
		diag_fail(m->diag, KILN_IO, "cannot open %s: %s", path ? path : "a temporary file",
		          strerror(errno));
	model_track_file(m, f);
	return f;
}

void compile_close(Model *m, FILE *f, const char *path)
{
	model_untrack_file(m, f);
	if (fclose(f) != 0)
		diag_fail(m->diag, KILN_IO, "writing %s: %s", path, strerror(errno));
}

/* A graph output that is a graph input or a weight (an initializer, a
 * Constant's value) is handed back as it is by ONNX Runtime. The generated
 * code computes every output into the caller's buffer, so such an output
 * gets a value of its own, under the same name, from an Identity node at the
 * end of the graph: the optimizer keeps an Identity from a value that is not
 * a temporary to a graph output, and folding leaves graph outputs computed.
 * `kiln info` still shows the graph as written (this runs on compiling). */
static void copy_passthrough_outputs(Model *m)
{
	Graph *g = m->graph;
	int ncopy = 0;
	for (int i = 0; i < g->noutputs; i++)
		ncopy += g->values[g->outputs[i]].kind != VAL_TEMP;
	if (!ncopy)
		return;
	Node *nodes = arena_array(m->arena, (size_t)g->nnodes + (size_t)ncopy, sizeof *nodes);
	memcpy(nodes, g->nodes, (size_t)g->nnodes * sizeof *nodes);
	g->nodes = nodes;
	int64_t opset = 0;
	for (int i = 0; i < m->nopsets; i++)
		if (m->opsets[i].domain_id == DOMAIN_ONNX)
			opset = m->opsets[i].version;
	for (int i = 0; i < g->noutputs; i++) {
		int src = g->outputs[i];
		if (g->values[src].kind == VAL_TEMP)
			continue;
		int id = graph_add_value(g, g->values[src].name);
		Value *v = &g->values[id], *sv = &g->values[src];
		v->type = sv->type;
		v->dtype = sv->dtype;
		v->shape = sv->shape;
		v->kind = VAL_TEMP;
		Node *n = &g->nodes[g->nnodes];
		memset(n, 0, sizeof *n);
		n->id = g->nnodes++;
		n->name = arena_printf(m->arena, "output %s", sv->name);
		n->op_type = "Identity";
		n->domain = "";
		n->domain_id = DOMAIN_ONNX;
		n->op = op_lookup("Identity", DOMAIN_ONNX);
		n->opset = opset < 1 || opset > op_max_opset(DOMAIN_ONNX) ? op_max_opset(DOMAIN_ONNX)
		                                                           : (int)opset;
		n->since = op_resolve(n->op, n->opset);
		n->synthetic = true;
		n->nin = n->nout = 1;
		n->in = arena_array(m->arena, 1, sizeof *n->in);
		n->out = arena_array(m->arena, 1, sizeof *n->out);
		n->in[0] = src;
		n->out[0] = id;
		sv->nuse++;
		v->producer = n->id;
		g->outputs[i] = id;
	}
	for (int i = 0; i < g->nvalues; i++)
		g->values[i].is_output = false;
	for (int i = 0; i < g->noutputs; i++)
		g->values[g->outputs[i]].is_output = true;
}

/* The bindings of each bucket: the caller's with the bucketed dim at each
 * value (ascending), or the caller's alone when there are no buckets. */
static const BindOptions *bucket_binds(Model *m, const CompileOptions *o, int *n)
{
	*n = 1;
	if (o->nbuckets < 2 || !o->bucket_symbol || !o->bind)
		return o->bind;
	BindOptions *b = arena_array(m->arena, (size_t)o->nbuckets, sizeof *b);
	for (int j = 0; j < o->nbuckets; j++) {
		b[j] = *o->bind;
		DimValue *dv = arena_array(m->arena, (size_t)o->bind->ndims + 1, sizeof *dv);
		memcpy(dv, o->bind->dims, (size_t)o->bind->ndims * sizeof *dv);
		for (int k = 0; k < b[j].ndims; k++)
			if (strcmp(dv[k].symbol, o->bucket_symbol) == 0)
				dv[k].value = o->bucket_values[j];
		b[j].dims = dv;
	}
	*n = o->nbuckets;
	return b;
}

/* Is padding on the bucketed dim harmless: can the zeros kiln_run_lengths
 * puts past a sample's length (and into its mask inputs) change that
 * sample's outputs? padproof.c's rules answer on the graph as loaded, before
 * the optimizer; what they cannot prove padtest.c tests by evaluation. A
 * model where padding may leak is refused, naming the node where the rules
 * stopped and the first output that differs (docs/batching.md). */
static void check_padding(Model *m, const CompileOptions *o)
{
	PadOptions po = {.symbol = o->bucket_symbol, .buckets = o->bucket_values,
	                 .nbuckets = o->nbuckets, .masks = o->masks, .nmasks = o->nmasks};
	PadCheck pc;
	pad_check(m, o->bind, &po, &pc);
	if (!pc.proven) {   /* what the rules cannot prove is tested by evaluation */
		const char *diff, *tested;
		if (!o->evaluate_padding)
			diag_fail(m->diag, KILN_UNSUPPORTED, "%s (buckets on %s need padding that "
			          "cannot reach the outputs: docs/batching.md)", pc.why, o->bucket_symbol);
		if (!o->evaluate_padding(m, o->bind, &po, &diff, &tested))
			diag_fail(m->diag, KILN_UNSUPPORTED, "%s; evaluated: %s (buckets on %s need "
			          "padding that cannot reach the outputs: docs/batching.md)", pc.why,
			          diff ? diff : "no bucket run to compare", o->bucket_symbol);
		return;
	}
	if (o->bucket_values[0] < pc.minimum)
		diag_fail(m->diag, KILN_UNSUPPORTED, "--dim %s: bucket %lld is smaller than %lld, the k "
		          "of a TopK over %s", o->bucket_symbol, (long long)o->bucket_values[0],
		          (long long)pc.minimum, o->bucket_symbol);
}

const int64_t *compile_signatures(Model *m, const CompileOptions *o, Sig **sigs_out,
                                  Plan **plans_out)
{
	Arena *a = m->arena;
	if (o->nbatches < 1)
		diag_fail(m->diag, KILN_USAGE, "no batch sizes: give --batch, e.g. --batch 1,8");
	int64_t *batches = arena_array(a, (size_t)o->nbatches, sizeof *batches);
	memcpy(batches, o->batches, (size_t)o->nbatches * sizeof *batches);
	qsort(batches, (size_t)o->nbatches, sizeof *batches, cmp_i64);
	copy_passthrough_outputs(m);
	int nbk;
	const BindOptions *binds = bucket_binds(m, o, &nbk);
	if (nbk > 1)
		check_padding(m, o);
	/* The optimizer rewrites the graph once, for exactly these signatures. */
	passes_run_binds(m, o->passes, batches, o->nbatches, binds, nbk, o->pass_report);
	stage(o, "graph optimizer");

	int nsigs = nbk * o->nbatches;
	Sig *sigs = arena_array(a, (size_t)nsigs, sizeof *sigs);
	Plan *plans = arena_array(a, (size_t)nsigs, sizeof *plans);
	for (int i = 0; i < nsigs; i++) {
		sigs[i].batch = batches[i % o->nbatches];
		sigs[i].bucket = nbk > 1 ? o->bucket_values[i / o->nbatches] : 0;
		sigs[i].g = m->graph;
		shape_infer(&sigs[i], &binds[i / o->nbatches], a, m->diag);
		sig_dce(&sigs[i]);
		plan_choose_chains(&sigs[i]);
		plan_build(&plans[i], &sigs[i], a);
	}
	*sigs_out = sigs;
	*plans_out = plans;
	return batches;
}

/* What stitching needs, per bucket (one without buckets): the independence
 * proof, costs and context bytes, and the batch sizes that run as tiles
 * (batchtile.c: the tile's signature, an internal one unless it is compiled
 * anyway; the tile's arena is the size's). Fills eo's stitch, tiles and
 * buckets; returns the top model's Stitch. */
static Stitch *compile_stitch(Model *m, const CompileOptions *o, Sig *sigs, Plan *plans,
                              EmitOptions *eo)
{
	Arena *a = m->arena;
	int nbk, nb = o->nbatches;
	const BindOptions *binds = bucket_binds(m, o, &nbk);
	Bucket *bk = arena_array(a, (size_t)nbk, sizeof *bk);
	const Sig **tile = arena_array(a, (size_t)(nb * nbk), sizeof *tile);
	const Plan **tile_plan = arena_array(a, (size_t)(nb * nbk), sizeof *tile_plan);
	for (int j = 0; j < nbk; j++) {
		Bucket *b = &bk[j];
		b->value = nbk > 1 ? o->bucket_values[j] : 0;
		b->bind = &binds[j];
		b->sigs = sigs + j * nb;
		b->plans = plans + j * nb;
		stitch_build(m, b->sigs, b->plans, nb, b->bind, &b->stitch);
		if (batch_tiles(m, b->sigs, b->plans, nb, &b->stitch, b->bind, tile + j * nb,
		                tile_plan + j * nb)) {
			for (int i = 0; i < nb; i++)
				if (tile[j * nb + i])
					b->plans[i].arena_bytes = tile_plan[j * nb + i]->arena_bytes;
			stitch_arenas(m, b->plans, nb, &b->stitch);
		}
	}
	eo->tile = tile;
	eo->tile_plan = tile_plan;
	if (nbk == 1) {
		eo->stitch = &bk[0].stitch;
		return &bk[0].stitch;
	}
	Stitch *top = arena_alloc(a, sizeof *top);
	eo->bucket_axis = buckets_axes(m, bk, nbk, o->bucket_symbol);
	buckets_stitch(m, bk, nbk, top);
	eo->stitch = top;
	eo->buckets = bk;
	eo->nbuckets = nbk;
	eo->bucket_symbol = o->bucket_symbol;
	return top;
}

uint64_t compile_max_weights(const Model *m)
{
	uint64_t read = 0;
	for (int i = 0; i < m->nmaps; i++)
		read += m->maps[i].bytes;
	return (UINT64_C(256) << 20) + (read > UINT64_MAX / 8 ? UINT64_MAX / 2 : 4 * read);
}

/* A path as make reads it: spaces and '#' escaped with a backslash, '$'
 * doubled. A newline cannot be written at all. */
static void make_path(Model *m, FILE *f, const char *path)
{
	for (const char *p = path; *p; p++) {
		if (*p == '\n' || *p == '\r')
			diag_fail(m->diag, KILN_USAGE, "--depfile: the path \"%s\" holds a line break, "
			          "which make cannot read", path);
		if (*p == ' ' || *p == '\t' || *p == '#')
			fputc('\\', f);
		else if (*p == '$')
			fputc('$', f);
		fputc(*p, f);
	}
}

/* --depfile: "TARGET...: MODEL EXTERNAL...", the targets being NAME.o, or
 * NAME.c and NAME_weights.o without it (--no-cc, a cross target), and the
 * prerequisites every file kiln read the model from. */
static void write_depfile(Model *m, const CompileOptions *o, const CompileResult *res)
{
	if (!o->depfile)
		return;
	FILE *f = outputs_open_beside(m, o->depfile);
	const char *targets[3] = {res->o_path ? res->o_path : res->so_path ? res->so_path
	                                                                    : res->c_path,
	                          res->o_path || res->so_path ? NULL : res->weights_path, NULL};
	for (int i = 0; targets[i]; i++) {
		if (i)
			fputc(' ', f);
		make_path(m, f, targets[i]);
	}
	fputc(':', f);
	for (int i = 0; i < m->nmaps; i++) {
		fputs(" \\\n  ", f);
		make_path(m, f, m->maps[i].path);
	}
	fputc('\n', f);
	compile_close(m, f, o->depfile);
}

/* The weights' total against what the target's code can address and the
 * --max-weights limit (compile_model and compile_check). */
static void weights_fit(Model *m, const CompileOptions *o, const EmitResult *er)
{
	Diag *d = m->diag;
	uint64_t total = 0, most = emit_obj_max_data(o->target);
	for (int i = 0; i < er->nsyms; i++)
		total += er->syms[i].nbytes;
	if (total > most)
		diag_fail(d, KILN_LIMIT, "%.2f GiB of weights are more than code for %s can address "
		          "(%.2f GiB at most: its code reaches data within 4 GiB)",
		          (double)total / (1 << 30), o->target && *o->target ? o->target : "this host",
		          (double)most / (1 << 30));
	uint64_t limit = o->max_weight_bytes ? o->max_weight_bytes : compile_max_weights(m);
	if (total > limit)
		diag_fail(d, KILN_LIMIT, "the weights object would hold %llu bytes, more than the "
		          "limit of %llu (raise it with --max-weights)", (unsigned long long)total,
		          (unsigned long long)limit);
}

void compile_model(Model *m, const CompileOptions *o, CompileResult *res)
{
	Arena *a = m->arena;
	Diag *d = m->diag;
	memset(res, 0, sizeof *res);
	const char *name = o->name ? o->name : default_name(a, m->path);
	if (!is_identifier(name))
		diag_fail(d, KILN_USAGE, "--name \"%s\" is not a C identifier", name);
	if (is_reserved(name))
		diag_fail(d, KILN_USAGE, strncmp(name, "kiln", 4) == 0
		          ? "--name \"%s\": names kiln and kiln_... are libkiln's own"
		          : "--name \"%s\": its header's macros, in capitals (KILN_CONTEXT_BYTES...), "
		            "would be kiln's own", name);
	Sig *sigs;
	Plan *plans;
	const int64_t *batches = compile_signatures(m, o, &sigs, &plans);
	int nsigs = o->nbatches * (o->nbuckets > 1 ? o->nbuckets : 1);

	const char *dir = o->outdir ? o->outdir : ".";
	/* A parallel compile into the same -o may create the folder between
	 * the test and mkdir: EEXIST is success when a folder is there now. */
	if (!exists(dir) && mkdir(dir, 0777) != 0) {
		int e = errno;
		struct stat st;
		if (!(e == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)))
			diag_fail(d, KILN_IO, "cannot create %s: %s", dir, strerror(e));
	}
	res->name = name;
	/* Everything is written into a staging folder and renamed into dir at
	 * the end (outputs.c); the paths here are the final ones. */
	outputs_begin(m, dir, name);
	const char *c_tmp;
	FILE *h = outputs_open(m, arena_printf(a, "%s.h", name), &res->h_path, NULL);
	FILE *c = outputs_open(m, arena_printf(a, "%s.c", name), &res->c_path, &c_tmp);
	FILE *scratch = compile_open(m, NULL, "w+");
	/* What batch stitching needs; baked rules are checked here, not when
	 * the program runs. */
	EmitOptions eo = {.name = name, .rules = o->rules, .nrules = o->nrules,
	                  .export_api = o->export_api || o->shared, .trees = o->trees,
	                  .shared_entry = o->shared};
	Stitch *stitch = compile_stitch(m, o, sigs, plans, &eo);
	for (int i = 0; i < o->nrules; i++) {
		kiln_rule rule;
		int st = kiln_rule_parse(o->rules[i], batches, o->nbatches, &rule);
		if (st != KILN_OK)
			diag_fail(d, KILN_USAGE, "--batch-rule \"%s\": %s", o->rules[i],
			          kiln_status_string(st));
		for (int k = 0; k < i; k++) {
			kiln_rule other;
			kiln_rule_parse(o->rules[k], batches, o->nbatches, &other);
			if (other.batch == rule.batch)
				diag_fail(d, KILN_USAGE, "--batch-rule \"%s\": batch %lld has a rule already",
				          o->rules[i], (long long)rule.batch);
		}
		if (!stitch->dep.independent)
			diag_fail(d, KILN_USAGE, "--batch-rule \"%s\": the model is not batch independent: %s",
			          o->rules[i], stitch->dep.why);
	}
	if (o->nrules > KILN_MAX_RULES)
		diag_fail(d, KILN_USAGE, "--batch-rule: at most %d rules", KILN_MAX_RULES);
	res->context_bytes = stitch->context_bytes;
	res->batch_independent = stitch->dep.independent;
	res->batch_mixing = stitch->dep.why;
	EmitResult er;
	stage(o, "shapes and buffer plans");
	emit_c(m, sigs, plans, nsigs, &eo, h, c, scratch, &er);
	compile_close(m, scratch, "a temporary file");
	compile_close(m, c, res->c_path);
	compile_close(m, h, res->h_path);
	weights_fit(m, o, &er);

	ObjSymbol *syms = arena_array(a, (size_t)er.nsyms, sizeof *syms);
	for (int i = 0; i < er.nsyms; i++)
		syms[i] = (ObjSymbol){er.syms[i].name, er.syms[i].bytes, er.syms[i].nbytes, 64, 1,
		                      er.syms[i].layout != SYM_RAW ? emit_symbol_fill : NULL,
		                      &er.syms[i]};
	char err[512];
	const char *w_base = arena_printf(a, "%s_weights.o", name);
	const char *w_tmp = outputs_stage_path(m, w_base, true, false);
	res->weights_path = arena_printf(a, "%s/%s", dir, w_base);
	if (emit_weights_object(w_tmp, o->target, syms, (size_t)er.nsyms, err, sizeof err) != 0) {
		/* A mapped weight file that shrank fails the write with EFAULT. */
		const char *changed = model_changed_file(m);
		if (changed)
			diag_fail(d, KILN_IO, "%s changed while kiln was reading it: it is now shorter "
			          "than when it was opened (was it rewritten during the build?)", changed);
		diag_fail(d, KILN_IO, "writing %s: %s", res->weights_path, err);
	}
	for (int i = 0; i < er.nsyms; i++)
		res->weight_bytes += er.syms[i].nbytes;
	res->nsymbols = er.nsyms;
	res->arena_bytes = 0;
	for (int i = 0; i < nsigs; i++)
		if (plans[i].arena_bytes > res->arena_bytes)
			res->arena_bytes = plans[i].arena_bytes;

	stage(o, "C and weights object written");
	if ((o->target || o->no_cc) && !o->shared) {
		/* A cross target: the host's cc cannot build NAME.o for it. */
		write_depfile(m, o, res);
		outputs_commit(m);
		return;
	}
	const char *argv[128];
	int n = compile_tool_argv(a, "CC", "cc", argv, 40);
	const char *inc = arena_printf(a, "-I%s", compile_include_dir(a));
	const char *opt = arena_printf(a, "-O%d", o->opt_level);
	/* Weights in large sections (emit_obj.h): the code reaches them with
	 * 64-bit addresses. Otherwise an option that changes nothing. */
	const char *model = emit_obj_code_model(o->target, res->weight_bytes);
	if (!model)
		model = "-fPIC";
	if (o->shared) {
		const char *so_tmp = outputs_stage_path(m, arena_printf(a, "%s.so", name), true, true);
		res->so_path = arena_printf(a, "%s/%s.so", dir, name);
		/* verify holds the generated C to its promise: no warnings. */
		const char *more[] = {"-std=c11", opt, "-ffp-contract=off", "-Wall", "-Wextra", "-Werror",
		                      "-fPIC", "-shared",
		                      model, inc, "-o", so_tmp,
		                      c_tmp, w_tmp, compile_runtime_lib(a), "-lm", NULL};
		memcpy(argv + n, more, sizeof more);
		run_tool(m, argv, "build the shared object", dir);
		write_depfile(m, o, res);
		outputs_commit(m);
		return;
	}
	const char *code_o = outputs_stage_path(m, arena_printf(a, "%s_code.o", name), false, false);
	const char *more[] = {"-std=c11", opt, "-ffp-contract=off", "-fPIC", model, inc, NULL};
	memcpy(argv + n, more, sizeof more);
	n += (int)(sizeof more / sizeof more[0]) - 1;
	n += compile_tool_argv(a, "CFLAGS", "", argv + n, 120 - n);
	const char *files[] = {"-c", c_tmp, "-o", code_o, NULL};
	memcpy(argv + n, files, sizeof files);
	run_tool(m, argv, arena_printf(a, "compile %s", res->c_path), dir);
	stage(o, "C compiled");
	const char *o_tmp = outputs_stage_path(m, arena_printf(a, "%s.o", name), true, true);
	res->o_path = arena_printf(a, "%s/%s.o", dir, name);
	n = compile_tool_argv(a, "LD", "ld", argv, 40);
	const char *link[] = {"-r", "-o", o_tmp, code_o, w_tmp, NULL};
	memcpy(argv + n, link, sizeof link);
	run_tool(m, argv, "merge the code and weights objects", dir);
	write_depfile(m, o, res);
	outputs_commit(m);
}

/* kiln check --batch: compile_model's stages through code generation, the
 * C written to temporary files and dropped, so that what the code
 * generator refuses (an op on an element type it has no code for) is
 * check's finding as it would be compile's, and so are the weight limits.
 * Only the host C compiler's run, and writing the outputs, are left out. */
void compile_check(Model *m, const CompileOptions *o)
{
	Sig *sigs;
	Plan *plans;
	compile_signatures(m, o, &sigs, &plans);
	EmitOptions eo = {.name = "model", .trees = o->trees};
	compile_stitch(m, o, sigs, plans, &eo);
	FILE *h = compile_open(m, NULL, "w+"), *c = compile_open(m, NULL, "w+");
	FILE *scratch = compile_open(m, NULL, "w+");
	EmitResult er;
	emit_c(m, sigs, plans, o->nbatches * (o->nbuckets > 1 ? o->nbuckets : 1), &eo, h, c,
	       scratch, &er);
	compile_close(m, scratch, "a temporary file");
	compile_close(m, c, "a temporary file");
	compile_close(m, h, "a temporary file");
	weights_fit(m, o, &er);
}
