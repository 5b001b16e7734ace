/*
 * ops/text.c - TfIdfVectorizer: counts of the n-grams of a pool in each row
 * of integer tokens, as TF, IDF or TF-IDF.
 *
 * The pool, its n-gram boundaries and the output columns are attributes, so
 * the output shape is static ([C] -> [O], [N, C] -> [N, O]); the tokens are
 * read at run time by the loops emit/text.c writes. String pools (and string
 * tokens) are outside kiln's scope.
 */
#include <string.h>

#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

enum { MAX_POOL = 1 << 16 };

void tfidf_params(Infer *x, TfIdf *t)
{
	memset(t, 0, sizeof *t);
	const Attr *pool = node_attr(x->n, "pool_int64s");
	if (node_attr(x->n, "pool_strings"))
		infer_fail(x, KILN_UNSUPPORTED, "string pools are not supported (kiln compiles numeric "
		           "tensors only)");
	if (!pool || pool->type != AT_INTS)
		infer_fail(x, KILN_INVALID_MODEL, "pool_int64s is required");
	const Attr *counts = node_attr(x->n, "ngram_counts");
	const Attr *indexes = node_attr(x->n, "ngram_indexes");
	if (!counts || counts->type != AT_INTS || !indexes || indexes->type != AT_INTS)
		infer_fail(x, KILN_INVALID_MODEL, "ngram_counts and ngram_indexes are required");
	if (pool->n > MAX_POOL || counts->n > 64)
		infer_fail(x, KILN_LIMIT, "a pool of %d tokens in %d levels is beyond kiln's limits "
		           "(%d, 64)", pool->n, counts->n, MAX_POOL);
	t->min_gram = attr_int(x, "min_gram_length", 0);
	t->max_gram = attr_int(x, "max_gram_length", 0);
	t->max_skip = attr_int(x, "max_skip_count", 0);
	if (t->min_gram < 1 || t->max_gram < t->min_gram || t->max_gram > counts->n ||
	    t->max_skip < 0)
		infer_fail(x, KILN_INVALID_MODEL, "min_gram_length %lld, max_gram_length %lld, "
		           "max_skip_count %lld do not fit %d pool levels", (long long)t->min_gram,
		           (long long)t->max_gram, (long long)t->max_skip, counts->n);
	const char *mode = attr_string(x, "mode", "");
	t->mode = strcmp(mode, "TF") == 0 ? 0 : strcmp(mode, "IDF") == 0 ? 1
	        : strcmp(mode, "TFIDF") == 0 ? 2 : -1;
	if (t->mode < 0)
		infer_fail(x, KILN_INVALID_MODEL, "mode must be TF, IDF or TFIDF, got \"%s\"", mode);
	t->pool = pool->ints;
	t->npool = pool->n;
	t->nlevels = counts->n;
	/* Level n (1-based) holds the n-grams pool[start[n-1] .. start[n]), n tokens each. */
	int64_t ngrams = 0;
	for (int l = 0; l < counts->n; l++) {
		int64_t start = counts->ints[l];
		int64_t end = l + 1 < counts->n ? counts->ints[l + 1] : pool->n;
		if (start < 0 || end < start || end > pool->n || (end - start) % (l + 1))
			infer_fail(x, KILN_INVALID_MODEL, "ngram_counts[%d] = %lld does not split the pool "
			           "into %d-grams", l, (long long)start, l + 1);
		t->level_start[l] = start;
		t->level_count[l] = (end - start) / (l + 1);
		t->level_first[l] = ngrams;   /* ordinal of the level's first n-gram */
		ngrams += t->level_count[l];
	}
	if (indexes->n != ngrams)
		infer_fail(x, KILN_INVALID_MODEL, "ngram_indexes has %d entries; the pool holds %lld "
		           "n-grams", indexes->n, (long long)ngrams);
	t->indexes = indexes->ints;
	t->ngrams = ngrams;
	t->ncols = 0;
	for (int i = 0; i < indexes->n; i++) {
		if (indexes->ints[i] < 0 || indexes->ints[i] >= MAX_POOL)
			infer_fail(x, KILN_INVALID_MODEL, "ngram_indexes[%d] = %lld is out of range", i,
			           (long long)indexes->ints[i]);
		if (indexes->ints[i] + 1 > t->ncols)
			t->ncols = indexes->ints[i] + 1;
	}
	const Attr *w = node_attr(x->n, "weights");
	if (w && (w->type != AT_FLOATS || w->n != ngrams))
		infer_fail(x, KILN_INVALID_MODEL, "weights must hold one float per n-gram (%lld)",
		           (long long)ngrams);
	t->weights = w ? w->floats : NULL;
}

void ops_text_infer(Infer *x)
{
	TfIdf t;
	tfidf_params(x, &t);
	const Shape *in = infer_shape(x, 0);
	int dt = infer_dtype(x, 0);
	if (dt != DT_INT32 && dt != DT_INT64)
		infer_fail(x, KILN_UNSUPPORTED, "tokens of type %s are not supported (int32 or int64)",
		           dtype_name(dt));
	if (in->rank != 1 && in->rank != 2)
		infer_fail(x, KILN_SHAPE_ERROR, "input must be [C] or [N, C], got rank %d", in->rank);
	Shape y = *in;
	y.dims[in->rank - 1] = (Dim){t.ncols, NULL};
	infer_set_output(x, 0, DT_FLOAT, &y);
}

/* ---- the records (opdef.h) ---------------------------------------------- */

const OpDef ops_text_defs[] = {
	{.op = OP_TfIdfVectorizer, .infer = ops_text_infer, .emit = emit_tfidf,
	 .note = "integer pools (pool_int64s); TF, IDF and TFIDF"},
	{.op = NONE},
};
