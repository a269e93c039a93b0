/*
 * sd_config.h — build configuration, committed (no configure step: SwiftPM
 * cannot run one). Both builds compile the same CSources/ with this header.
 */
#ifndef SD_CONFIG_H
#define SD_CONFIG_H

#include "sdcore/sd_common.h"

/* "MAJOR.MINOR.PATCH", from sd_common.h (the one place the version is). */
#define SD__STR2(x) #x
#define SD__STR(x) SD__STR2(x)
#define SD__VERSION_STRING \
    SD__STR(SD_VERSION_MAJOR) "." SD__STR(SD_VERSION_MINOR) "." SD__STR(SD_VERSION_PATCH)

/* Cache line size used to pad shared counters. */
#define SD__CACHE_LINE 64

#endif
