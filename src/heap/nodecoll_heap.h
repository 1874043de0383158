/* The interface between libnodecoll-heap.so (the shared heap) and the main library.
 *
 * The heap library exports one object, `nodecoll_heap_api`.  The main library finds it with
 * dlsym when the heap library is preloaded, or loads the library itself for MPI_Alloc_mem
 * (NODECOLL_HEAP=alloc_mem); without it, nothing of the main library changes.  Both sides
 * are built from this tree, and the version keeps a mismatched pair apart. */
#ifndef NODECOLL_HEAP_H
#define NODECOLL_HEAP_H

#include <stddef.h>
#include <stdint.h>

#define NC_HEAP_API_VERSION 1
#define NC_HEAP_API_SYMBOL "nodecoll_heap_api"
#define NC_HEAP_LIBRARY "libnodecoll-heap.so"

/* One process's heap: `size` bytes of address space at `base`, backed by the memfd `fd`
 * from offset 0, which another process maps whole to reach every block of the heap.  `id`
 * names this heap for its whole life (no other process, and no child of this one, has it). */
typedef struct nc_heap_arena {
    char *base;
    size_t size;
    int fd;
    uint64_t id;
} nc_heap_arena;

typedef struct nc_heap_api {
    int version;
    /* Whether malloc and its kin are this library's and the heap is on: large blocks then
     * land in the arena. */
    int (*interposed)(void);
    /* The arena, created on first use: 0, or an errno (no heap in this process: the memfd
     * or its mapping failed, or this is the child of a fork, whose heap is private). */
    int (*arena)(nc_heap_arena *out);
    /* A block of at least `bytes` in the arena, or NULL (for MPI_Alloc_mem). */
    void *(*alloc)(size_t bytes);
    /* Frees a block of the arena; 0 when p is none (it was not freed). */
    int (*release)(void *p);
} nc_heap_api;

#endif
