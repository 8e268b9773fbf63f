/* Radix sorts on 64-bit keys: the large sorts of the planner (index, load bound, orders,
 * validation) are linear passes instead of comparisons. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Stable LSD radix sort of n records of `words` 64-bit words by their word `kw` (unsigned), 8
 * bits a pass, skipping the bytes where every key agrees. 0, or -1 when memory runs out. */
int radix_sort_words(uint64_t *a, size_t n, size_t words, size_t kw)
{
    uint64_t all_or = 0, all_and = ~0ull;
    for (size_t i = 0; i < n; i++) {
        all_or |= a[i * words + kw];
        all_and &= a[i * words + kw];
    }
    uint64_t differ = n > 1 ? all_or ^ all_and : 0;
    if (!differ)
        return 0;
    uint64_t *tmp = malloc(n * words * sizeof *tmp), *src = a, *dst = tmp;
    if (!tmp)
        return -1;
    for (int shift = 0; shift < 64; shift += 8) {
        if (!((differ >> shift) & 0xff))
            continue;
        size_t cnt[257] = {0};
        for (size_t i = 0; i < n; i++)
            cnt[((src[i * words + kw] >> shift) & 0xff) + 1]++;
        for (int d = 0; d < 256; d++)
            cnt[d + 1] += cnt[d];
        for (size_t i = 0; i < n; i++) {
            size_t o = cnt[(src[i * words + kw] >> shift) & 0xff]++;
            for (size_t w = 0; w < words; w++)
                dst[o * words + w] = src[i * words + w];
        }
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * words * sizeof *a);
    free(tmp);
    return 0;
}

/* Sort signed values ascending (radix on the sign-flipped bits). */
int sort_i64(int64_t *v, size_t n)
{
    uint64_t *u = (uint64_t *)v;
    for (size_t i = 0; i < n; i++)
        u[i] ^= 1ull << 63;
    int rc = radix_sort_words(u, n, 1, 0);
    for (size_t i = 0; i < n; i++)
        u[i] ^= 1ull << 63;
    return rc;
}
