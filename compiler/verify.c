/*
 * verify.c - `kiln verify`: compile ONNX backend-test cases, run them, and
 * compare with their reference outputs.
 *
 * A case is a folder with model.onnx and test_data_set_K/{input,output}_I.pb.
 * Each data set's inputs give the shapes to compile at (every runtime input
 * bound with --shape, the batch from the first input's first dim); the model
 * is compiled as a shared object with libkiln (compile.c), loaded with
 * dlopen, and run through its kiln_model descriptor. Floats must agree within
 * |got - want| <= atol + rtol * |want| (rtol 1e-3, atol 1e-5; NaN matches
 * NaN; --tolerance sets both and compares float16 and bfloat16 so too, which
 * are otherwise compared bit for bit), integers and booleans exactly. One line per case and a summary line.
 * Each case runs in its own arena and protected call, so one bad case cannot
 * stop the others.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compile.h"
#include "load.h"
#include "sig.h"
#include "kiln/float8.h"
#include "kiln/int4.h"
#include "kiln/kernels.h"
#include "kiln/model.h"

enum { MAX_IO = 64, MAX_SETS = 64 };
static const double RTOL = 1e-3, ATOL = 1e-5;   /* without --tolerance */

typedef struct Outcome {
	enum { V_PASS, V_FAIL, V_UNSUPPORTED, V_ERROR } kind;
	char detail[1200];
	double worst_abs, worst_rel;
	int nfrozen;
	char frozen[300];    /* names of the inputs frozen to the data's values */
} Outcome;

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted test_data_set_* folders of a case. */
static int data_sets(Arena *a, const char *dir, char **sets, int max)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < max)
		if (strncmp(e->d_name, "test_data_set_", 14) == 0)
			sets[n++] = arena_printf(a, "%s/%s", dir, e->d_name);
	closedir(d);
	qsort(sets, (size_t)n, sizeof *sets, by_name);
	return n;
}

static bool file_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

static double load_num(const void *p, int dt, int64_t i)
{
	const unsigned char *b = p;
	switch (dt) {
	case DT_FLOAT: { float v; memcpy(&v, b + 4 * i, 4); return (double)v; }
	case DT_DOUBLE: { double v; memcpy(&v, b + 8 * i, 8); return v; }
	case DT_FLOAT16: { uint16_t v; memcpy(&v, b + 2 * i, 2); return (double)kiln_f16_to_f32(v); }
	case DT_BFLOAT16: { uint16_t v; memcpy(&v, b + 2 * i, 2); return (double)kiln_bf16_to_f32(v); }
	case DT_FLOAT8E4M3FN: case DT_FLOAT8E4M3FNUZ: case DT_FLOAT8E5M2: case DT_FLOAT8E5M2FNUZ:
		return (double)kiln_f8_to_f32(b[i], dt - DT_FLOAT8E4M3FN);
	default: return 0;
	}
}

