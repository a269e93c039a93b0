/* The C tests' SHA-256, for the Swift tests' oracle comparisons. */
#include "../C/sd_sha256.c"
