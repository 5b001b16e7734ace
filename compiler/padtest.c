/*
 * padtest.c - padding tested harmless by evaluation, for models the rules
 * of padproof.c cannot prove (ParT's pair embedding: a triangle of pairs
 * through NonZero and ScatterND).
 *
 * The model is compiled (as `kiln verify` does: a shared object with
 * libkiln, loaded with dlopen) at batch 1 and at each size of the padded
 * dim the comparison needs: every bucket and a few exact lengths L (1,
 * half the smallest bucket, the smallest bucket, halfway to the largest).
 * Every input gets values that depend only on (input, position): real
 * positions the same at every size, padded ones 0, mask inputs 1 at real
 * positions and 0 at padded ones. Two input sets: floats in [-1, 1), and in
 * [0.05, 1.05) (4-vectors whose logs stay finite); integers 0 to 3. A set
 * whose reference run has a NaN at a real position decides nothing; at
 * least one must decide. For each L, each bucket B >= L runs the
 * jet padded to B and its outputs at real positions (outputs without the
 * dim: all of them) must equal the run at exactly L, or, when the model
 * does not compile at L (a kNN's k > L), the run at the largest bucket.
 * A size kiln cannot compile at is skipped. This tests, it does not prove:
 * lengths not tried may behave otherwise.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile.h"
#include "load.h"
#include "padproof.h"
#include "kiln/model.h"

enum { MAX_SIZES = 16, MAX_IO = 64 };
static const double RTOL = 1e-4, ATOL = 1e-6;

typedef struct Built {
	int64_t size;
	void *so;
	const kiln_model *km;
} Built;

/* Compile the model at SYMBOL = size into dir; NULL km if kiln cannot. */
static void build(Model *m, const BindOptions *o, const PadOptions *po, const char *dir, Built *b)
{
	Diag *d = m->diag;
	Diag saved = *d;
	jmp_buf jb;
	d->protect = &jb;
	b->km = NULL;
	b->so = NULL;
	Model *volatile fresh = NULL;
	if (setjmp(jb) == 0) {
		fresh = model_new(m->path, m->arena, d);
		fresh->limits = m->limits;
		model_load(fresh);
		DimValue *dims = arena_array(m->arena, (size_t)o->ndims + 1, sizeof *dims);
		int nd = 0;
		for (int i = 0; i < o->ndims; i++)
			if (strcmp(o->dims[i].symbol, po->symbol) != 0)
				dims[nd++] = o->dims[i];
		dims[nd++] = (DimValue){po->symbol, b->size};
		BindOptions bind = *o;
		bind.dims = dims;
		bind.ndims = nd;
		static const int64_t one = 1;
		CompileOptions co = {.name = arena_printf(m->arena, "pad%lld", (long long)b->size),
		                     .outdir = dir, .batches = &one, .nbatches = 1, .bind = &bind,
		                     .shared = true, .opt_level = 1};
		CompileResult cr;
		compile_model(fresh, &co, &cr);
		b->so = dlopen(cr.so_path, RTLD_NOW | RTLD_LOCAL);
		if (b->so)
			b->km = dlsym(b->so, arena_printf(m->arena, "%s_model", co.name));
	}
	if (fresh) {
		jmp_buf jb2;
		d->protect = &jb2;
		if (setjmp(jb2) == 0)
			model_close(fresh);
	}
	*d = saved;
}

/* A value in [-1, 1) that depends only on (input, element index at the
 * exact layout). */
static double value_at(int input, uint64_t key)
{
	uint64_t h = (uint64_t)input * 0x9e3779b97f4a7c15u ^ key * 0xbf58476d1ce4e5b9u;
	h ^= h >> 31;
	h *= 0x94d049bb133111ebu;
	h ^= h >> 29;
	return (double)(h >> 11) / (double)(1ull << 52) - 1.0;
}

static bool store(void *p, int dt, int64_t i, double v)
{
	switch (dt) {
	case KILN_FLOAT32: ((float *)p)[i] = (float)v; return true;
	case KILN_FLOAT64: ((double *)p)[i] = v; return true;
	case KILN_INT64: ((int64_t *)p)[i] = (int64_t)v; return true;
	case KILN_INT32: ((int32_t *)p)[i] = (int32_t)v; return true;
	case KILN_BOOL: case KILN_UINT8: ((uint8_t *)p)[i] = v != 0; return true;
	}
	return false;
}

static double load(const void *p, int dt, int64_t i)
{
	switch (dt) {
	case KILN_FLOAT32: return (double)((const float *)p)[i];
	case KILN_FLOAT64: return ((const double *)p)[i];
	case KILN_INT64: return (double)((const int64_t *)p)[i];
	case KILN_INT32: return ((const int32_t *)p)[i];
	case KILN_BOOL: case KILN_UINT8: return ((const uint8_t *)p)[i];
	}
	return (double)NAN;
}

