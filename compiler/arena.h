/*
 * arena.h - compiler memory (arena.c). All of one compile's memory comes
 * from its Arena; nothing is freed piecemeal.
 */
#ifndef KILN_ARENA_H
#define KILN_ARENA_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"

/* ---- arena.c: compiler memory ----------------------------------------- */

/* A chain of blocks with a hard cap; allocation past the cap is a KILN_LIMIT
 * error, a failed malloc KILN_NO_MEMORY. Memory is zeroed. */
typedef struct Arena {
	struct ArenaBlock *head;
	size_t used_bytes;   /* bytes obtained from malloc so far */
	size_t cap_bytes;    /* the hard limit (--max-memory) */
	Diag *diag;
} Arena;

void arena_init(Arena *a, size_t cap_bytes, Diag *d);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t bytes);
void *arena_array(Arena *a, size_t n, size_t elem_bytes); /* overflow-checked */
char *arena_strdup(Arena *a, const char *s);
/* Make room for one more element in a growable array of n elements and
 * capacity *cap (doubling, first 16); returns the (possibly moved) array. */
void *arena_grow(Arena *a, void *items, int n, int *cap, size_t elem_bytes);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Charge bytes that live outside the arena (protobuf-c's) against the cap. */
void arena_charge(Arena *a, size_t bytes);
void arena_uncharge(Arena *a, size_t bytes);

#endif