/* Compare one output; fills o on mismatch and returns false. */
static bool compare(const Tensor *want, const void *got, const char *name, int index, Outcome *o,
                    const VerifyOptions *vo)
{
	int dt = want->dtype;
	int64_t n = want->w.nelem;
	bool tol = vo->rtol >= 0;
	double rtol = tol ? vo->rtol : RTOL, atol = tol ? vo->atol : ATOL;
	if (dt == DT_FLOAT || dt == DT_DOUBLE || DT_IS_FLOAT8(dt) ||
	    (tol && (dt == DT_FLOAT16 || dt == DT_BFLOAT16))) {
		for (int64_t i = 0; i < n; i++) {
			double w = load_num(want->w.bytes, dt, i), g = load_num(got, dt, i);
			if (isnan(w) && isnan(g))
				continue;
			double err = fabs(g - w), rel = w != 0 ? err / fabs(w) : err;
			if (isinf(w) && g == w)
				err = rel = 0;
			if (err > o->worst_abs || isnan(err))
				o->worst_abs = err;
			if (rel > o->worst_rel || isnan(rel))
				o->worst_rel = rel;
			if (!(err <= atol + rtol * fabs(w))) {
				snprintf(o->detail, sizeof o->detail,
				         "output %d \"%s\" element %lld: got %.9g, expected %.9g (abs err %.3g)",
				         index, name, (long long)i, g, w, err);
				return false;
			}
		}
		return true;
	}
	/* Packed 4-bit values: element by element (nibble i of byte i / 2). */
	for (int64_t i = 0; DT_IS_4BIT(dt) && i < n; i++)
		if (kiln_u4_get(got, i) != kiln_u4_get(want->w.bytes, i)) {
			snprintf(o->detail, sizeof o->detail, "output %d \"%s\" element %lld: got %d, "
			         "expected %d (%s)", index, name, (long long)i,
			         dt == DT_INT4 ? kiln_i4_get(got, i) : kiln_u4_get(got, i),
			         dt == DT_INT4 ? kiln_i4_get(want->w.bytes, i) : kiln_u4_get(want->w.bytes, i),
			         dtype_name(dt));
			return false;
		}
	if (DT_IS_4BIT(dt) && (n & 1) && kiln_u4_get(got, n) != 0) {
		snprintf(o->detail, sizeof o->detail, "output %d \"%s\": the nibble after its last "
		         "element is %d, not 0", index, name, kiln_u4_get(got, n));
		return false;
	}
	size_t es = dtype_size(dt);
	for (int64_t i = 0; !DT_IS_4BIT(dt) && i < n; i++)
		if (memcmp((const char *)got + (size_t)i * es, (const char *)want->w.bytes + (size_t)i * es,
		           es) != 0) {
			snprintf(o->detail, sizeof o->detail, "output %d \"%s\" element %lld differs (%s)",
			         index, name, (long long)i, dtype_name(dt));
			return false;
		}
	return true;
}

