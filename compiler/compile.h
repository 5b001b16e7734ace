/*
 * compile.h - the compile driver shared by `kiln compile` and `kiln verify`.
 */
#ifndef KILN_COMPILE_H
#define KILN_COMPILE_H

#include "kiln.h"

typedef struct CompileOptions {
	const char *name;          /* C prefix; NULL: from the model's file name */
	const char *outdir;        /* NULL: "." */
	const char *target;        /* LLVM triple; NULL: the host */
	const int64_t *batches;
	int nbatches;
	const BindOptions *bind;
	bool shared;               /* build NAME.so with libkiln (kiln verify) instead of NAME.o */
	int opt_level;             /* the C compiler's -O level */
} CompileOptions;

typedef struct CompileResult {
	const char *name;
	const char *h_path, *c_path, *weights_path;
	const char *o_path;        /* NULL for a cross target */
	const char *so_path;       /* with shared */
	uint64_t weight_bytes;     /* bytes in the weights object */
	int nsymbols;
	int64_t arena_bytes;       /* the largest signature's */
} CompileResult;

void compile_model(Model *m, const CompileOptions *o, CompileResult *res);

typedef struct VerifyOptions {
	int64_t batch;             /* 0: from the data set's first input */
	int opt_level;
	bool keep;                 /* keep the temporary build folders */
	size_t max_memory_bytes;
} VerifyOptions;

/* Verify each case folder; prints one line per case and a summary line.
 * Returns 0 if every case passed. */
int verify_run(const VerifyOptions *vo, char **dirs, int ndirs, FILE *out);
const char *compile_include_dir(Arena *a);
const char *compile_runtime_lib(void);
/* Open a file (NULL path: a temporary one) that the Model closes if an error
 * long-jumps; compile_close closes it normally and reports write errors. */
FILE *compile_open(Model *m, const char *path, const char *mode);
void compile_close(Model *m, FILE *f, const char *path);

#endif
