/* Selection of the k-th smallest value (Balaji et al.'s outlier test for nonuniform volumes). */
#ifndef NC_KSELECT_H
#define NC_KSELECT_H

#include <stddef.h>
#include <stdint.h>

/* The k-th smallest (0-based) of v[0..n), n > k; reorders v.  Quickselect with a
 * median-of-three pivot: linear time on average, no allocation. */
uint64_t nc_kselect(uint64_t *v, size_t n, size_t k);

#endif
