/* sd_status.c — status strings and version. */
#include <time.h>
#include <unistd.h>

#include "common/sd_internal.h"

const char *sd_strerror(int status)
{
    switch (status) {
    case SD_OK: return "success";
    case SD_EAGAIN: return "not available yet: more input needed";
    case SD_EINVAL: return "invalid argument";
    case SD_ENOMEM: return "out of memory";
    case SD_EUNSUPPORTED: return "unsupported format";
    case SD_ECORRUPT: return "corrupt image data";
    case SD_ETOOLARGE: return "image too large";
    case SD_ETRUNCATED: return "input ended before the image header was complete";
    case SD_EBADSTATE: return "bad state: call out of order or handle failed earlier";
    case SD_EIO: return "I/O error";
    case SD_EOI: return "no more output";
    case SD_ECANCELLED: return "cancelled";
    case SD_ETIMEDOUT: return "timed out";
    case SD_ERESOLVE: return "could not resolve host";
    case SD_ECONNECT: return "could not connect";
    case SD_ETLS: return "TLS failure";
    case SD_EHTTPSTATUS: return "unacceptable HTTP status";
    case SD_ENOTMODIFIED: return "not modified";
    case SD_ECONTENTTYPE: return "unacceptable content type";
    case SD_ETOOBIG: return "response too large";
    case SD_EBODY: return "response body truncated";
    case SD_EREDIRECT: return "too many redirects";
    case SD_ENETWORK: return "network error";
    case SD_EDECODE: return "image could not be decoded";
    case SD_ESHUTDOWN: return "loop is shutting down";
    case SD_ESCHEME: return "URL scheme not allowed";
    case SD_EURL: return "malformed or relative URL";
    case SD_EPROTOCOL: return "malformed response from the server";
    case SD_ENOTFILE: return "not a regular file";
    case SD_EPOLICY: return "refused by policy";
    case SD_ELIMIT: return "the decode went over its limits in its worker";
    default: return "unknown error";
    }
}

int sd_version_number(void) { return SD_VERSION_NUMBER; }
const char *sd_version_string(void) { return SD__VERSION_STRING; }

int64_t sd__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double sd__now_msf(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int sd__cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)SD__MIN(n, 256) : 2;
}

void sd_free(void *buffer) { sd__free(buffer); }
