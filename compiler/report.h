/*
 * report.h - what `kiln info`, `kiln check` and `kiln ops` print (report.c,
 * ops_doc.c) and the JSON writer (json.c).
 */
#ifndef KILN_REPORT_H
#define KILN_REPORT_H

#include "sig.h"

/* ---- json.c: a small JSON writer -------------------------------------- */

typedef struct Json {
	FILE *out;
	int depth;
	bool first[64];      /* per nesting level: no comma needed yet */
	bool pending_key;
} Json;
void json_begin_object(Json *j);
void json_end_object(Json *j);
void json_begin_array(Json *j);
void json_end_array(Json *j);
void json_key(Json *j, const char *key);
void json_string(Json *j, const char *s);
void json_int(Json *j, int64_t v);
void json_uint(Json *j, uint64_t v);
void json_bool(Json *j, bool v);
void json_null(Json *j);
/* a key and its value in one call */
void json_field_int(Json *j, const char *key, int64_t v);
void json_field_uint(Json *j, const char *key, uint64_t v);
void json_field_string(Json *j, const char *key, const char *s);
void json_field_bool(Json *j, const char *key, bool v);
void json_write_escaped(FILE *out, const char *s);

/* ---- report.c: `kiln info` and `kiln check` --------------------------- */

typedef struct InfoOptions {
	bool json;
	const int64_t *batches;  /* signatures to infer; none if nbatches == 0 */
	int nbatches;
	const BindOptions *bind;
	bool plan;               /* also plan the arena of each signature */
	/* With plan: run the optimizer before inferring the signatures, so the
	 * arenas and context bytes are those `kiln compile` gives (the summary
	 * still describes the model as written). NULL: plan the graph as loaded. */
	const struct PassOptions *optimize;
	const char *svg_path;    /* with plan: also draw the plans into this SVG file */
} InfoOptions;

void report_info(Model *m, FILE *out, const InfoOptions *o);
/* The IR, and with a signature its static shapes. */
void report_dump(Model *m, FILE *out, const InfoOptions *o);
/* Returns the number of unsupported nodes. */
int report_check(Model *m, FILE *out, const BindOptions *bind);

/* `kiln ops`: the supported operators, as text or Markdown (ops_doc.c). */
int report_ops(FILE *out, bool markdown);

#endif
