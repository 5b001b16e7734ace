/*
 * emit_obj.c - the weights object: every constant of a model as a relocatable
 * object file for any target LLVM knows, written through the LLVM-C API.
 *
 * Why an object file: the generated C refers to each weight by name, and a C
 * compiler is a poor way to carry gigabytes of bytes (a hex dump as C source
 * is ~5x the size and slow to compile). LLVM's code generator writes the bytes
 * straight into the object's read-only data, for the host or a cross target.
 *
 * What it writes: one LLVM module with one global per symbol, external linkage,
 * default visibility, `constant`, aligned as asked, no unnamed_addr (so LLVM
 * puts it in plain .rodata, never a mergeable .rodata.cst / .rodata.str
 * section where the linker could fold it). No functions, no relocations.
 * Codegen is -O0, PIC (the object links into PIE executables and shared
 * libraries), generic CPU, default code model.
 *
 * Contents: the initializer is a [n x i8] array made with
 * LLVMConstStringInContext, which copies the bytes once into the LLVM context
 * (an all-zero array becomes a zeroinitializer and costs nothing). We make no
 * copy of our own. LLVM's assembler keeps a second copy in its section
 * fragments while it writes the file; that one is LLVM's and not avoidable
 * through this API.
 *
 * Large data: on x86-64 ELF, when the symbols pass KILN_LARGE_DATA_BYTES
 * (1 GiB), every global goes to a section named .lrodata, which
 * obj_patch_mark_large flags SHF_X86_64_LARGE (LLVM 14 sets that flag only
 * for its own large-model sections). Linkers put large sections after .bss,
 * so the code and small data keep their 32-bit reach of each other however
 * big the weights are; compile.c then builds the generated code with
 * -mcmodel=medium, whose references to data of unknown size (the weights'
 * `extern const unsigned char w[]`) are 64-bit. aarch64 has no large
 * sections: there every global goes to a writable section named .ldata
 * (LLVM writes a non-constant global in a named section as PROGBITS "aw").
 * GNU ld places it, an orphan, after .data and before .bss, where .rodata
 * would sit between .text and .eh_frame, whose 32-bit PC-relative
 * references to the code (and in C++ to the personality pointer in .data)
 * overflow past 2 GiB. The code keeps the small code model, whose ADRP
 * reaches +-4 GiB, so compile.c refuses more than EMIT_OBJ_AARCH64_MAX_DATA.
 *
 * Symbols over 4 GiB - 1 bytes: the C API takes an `unsigned` length, and LLVM 14's
 * AsmPrinter truncates the size of a constant struct to 32 bits (a packed
 * struct of pieces fails with "invalid number of bytes"). Arrays are sized in
 * 64 bits, so such a symbol becomes [k x [CHUNK x i8]], CHUNK = 64 KiB; when
 * the size is not a multiple of CHUNK the last chunk is zero-padded (that
 * chunk is the one copy we make), and the symbol's size is rounded up to a
 * multiple of CHUNK.
 *
 * A zero-byte symbol is written as one zero byte (symbol size 1), so it is
 * still a defined symbol with an address of its own; users take lengths
 * from kiln's own tables, never from the symbol size.
 *
 * Determinism: the module's name and source file name are fixed
 * ("kiln-weights"), never the output path, so the same input gives the same
 * bytes wherever it is written (ELF carries the name as its STT_FILE symbol).
 *
 * Errors: everything we can check is checked before the file is opened:
 * names must be C identifiers and unique, alignments powers of two, the triple
 * known to LLVM with an object writer, the total size addressable on the
 * target, and the file system must have room. Two LLVM 14 behaviours would
 * otherwise break the header's promise never to exit:
 *  - an error diagnostic during codegen (e.g. MC's "invalid number of bytes")
 *    makes LLVMContext print it and call exit(1) unless a handler is set: we
 *    set one per context, keep the first error for err, and fail;
 *  - a write error (disk full) is reported by raw_fd_ostream with
 *    report_fatal_error, which aborts; no API hook avoids it, so we check
 *    free space first (statvfs), which makes it unlikely, not impossible.
 * When emission fails after LLVM created or overwrote the file, the file is
 * removed; when the open itself failed, an existing file is left alone.
 *
 * Assumptions: LLVM 14's C API, loaded on first use (below). Loading and
 * target registration are done once per process (pthread_once); everything else is per call, in its own LLVMContext, which
 * is how LLVM allows use from several threads (not tested here).
 * Every LLVM object (context, module, target machine, data layout, messages)
 * is disposed on every path.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "emit_obj.h"

/*
 * LLVM is loaded on first use (dlopen), not linked: libLLVM's relocations and
 * static constructors cost ~80 ms of CPU at every start of a program linked
 * with it, which every `kiln check`, `kiln info` or `kiln ops` paid without
 * writing an object. Only the calls below are used; L holds them. The
 * library is the one the build found (KILN_LLVM_LIB, from llvm-config), first
 * by its file name through the dynamic linker's search path (an installed kiln
 * on a machine with the same LLVM runtime package), then by its full path.
 * A build against a static LLVM (KILN_LLVM_LINKED) takes the linked functions.
 */