/* Compile and run one case; everything it allocates is in arena a. */
static void verify_case(const char *dir, Arena *a, Diag *d, Outcome *o, const VerifyOptions *vo)
{
	jmp_buf jb;
	d->protect = &jb;
	Model *volatile m = NULL;
	char *volatile tmp = NULL;
	void *volatile so = NULL;
	/* A case whose shapes depend on input values is retried with exactly the
	 * inputs the compiler asks for frozen to the data set's values, one more
	 * per retry (ahead-of-time policy, see docs/compile.md); the result line
	 * names them. */
	static char want[MAX_IO][256];  /* static: survives the long jump (verify is one thread) */
	volatile int nwant = 0;
	if (setjmp(jb) != 0) {
		if (nwant < MAX_IO && freeze_asked(d, want[nwant], sizeof want[0])) {
			bool again = false;
			for (int i = 0; i < nwant; i++)
				again |= strcmp(want[i], want[nwant]) == 0;
			if (again)
				goto give_up;
			nwant++;
			if (so)
				dlclose(so);
			so = NULL;
			if (tmp)
				compile_remove_tree(tmp);
			tmp = NULL;
			model_close(m);
			m = NULL;
			d->status = KILN_OK;
			goto retry;
		}
	give_up:
		o->kind = d->status == KILN_UNSUPPORTED ? V_UNSUPPORTED : V_ERROR;
		snprintf(o->detail, sizeof o->detail, "%s", d->msg);
		goto done;
	}
retry:;
	const char *model_path = arena_printf(a, "%s/model.onnx", dir);
	d->file = model_path;
	m = model_new(model_path, a, d);
	m->zipmap_tensor = vo->zipmap_tensor;
	m->winograd = vo->winograd;
	model_load(m);
	ir_verify(m->graph);
	Graph *g = m->graph;
	/* Sequence, map and optional values are outside what kiln compiles, and
	 * their data files are not TensorProtos: say so before reading them. */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < (pass ? g->noutputs : g->ninputs); i++) {
			const Value *v = &g->values[pass ? g->outputs[i] : g->inputs[i]];
			if (v->type != TK_TENSOR && v->type != TK_UNKNOWN)
				diag_fail(d, KILN_UNSUPPORTED, "graph %s \"%s\" has %s type; kiln compiles "
				          "tensor graphs only", pass ? "output" : "input", v->name,
				          type_kind_name(v->type));
		}
	char *sets[MAX_SETS];
	int nsets = data_sets(a, dir, sets, MAX_SETS);
	if (nsets == 0)
		diag_fail(d, KILN_IO, "no test_data_set_* folder in %s", dir);

	int rt_in[MAX_IO], nin = 0;
	for (int i = 0; i < g->ninputs; i++)
		if (g->values[g->inputs[i]].kind == VAL_INPUT && nin < MAX_IO)
			rt_in[nin++] = g->inputs[i];
	if (g->noutputs > MAX_IO)
		diag_fail(d, KILN_LIMIT, "more than %d outputs", MAX_IO);

	for (int s = 0; s < nsets; s++) {
		Tensor ins[MAX_IO], outs[MAX_IO];
		ShapeOverride shapes[MAX_IO];
		if (m->is_optimized) {
			/* The optimizer specialized the graph to the last data set's shapes:
			 * start from the model again (value ids are the same). */
			model_close(m);
			m = model_new(model_path, a, d);
			m->zipmap_tensor = vo->zipmap_tensor;
	m->winograd = vo->winograd;
			model_load(m);
			g = m->graph;
		}
		for (int i = 0; i < nin; i++) {
			const char *p = arena_printf(a, "%s/input_%d.pb", sets[s], i);
			if (!file_exists(p))
				diag_fail(d, KILN_IO, "%s is missing", p);
			tensor_load_file(m, p, &ins[i]);
			/* ONNX 1.12's test data stores bfloat16 as its uint16 bit patterns. */
			if (ins[i].dtype == DT_UINT16 && g->values[rt_in[i]].dtype == DT_BFLOAT16)
				ins[i].dtype = DT_BFLOAT16;
			if (ins[i].dtype != g->values[rt_in[i]].dtype)
				diag_fail(d, KILN_INVALID_MODEL, "%s has type %s; the model's input \"%s\" is %s",
				          p, dtype_name(ins[i].dtype), g->values[rt_in[i]].name,
				          dtype_name(g->values[rt_in[i]].dtype));
			shapes[i].input = g->values[rt_in[i]].name;
			shapes[i].rank = ins[i].shape.rank;
			for (int k = 0; k < ins[i].shape.rank; k++)
				shapes[i].dims[k] = ins[i].shape.dims[k].size;
		}
		for (int i = 0; i < g->noutputs; i++) {
			tensor_load_file(m, arena_printf(a, "%s/output_%d.pb", sets[s], i), &outs[i]);
			if (outs[i].dtype == DT_UINT16 && g->values[g->outputs[i]].dtype == DT_BFLOAT16)
				outs[i].dtype = DT_BFLOAT16;
		}
		BindOptions bind = {.shapes = shapes, .nshapes = nin};
		Freeze frozen[MAX_IO];
		bind.freezes = frozen;
		o->frozen[0] = 0;
		for (int i = 0; i < nin; i++)
			for (int k = 0; k < nwant; k++)
				if (strcmp(want[k], g->values[rt_in[i]].name) == 0 && freeze_candidate(&ins[i])) {
					frozen[bind.nfreezes++] = (Freeze){.input = g->values[rt_in[i]].name, .value = &ins[i]};
					snprintf(o->frozen + strlen(o->frozen), sizeof o->frozen - strlen(o->frozen),
					         "%s%s", bind.nfreezes > 1 ? "," : "", g->values[rt_in[i]].name);
				}
		o->nfrozen = bind.nfreezes;
		int64_t batch = vo->batch > 0 ? vo->batch
		                : nin && ins[0].shape.rank > 0 ? ins[0].shape.dims[0].size : 1;
		if (batch < 1)
			batch = 1;

		char templ[256];
		snprintf(templ, sizeof templ, "%s/kiln-verify-XXXXXX",
		         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(templ))
			diag_fail(d, KILN_IO, "cannot create a temporary folder in %s", templ);
		tmp = arena_strdup(a, templ);
		CompileOptions co = {.name = "m", .outdir = tmp, .batches = &batch, .nbatches = 1,
		                     .bind = &bind, .shared = true, .opt_level = vo->opt_level,
		                     .passes = vo->passes, .trees = vo->trees};
		CompileResult cr;
		compile_model(m, &co, &cr);
		so = dlopen(cr.so_path, RTLD_NOW | RTLD_LOCAL);
		if (!so)
			diag_fail(d, KILN_INTERNAL, "dlopen %s: %s", cr.so_path, dlerror());
		const kiln_model *km = dlsym(so, "m_model");
		if (!km)
			diag_fail(d, KILN_INTERNAL, "no m_model in %s", cr.so_path);

		const void *in_ptrs[MAX_IO];
		void *out_ptrs[MAX_IO];
		/* Test data points into the mapped .pb files, often misaligned: hand
		 * the model aligned copies, as a real caller would. */
		for (int i = 0; i < nin; i++) {
			void *copy = arena_alloc(a, ins[i].w.nbytes + 64);
			if (ins[i].w.nbytes)
				memcpy(copy, ins[i].w.bytes, ins[i].w.nbytes);
			in_ptrs[i] = copy;
		}
		for (int i = 0; i < g->noutputs; i++) {
			out_ptrs[i] = arena_alloc(a, outs[i].w.nbytes + 64);
			memset(out_ptrs[i], 0xa5, outs[i].w.nbytes);  /* stale bytes must not pass */
		}
		void *arena_mem = arena_alloc(a, km->max_arena_bytes + 64);
		arena_mem = (void *)(((uintptr_t)arena_mem + 63) & ~(uintptr_t)63);
		int st = km->run[0](arena_mem, in_ptrs, out_ptrs);
		if (st != 0)
			diag_fail(d, KILN_INTERNAL, "run returned status %d (%s)", st,
			          kiln_status_string((enum kiln_status)st));
		for (int i = 0; i < g->noutputs; i++) {
			if (km->outputs[i].dtype != outs[i].dtype) {
				o->kind = V_FAIL;
				snprintf(o->detail, sizeof o->detail, "output %d has type %s, expected %s", i,
				         dtype_name(km->outputs[i].dtype), dtype_name(outs[i].dtype));
				goto done;
			}
			if (!compare(&outs[i], out_ptrs[i], g->values[g->outputs[i]].name, i, o, vo)) {
				o->kind = V_FAIL;
				goto done;
			}
		}
		dlclose(so);
		so = NULL;
		if (vo->keep)
			fprintf(stderr, "verify: kept %s\n", tmp);
		else
			compile_remove_tree(tmp);
		tmp = NULL;
	}
	o->kind = V_PASS;
