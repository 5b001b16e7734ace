/*
 * arena.c - compiler memory: a growing chain of blocks with a hard cap.
 *
 * Everything a compile builds (graph, names, decoded tensors) is allocated
 * here and released at once by arena_free, so error paths that long-jump out
 * of deep code leak nothing. The cap turns a hostile model that asks for
 * absurd sizes into a KILN_LIMIT error instead of an out-of-memory kill;
 * memory that protobuf-c allocates is charged against the same cap.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

typedef struct ArenaBlock {
	struct ArenaBlock *next;
	size_t size;         /* usable bytes after the header */
	size_t used;
	_Alignas(16) unsigned char data[];
} ArenaBlock;

enum { ARENA_ALIGN = 16, ARENA_BLOCK = 1 << 20 };

void arena_init(Arena *a, size_t cap_bytes, Diag *d)
{
	memset(a, 0, sizeof *a);
	a->cap_bytes = cap_bytes;
	a->diag = d;
}

void arena_free(Arena *a)
{
	ArenaBlock *b = a->head;
	while (b) {
		ArenaBlock *next = b->next;
		free(b);
		b = next;
	}
	a->head = NULL;
	a->used_bytes = 0;
}

void arena_charge(Arena *a, size_t bytes)
{
	if (bytes > a->cap_bytes || a->used_bytes > a->cap_bytes - bytes)
		diag_fail(a->diag, KILN_LIMIT,
		          "compiler memory limit of %zu MiB exceeded (see --max-memory)",
		          a->cap_bytes >> 20);
	a->used_bytes += bytes;
}

void arena_uncharge(Arena *a, size_t bytes)
{
	KILN_ASSERT(bytes <= a->used_bytes);
	a->used_bytes -= bytes;
}

void *arena_alloc(Arena *a, size_t bytes)
{
	size_t need = (bytes + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if (need < bytes)
		diag_fail(a->diag, KILN_LIMIT, "allocation of %zu bytes is too large", bytes);
	ArenaBlock *b = a->head;
	if (!b || b->size - b->used < need) {
		/* Big requests get a block of their own, placed behind the current
		 * one so its free space stays usable. */
		size_t size = need > ARENA_BLOCK / 4 ? need : ARENA_BLOCK;
		arena_charge(a, size + sizeof *b);
		ArenaBlock *nb = malloc(sizeof *nb + size);
		if (!nb)
			diag_fail(a->diag, KILN_NO_MEMORY, "out of memory allocating %zu bytes", size);
		nb->size = size;
		nb->used = 0;
		if (b && size != ARENA_BLOCK) {
			nb->next = b->next;
			b->next = nb;
		} else {
			nb->next = b;
			a->head = nb;
		}
		b = nb;
	}
	void *p = b->data + b->used;
	b->used += need;
	memset(p, 0, need);
	return p;
}

void *arena_array(Arena *a, size_t n, size_t elem_bytes)
{
	if (elem_bytes && n > SIZE_MAX / elem_bytes)
		diag_fail(a->diag, KILN_LIMIT, "array of %zu elements is too large", n);
	size_t bytes = n * elem_bytes;
	return arena_alloc(a, bytes ? bytes : 1);
}

void *arena_grow(Arena *a, void *items, int n, int *cap, size_t elem_bytes)
{
	if (n < *cap)
		return items;
	if (*cap > (1 << 28))
		diag_fail(a->diag, KILN_LIMIT, "more than %d items in one table", 1 << 28);
	int ncap = *cap ? 2 * *cap : 16;
	void *p = arena_array(a, (size_t)ncap, elem_bytes);
	if (n)
		memcpy(p, items, (size_t)n * elem_bytes);
	*cap = ncap;
	return p;
}

char *arena_strdup(Arena *a, const char *s)
{
	size_t n = strlen(s);
	char *p = arena_alloc(a, n + 1);
	memcpy(p, s, n);
	return p;
}

char *arena_printf(Arena *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	KILN_ASSERT(n >= 0);
	char *p = arena_alloc(a, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}