#define LLVM_FUNCS(X) \
	X(LLVMAddGlobal) \
	X(LLVMArrayType) \
	X(LLVMConstArray) \
	X(LLVMConstNull) \
	X(LLVMConstStringInContext) \
	X(LLVMContextCreate) \
	X(LLVMContextDispose) \
	X(LLVMContextSetDiagnosticHandler) \
	X(LLVMCreateTargetDataLayout) \
	X(LLVMCreateTargetMachine) \
	X(LLVMDisposeMessage) \
	X(LLVMDisposeModule) \
	X(LLVMDisposeTargetData) \
	X(LLVMDisposeTargetMachine) \
	X(LLVMGetDefaultTargetTriple) \
	X(LLVMGetDiagInfoDescription) \
	X(LLVMGetDiagInfoSeverity) \
	X(LLVMGetNamedGlobal) \
	X(LLVMGetTargetFromTriple) \
	X(LLVMInt8TypeInContext) \
	X(LLVMModuleCreateWithNameInContext) \
	X(LLVMNormalizeTargetTriple) \
	X(LLVMPointerSize) \
	X(LLVMSetAlignment) \
	X(LLVMSetGlobalConstant) \
	X(LLVMSetInitializer) \
	X(LLVMSetLinkage) \
	X(LLVMSetModuleDataLayout) \
	X(LLVMSetSection) \
	X(LLVMSetSourceFileName) \
	X(LLVMSetTarget) \
	X(LLVMSetVisibility) \
	X(LLVMTargetHasAsmBackend) \
	X(LLVMTargetHasTargetMachine) \
	X(LLVMTargetMachineEmitToFile) \
	X(LLVMTypeOf)

static struct {
#define X(f) __typeof__(f) *f;
	LLVM_FUNCS(X)
#undef X
} L;

static char llvm_failed[512];  /* why loading failed; "" when loaded */

#ifdef KILN_LLVM_LINKED
static void load_llvm(void)
{
#define X(f) L.f = f;
	LLVM_FUNCS(X)
#undef X
	LLVMInitializeAllTargetInfos();
	LLVMInitializeAllTargets();
	LLVMInitializeAllTargetMCs();
	LLVMInitializeAllAsmPrinters();
}
#else
/* Registers target t's pieces that the library has (what LLVM-C's
 * LLVMInitializeAll* do for the targets of Targets.def). */
static void init_target(void *lib, const char *t)
{
	static const char *const parts[] = { "TargetInfo", "Target", "TargetMC", "AsmPrinter" };
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
		char sym[96];
		snprintf(sym, sizeof sym, "LLVMInitialize%s%s", t, parts[i]);
		void (*init)(void);
		*(void **)&init = dlsym(lib, sym);
		if (init)
			init();
	}
}

