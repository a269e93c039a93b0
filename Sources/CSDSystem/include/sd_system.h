/* sd_system.h — the few Linux calls Swift's Glibc module does not import
 * (extended attributes, utimensat's special values), and zlib's CRC-32, for
 * SDCache. */
#ifndef SD_SYSTEM_H
#define SD_SYSTEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <zlib.h>

/* The Linux ABI values (glibc shows them only under _GNU_SOURCE / POSIX 2008,
 * which would change struct layouts Swift's other modules import). */
#ifndef UTIME_NOW
#define UTIME_NOW ((1l << 30) - 1l)
#define UTIME_OMIT ((1l << 30) - 2l)
#endif
static inline long sd_system_utime_now(void) { return UTIME_NOW; }
static inline long sd_system_utime_omit(void) { return UTIME_OMIT; }

/* zlib's CRC-32 (several GB/s): a checksum per disk entry catches bit rot. */
static inline uint32_t sd_system_crc32(const void *data, size_t length)
{
    uLong c = crc32(0L, Z_NULL, 0);
    const Bytef *p = data;
    while (length > 0) {
        uInt n = length > (1u << 30) ? (1u << 30) : (uInt)length;
        c = crc32(c, p, n);
        p += n;
        length -= n;
    }
    return (uint32_t)c;
}

#endif
