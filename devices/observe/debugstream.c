/*
 * debugstream.c: per-LNC debug streams (see debugstream.h).
 */
#include "devices/observe/debugstream.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "emu/log.h"

#define DSTREAM_MAX_LNC 1024
#define DSTREAM_DEFAULT_EVENTS 65536u

/* One waiting event. */
struct dstream_event {
    ndebug_stream_event_header_t h;  /* its header */
    void *payload;                   /* malloc'd, handed to the reader */
    struct dstream_event *next;      /* queue link */
};

/* One LNC's stream. */
struct dstream {
    int fd;                          /* the client's eventfd, -1 when none */
    struct dstream_event *head, *tail; /* waiting events, oldest first */
    uint64_t count;                  /* waiting events */
    uint64_t dropped;                /* events the full buffer refused */
};

static pthread_mutex_t dstream_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dstream dstreams[DSTREAM_MAX_LNC];
static bool dstream_ready;  /* dstreams[].fd set to -1 */

static void dstream_init(void)
{
    if (dstream_ready)
        return;
    for (int i = 0; i < DSTREAM_MAX_LNC; i++)
        dstreams[i].fd = -1;
    dstream_ready = true;
}

static uint64_t dstream_cap(void)
{
    const char *v = getenv("NEURON_RT_DEBUG_STREAM_BUFFER_SIZE");
    unsigned long long n = v != NULL ? strtoull(v, NULL, 10) : 0;
    return n > 0 ? n : DSTREAM_DEFAULT_EVENTS;
}

static struct dstream *dstream_of_fd(int fd)
{
    for (int i = 0; fd >= 0 && i < DSTREAM_MAX_LNC; i++)
        if (dstreams[i].fd == fd)
            return &dstreams[i];
    return NULL;
}

NRT_STATUS dstream_connect(int lnc, int *fd)
{
    if (lnc < 0 || lnc >= DSTREAM_MAX_LNC) {
        LOG_ERROR("NRT", "LNC %d has no debug stream", lnc);
        return NRT_INVALID;
    }
    pthread_mutex_lock(&dstream_lock);
    dstream_init();
    struct dstream *s = &dstreams[lnc];
    NRT_STATUS st = NRT_SUCCESS;
    if (s->fd >= 0) {
        st = NRT_INVALID;
    } else if ((s->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE)) < 0) {
        st = NRT_RESOURCE;
        s->fd = -1;
    } else {
        *fd = s->fd;
    }
    pthread_mutex_unlock(&dstream_lock);
    if (st == NRT_INVALID)
        LOG_ERROR("NRT", "the debug stream of LNC %d already has a client", lnc);
    else if (st != NRT_SUCCESS)
        LOG_ERROR("NRT", "cannot create the debug stream descriptor: %s", strerror(errno));
    return st;
}

static void dstream_drop_all(struct dstream *s)
{
    for (struct dstream_event *e = s->head, *n; e != NULL; e = n) {
        n = e->next;
        free(e->payload);
        free(e);
    }
    s->head = s->tail = NULL;
    s->count = 0;
}

bool dstream_close(int fd)
{
    pthread_mutex_lock(&dstream_lock);
    dstream_init();
    struct dstream *s = dstream_of_fd(fd);
    if (s != NULL) {
        dstream_drop_all(s);
        close(s->fd);
        s->fd = -1;
    }
    pthread_mutex_unlock(&dstream_lock);
    return s != NULL;
}

void dstream_close_all(void)
{
    pthread_mutex_lock(&dstream_lock);
    dstream_init();
    for (int i = 0; i < DSTREAM_MAX_LNC; i++)
        if (dstreams[i].fd >= 0) {
            dstream_drop_all(&dstreams[i]);
            close(dstreams[i].fd);
            dstreams[i].fd = -1;
        }
    pthread_mutex_unlock(&dstream_lock);
}

NRT_STATUS dstream_read(int fd, ndebug_stream_event_header_t *h, void **payload)
{
    pthread_mutex_lock(&dstream_lock);
    dstream_init();
    struct dstream *s = dstream_of_fd(fd);
    struct dstream_event *e = s != NULL ? s->head : NULL;
    if (e != NULL) {
        s->head = e->next;
        if (s->head == NULL)
            s->tail = NULL;
        s->count--;
        uint64_t one;
        if (read(s->fd, &one, sizeof one) != sizeof one)  /* one fewer waiting */
            LOG_WARN("NRT", "debug stream descriptor out of step");
    }
    pthread_mutex_unlock(&dstream_lock);
    if (s == NULL) {
        LOG_ERROR("NRT", "%d is not a debug stream connection", fd);
        return NRT_INVALID;
    }
    if (e == NULL)
        return NRT_QUEUE_EMPTY;
    *h = e->h;
    *payload = e->payload;
    free(e);
    return NRT_SUCCESS;
}

void dstream_push(int lnc, const char *prefix, const char *dtype, const uint64_t *shape,
                  int ndim, const void *data, uint64_t size)
{
    if (lnc < 0 || lnc >= DSTREAM_MAX_LNC)
        return;
    pthread_mutex_lock(&dstream_lock);
    dstream_init();
    struct dstream *s = &dstreams[lnc];
    if (s->fd < 0 || s->count >= dstream_cap()) {
        if (s->fd >= 0)
            s->dropped++;
        pthread_mutex_unlock(&dstream_lock);
        return;
    }
    struct dstream_event *e = calloc(1, sizeof *e);
    ndebug_stream_payload_debug_tensor_read_t *p = calloc(1, sizeof *p + size);
    if (e == NULL || p == NULL) {
        free(e);
        free(p);
        pthread_mutex_unlock(&dstream_lock);
        return;
    }
    snprintf(p->prefix, sizeof p->prefix, "%s", prefix);
    p->logical_nc_id = (uint32_t)lnc;
    snprintf(p->tensor_dtype, sizeof p->tensor_dtype, "%s", dtype);
    for (int i = 0; i < ndim && i < 8; i++)
        p->tensor_shape[i] = shape[i];
    p->tensor_data_size = size;
    if (size > 0)
        memcpy(p->tensor_data, data, size);
    e->h.data_size = sizeof *p + size;
    e->h.type = NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ;
    e->payload = p;
    if (s->tail != NULL)
        s->tail->next = e;
    else
        s->head = e;
    s->tail = e;
    s->count++;
    uint64_t one = 1;
    if (write(s->fd, &one, sizeof one) != sizeof one)
        LOG_WARN("NRT", "cannot signal the debug stream of LNC %d", lnc);
    pthread_mutex_unlock(&dstream_lock);
}
