/* sd_file.c — file:// URLs: only regular files, opened without blocking. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loop/sd_loop_int.h"

/* A file:// URL must name a regular file: curl's open() of a FIFO blocks the
 * loop thread until a writer comes (no timeout fires, cancel and free hang),
 * and a device reads forever. The file is opened here without blocking,
 * checked, and curl reads that same open file through /proc/self/fd/N, so it
 * cannot be swapped for a FIFO between the check and the read. */
int sd__file_open(sd__xfer *x, char *url_out, size_t url_cap, char *msg, size_t msg_cap)
{
    CURLU *u = curl_url();
    char *path = NULL;
    SD__RETURN_IF(u == NULL, SD_ENOMEM);
    int rc = SD_OK;
    if (curl_url_set(u, CURLUPART_URL, x->req->url, 0) != CURLUE_OK
        || curl_url_get(u, CURLUPART_PATH, &path, CURLU_URLDECODE) != CURLUE_OK || path == NULL || *path != '/') {
        snprintf(msg, msg_cap, "malformed file URL");
        rc = SD_EURL;
    }
    int fd = rc == SD_OK ? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY) : -1;
    struct stat st;
    if (rc == SD_OK && (fd < 0 || fstat(fd, &st) != 0)) {
        snprintf(msg, msg_cap, "cannot open %s: %s", path, strerror(errno));
        rc = SD_EIO;
    } else if (rc == SD_OK && !S_ISREG(st.st_mode)) {
        snprintf(msg, msg_cap, "%s is not a regular file (%s)", path,
                 S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO"
                 : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : S_ISSOCK(st.st_mode) ? "a socket" : "special");
        rc = SD_ENOTFILE;
    } else if (rc == SD_OK && x->req->params[SD_REQ_MAX_BYTES] > 0 && st.st_size > x->req->params[SD_REQ_MAX_BYTES]) {
        snprintf(msg, msg_cap, "%s is %lld bytes, over the %lld-byte limit", path, (long long)st.st_size,
                 (long long)x->req->params[SD_REQ_MAX_BYTES]);
        rc = SD_ETOOBIG;
    }
    if (rc == SD_OK) {
        x->file_fd = fd;
        snprintf(url_out, url_cap, "file:///proc/self/fd/%d", fd);
        if (access(url_out + 7, R_OK) != 0) /* no /proc: the checked path itself */
            snprintf(url_out, url_cap, "%s", x->req->url);
    } else if (fd >= 0) {
        close(fd);
    }
    curl_free(path);
    curl_url_cleanup(u);
    return rc;
}
