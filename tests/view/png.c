/* A PNG reader for the screenshots of the tests: chunks, inflate (zlib), row filters 0-4. */
#include "png.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

unsigned char *png_rgb(const unsigned char *png, size_t len, int *width, int *height)
{
    static const unsigned char sig[8] = {137, 'P', 'N', 'G', 13, 10, 26, 10};
    if (len < 8 || memcmp(png, sig, 8) != 0)
        return NULL;
    unsigned char *idat = NULL, *raw = NULL, *rgb = NULL;
    size_t nidat = 0, pos = 8;
    uint32_t w = 0, h = 0;
    int channels = 0;
    while (pos + 12 <= len) {
        uint32_t n = be32(png + pos);
        const unsigned char *type = png + pos + 4, *data = png + pos + 8;
        if (pos + 12 + n > len)
            goto out;
        if (!memcmp(type, "IHDR", 4) && n >= 13) {
            w = be32(data);
            h = be32(data + 4);
            if (data[8] != 8 || (data[9] != 2 && data[9] != 6) || data[12] != 0)
                goto out; /* 8-bit RGB(A), not interlaced */
            channels = data[9] == 2 ? 3 : 4;
        } else if (!memcmp(type, "IDAT", 4)) {
            unsigned char *grown = realloc(idat, nidat + n);
            if (!grown)
                goto out;
            idat = grown;
            memcpy(idat + nidat, data, n);
            nidat += n;
        } else if (!memcmp(type, "IEND", 4)) {
            break;
        }
        pos += 12 + n;
    }
    if (!w || !h || !channels || w > 20000 || h > 20000)
        goto out;
    size_t stride = (size_t)w * (size_t)channels;
    uLongf rawlen = (uLongf)((stride + 1) * h);
    raw = malloc(rawlen);
    rgb = malloc((size_t)w * h * 3);
    if (!raw || !rgb || uncompress(raw, &rawlen, idat, (uLong)nidat) != Z_OK || rawlen != (stride + 1) * h)
        goto fail;
    for (uint32_t y = 0; y < h; y++) {
        unsigned char *row = raw + y * (stride + 1) + 1, *prev = y ? row - (stride + 1) : NULL;
        int filter = row[-1];
        for (size_t x = 0; x < stride; x++) {
            int a = x >= (size_t)channels ? row[x - (size_t)channels] : 0, b = prev ? prev[x] : 0;
            int c = prev && x >= (size_t)channels ? prev[x - (size_t)channels] : 0;
            int add = filter == 0 ? 0 : filter == 1 ? a : filter == 2 ? b : filter == 3 ? (a + b) / 2 : paeth(a, b, c);
            if (filter > 4)
                goto fail;
            row[x] = (unsigned char)(row[x] + add);
        }
        for (uint32_t x = 0; x < w; x++)
            memcpy(rgb + ((size_t)y * w + x) * 3, row + (size_t)x * (size_t)channels, 3);
    }
    *width = (int)w;
    *height = (int)h;
    goto out;
fail:
    free(rgb);
    rgb = NULL;
out:
    free(idat);
    free(raw);
    return rgb;
}
