/*
 * sd_config.h — build configuration, committed (no configure step: SwiftPM
 * cannot run one). Both builds compile the same CSources/ with this header.
 */
#ifndef SD_CONFIG_H
#define SD_CONFIG_H

#define SD__VERSION_STRING "0.1.0"

/* Cache line size used to pad shared counters. */
#define SD__CACHE_LINE 64

#endif
