/* sd_system.h — the few Linux calls Swift's Glibc module does not import
 * (extended attributes, utimensat's special values), for SDCache. */
#ifndef SD_SYSTEM_H
#define SD_SYSTEM_H

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/xattr.h>

/* The Linux ABI values (glibc shows them only under _GNU_SOURCE / POSIX 2008,
 * which would change struct layouts Swift's other modules import). */
#ifndef UTIME_NOW
#define UTIME_NOW ((1l << 30) - 1l)
#define UTIME_OMIT ((1l << 30) - 2l)
#endif
static inline long sd_system_utime_now(void) { return UTIME_NOW; }
static inline long sd_system_utime_omit(void) { return UTIME_OMIT; }

#endif