done:
	d->protect = NULL;
	if (so)
		dlclose(so);
	if (tmp && vo->keep)
		fprintf(stderr, "verify: kept %s\n", tmp);
	else if (tmp)
		compile_remove_tree(tmp);
	model_close(m);
}

int verify_run(const VerifyOptions *vo, char **dirs, int ndirs, FILE *out)
{
	int passed = 0, failed = 0, unsupported = 0;
	for (int i = 0; i < ndirs; i++) {
		Diag d = {.file = dirs[i]};
		Arena a;
		arena_init(&a, vo->max_memory_bytes, &d);
		Outcome o = {.kind = V_ERROR, .frozen = ""};
		verify_case(dirs[i], &a, &d, &o, vo);
		switch (o.kind) {
		case V_PASS:
			fprintf(out, "PASS %s (worst abs err %.3g, rel err %.3g%s%s)\n", dirs[i], o.worst_abs,
			        o.worst_rel, o.nfrozen ? "; froze inputs " : "", o.nfrozen ? o.frozen : "");
			passed++;
			break;
		case V_FAIL:
			fprintf(out, "FAIL %s: %s\n", dirs[i], o.detail);
			failed++;
			break;
		case V_UNSUPPORTED:
			fprintf(out, "UNSUPPORTED %s: %s\n", dirs[i], o.detail);
			unsupported++;
			break;
		case V_ERROR:
			fprintf(out, "ERROR %s: %s\n", dirs[i], o.detail);
			failed++;
			break;
		}
		fflush(out);
		arena_free(&a);
	}
	fprintf(out, "verify: %d passed, %d failed, %d skipped\n", passed, failed, unsupported);
	return failed || unsupported ? 1 : 0;
}
