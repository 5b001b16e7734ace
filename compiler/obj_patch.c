/*
 * obj_patch.c - write the weights' bytes into an ELF object whose symbols
 * LLVM laid out as zeros.
 *
 * Why: handing LLVM the bytes costs two copies of every weight (the LLVM
 * context's constant and the assembler's fragment), so compiling W bytes of
 * weights peaked near 3 x W. A constant all-zero global costs LLVM nothing
 * (a fill fragment) and still lands in .rodata at its final offset, so for
 * ELF targets emit_obj.c declares zeros and this file then copies each
 * symbol's bytes from where they already are (the model's mapping, or the
 * arena for folded constants) straight into the file: no third copy.
 *
 * It reads the section headers and the symbol table (ELF32 or ELF64, either
 * byte order) and, for each symbol kiln asked for, writes its bytes at its
 * section's file offset plus its value. Anything unexpected (a missing
 * symbol, a NOBITS section, a range past the section) is an error, never a
 * silent skip: the object would otherwise hold zeros.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emit_obj.h"

typedef struct Elf {
	const unsigned char *hdr;
	bool is64, big;
} Elf;

static uint64_t rd(const Elf *e, const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[e->big ? n - 1 - i : i] << (8 * i);
	return v;
}

static int fail(char *err, size_t errsz, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (err && errsz)
		vsnprintf(err, errsz, fmt, ap);
	va_end(ap);
	return -1;
}

static bool read_at(int fd, void *buf, uint64_t n, uint64_t off)
{
	unsigned char *p = buf;
	while (n) {
		ssize_t got = pread(fd, p, n > (1u << 30) ? (1u << 30) : n, (off_t)off);
		if (got <= 0)
			return false;
		p += got;
		n -= (uint64_t)got;
		off += (uint64_t)got;
	}
	return true;
}

static bool write_at(int fd, const void *buf, uint64_t n, uint64_t off)
{
	const unsigned char *p = buf;
	while (n) {
		ssize_t put = pwrite(fd, p, n > (1u << 30) ? (1u << 30) : n, (off_t)off);
		if (put <= 0)
			return false;
		p += put;
		n -= (uint64_t)put;
		off += (uint64_t)put;
	}
	return true;
}

typedef struct Section {
	uint64_t type, offset, size, link;
} Section;

static int by_name(const void *a, const void *b)
{
	return strcmp((*(const ObjSymbol *const *)a)->name, (*(const ObjSymbol *const *)b)->name);
}

bool obj_patch_is_elf_triple(const char *triple)
{
	static const char *const not_elf[] = {"apple", "darwin", "macos", "ios", "windows",
	                                      "win32", "mingw", "cygwin", "aix", "wasm", "uefi"};
	for (size_t i = 0; i < sizeof not_elf / sizeof not_elf[0]; i++)
		if (strstr(triple, not_elf[i]))
			return false;
	return true;
}

int obj_patch_elf(const char *path, const ObjSymbol *syms, size_t nsyms, char *err,
                  size_t errsz)
{
	int fd = open(path, O_RDWR);
	if (fd < 0)
		return fail(err, errsz, "cannot reopen \"%s\": %s", path, strerror(errno));
	int rc = -1;
	unsigned char h[64];
	Section *secs = NULL;
	unsigned char *symtab = NULL, *shdrs = NULL;
	char *strtab = NULL;
	const ObjSymbol **sorted = NULL;
	size_t found = 0;
	if (!read_at(fd, h, sizeof h, 0) || memcmp(h, "\177ELF", 4) != 0 || h[4] < 1 || h[4] > 2 ||
	    h[5] < 1 || h[5] > 2) {
		fail(err, errsz, "\"%s\" is not an ELF object", path);
		goto out;
	}
	Elf e = {.hdr = h, .is64 = h[4] == 2, .big = h[5] == 2};
	uint64_t shoff = e.is64 ? rd(&e, h + 0x28, 8) : rd(&e, h + 0x20, 4);
	uint64_t shentsize = rd(&e, h + (e.is64 ? 0x3a : 0x2e), 2);
	uint64_t shnum = rd(&e, h + (e.is64 ? 0x3c : 0x30), 2);
	if (shnum == 0 || shentsize < (e.is64 ? 64u : 40u)) {
		fail(err, errsz, "\"%s\": no section headers", path);
		goto out;
	}
	shdrs = malloc(shnum * shentsize);
	secs = calloc(shnum, sizeof *secs);
	if (!shdrs || !secs || !read_at(fd, shdrs, shnum * shentsize, shoff)) {
		fail(err, errsz, "\"%s\": cannot read section headers", path);
		goto out;
	}
	uint64_t symsec = shnum;
	for (uint64_t i = 0; i < shnum; i++) {
		const unsigned char *s = shdrs + i * shentsize;
		secs[i].type = rd(&e, s + 4, 4);
		secs[i].offset = e.is64 ? rd(&e, s + 0x18, 8) : rd(&e, s + 0x10, 4);
		secs[i].size = e.is64 ? rd(&e, s + 0x20, 8) : rd(&e, s + 0x14, 4);
		secs[i].link = rd(&e, s + (e.is64 ? 0x28 : 0x18), 4);
		if (secs[i].type == 2 /* SHT_SYMTAB */)
			symsec = i;
	}
	if (symsec == shnum || secs[symsec].link >= shnum) {
		fail(err, errsz, "\"%s\": no symbol table", path);
		goto out;
	}
	const Section *ss = &secs[symsec], *st = &secs[ss->link];
	symtab = malloc(ss->size ? ss->size : 1);
	strtab = malloc(st->size + 1);
	if (!symtab || !strtab || !read_at(fd, symtab, ss->size, ss->offset) ||
	    !read_at(fd, strtab, st->size, st->offset)) {
		fail(err, errsz, "\"%s\": cannot read the symbol table", path);
		goto out;
	}
	strtab[st->size] = 0;
	sorted = malloc((nsyms ? nsyms : 1) * sizeof *sorted);
	if (!sorted) {
		fail(err, errsz, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nsyms; i++)
		sorted[i] = &syms[i];
	qsort(sorted, nsyms, sizeof *sorted, by_name);
	size_t symsize = e.is64 ? 24 : 16;
	for (uint64_t off = 0; off + symsize <= ss->size; off += symsize) {
		const unsigned char *sym = symtab + off;
		uint64_t name = rd(&e, sym, 4);
		uint64_t value = e.is64 ? rd(&e, sym + 8, 8) : rd(&e, sym + 4, 4);
		uint64_t shndx = rd(&e, sym + (e.is64 ? 6 : 14), 2);
		if (name >= st->size)
			continue;
		ObjSymbol key = {.name = strtab + name};
		const ObjSymbol *kp = &key, **hit = bsearch(&kp, sorted, nsyms, sizeof *sorted, by_name);
		if (!hit)
			continue;
		const ObjSymbol *want = *hit;
		if (shndx == 0 || shndx >= shnum || secs[shndx].type != 1 /* SHT_PROGBITS */ ||
		    value > secs[shndx].size || want->nbytes > secs[shndx].size - value) {
			fail(err, errsz, "\"%s\": symbol \"%s\" is not where its bytes can go", path,
			     want->name);
			goto out;
		}
		const void *bytes = want->bytes;
		void *filled = NULL;
		if (want->nbytes && want->fill) {
			/* a repacked weight: its stored bytes exist only here, one at a time */
			if (!(filled = malloc(want->nbytes))) {
				fail(err, errsz, "out of memory repacking \"%s\"", want->name);
				goto out;
			}
			want->fill(want->fill_arg, filled);
			bytes = filled;
		}
		int wrote = !want->nbytes || write_at(fd, bytes, want->nbytes, secs[shndx].offset + value);
		free(filled);
		if (!wrote) {
			fail(err, errsz, "writing \"%s\": %s", path, strerror(errno));
			goto out;
		}
		found++;
	}
	if (found != nsyms) {
		fail(err, errsz, "\"%s\": %zu of %zu symbols found in the object", path, found, nsyms);
		goto out;
	}
	rc = 0;
out:
	if (close(fd) != 0 && rc == 0)
		rc = fail(err, errsz, "writing \"%s\": %s", path, strerror(errno));
	free(secs);
	free(shdrs);
	free(symtab);
	free(strtab);
	free(sorted);
	return rc;
}

