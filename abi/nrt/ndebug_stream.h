/*
 * ndebug_stream.h: per-LNC debug streams: a process connects to a logical
 * NeuronCore's stream and reads the debug events (device prints of
 * tensors, execution errors) emitted after it connected.
 *
 * trnemu's copy of the vendor header: same prototypes, names, values and
 * layouts; comments in trnemu's own words. The descriptor a connection
 * returns is only for poll()/epoll(); events are read with
 * nrt_debug_client_read_one_event(). One connection per stream; events
 * beyond the stream's buffer (NEURON_RT_DEBUG_STREAM_BUFFER_SIZE events,
 * 64K by default) are dropped.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <nrt/nrt_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Kinds of debug events. */
typedef enum ndebug_stream_event_type {
    NDEBUG_STREAM_EVENT_TYPE_INVALID = 0,           /* never emitted */
    NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ = 1, /* a tensor printed from the device */
} ndebug_stream_event_type_t;

/* What precedes each event's payload (64 bytes). */
typedef struct ndebug_stream_event_header {
    uint64_t data_size;  /* bytes of the payload */
    uint32_t type;       /* an ndebug_stream_event_type_t */
    char reserved[52];   /* zero */
} ndebug_stream_event_header_t;

/* Payload of NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ (1024 bytes plus
 * tensor_data_size bytes of data). */
typedef struct ndebug_stream_payload_debug_tensor_read {
    char prefix[512];           /* the text printed with the tensor */
    uint32_t logical_nc_id;     /* the LNC that printed it */
    uint32_t pipe;              /* the output pipe */
    char tensor_dtype[16];      /* element type name */
    uint64_t tensor_shape[8];   /* dimensions, unused ones zero */
    uint64_t tensor_data_size;  /* bytes in tensor_data */
    char reserved0[416];        /* zero */
    char tensor_data[];         /* the elements */
} ndebug_stream_payload_debug_tensor_read_t;

/* Connect to LNC logical_nc_idx's stream; *stream_fd is a pollable
 * descriptor. NRT_INVALID when the stream already has a client. */
NRT_STATUS nrt_debug_client_connect(int logical_nc_idx, int *stream_fd);

/* Close a connection made by nrt_debug_client_connect(). */
void nrt_debug_client_connect_close(int stream_fd);

/* Take the oldest event of the stream: its header in *header and a
 * malloc'd payload in *payload that the caller frees. */
NRT_STATUS nrt_debug_client_read_one_event(int stream_fd, ndebug_stream_event_header_t *header, void **payload);

#ifdef __cplusplus
}
#endif