static void load_llvm(void)
{
	const char *path = KILN_LLVM_LIB, *slash = strrchr(path, '/');
	void *lib = dlopen(slash ? slash + 1 : path, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *why = dlerror();
		snprintf(llvm_failed, sizeof llvm_failed, "cannot load LLVM (%s): %s", path,
		         why ? why : "?");
		return;
	}
#define X(f)                                                                            \
	if (!(*(void **)&L.f = dlsym(lib, #f))) {                                       \
		snprintf(llvm_failed, sizeof llvm_failed, "LLVM (%s) has no %s", path, #f); \
		return;                                                                 \
	}
	LLVM_FUNCS(X)
#undef X
#define LLVM_TARGET(t) init_target(lib, #t);
#include <llvm/Config/Targets.def>
}
#endif

/* Loads LLVM once per process; 0 when its functions are ready, else -1 with
 * the reason in llvm_failed. */
static int llvm_ready(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	if (pthread_once(&once, load_llvm) != 0)
		snprintf(llvm_failed, sizeof llvm_failed, "cannot initialize LLVM");
	return llvm_failed[0] ? -1 : 0;
}

/* Symbols up to PIECE_MAX bytes are one [n x i8] array (the C API's
 * lengths are `unsigned`); bigger ones are [k x [CHUNK x i8]] (see above).
 * The test suite builds this file again with small values. */
#ifndef KILN_OBJ_PIECE_MAX
#define KILN_OBJ_PIECE_MAX UINT_MAX
#endif
#ifndef KILN_OBJ_CHUNK
#define KILN_OBJ_CHUNK (1u << 16)
#endif
static const uint64_t PIECE_MAX = KILN_OBJ_PIECE_MAX, CHUNK = KILN_OBJ_CHUNK;

static const char MODULE_NAME[] = "kiln-weights";

/* Room kept on the file system beyond the payload and the symbol table:
 * headers and the rest. Generous on purpose. */
enum { SPACE_SLACK = 1 << 20 };

static void set_err(char *err, size_t errsz, const char *fmt, ...)
{
	if (!err || !errsz)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errsz, fmt, ap);
	va_end(ap);
	/* One line: LLVM's messages and caller-supplied names may carry anything. */
	for (char *p = err; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	size_t n = strlen(err);
	while (n && err[n - 1] == ' ')
		err[--n] = '\0';
}

static int is_c_identifier(const char *s)
{
	if (!s || !*s)
		return 0;
	for (const char *p = s; *p; p++) {
		char c = *p;
		int alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
		int digit = c >= '0' && c <= '9';
		if (!alpha && !(digit && p != s))
			return 0;
	}
	return 1;
}

/* Where the diagnostic handler puts LLVM's first error. Without a handler,
 * LLVMContext prints an error diagnostic and calls exit(1). */
typedef struct DiagSink {
	char *err;
	size_t errsz;
	int failed;
} DiagSink;

static void on_diagnostic(LLVMDiagnosticInfoRef info, void *arg)
{
	DiagSink *sink = arg;
	if (L.LLVMGetDiagInfoSeverity(info) != LLVMDSError || sink->failed)
		return;
	sink->failed = 1;
	char *desc = L.LLVMGetDiagInfoDescription(info);
	set_err(sink->err, sink->errsz, "LLVM: %s", desc ? desc : "unknown error");
	if (desc)
		L.LLVMDisposeMessage(desc);
}

/* Bytes a symbol of n content bytes takes (its ELF st_size); 0 if too large. */
static uint64_t stored_size(uint64_t n)
{
	if (n == 0)
		return 1;
	if (n <= PIECE_MAX)
		return n;
	if (n > UINT64_MAX - (CHUNK - 1) || (n + CHUNK - 1) / CHUNK > UINT_MAX)
		return 0;
	return (n + CHUNK - 1) / CHUNK * CHUNK;
}

/* The LLVM type of a symbol's contents, stored_size(n) bytes: [n x i8], or
 * [k x [CHUNK x i8]] over PIECE_MAX. */
static LLVMTypeRef contents_type(LLVMContextRef ctx, uint64_t n)
{
	LLVMTypeRef i8 = L.LLVMInt8TypeInContext(ctx);
	uint64_t size = stored_size(n);
	if (size <= PIECE_MAX)
		return L.LLVMArrayType(i8, (unsigned)size);
	return L.LLVMArrayType(L.LLVMArrayType(i8, (unsigned)CHUNK), (unsigned)(size / CHUNK));
}

/* The initializer for the n bytes at p (n > 0), matching contents_type. The
 * last chunk is zero-padded through a CHUNK-byte buffer: the only bytes we
 * copy. NULL if out of memory. */
static LLVMValueRef contents_value(LLVMContextRef ctx, const char *p, uint64_t n)
{
	if (n <= PIECE_MAX)
		return L.LLVMConstStringInContext(ctx, p, (unsigned)n, 1);
	uint64_t k = stored_size(n) / CHUNK, tail = n - (k - 1) * CHUNK;
	LLVMValueRef *vals = malloc(k * sizeof *vals);
	char *last = tail < CHUNK ? calloc(1, CHUNK) : NULL;
	if (!vals || (tail < CHUNK && !last)) {
		free(vals);
		free(last);
		return NULL;
	}
	for (uint64_t i = 0; i + 1 < k; i++)
		vals[i] = L.LLVMConstStringInContext(ctx, p + i * CHUNK, (unsigned)CHUNK, 1);
	if (last)
		memcpy(last, p + (k - 1) * CHUNK, tail);
	vals[k - 1] = L.LLVMConstStringInContext(ctx, last ? last : p + (k - 1) * CHUNK,
	                                       (unsigned)CHUNK, 1);
	free(last);
	LLVMValueRef v = L.LLVMConstArray(L.LLVMTypeOf(vals[0]), vals, (unsigned)k);
	free(vals);
	return v;
}

/* Bytes the symbols take in the section, padding included; 0 on overflow
 * (never a real answer: an empty symbol still takes one byte). */
static uint64_t payload_bytes(const ObjSymbol *syms, size_t nsyms)
{
	uint64_t total = 0;
	for (size_t i = 0; i < nsyms; i++) {
		uint64_t a = syms[i].align, n = stored_size(syms[i].nbytes);
		if (!n)
			return 0;
		uint64_t start = (total + a - 1) & ~(a - 1);
		if (start < total || n > UINT64_MAX - start)
			return 0;
		total = start + n;
	}
	return total ? total : 1;
}

/* 0 if the file system holding path has room for need bytes (or we cannot
 * tell: path is not a regular file, statvfs fails), else -1 with err. */
static int check_space(const char *path, uint64_t need, char *err, size_t errsz)
{
	struct stat st;
	uint64_t reclaimed = 0;
	if (stat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode))
			return 0; /* /dev/null, a FIFO...: not ours to judge */
		reclaimed = (uint64_t)st.st_blocks * 512; /* freed by the truncation */
	}
	size_t len = strlen(path);
	char *dir = malloc(len + 2);
	if (!dir)
		return 0;
	memcpy(dir, path, len + 1);
	char *slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	struct statvfs vfs;
	int r = statvfs(dir, &vfs);
	free(dir);
	if (r != 0)
		return 0; /* e.g. no such folder: LLVM's open reports it */
	uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	if (avail > UINT64_MAX - reclaimed)
		return 0;
	avail += reclaimed;
	if (need > UINT64_MAX - SPACE_SLACK || avail < need + SPACE_SLACK) {
		set_err(err, errsz, "cannot write \"%s\": %llu bytes needed, %llu free", path,
		        (unsigned long long)need + SPACE_SLACK, (unsigned long long)avail);
		return -1;
	}
	return 0;
}

/* Large data (emit_obj.h): what a target does with weights past the
 * threshold. norm is a normalized triple. */
enum large_kind { LARGE_NONE, LARGE_X86_64, LARGE_AARCH64 };

static enum large_kind large_data(const char *norm, uint64_t total_bytes)
{
	uint64_t threshold = UINT64_C(1) << 30;
	const char *env = getenv("KILN_LARGE_DATA_BYTES");
	if (env && *env) {
		char *end;
		unsigned long long v = strtoull(env, &end, 10);
		if (!*end)
			threshold = v;
	}
	if (total_bytes <= threshold || !obj_patch_is_elf_triple(norm))
		return LARGE_NONE;
	if (strncmp(norm, "x86_64", 6) == 0)
		return LARGE_X86_64;
	if (strncmp(norm, "aarch64", 7) == 0 && strncmp(norm, "aarch64_be", 10) != 0)
		return LARGE_AARCH64;
	return LARGE_NONE;
}

/* norm of triple (NULL or "" = the host), for the queries below. */
static enum large_kind large_data_for(const char *triple, uint64_t total_bytes, bool *aarch64)
{
	if (aarch64)
		*aarch64 = false;
	/* Without LLVM no object is written: emit_weights_object says why. */
	if (llvm_ready() != 0)
		return LARGE_NONE;
	char *host = NULL;
	char *norm = L.LLVMNormalizeTargetTriple(triple && *triple ? triple
	                                                           : (host = L.LLVMGetDefaultTargetTriple()));
	enum large_kind k = large_data(norm, total_bytes);
	if (aarch64)
		*aarch64 = strncmp(norm, "aarch64", 7) == 0 && obj_patch_is_elf_triple(norm);
	L.LLVMDisposeMessage(norm);
	if (host)
		L.LLVMDisposeMessage(host);
	return k;
}

const char *emit_obj_code_model(const char *triple, uint64_t total_bytes)
{
	return large_data_for(triple, total_bytes, NULL) == LARGE_X86_64 ? "-mcmodel=medium" : NULL;
}

uint64_t emit_obj_max_data(const char *triple)
{
	bool aarch64;
	large_data_for(triple, 0, &aarch64);
	return aarch64 ? EMIT_OBJ_AARCH64_MAX_DATA : UINT64_MAX;
}

int emit_weights_object(const char *path, const char *triple, const ObjSymbol *syms,
                        size_t nsyms, char *err, size_t errsz)
{
	int rc = -1;
	char *msg = NULL, *host = NULL, *norm = NULL;
	LLVMTargetMachineRef tm = NULL;
	LLVMContextRef ctx = NULL;
	LLVMModuleRef mod = NULL;

	if (err && errsz)
		err[0] = '\0';
	if (!path || !*path) {
		set_err(err, errsz, "no output path given");
		return -1;
	}
	if (nsyms && !syms) {
		set_err(err, errsz, "%zu symbols but no symbol array", nsyms);
		return -1;
	}
	uint64_t names = 0; /* symbol and string table bytes, roughly */
	for (size_t i = 0; i < nsyms; i++) {
		const ObjSymbol *s = &syms[i];
		if (!is_c_identifier(s->name)) {
			set_err(err, errsz, "symbol %zu: name \"%.64s\" is not a C identifier", i,
			        s->name ? s->name : "(null)");
			return -1;
		}
		if (s->nbytes && !s->bytes) {
			set_err(err, errsz, "symbol \"%s\": no bytes for %llu-byte contents", s->name,
			        (unsigned long long)s->nbytes);
			return -1;
		}
		if (s->align == 0 || (s->align & (s->align - 1))) {
			set_err(err, errsz, "symbol \"%s\": alignment %u is not a power of two",
			        s->name, (unsigned)s->align);
			return -1;
		}
		names += strlen(s->name) + 1 + 24;
	}
	uint64_t payload = payload_bytes(syms, nsyms);
	if (!payload || names > UINT64_MAX - payload) {
		set_err(err, errsz, "symbols too large for one object file");
		return -1;
	}

	if (llvm_ready() != 0) {
		set_err(err, errsz, "%s", llvm_failed);
		return -1;
	}
	const char *want = triple && *triple ? triple : (host = L.LLVMGetDefaultTargetTriple());
	norm = L.LLVMNormalizeTargetTriple(want);
	LLVMTargetRef target;
	if (L.LLVMGetTargetFromTriple(norm, &target, &msg)) {
		set_err(err, errsz, "unknown target triple \"%s\": %s", want, msg ? msg : "?");
		goto out;
	}
	if (!L.LLVMTargetHasTargetMachine(target) || !L.LLVMTargetHasAsmBackend(target)) {
		set_err(err, errsz, "target triple \"%s\": LLVM cannot write object files for it",
		        want);
		goto out;
	}
	tm = L.LLVMCreateTargetMachine(target, norm, "", "", LLVMCodeGenLevelNone, LLVMRelocPIC,
	                             LLVMCodeModelDefault);
	if (!tm) {
		set_err(err, errsz, "target triple \"%s\": LLVM cannot create a target machine",
		        want);
		goto out;
	}

	ctx = L.LLVMContextCreate();
	DiagSink sink = { err, errsz, 0 };
	L.LLVMContextSetDiagnosticHandler(ctx, on_diagnostic, &sink);
	mod = L.LLVMModuleCreateWithNameInContext(MODULE_NAME, ctx);
	L.LLVMSetSourceFileName(mod, MODULE_NAME, sizeof MODULE_NAME - 1);
	L.LLVMSetTarget(mod, norm);
	LLVMTargetDataRef layout = L.LLVMCreateTargetDataLayout(tm);
	L.LLVMSetModuleDataLayout(mod, layout);
	unsigned ptr_bytes = L.LLVMPointerSize(layout);
	L.LLVMDisposeTargetData(layout);
	if (ptr_bytes < 8 && payload > (UINT64_C(1) << (8 * ptr_bytes)) - 1) {
		set_err(err, errsz, "%llu bytes of symbols do not fit a %u-bit target (\"%s\")",
		        (unsigned long long)payload, 8 * ptr_bytes, want);
		goto out;
	}

	/* Declare everything first (cheap) so a duplicate name is reported before
	 * any bytes are copied; LLVM's symbol table finds duplicates. */
	LLVMValueRef *globals = NULL;
	if (nsyms && !(globals = malloc(nsyms * sizeof *globals))) {
		set_err(err, errsz, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nsyms; i++) {
		const ObjSymbol *s = &syms[i];
		if (L.LLVMGetNamedGlobal(mod, s->name)) {
			set_err(err, errsz, "symbol %zu: duplicate name \"%s\"", i, s->name);
			free(globals);
			goto out;
		}
		LLVMValueRef g = L.LLVMAddGlobal(mod, contents_type(ctx, s->nbytes), s->name);
		L.LLVMSetGlobalConstant(g, 1);
		L.LLVMSetLinkage(g, LLVMExternalLinkage);
		/* Hidden: global inside the relocatable NAME.o (NAME.c refers to
		 * it), local to any shared library or program linking it. */
		if (s->hidden)
			L.LLVMSetVisibility(g, LLVMHiddenVisibility);
		L.LLVMSetAlignment(g, s->align);
		globals[i] = g;
	}
	/* ELF: LLVM lays out zeros (free) and obj_patch.c writes the bytes in
	 * place afterwards; LLVM never holds a copy of the weights. */
	int patch = obj_patch_is_elf_triple(norm);
	uint64_t total = 0;
	for (size_t i = 0; i < nsyms; i++)
		total += syms[i].nbytes;
	enum large_kind large = patch ? large_data(norm, total) : LARGE_NONE;
	for (size_t i = 0; large != LARGE_NONE && i < nsyms; i++) {
		/* aarch64: a writable section, which LLVM puts in its own ".ldata"
		 * (a named section is never BSS) and linkers after .data. */
		L.LLVMSetSection(globals[i], large == LARGE_X86_64 ? ".lrodata" : ".ldata");
		if (large == LARGE_AARCH64)
			L.LLVMSetGlobalConstant(globals[i], 0);
	}
	for (size_t i = 0; i < nsyms; i++) {
		const ObjSymbol *s = &syms[i];
		static const char zero = 0;
		void *filled = NULL;  /* a repacked weight's stored bytes (not ELF: LLVM copies them) */
		if (!patch && s->nbytes && s->fill && (filled = malloc(s->nbytes)))
			s->fill(s->fill_arg, filled);
		LLVMValueRef v = patch ? L.LLVMConstNull(contents_type(ctx, s->nbytes ? s->nbytes : 1))
		                 : !s->nbytes ? contents_value(ctx, &zero, 1)
		                 : s->fill ? (filled ? contents_value(ctx, filled, s->nbytes) : NULL)
		                           : contents_value(ctx, s->bytes, s->nbytes);
		free(filled);
		if (!v) {
			set_err(err, errsz, "out of memory");
			free(globals);
			goto out;
		}
		L.LLVMSetInitializer(globals[i], v);
	}
	free(globals);

	if (check_space(path, payload + names, err, errsz) != 0)
		goto out;
	struct stat st;
	int existed = lstat(path, &st) == 0;
	int removable = !existed || S_ISREG(st.st_mode); /* never /dev/null, a link... */
	/* LLVM 14 takes a non-const file name but does not change it. */
	if (L.LLVMTargetMachineEmitToFile(tm, mod, (char *)path, LLVMObjectFile, &msg) ||
	    sink.failed) {
		if (!sink.failed)
			set_err(err, errsz, "cannot write \"%s\": %s", path, msg ? msg : "?");
		/* After a diagnostic, LLVM has written (over) the file: it is
		 * garbage either way. Otherwise the open may have failed on a file
		 * that is still intact. */
		if ((sink.failed || !existed) && removable)
			unlink(path);
		goto out;
	}
	if (patch && (obj_patch_elf(path, syms, nsyms, err, errsz) != 0 ||
	              (large == LARGE_X86_64 && obj_patch_mark_large(path, err, errsz) != 0))) {
		if (removable)
			unlink(path);
		goto out;
	}
	rc = 0;
out:
	if (mod)
		L.LLVMDisposeModule(mod);
	if (ctx)
		L.LLVMContextDispose(ctx);
	if (tm)
		L.LLVMDisposeTargetMachine(tm);
	if (msg)
		L.LLVMDisposeMessage(msg);
	if (norm)
		L.LLVMDisposeMessage(norm);
	if (host)
		L.LLVMDisposeMessage(host);
	return rc;
}
