/* hiredis (libhiredis-dev) for the Redis cache tier. */
#include <hiredis/hiredis.h>
