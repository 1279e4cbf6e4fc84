/*
 * ndebug_stream.c: the debug-stream entry points of ndebug_stream.h
 * (devices/observe/debugstream.c holds the streams).
 */
#include "devices/observe/debugstream.h"
#include "nrt/ndebug_stream.h"
#include "shims/shim.h"

NRT_EXPORT NRT_STATUS nrt_debug_client_connect(int logical_nc_idx, int *stream_fd)
{
    SHIM_REQUIRE(stream_fd != NULL, "stream_fd is NULL");
    SHIM_ENTER();
    uint32_t n = rt_machine()->cfg.visible_count;
    bool ok = logical_nc_idx >= 0 && (uint32_t)logical_nc_idx < n;
    NRT_STATUS st = ok ? dstream_connect(logical_nc_idx, stream_fd) : NRT_INVALID;
    rt_leave();
    SHIM_REQUIRE(ok, "LNC %d is not visible to this process (%u LNCs)", logical_nc_idx, n);
    return st;
}

NRT_EXPORT void nrt_debug_client_connect_close(int stream_fd)
{
    if (!dstream_close(stream_fd))
        LOG_ERROR("NRT", "%d is not a debug stream connection", stream_fd);
}

NRT_EXPORT NRT_STATUS nrt_debug_client_read_one_event(int stream_fd, ndebug_stream_event_header_t *header, void **payload)
{
    SHIM_REQUIRE(header != NULL && payload != NULL, "header or payload is NULL");
    return dstream_read(stream_fd, header, payload);
}
