/* What algorithms do on a node whose ranks reach each other only through their shared heaps
 * (no CMA; core/heap.h): a peer can read or write my memory only where it lies in my heap.
 *
 * Staging copies: an algorithm that must publish a buffer outside my heap publishes a copy
 * in it, one piece per kind (an operation's publications of one kind end before its next
 * one, and a communicator's operations run one at a time); the data-movement kind goes back
 * to the heap once its readers are done.
 *
 * The vote: where a single-copy algorithm would need every rank's buffers in the heaps and
 * another algorithm (the rings) serves the rest, the ranks of the node agree first, in one
 * inline fragment each, whether all of their buffers are there.  (Reduce votes on nodes
 * with CMA too: it runs the slices only on heap buffers, reduce/common.c.) */
#ifndef NC_HEAP_ONLY_H
#define NC_HEAP_ONLY_H

#include <stddef.h>

#include "engine.h"

/* At least `bytes` of my heap for `kind` (a node without a heap to stage in never gets
 * here: the algorithms run single copy only where every rank has one). */
char *nc_stage(nc_node *n, nc_stage_kind kind, size_t bytes);
/* p itself when the node's peers reach [p, p + len), else a copy of it in my heap. */
const char *nc_stage_reachable(nc_node *n, nc_stage_kind kind, const void *p, size_t len);
/* Gives the node's staging memory back to the heap: one kind's (its readers are done), or all. */
void nc_stage_release_kind(nc_node *n, nc_stage_kind kind);
void nc_stage_release(nc_node *n);

/* A step: every rank of the node says whether `mine` (its buffers are in its heap); `all`
 * is then whether every rank's are. */
typedef struct nc_heap_vote {
    int pc;
    int mine, all, q;
    uint64_t g;
} nc_heap_vote;
void nc_heap_vote_setup(nc_heap_vote *st, int mine);
nc_step nc_heap_vote_progress(nc_op *op, nc_heap_vote *st);

#endif
