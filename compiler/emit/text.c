/*
 * emit/text.c - TfIdfVectorizer as generated loops: per row, count every
 * pool n-gram at every start and skip distance (unigrams once), then write
 * each count to its column as TF, IDF (weight if present) or TF-IDF.
 */
#include <inttypes.h>

#include "emit_c.h"

void emit_tfidf(Emit *E)
{
	Infer x = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	TfIdf t;
	tfidf_params(&x, &t);
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	int64_t ncols = t.ncols, c = X.shape->dims[X.shape->rank - 1].size;
	int64_t rows = X.shape->rank == 2 ? X.shape->dims[0].size : 1;
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	emitf(E, "\tstatic const int64_t pool[%d] = {", t.npool ? t.npool : 1);
	for (int i = 0; i < t.npool; i++)
		emitf(E, "%s%" PRId64, i ? ", " : "", t.pool[i]);
	emitf(E, "%s};\n\tstatic const int64_t col[%" PRId64 "] = {", t.npool ? "" : "0",
	      t.ngrams ? t.ngrams : 1);
	for (int64_t i = 0; i < t.ngrams; i++)
		emitf(E, "%s%" PRId64, i ? ", " : "", t.indexes[i]);
	emitf(E, "%s};\n", t.ngrams ? "" : "0");
	if (t.weights) {
		emitf(E, "\tstatic const float weight[%" PRId64 "] = {", t.ngrams ? t.ngrams : 1);
		for (int64_t i = 0; i < t.ngrams; i++)
			emitf(E, "%s%s", i ? ", " : "", flit(E, (double)t.weights[i], DT_FLOAT));
		emitf(E, "%s};\n", t.ngrams ? "" : "0");
	}
	emitf(E, "\tfor (int64_t r = 0; r < %" PRId64 "; r++) {\n", rows);
	emitf(E, "\t\tfloat count[%" PRId64 "] = {0};\n", t.ngrams ? t.ngrams : 1);
	emitf(E, "\t\tconst %s *x = X + r * %" PRId64 ";\n", ctype(X.dtype), c);
	for (int64_t n = t.min_gram; n <= t.max_gram; n++) {
		int l = (int)n - 1;
		if (!t.level_count[l])
			continue;
		emitf(E, "\t\t/* %" PRId64 "-grams: pool[%" PRId64 "..], n-grams %" PRId64 "..%" PRId64
		         " */\n", n, t.level_start[l], t.level_first[l],
		      t.level_first[l] + t.level_count[l] - 1);
		emitf(E, "\t\tfor (int64_t step = 1; step <= %" PRId64 "; step++)\n",
		      n == 1 ? 1 : t.max_skip + 1);
		emitf(E, "\t\t\tfor (int64_t i = 0; i + %" PRId64 " * step < %" PRId64 "; i++)\n", n - 1, c);
		emitf(E, "\t\t\t\tfor (int64_t g = 0; g < %" PRId64 "; g++) {\n", t.level_count[l]);
		emitf(E, "\t\t\t\t\tconst int64_t *p = pool + %" PRId64 " + g * %" PRId64 ";\n",
		      t.level_start[l], n);
		emitf(E, "\t\t\t\t\tint64_t j = 0;\n");
		emitf(E, "\t\t\t\t\twhile (j < %" PRId64 " && (int64_t)x[i + j * step] == p[j])\n"
		         "\t\t\t\t\t\tj++;\n", n);
		emitf(E, "\t\t\t\t\tif (j == %" PRId64 ")\n\t\t\t\t\t\tcount[%" PRId64 " + g] += 1;\n",
		      n, t.level_first[l]);
		emitf(E, "\t\t\t\t}\n");
	}
	emitf(E, "\t\tfloat *y = Y + r * %" PRId64 ";\n", ncols);
	emitf(E, "\t\tfor (int64_t k = 0; k < %" PRId64 "; k++)\n\t\t\ty[k] = 0;\n", ncols);
	emitf(E, "\t\tfor (int64_t o = 0; o < %" PRId64 "; o++)\n", t.ngrams);
	const char *w = t.weights ? "weight[o]" : "1.0f";
	if (t.mode == 0)
		emitf(E, "\t\t\ty[col[o]] = count[o];\n");
	else if (t.mode == 1)
		emitf(E, "\t\t\ty[col[o]] = count[o] > 0 ? %s : 0.0f;\n", w);
	else
		emitf(E, "\t\t\ty[col[o]] = count[o] * %s;\n", w);
	emitf(E, "\t}\n");
}
