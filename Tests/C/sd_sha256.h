/* sd_sha256.h — SHA-256 for the tests' oracle comparisons (FIPS 180-4). */
#ifndef SD_SHA256_H
#define SD_SHA256_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t len;
    uint8_t block[64];
    size_t fill;
} sd_sha256;

void sd_sha256_init(sd_sha256 *s);
void sd_sha256_update(sd_sha256 *s, const void *data, size_t n);
void sd_sha256_hex(sd_sha256 *s, char out[65]);
#endif
