/*
 * debugstream.h: the per-LNC debug streams of ndebug_stream.h. One client
 * per stream; its descriptor is an eventfd that is readable while events
 * wait. Producers push events only while a client is connected; beyond
 * NEURON_RT_DEBUG_STREAM_BUFFER_SIZE (default 65536) waiting events, new
 * ones are dropped. Executions push a DEBUG_TENSOR_READ event when they
 * fail: prefix the error line, tensor_data the full report (uint8 text).
 */
#ifndef TRNEMU_DEVICES_DEBUGSTREAM_H
#define TRNEMU_DEVICES_DEBUGSTREAM_H

#include <stdint.h>

#include "nrt/ndebug_stream.h"
#include "nrt/nrt_status.h"

NRT_STATUS dstream_connect(int lnc, int *fd);
/* false when fd is no connection. */
bool dstream_close(int fd);
NRT_STATUS dstream_read(int fd, ndebug_stream_event_header_t *h, void **payload);
/* Push a tensor-read event on lnc's stream (no-op without a client). */
void dstream_push(int lnc, const char *prefix, const char *dtype, const uint64_t *shape,
                  int ndim, const void *data, uint64_t size);
/* Close every stream (nrt_close). */
void dstream_close_all(void);

#endif