static size_t elem_bytes(int dt)
{
	return dt == KILN_FLOAT64 || dt == KILN_INT64 ? 8 : dt == KILN_FLOAT32 || dt == KILN_INT32 ? 4 : 1;
}

static int64_t count(const kiln_tensor_desc *t)
{
	int64_t n = 1;
	for (int k = 0; k < t->rank; k++)
		n *= t->dims[k];
	return n;
}

/* Which axes of a graph input or output carry the symbol (declared dims). */
static unsigned sym_axes(const Value *v, const char *symbol)
{
	unsigned s = 0;
	for (int k = 0; k < v->shape.rank; k++)
		if (v->shape.dims[k].param && strcmp(v->shape.dims[k].param, symbol) == 0)
			s |= 1u << k;
	return s;
}

/* Coordinates of flat element i of dims (rank r). */
static void coords(int64_t i, const int64_t *dims, int r, int64_t *c)
{
	for (int k = r - 1; k >= 0; k--) {
		c[k] = dims[k] ? i % dims[k] : 0;
		i = dims[k] ? i / dims[k] : 0;
	}
}

/* Run the model built at b for a jet of length L; outputs into out[]. */
static const char *run(Model *m, const PadOptions *po, const Built *b, int64_t L, int fill,
                       void **out)
{
	const kiln_model *km = b->km;
	Graph *g = m->graph;
	const void *ins[MAX_IO];
	int gi = 0;
	for (int i = 0; i < km->ninputs; i++) {
		const kiln_tensor_desc *t = &km->inputs[i];
		while (gi < g->ninputs && g->values[g->inputs[gi]].kind != VAL_INPUT)
			gi++;
		const Value *v = &g->values[g->inputs[gi++]];
		unsigned ax = sym_axes(v, po->symbol);
		bool mask = ax && pad_is_mask(po, v->name);
		int64_t n = count(t), c[8];
		void *p = arena_alloc(m->arena, (size_t)n * elem_bytes(t->dtype) + 64);
		for (int64_t e = 0; e < n; e++) {
			coords(e, t->dims, t->rank, c);
			bool real = true;
			uint64_t key = 0;
			for (int k = 0; k < t->rank; k++) {
				real &= !(ax >> k & 1u) || c[k] < L;
				key = key * 1000003u + (uint64_t)c[k];   /* the same at every size */
			}
			double x = value_at(i, key);
			/* floats in [-1, 1) (fill 0) or [0.05, 1.05) (fill 1: 4-vectors with
			 * E >= 0 keep their logs finite), integers 0..3 */
			x = t->dtype == KILN_INT64 || t->dtype == KILN_INT32 ? floor((x + 1) * 2)
			    : fill ? 0.55 + x / 2 : x;
			x = !real ? 0 : mask ? 1 : x;
			if (!store(p, t->dtype, e, x))
				return arena_printf(m->arena, "input \"%s\" has a type the check does not fill",
				                    t->name);
		}
		ins[i] = p;
	}
	for (int o = 0; o < km->noutputs; o++)
		out[o] = arena_alloc(m->arena, (size_t)count(&km->outputs[o]) * elem_bytes(km->outputs[o].dtype) + 64);
	void *mem = arena_alloc(m->arena, km->max_arena_bytes + 64);
	mem = (void *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
	int st = km->run[0](mem, ins, out);
	return st ? arena_printf(m->arena, "the run at %lld failed with status %d", (long long)b->size, st)
	          : NULL;
}

/* Compare the outputs of ref (built at rb) and got (at gb) at the real
 * positions of a jet of length L; NULL if they agree. */
static const char *compare(Model *m, const PadOptions *po, int64_t L, const Built *rb, void **ref,
                           const Built *gb, void **got, bool *nan)
{
	Graph *g = m->graph;
	for (int o = 0; o < rb->km->noutputs; o++) {
		const kiln_tensor_desc *tr = &rb->km->outputs[o], *tg = &gb->km->outputs[o];
		unsigned ax = sym_axes(&g->values[g->outputs[o]], po->symbol);
		if (tr->rank != tg->rank || (!ax && count(tr) != count(tg)))
			return arena_printf(m->arena, "output \"%s\" changes shape with %s but does not "
			                    "declare it", tr->name, po->symbol);
		int64_t n = count(tr), c[8];
		for (int64_t e = 0; e < n; e++) {
			coords(e, tr->dims, tr->rank, c);
			bool real = true;
			int64_t at = 0;
			for (int k = 0; k < tr->rank; k++) {
				real &= !(ax >> k & 1u) || c[k] < L;
				at = at * tg->dims[k] + c[k];
			}
			if (!real)
				continue;
			double a = load(got[o], tg->dtype, at), b = load(ref[o], tr->dtype, e);
			if (isnan(b)) {   /* this input set decides nothing */
				*nan = true;
				return NULL;
			}
			if (!(fabs(a - b) <= ATOL + RTOL * fabs(b)))
				return arena_printf(m->arena, "at %s = %lld padded to %lld, output \"%s\" element "
				                    "%lld is %.6g, not %.6g (%s)", po->symbol, (long long)L,
				                    (long long)gb->size, tr->name, (long long)e, a, b,
				                    rb->size == L ? "the exact length" : "the largest bucket");
		}
	}
	return NULL;
}

bool pad_evaluate(Model *m, const BindOptions *o, const PadOptions *po, const char **why,
                  const char **tested)
{
	int64_t lo = 0, hi = 0;
	for (int i = 0; i < po->nbuckets; i++) {
		lo = !lo || po->buckets[i] < lo ? po->buckets[i] : lo;
		hi = po->buckets[i] > hi ? po->buckets[i] : hi;
	}
	int64_t lens[4] = {1, lo / 2 > 1 ? lo / 2 : 1, lo, (lo + hi) / 2}, sizes[MAX_SIZES];
	int nl = 0, ns = 0;
	for (int i = 0; i < 4; i++) {
		bool dup = false;
		for (int j = 0; j < nl; j++)
			dup |= lens[j] == lens[i];
		if (!dup && lens[i] >= 1)
			lens[nl++] = lens[i];
	}
	for (int i = 0; i < nl; i++)
		sizes[ns++] = lens[i];
	for (int i = 0; i < po->nbuckets && ns < MAX_SIZES; i++) {
		bool dup = false;
		for (int j = 0; j < ns; j++)
			dup |= sizes[j] == po->buckets[i];
		if (!dup)
			sizes[ns++] = po->buckets[i];
	}
	char templ[256];
	snprintf(templ, sizeof templ, "%s/kiln-padtest-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(templ))
		diag_fail(m->diag, KILN_IO, "cannot create a temporary folder in %s", templ);
	Built built[MAX_SIZES];
	for (int i = 0; i < ns; i++) {
		built[i].size = sizes[i];
		build(m, o, po, templ, &built[i]);
	}
	const Built *largest = NULL;
	for (int i = 0; i < ns; i++)
		if (built[i].km && built[i].size == hi)
			largest = &built[i];
	*why = NULL;
	char list[256] = "";
	size_t len = 0;
	int compared = 0;
	if (!largest)
		*why = arena_printf(m->arena, "the model does not compile at %s = %lld", po->symbol,
		                    (long long)hi);
	for (int l = 0; l < nl && len < sizeof list; l++)
		len += (size_t)snprintf(list + len, sizeof list - len, "%s%lld", l ? "," : "",
		                        (long long)lens[l]);
	int decided = 0;
	for (int fill = 0; fill < 2 && !*why; fill++) {
		bool nan = false;
		for (int l = 0; l < nl && !*why && !nan; l++) {
			int64_t L = lens[l];
			const Built *ref = largest;
			for (int i = 0; i < ns; i++)
				if (built[i].km && built[i].size == L)
					ref = &built[i];
			void *rout[MAX_IO], *gout[MAX_IO];
			if (ref->km->noutputs > MAX_IO || ref->km->ninputs > MAX_IO) {
				*why = "too many inputs or outputs to evaluate";
				break;
			}
			*why = run(m, po, ref, L, fill, rout);
			for (int i = 0; i < ns && !*why && !nan; i++) {
				const Built *b = &built[i];
				bool bucket = false;
				for (int j = 0; j < po->nbuckets; j++)
					bucket |= po->buckets[j] == b->size;
				if (!b->km || !bucket || b == ref || b->size < L)
					continue;
				*why = run(m, po, b, L, fill, gout);
				if (!*why)
					*why = compare(m, po, L, ref, rout, b, gout, &nan);
				compared += !nan;
			}
		}
		decided += !nan;
	}
	if (!*why && !decided)
		*why = "the runs give NaN at real positions with both input sets: the evaluation cannot "
		       "decide";
	for (int i = 0; i < ns; i++)
		if (built[i].so)
			dlclose(built[i].so);
	compile_remove_tree(templ);
	*tested = arena_printf(m->arena, "lengths %s against the buckets (%d runs compared, %d of 2 "
	                       "input sets without NaN)", list, compared, decided);
	return !*why && compared > 0;
}
