/*
 * snap_env.c: the library's own uses of the store: TRNEMU_RESTORE at
 * nrt_init and the trnemu_snapshot_* extension functions (see
 * snapshot.h). The handle map of the last restore is kept, so a program
 * started on a restored machine finds its objects by their old handles.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "devices/runtime/state.h"
#include "emu/log.h"
#include "store/snapshot.h"

static pthread_mutex_t snap_env_lock = PTHREAD_MUTEX_INITIALIZER;
static struct snap_handle_map snap_env_map; /* objects of the last restore */

/* Split "FILE@ID" (ID optional: the newest). The last '@' followed only by
 * digits separates them, so file names may hold '@'. */
static NRT_STATUS snap_env_parse(const char *spec, char **path, int64_t *id)
{
    const char *at = strrchr(spec, '@');
    *id = -1;
    size_t plen = strlen(spec);
    if (at != NULL && at[1] != '\0' && strspn(at + 1, "0123456789") == strlen(at + 1)) {
        char *end;
        long long v = strtoll(at + 1, &end, 10);
        if (*end != '\0' || v < 0) {
            LOG_ERROR("STORE", "TRNEMU_RESTORE=%s: bad snapshot id", spec);
            return NRT_INVALID;
        }
        *id = v;
        plen = (size_t)(at - spec);
    }
    *path = strndup(spec, plen);
    return *path ? NRT_SUCCESS : NRT_RESOURCE;
}

/* Restore into the open runtime and keep the map. */
static NRT_STATUS snap_env_do_restore(const char *path, int64_t id)
{
    struct snap_db *db;
    NRT_STATUS st = snap_open(path, false, &db);
    if (st != NRT_SUCCESS)
        return st;
    struct snap_handle_map map;
    st = snap_restore(db, id, &map);
    snap_close(db);
    if (st != NRT_SUCCESS)
        return st;
    pthread_mutex_lock(&snap_env_lock);
    snap_handle_map_free(&snap_env_map);
    snap_env_map = map;
    pthread_mutex_unlock(&snap_env_lock);
    return NRT_SUCCESS;
}

NRT_STATUS snap_env_restore(void)
{
    /* Objects of an earlier restore died with the runtime they lived in. */
    pthread_mutex_lock(&snap_env_lock);
    snap_handle_map_free(&snap_env_map);
    pthread_mutex_unlock(&snap_env_lock);
    const char *spec = getenv("TRNEMU_RESTORE");
    if (spec == NULL || *spec == '\0')
        return NRT_SUCCESS;
    char *path;
    int64_t id;
    NRT_STATUS st = snap_env_parse(spec, &path, &id);
    if (st != NRT_SUCCESS)
        return st;
    st = state_enter();
    if (st == NRT_SUCCESS) {
        st = snap_env_do_restore(path, id);
        state_leave();
    }
    if (st == NRT_SUCCESS)
        LOG_INFO("STORE", "started on the machine of %s", spec);
    else
        LOG_ERROR("STORE", "TRNEMU_RESTORE=%s: the snapshot could not be restored", spec);
    free(path);
    return st;
}

NRT_STATUS snap_api_save(const char *path, const char *reason, int64_t *id)
{
    NRT_STATUS st = state_enter();
    if (st != NRT_SUCCESS)
        return st;
    struct snap_db *db;
    st = snap_open(path, true, &db);
    if (st == NRT_SUCCESS) {
        st = snap_save_quiesced(db, reason && *reason ? reason : "api", -1, id);
        snap_close(db);
    }
    state_leave();
    return st;
}

NRT_STATUS snap_api_restore(const char *path, int64_t id)
{
    NRT_STATUS st = state_enter();
    if (st != NRT_SUCCESS)
        return st;
    st = snap_env_do_restore(path, id);
    state_leave();
    return st;
}

void *snap_api_lookup(uint64_t old_handle)
{
    pthread_mutex_lock(&snap_env_lock);
    void *obj = NULL;
    int kind = HANDLE_NONE;
    for (size_t i = 0; i < snap_env_map.n; i++)
        if (snap_env_map.v[i].old_handle == old_handle) {
            obj = snap_env_map.v[i].obj;
            kind = snap_env_map.v[i].kind;
            break;
        }
    pthread_mutex_unlock(&snap_env_lock);
    if (obj == NULL)
        return NULL;
    return state_is_live(obj, (enum handle_kind)kind) ? obj : NULL;
}
