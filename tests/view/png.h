/* Reading an 8-bit RGB or RGBA PNG (what Chromium's screenshots are) into RGB pixels. */
#ifndef WS_TEST_PNG_H
#define WS_TEST_PNG_H

#include <stddef.h>

/* Pixels as width * height * 3 bytes (malloc'd), or NULL when the data is not such a PNG. */
unsigned char *png_rgb(const unsigned char *png, size_t len, int *width, int *height);

#endif