/* x86-64 ELF: mark every section named .lrodata (or .lrodata.*) with
 * SHF_X86_64_LARGE, which LLVM 14 does not set for an explicit section name.
 * Linkers place large sections after .bss, away from the code and small
 * data, so more than 2 GiB of weights leave the rest of the program within
 * its 32-bit reach (emit_obj_code_model). */
int obj_patch_mark_large(const char *path, char *err, size_t errsz)
{
	enum { SHF_X86_64_LARGE = 0x10000000 };
	int fd = open(path, O_RDWR);
	if (fd < 0)
		return fail(err, errsz, "cannot reopen \"%s\": %s", path, strerror(errno));
	int rc = -1, marked = 0;
	unsigned char h[64], *shdrs = NULL;
	char *names = NULL;
	if (!read_at(fd, h, sizeof h, 0) || memcmp(h, "\177ELF", 4) != 0 || h[4] != 2 || h[5] != 1) {
		fail(err, errsz, "\"%s\" is not a 64-bit little-endian ELF object", path);
		goto out;
	}
	Elf e = {.hdr = h, .is64 = true, .big = false};
	uint64_t shoff = rd(&e, h + 0x28, 8), shentsize = rd(&e, h + 0x3a, 2);
	uint64_t shnum = rd(&e, h + 0x3c, 2), shstrndx = rd(&e, h + 0x3e, 2);
	if (shnum == 0 || shentsize < 64 || shstrndx >= shnum) {
		fail(err, errsz, "\"%s\": no section headers", path);
		goto out;
	}
	shdrs = malloc(shnum * shentsize);
	if (!shdrs || !read_at(fd, shdrs, shnum * shentsize, shoff)) {
		fail(err, errsz, "\"%s\": cannot read section headers", path);
		goto out;
	}
	const unsigned char *ns = shdrs + shstrndx * shentsize;
	uint64_t names_off = rd(&e, ns + 0x18, 8), names_size = rd(&e, ns + 0x20, 8);
	names = malloc(names_size + 1);
	if (!names || !read_at(fd, names, names_size, names_off)) {
		fail(err, errsz, "\"%s\": cannot read the section names", path);
		goto out;
	}
	names[names_size] = 0;
	for (uint64_t i = 0; i < shnum; i++) {
		unsigned char *s = shdrs + i * shentsize;
		uint64_t name = rd(&e, s, 4);
		if (name >= names_size || strncmp(names + name, ".lrodata", 8) != 0 ||
		    (names[name + 8] && names[name + 8] != '.'))
			continue;
		uint64_t flags = rd(&e, s + 8, 8) | SHF_X86_64_LARGE;
		unsigned char le[8];
		for (int k = 0; k < 8; k++)
			le[k] = (unsigned char)(flags >> (8 * k));
		if (!write_at(fd, le, 8, shoff + i * shentsize + 8)) {
			fail(err, errsz, "writing \"%s\": %s", path, strerror(errno));
			goto out;
		}
		marked++;
	}
	if (!marked) {
		fail(err, errsz, "\"%s\": no .lrodata section to mark", path);
		goto out;
	}
	rc = 0;
out:
	if (close(fd) != 0 && rc == 0)
		rc = fail(err, errsz, "writing \"%s\": %s", path, strerror(errno));
	free(shdrs);
	free(names);
	return rc;
}
