#include "kselect.h"

static uint64_t median3(uint64_t a, uint64_t b, uint64_t c)
{
    if (a > b) { uint64_t t = a; a = b; b = t; }
    if (b > c) b = c;
    return a > b ? a : b;
}

uint64_t nc_kselect(uint64_t *v, size_t n, size_t k)
{
    long lo = 0, hi = (long)n - 1, want = (long)k;
    while (lo < hi) {
        uint64_t pivot = median3(v[lo], v[lo + (hi - lo) / 2], v[hi]);
        long i = lo, j = hi;
        /* Hoare partition: afterwards v[lo..j] <= pivot <= v[i..hi], and j < i. */
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) {
                uint64_t t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (want <= j) hi = j;
        else if (want >= i) lo = i;
        else break; /* between the halves: equal to the pivot */
    }
    return v[want];
}
