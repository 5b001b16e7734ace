/*
 * fuzz.h - the body shared by the libFuzzer targets of tests/fuzz: the input
 * is written to a model file (the loader maps files), then loaded and taken
 * as far as the target's stage, exactly as `kiln` does, under the protected
 * entry: a bad model must end in the Diag (a KILN_* status and one message),
 * never in a crash, a sanitizer report, a leak or a hang.
 *
 * Limits are lowered from the defaults (docs/limits.md) so that one input
 * stays fast: the fuzzer looks for bugs, not for big models.
 */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile.h"
#include "kiln.h"
#include "passes/passes.h"

enum { STAGE_LOAD, STAGE_PLAN, STAGE_EMIT };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *fuzz_dir(void)
{
	static char dir[64];
	if (!dir[0]) {
		const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
		snprintf(dir, sizeof dir, "%.30s/kiln-fuzz-XXXXXX", base);
		if (!mkdtemp(dir))
			abort();
	}
	return dir;
}

static int fuzz_one(const uint8_t *data, size_t size, int stage)
{
	char path[96];
	snprintf(path, sizeof path, "%s/model.onnx", fuzz_dir());
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	Diag d = {.file = path};
	Arena arena;
	arena_init(&arena, (size_t)256 << 20, &d);
	jmp_buf jb;
	d.protect = &jb;
	Model *volatile m = NULL;
	if (setjmp(jb) == 0) {
		m = model_new(path, &arena, &d);
		m->limits = (Limits){.max_nodes = 4000, .max_elements = (int64_t)1 << 22,
		                     .max_arena_bytes = (int64_t)256 << 20,
		                     .max_c_bytes = (int64_t)16 << 20};
		model_load(m);
		ir_verify(m->graph);
		static const int64_t batches[] = {1, 3};
		BindOptions bind = {0};
		if (stage == STAGE_PLAN) {
			FILE *null = fopen("/dev/null", "w");
			model_track_file(m, null);
			InfoOptions io = {.batches = batches, .nbatches = 2, .bind = &bind, .plan = true};
			report_info(m, null, &io);
			model_untrack_file(m, null);
			fclose(null);
		} else if (stage == STAGE_EMIT) {
			CompileOptions co = {.name = "fuzz", .outdir = fuzz_dir(), .batches = batches,
			                     .nbatches = 2, .bind = &bind, .opt_level = 0, .no_cc = true};
			CompileResult cr;
			compile_model(m, &co, &cr);
		}
	}
	model_close(m);
	arena_free(&arena);
	return 0;
}
