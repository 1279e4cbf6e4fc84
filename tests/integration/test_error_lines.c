/*
 * test_error_lines.c: every error status comes with exactly one log line
 * naming its cause. A table (ERROR_CASES below, one line per case) drives
 * the error returns of the exported nrt_* / nrta_* functions that a user
 * program can reach: NULL arguments, wrong sizes and indices, handles that
 * are no handles or were freed, calls before nrt_init and after
 * nrt_close, tensor and tensor-set misuse, profiles and traces in the
 * wrong state, closing twice. Each case names the phase it runs in, the
 * status it must return, and a piece of text its one line must hold.
 *
 * The log runs at its default level (no NEURON_RT_LOG_LEVEL*). Before
 * nrt_init the lines go to the console (stderr, captured per call); from
 * nrt_init on they go to the file NEURON_RT_LOG_LOCATION names, and a line
 * that still reaches stderr then counts as a fault of its own.
 * A call that returns no status (the void functions) is held to the same
 * rule where it refuses its argument (NO_STATUS). To add a case, add a line
 * to ERROR_CASES; a case that needs several steps gets a small function
 * (c_*) above the table.
 */
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

#include "it_common.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_async_sendrecv.h"
#include "nrt/nrt_profile.h"
#include "nrt/nrt_sys_trace.h"

extern char **environ;

/* The status a case expects from a function that returns none. */
#define NO_STATUS (-1)
/* A call of a void function as a case's expression. */
#define VOID_CALL(call) ((call), NO_STATUS)

enum phase { PRE, OPEN, CLOSED };
static const char *const phase_name[] = {"before nrt_init", "runtime open", "after nrt_close"};

/* What the cases work on; set up between the phases. */
static struct fixture {
    void *neff;                   /* add.neff */
    size_t neff_size;             /* its bytes */
    struct it_model m;            /* add, loaded, with its tensors and sets */
    nrt_tensor_t *t;              /* a 4 KiB device tensor on VNC 0 */
    nrt_tensor_t *h;              /* a 4 KiB host tensor */
    nrt_tensor_t *out;            /* an output written by nothing yet */
    nrt_tensor_set_t *set;        /* a set made before nrt_init, holding t as "t" */
    nrta_error_tracker_t *tracker;/* a tracker of LNC 0 */
    nrt_inspect_config_t *icfg;   /* an inspect config */
    nrt_sys_trace_config_t *scfg; /* a system trace config */
    nrt_profile_continuous_options_t *popt; /* continuous profile options */
    nrt_model_t *model;           /* where a load puts its model */
    nrt_tensor_t *tensor;         /* where an allocation puts its tensor */
    nrta_seq_t seq;               /* where a schedule puts its sequence number */
    bool done;                    /* a query's answer */
    uint32_t u32;                 /* a count's answer */
    int fd;                       /* a descriptor's answer */
    size_t size;                  /* a size's answer */
    void *va;                     /* an address's answer */
    char text[64];                /* a string's answer */
    _Alignas(4096) uint8_t buf[8192]; /* host bytes to copy from and to (page aligned) */
} f;

/* 64-byte-aligned bytes that are never a handle of the runtime. */
static uint64_t not_a_handle[32];
#define FAKE(type) ((type *)(void *)not_a_handle)

static char work_dir[4096];  /* the test's own directory, removed at the end */
static char log_path[4200];  /* NEURON_RT_LOG_LOCATION, in work_dir */
static char lines_text[16384];

/* ---- cases of several steps ------------------------------------------- */

/* A device tensor freed, then freed again through a copy of its pointer. */
static int c_tensor_free_twice(void)
{
    nrt_tensor_t *a = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "twice");
    nrt_tensor_t *b = a;
    nrt_tensor_free(&a);
    nrt_tensor_free(&b);
    return NO_STATUS;
}

/* A set entry whose tensor was freed since. */
static int c_set_entry_freed(void)
{
    nrt_tensor_t *a = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "gone");
    assert_int_equal(nrt_add_tensor_to_tensor_set(f.set, "gone", a), NRT_SUCCESS);
    nrt_tensor_free(&a);
    nrt_tensor_t *got = NULL;
    return nrt_get_tensor_from_tensor_set(f.set, "gone", &got);
}

/* A set destroyed, then destroyed again through a copy of its pointer. */
static int c_set_destroy_twice(void)
{
    nrt_tensor_set_t *a = NULL;
    assert_int_equal(nrt_allocate_tensor_set(&a), NRT_SUCCESS);
    nrt_tensor_set_t *b = a;
    nrt_destroy_tensor_set(&a);
    nrt_destroy_tensor_set(&b);
    return NO_STATUS;
}

/* A tensor added to a set that was destroyed. */
static int c_set_destroyed_add(void)
{
    nrt_tensor_set_t *a = NULL;
    assert_int_equal(nrt_allocate_tensor_set(&a), NRT_SUCCESS);
    nrt_tensor_set_t *b = a;
    nrt_destroy_tensor_set(&a);
    return nrt_add_tensor_to_tensor_set(b, "t", f.t);
}

/* A name of 1024 bytes (the limit is 1023). */
static int c_set_long_name(void)
{
    static char name[1025];
    memset(name, 'n', 1024);
    return nrt_add_tensor_to_tensor_set(f.set, name, f.t);
}

/* A model unloaded, then unloaded again. */
static int c_unload_twice(void)
{
    nrt_model_t *m = NULL;
    assert_int_equal(nrt_load(f.neff, f.neff_size, 0, -1, &m), NRT_SUCCESS);
    assert_int_equal(nrt_unload(m), NRT_SUCCESS);
    return nrt_unload(m);
}

/* An execution whose input set lacks an input. */
static int c_exec_missing_input(void)
{
    nrt_tensor_set_t *in = NULL;
    assert_int_equal(nrt_allocate_tensor_set(&in), NRT_SUCCESS);
    int st = nrt_execute(f.m.model, in, f.m.out);
    nrt_destroy_tensor_set(&in);
    return st;
}

/* An execution whose first input is a tensor of the wrong size. */
static int c_exec_wrong_size(void)
{
    nrt_tensor_set_t *in = NULL;
    assert_int_equal(nrt_allocate_tensor_set(&in), NRT_SUCCESS);
    for (uint64_t i = 0; i < f.m.info->tensor_count; i++) {
        const nrt_tensor_info_t *ti = &f.m.info->tensor_array[i];
        if (ti->usage == NRT_TENSOR_USAGE_INPUT)
            assert_int_equal(nrt_add_tensor_to_tensor_set(in, ti->name, i == 0 ? f.t : f.m.t[i]),
                             NRT_SUCCESS);
    }
    int st = nrt_execute(f.m.model, in, f.m.out);
    nrt_destroy_tensor_set(&in);
    return st;
}

/* A batch whose one step runs past the end of its tensor. */
static int c_batch_past_end(void)
{
    nrt_tensor_batch_op_t op = {4000, 200, f.buf};
    nrt_tensor_batch_t b = {f.t, &op, 1};
    return nrt_tensor_write_batch(&b, 1, false);
}

/* The system trace stopped when it was never started. */
static int c_trace_stop_twice(void)
{
    assert_int_equal(nrt_sys_trace_start(NULL), NRT_SUCCESS);
    assert_int_equal(nrt_sys_trace_stop(), NRT_SUCCESS);
    return nrt_sys_trace_stop();
}

/* The system trace started twice. */
static int c_trace_start_twice(void)
{
    assert_int_equal(nrt_sys_trace_start(NULL), NRT_SUCCESS);
    int st = nrt_sys_trace_start(NULL);
    assert_int_equal(nrt_sys_trace_stop(), NRT_SUCCESS);
    return st;
}

/* An inspect session begun twice. */
static int c_inspect_begin_twice(void)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/inspect", work_dir);
    assert_int_equal(nrt_inspect_config_set_output_dir(f.icfg, dir), NRT_SUCCESS);
    assert_int_equal(nrt_inspect_begin_with_options(f.icfg), NRT_SUCCESS);
    int st = nrt_inspect_begin_with_options(f.icfg);
    assert_int_equal(nrt_inspect_stop(), NRT_SUCCESS);
    return st;
}

/* A variable that nrt_init refuses. */
static int c_init_bad_env(void)
{
    setenv("NEURON_RT_EXEC_TIMEOUT", "soon", 1);
    int st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
    unsetenv("NEURON_RT_EXEC_TIMEOUT");
    return st;
}

/* A VNC count asked of an instance type that does not exist. */
static int c_count_bad_instance(void)
{
    setenv("TRNEMU_INSTANCE", "trn9.huge", 1);
    int st = nrt_get_total_vnc_count(&f.u32);
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    return st;
}

/* Instance information asked of an instance type that does not exist. */
static int c_info_bad_instance(void)
{
    nrt_instance_info_t info;
    setenv("TRNEMU_INSTANCE", "trn9.huge", 1);
    int st = nrt_get_instance_info(&info, sizeof info);
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    return st;
}

/* An output's completion count that nothing will reach. */
static int c_completion_timeout(void)
{
    return nrt_tensor_check_output_completion(f.out, 0, 1);
}

/* ---- the table ---------------------------------------------------------- */

static const nrt_ucode_info ucode = {{NULL, 0}, {NULL, 0}};
static uint32_t cc_group[1] = {0};
static nrt_cc_comm_t cc_comm_bad_vnc = {cc_group, 0, 1, 0, 1, 77};
static nrt_tensor_list_t cc_list = {NULL, 0};

/* X(id, phase, status, text its line holds, the call) */
#define ERROR_CASES(X)                                                                        \
    /* before nrt_init */                                                                     \
    X(pre_load, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_load(f.neff, f.neff_size, 0, -1, &f.model)) \
    X(pre_alloc, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "x", &f.tensor)) \
    X(pre_exec, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_execute(FAKE(nrt_model_t), f.set, f.set)) \
    X(pre_read, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_tensor_read(FAKE(nrt_tensor_t), f.buf, 0, 4)) \
    X(pre_stats, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_get_vnc_memory_stats(0, (void *)f.buf, 16, &f.size)) \
    X(pre_hbm_va, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_get_hbm_mmap_va(0, 0, &f.va, &f.size)) \
    X(pre_host_id, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_host_device_id_get(0, &f.u32)) \
    X(pre_memcpy, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_memcpy_to_device(f.buf, f.buf, 4)) \
    X(pre_dmabuf, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_get_dmabuf_fd(4096, 4096, &f.fd)) \
    X(pre_efa, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_get_attached_efa_bdf(f.buf, f.text, &f.size)) \
    X(pre_drain, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_async_drain_queued_execs(0)) \
    X(pre_tracker, PRE, NRT_UNINITIALIZED, "before nrt_init", nrta_error_tracker_create(0, &f.tracker)) \
    X(pre_seq, PRE, NRT_UNINITIALIZED, "before nrt_init", nrta_get_sequence(0, NRTA_XU_COMPUTE, 0, &f.seq)) \
    X(pre_done, PRE, NRT_UNINITIALIZED, "before nrt_init", nrta_is_completed(1, &f.done)) \
    X(pre_fd, PRE, NRT_UNINITIALIZED, "before nrt_init", nrta_get_completion_handle(1, &f.fd)) \
    X(pre_async_write, PRE, NRT_UNINITIALIZED, "before nrt_init", nrta_tensor_write(FAKE(nrt_tensor_t), f.buf, 0, 4, 0, NULL, &f.seq)) \
    X(pre_barrier, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_barrier(0, 0, 1)) \
    X(pre_sendrecv, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_async_sendrecv_init(0)) \
    X(pre_profile, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_profile_start(FAKE(nrt_model_t), "p.ntff")) \
    X(pre_continuous_save, PRE, NRT_INVALID, "no continuous profile", nrt_profile_continuous_save(0, NULL)) \
    X(pre_trace_stop, PRE, NRT_INVALID, "is not capturing", nrt_sys_trace_stop()) \
    X(pre_inspect_stop, PRE, NRT_INVALID, "inspect is not running", nrt_inspect_stop()) \
    X(pre_model_info, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_get_model_tensor_info(FAKE(nrt_model_t), (nrt_tensor_info_array_t **)(void *)&f.va)) \
    X(pre_free_info, PRE, NRT_INVALID, "not a tensor info", nrt_free_model_tensor_info(FAKE(nrt_tensor_info_array_t))) \
    X(pre_tracker_list, PRE, NRT_INVALID_HANDLE, "not a live error tracker", nrta_error_tracker_get_list(FAKE(nrta_error_tracker_t), (const nrta_error_t **)(void *)&f.va, &f.size)) \
    X(pre_init_framework, PRE, NRT_INVALID, "framework", nrt_init((nrt_framework_type_t)99, "", "")) \
    X(pre_init_env, PRE, NRT_INVALID, "NEURON_RT_EXEC_TIMEOUT", c_init_bad_env()) \
    X(pre_count_instance, PRE, NRT_INVALID, "trn9.huge", c_count_bad_instance()) \
    X(pre_ucode, PRE, NRT_FAILURE, "microcode", nrt_set_pool_eng_ucode(&ucode)) \
    X(pre_set_fake_tensor, PRE, NRT_INVALID, "not a live tensor", nrt_add_tensor_to_tensor_set(f.set, "x", FAKE(nrt_tensor_t))) \
    X(pre_set_fake_set, PRE, NRT_INVALID, "not a live tensor set", nrt_get_tensor_from_tensor_set(FAKE(nrt_tensor_set_t), "t", &f.tensor)) \
    X(pre_set_missing, PRE, NRT_FAILURE, "no tensor named 'nothing'", nrt_get_tensor_from_tensor_set(f.set, "nothing", &f.tensor)) \
    X(pre_set_destroy_fake, PRE, NO_STATUS, "not a live tensor set", VOID_CALL(nrt_destroy_tensor_set(&(nrt_tensor_set_t *){FAKE(nrt_tensor_set_t)}))) \
    X(pre_tensor_free_fake, PRE, NO_STATUS, "not a live tensor", VOID_CALL(nrt_tensor_free(&(nrt_tensor_t *){FAKE(nrt_tensor_t)}))) \
    X(pre_icfg_fake, PRE, NRT_INVALID, "not an inspect config", nrt_inspect_config_free(FAKE(nrt_inspect_config_t))) \
    X(pre_popt_fake, PRE, NRT_INVALID, "not a continuous-profile options", nrt_profile_continuous_options_free(FAKE(nrt_profile_continuous_options_t))) \
    X(pre_scfg_fake, PRE, NO_STATUS, "not a system trace config", VOID_CALL(nrt_sys_trace_config_set_defaults(FAKE(nrt_sys_trace_config_t)))) \
    X(pre_scfg_max_fake, PRE, NO_STATUS, "not a system trace config", VOID_CALL(nrt_sys_trace_config_set_max_events_per_nc(FAKE(nrt_sys_trace_config_t), 5))) \
    X(pre_fetch_fake, PRE, NO_STATUS, "not a fetch options", VOID_CALL(nrt_sys_trace_fetch_options_set_defaults(FAKE(nrt_sys_trace_fetch_options_t)))) \
    X(pre_fetch_max_fake, PRE, NO_STATUS, "not a fetch options", VOID_CALL(nrt_sys_trace_fetch_options_set_max_events_per_nc(FAKE(nrt_sys_trace_fetch_options_t), 5))) \
    X(pre_profile_stop, PRE, NRT_INVALID, "no profile was started", nrt_profile_stop("never-started.ntff")) \
    X(pre_continuous_stop, PRE, NRT_INVALID, "no continuous profile", nrt_profile_continuous_stop()) \
    X(pre_fetch_none, PRE, NRT_INVALID, "no system trace capture", nrt_sys_trace_fetch_events((char **)(void *)&f.va, &f.size, NULL)) \
    X(pre_rt_trace_stop, PRE, NRT_INVALID, "no system trace capture", nrt_trace_stop("never.json")) \
    X(pre_info_instance, PRE, NRT_INVALID, "trn9.huge", c_info_bad_instance()) \
    X(pre_tracker_destroy_fake, PRE, NO_STATUS, "not a live error tracker", VOID_CALL(nrta_error_tracker_destroy(FAKE(nrta_error_tracker_t)))) \
    X(pre_sr_flush, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_async_sendrecv_flush(0)) \
    X(pre_sr_test, PRE, NRT_UNINITIALIZED, "before nrt_init", nrt_async_sendrecv_test_comm(FAKE(nrt_async_sendrecv_comm_t), &f.done)) \
    X(pre_cc_prepare, PRE, NRT_UNINITIALIZED, "before nrt_init", nrta_cc_prepare(&cc_comm_bad_vnc, &cc_list, &cc_list, NRT_DTYPE_FLOAT32, NRT_OP_ADD, NRT_CC_ALLREDUCE, &(nrt_cc_context_t *){NULL})) \
    X(pre_drain_exec, PRE, NRT_UNINITIALIZED, "before nrt_init", nrta_execute_schedule(FAKE(nrt_model_t), f.set, f.set, 0, NULL, &f.seq)) \
    X(pre_nccl_net, PRE, NO_STATUS, "NCCL network plugin", VOID_CALL(nrt_get_libnccl_net(&f.fd, f.text, sizeof f.text))) \
    /* the runtime open: tensors */                                                           \
    X(alloc_placement, OPEN, NRT_INVALID, "placement", nrt_tensor_allocate((nrt_tensor_placement_t)9, 0, 64, "x", &f.tensor)) \
    X(alloc_vnc, OPEN, NRT_INVALID, "VNC 99", nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 99, 64, "x", &f.tensor)) \
    X(alloc_huge, OPEN, NRT_RESOURCE, "bytes", nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, (size_t)1 << 50, "x", &f.tensor)) \
    X(slice_past_end, OPEN, NRT_INVALID, "is outside", nrt_tensor_allocate_slice(f.t, 4000, 200, "s", &f.tensor)) \
    X(attach_fake, OPEN, NRT_INVALID, "not a live tensor", nrt_tensor_attach_buffer(FAKE(nrt_tensor_t), f.buf, 64)) \
    X(read_past_end, OPEN, NRT_INVALID, "is outside", nrt_tensor_read(f.t, f.buf, 4000, 200)) \
    X(write_past_end, OPEN, NRT_INVALID, "is outside", nrt_tensor_write(f.t, f.buf, 4000, 200)) \
    X(write_offset_wraps, OPEN, NRT_INVALID, "is outside", nrt_tensor_write(f.t, f.buf, SIZE_MAX, 2)) \
    X(read_fake, OPEN, NRT_INVALID, "not a live tensor", nrt_tensor_read(FAKE(nrt_tensor_t), f.buf, 0, 4)) \
    X(memset_past_end, OPEN, NRT_INVALID, "is outside", nrt_tensor_memset(f.t, 4000, 0, 200)) \
    X(copy_past_end, OPEN, NRT_INVALID, "is outside", nrt_tensor_copy(f.t, 0, f.h, 4000, 200)) \
    X(copy_fake, OPEN, NRT_INVALID, "not a live tensor", nrt_tensor_copy(FAKE(nrt_tensor_t), 0, f.t, 0, 4)) \
    X(batch_past_end, OPEN, NRT_INVALID, "is outside", c_batch_past_end()) \
    X(alloc_info_fake, OPEN, NRT_INVALID, "not a live tensor", nrt_tensor_get_device_allocation_info(FAKE(nrt_tensor_t), (void *)f.buf)) \
    X(completion_timeout, OPEN, NRT_TIMEOUT, "completion", c_completion_timeout()) \
    X(completion_reset_fake, OPEN, NRT_INVALID, "not a live tensor", nrt_tensor_reset_output_completion(FAKE(nrt_tensor_t))) \
    X(tensor_free_twice, OPEN, NO_STATUS, "not a live tensor", c_tensor_free_twice()) \
    /* tensor sets */                                                                         \
    X(set_entry_freed, OPEN, NRT_INVALID, "was freed", c_set_entry_freed()) \
    X(set_destroy_twice, OPEN, NO_STATUS, "not a live tensor set", c_set_destroy_twice()) \
    X(set_destroyed_add, OPEN, NRT_INVALID, "not a live tensor set", c_set_destroyed_add()) \
    X(set_long_name, OPEN, NRT_INVALID, "longer than", c_set_long_name()) \
    X(set_missing, OPEN, NRT_FAILURE, "no tensor named 'nothing'", nrt_get_tensor_from_tensor_set(f.set, "nothing", &f.tensor)) \
    /* models and executions */                                                               \
    X(load_garbage, OPEN, NRT_INVALID, "NEFF", nrt_load(f.buf, 1024, 0, -1, &f.model)) \
    X(load_vnc, OPEN, NRT_INVALID, "VNC 99", nrt_load(f.neff, f.neff_size, 99, -1, &f.model)) \
    X(load_vnc_count, OPEN, NRT_INVALID, "vnc_count", nrt_load(f.neff, f.neff_size, 0, 2, &f.model)) \
    X(load_coll_device, OPEN, NRT_INVALID, "ctx_device_id", nrt_load_collectives(f.neff, f.neff_size, 0, -1, 3, 2, &f.model)) \
    X(unload_fake, OPEN, NRT_INVALID, "not a loaded model", nrt_unload(FAKE(nrt_model_t))) \
    X(unload_twice, OPEN, NRT_INVALID, "not a loaded model", c_unload_twice()) \
    X(exec_fake_model, OPEN, NRT_INVALID, "not a loaded model", nrt_execute(FAKE(nrt_model_t), f.m.in, f.m.out)) \
    X(exec_fake_set, OPEN, NRT_INVALID, "not a live tensor set", nrt_execute(f.m.model, FAKE(nrt_tensor_set_t), f.m.out)) \
    X(exec_missing_input, OPEN, NRT_INVALID, "input", c_exec_missing_input()) \
    X(exec_wrong_size, OPEN, NRT_INVALID, "bytes", c_exec_wrong_size()) \
    X(exec_repeat_zero, OPEN, NRT_INVALID, "repeat_count", nrt_execute_repeat(f.m.model, f.m.in, f.m.out, 0)) \
    X(model_info_size, OPEN, NRT_INVALID, "info_size_in", nrt_get_model_info(f.m.model, (void *)f.buf, 0, &f.size)) \
    X(model_count_fake, OPEN, NRT_INVALID, "not a loaded model", nrt_get_model_vnc_count(FAKE(nrt_model_t), &f.u32)) \
    X(free_info_fake, OPEN, NRT_INVALID, "not a tensor info", nrt_free_model_tensor_info(FAKE(nrt_tensor_info_array_t))) \
    /* machine queries */                                                                     \
    X(stats_vnc, OPEN, NRT_INVALID, "VNC 99", nrt_get_vnc_memory_stats(99, (void *)f.buf, 16, &f.size)) \
    X(hbm_va_device, OPEN, NRT_INVALID, "device 99", nrt_get_hbm_mmap_va(99, 0, &f.va, &f.size)) \
    X(hbm_va_index, OPEN, NRT_INVALID, "negative", nrt_get_hbm_mmap_va(0, -1, &f.va, &f.size)) \
    X(hbm_va_last, OPEN, NRT_INVALID_HANDLE, "no HBM region 99", nrt_get_hbm_mmap_va(0, 99, &f.va, &f.size)) \
    X(host_id_device, OPEN, NRT_INVALID, "device 99", nrt_host_device_id_get(99, &f.u32)) \
    X(rid_map_small, OPEN, NRT_INVALID, "the map holds 0", nrt_host_device_id_rid_map_get(&(uint32_t){0}, &f.u32)) \
    X(memcpy_host, OPEN, NRT_INVALID, "not inside mapped device memory", nrt_memcpy_to_device(f.buf, f.buf, 4)) \
    X(dmabuf_host, OPEN, NRT_INVALID, "device memory", nrt_get_dmabuf_fd((uint64_t)(uintptr_t)f.buf, 4096, &f.fd)) \
    X(efa_host, OPEN, NRT_INVALID, "not inside mapped device memory", nrt_get_attached_efa_bdf(f.buf, f.text, &f.size)) \
    X(efa_device, OPEN, NRT_FAILURE, "no EFA device", nrt_get_attached_efa_bdf(nrt_tensor_get_va(f.t), f.text, &f.size)) \
    X(ucode_open, OPEN, NRT_INVALID, "before nrt_init", nrt_set_pool_eng_ucode(&ucode)) \
    /* asynchronous queues */                                                                 \
    X(drain_vnc, OPEN, NRT_INVALID, "VNC 99", nrt_async_drain_queued_execs(99)) \
    X(tracker_lnc, OPEN, NRT_INVALID, "LNC 99", nrta_error_tracker_create(99, &f.tracker)) \
    X(tracker_list_fake, OPEN, NRT_INVALID_HANDLE, "not a live error tracker", nrta_error_tracker_get_list(FAKE(nrta_error_tracker_t), (const nrta_error_t **)(void *)&f.va, &f.size)) \
    X(tracker_destroy_fake, OPEN, NO_STATUS, "not a live error tracker", VOID_CALL(nrta_error_tracker_destroy(FAKE(nrta_error_tracker_t)))) \
    X(async_write_fake, OPEN, NRT_INVALID, "not a live tensor", nrta_tensor_write(FAKE(nrt_tensor_t), f.buf, 0, 4, 0, NULL, &f.seq)) \
    X(async_write_queue, OPEN, NRT_INVALID, "queue 99", nrta_tensor_write(f.t, f.buf, 0, 4, 99, NULL, &f.seq)) \
    X(async_read_past_end, OPEN, NRT_INVALID, "is outside", nrta_tensor_read(f.buf, f.t, 4000, 200, 0, NULL, &f.seq)) \
    X(async_exec_queue, OPEN, NRT_INVALID, "queue 99", nrta_execute_schedule(f.m.model, f.m.in, f.m.out, 99, NULL, &f.seq)) \
    X(seq_lnc, OPEN, NRT_INVALID, "LNC 99", nrta_get_sequence(99, NRTA_XU_COMPUTE, 0, &f.seq)) \
    X(seq_future, OPEN, NRT_INVALID, "sequence", nrta_is_completed(((nrta_seq_t)0x7fff << 48) | 5, &f.done)) \
    X(cc_prepare_vnc, OPEN, NRT_INVALID, "VNC 77", nrta_cc_prepare(&cc_comm_bad_vnc, &cc_list, &cc_list, NRT_DTYPE_FLOAT32, NRT_OP_ADD, NRT_CC_ALLREDUCE, &(nrt_cc_context_t *){NULL})) \
    X(cc_schedule_fake, OPEN, NRT_INVALID, "not a prepared collective", nrta_cc_schedule(&(nrt_cc_context_t *){FAKE(nrt_cc_context_t)}, 0, NULL, &f.seq)) \
    /* collectives and point to point */                                                      \
    X(barrier_rank, OPEN, NRT_INVALID, "g_device_id 3", nrt_barrier(0, 3, 2)) \
    X(barrier_vnc, OPEN, NRT_INVALID, "VNC 99", nrt_barrier(99, 0, 1)) \
    X(sendrecv_lnc, OPEN, NRT_FAILURE, "LNC 99", nrt_async_sendrecv_init(99)) \
    X(sendrecv_flush, OPEN, NRT_FAILURE, "not initialised", nrt_async_sendrecv_flush(99)) \
    X(sendrecv_test_fake, OPEN, NRT_INVALID_HANDLE, "not a sendrecv communicator", nrt_async_sendrecv_test_comm(FAKE(nrt_async_sendrecv_comm_t), &f.done)) \
    X(sendrecv_request_fake, OPEN, NRT_INVALID_HANDLE, "not a pending sendrecv request", nrt_async_sendrecv_test_request(FAKE(nrt_async_sendrecv_request_t), &f.done, &f.size)) \
    /* profiles and traces */                                                                 \
    X(profile_fake_model, OPEN, NRT_INVALID, "not a loaded model", nrt_profile_start(FAKE(nrt_model_t), "p.ntff")) \
    X(profile_stop_none, OPEN, NRT_INVALID, "no profile", nrt_profile_stop("never-started.ntff")) \
    X(continuous_stop_none, OPEN, NRT_INVALID, "no continuous profile", nrt_profile_continuous_stop()) \
    X(continuous_save_none, OPEN, NRT_INVALID, "no continuous profile", nrt_profile_continuous_save(99, NULL)) \
    X(trace_stop_twice, OPEN, NRT_INVALID, "is not capturing", c_trace_stop_twice()) \
    X(trace_start_twice, OPEN, NRT_INVALID, "already", c_trace_start_twice()) \
    X(trace_event_type, OPEN, NRT_INVALID, "'bogus' is not an event type", nrt_sys_trace_config_set_capture_enabled_for_event_type(f.scfg, "bogus", true)) \
    X(trace_nc, OPEN, NO_STATUS, "NeuronCore 9999", VOID_CALL(nrt_sys_trace_config_set_capture_enabled_for_nc(f.scfg, 9999, true))) \
    X(rt_trace_stop_empty, OPEN, NRT_INVALID, "filename", nrt_trace_stop("")) \
    X(inspect_stop_none, OPEN, NRT_INVALID, "inspect is not running", nrt_inspect_stop()) \
    X(inspect_begin_twice, OPEN, NRT_INVALID, "already", c_inspect_begin_twice()) \
    X(inspect_activity, OPEN, NRT_INVALID, "'bogus' is not an activity type", nrt_inspect_config_set_activity(f.icfg, "bogus", true)) \
    X(inspect_max_zero, OPEN, NRT_INVALID, "is 0", nrt_inspect_config_set_sys_trace_max_events_per_nc(f.icfg, 0)) \
    X(continuous_dir_empty, OPEN, NRT_INVALID, "output_dir", nrt_profile_continuous_options_set_output_dir(f.popt, "")) \
    /* after nrt_close */                                                                     \
    X(closed_load, CLOSED, NRT_CLOSED, "after nrt_close", nrt_load(f.neff, f.neff_size, 0, -1, &f.model)) \
    X(closed_read, CLOSED, NRT_CLOSED, "after nrt_close", nrt_tensor_read(f.t, f.buf, 0, 4)) \
    X(closed_alloc, CLOSED, NRT_CLOSED, "after nrt_close", nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, -1, 64, "x", &f.tensor)) \
    X(closed_exec, CLOSED, NRT_CLOSED, "after nrt_close", nrt_execute(f.m.model, f.m.in, f.m.out)) \
    X(closed_unload, CLOSED, NRT_CLOSED, "after nrt_close", nrt_unload(f.m.model)) \
    X(closed_stats, CLOSED, NRT_CLOSED, "after nrt_close", nrt_get_vnc_memory_stats(0, (void *)f.buf, 16, &f.size)) \
    X(closed_async, CLOSED, NRT_CLOSED, "after nrt_close", nrta_tensor_write(f.t, f.buf, 0, 4, 0, NULL, &f.seq)) \
    X(closed_seq, CLOSED, NRT_CLOSED, "after nrt_close", nrta_get_sequence(0, NRTA_XU_COMPUTE, 0, &f.seq)) \
    X(closed_tracker, CLOSED, NRT_CLOSED, "after nrt_close", nrta_error_tracker_create(0, &f.tracker)) \
    X(closed_drain, CLOSED, NRT_CLOSED, "after nrt_close", nrt_async_drain_queued_execs(0)) \
    X(closed_barrier, CLOSED, NRT_CLOSED, "after nrt_close", nrt_barrier(0, 0, 1)) \
    X(closed_sendrecv, CLOSED, NRT_CLOSED, "after nrt_close", nrt_async_sendrecv_close(0)) \
    X(closed_profile, CLOSED, NRT_CLOSED, "after nrt_close", nrt_profile_start(f.m.model, "p.ntff")) \
    X(closed_trace_stop, CLOSED, NRT_INVALID, "is not capturing", nrt_sys_trace_stop()) \
    X(closed_inspect_stop, CLOSED, NRT_INVALID, "inspect is not running", nrt_inspect_stop()) \
    X(closed_continuous_stop, CLOSED, NRT_INVALID, "no continuous profile", nrt_profile_continuous_stop()) \
    X(closed_profile_stop, CLOSED, NRT_INVALID, "no profile was started", nrt_profile_stop("never-started.ntff")) \
    X(closed_rt_trace_stop, CLOSED, NRT_INVALID, "no system trace capture is running", nrt_trace_stop("never.json")) \
    X(closed_model_info, CLOSED, NRT_CLOSED, "after nrt_close", nrt_get_model_info(f.m.model, (void *)f.buf, 16, &f.size)) \
    X(closed_model_tinfo, CLOSED, NRT_CLOSED, "after nrt_close", nrt_get_model_tensor_info(f.m.model, (nrt_tensor_info_array_t **)(void *)&f.va)) \
    X(closed_done, CLOSED, NRT_CLOSED, "after nrt_close", nrta_is_completed(1, &f.done)) \
    X(closed_fd, CLOSED, NRT_CLOSED, "after nrt_close", nrta_get_completion_handle(1, &f.fd)) \
    X(closed_tracker_list, CLOSED, NRT_INVALID_HANDLE, "not a live error tracker", nrta_error_tracker_get_list(f.tracker, (const nrta_error_t **)(void *)&f.va, &f.size)) \
    X(closed_tracker_destroy, CLOSED, NO_STATUS, "not a live error tracker", VOID_CALL(nrta_error_tracker_destroy(f.tracker))) \
    X(closed_flush, CLOSED, NRT_CLOSED, "after nrt_close", nrt_async_sendrecv_flush(0)) \
    X(closed_sr_init, CLOSED, NRT_CLOSED, "after nrt_close", nrt_async_sendrecv_init(0)) \
    X(closed_sr_connect, CLOSED, NRT_CLOSED, "after nrt_close", nrt_async_sendrecv_connect("127.0.0.1", 1, 0, (nrt_async_sendrecv_comm_t **)(void *)&f.va)) \
    X(closed_dmabuf, CLOSED, NRT_CLOSED, "after nrt_close", nrt_get_dmabuf_fd(4096, 4096, &f.fd)) \
    X(closed_memcpy, CLOSED, NRT_CLOSED, "after nrt_close", nrt_memcpy_to_device(f.buf, f.buf, 4)) \
    X(closed_hbm_va, CLOSED, NRT_CLOSED, "after nrt_close", nrt_get_hbm_mmap_va(0, 0, &f.va, &f.size)) \
    X(closed_host_id, CLOSED, NRT_CLOSED, "after nrt_close", nrt_host_device_id_get(0, &f.u32)) \
    X(closed_efa, CLOSED, NRT_CLOSED, "after nrt_close", nrt_get_attached_efa_bdf(f.buf, f.text, &f.size)) \
    X(closed_cc_schedule, CLOSED, NRT_CLOSED, "after nrt_close", nrta_cc_schedule(&(nrt_cc_context_t *){FAKE(nrt_cc_context_t)}, 0, NULL, &f.seq)) \
    X(closed_exec_sched, CLOSED, NRT_CLOSED, "after nrt_close", nrta_execute_schedule(f.m.model, f.m.in, f.m.out, 0, NULL, &f.seq)) \
    X(closed_copy, CLOSED, NRT_CLOSED, "after nrt_close", nrt_tensor_copy(f.t, 0, f.h, 0, 4)) \
    X(closed_completion, CLOSED, NRT_CLOSED, "after nrt_close", nrt_tensor_check_output_completion(f.out, 0, 1)) \
    X(closed_slice, CLOSED, NRT_CLOSED, "after nrt_close", nrt_tensor_allocate_slice(f.t, 0, 4, "s", &f.tensor)) \
    X(closed_all_gather, CLOSED, NRT_CLOSED, "after nrt_close", nrt_all_gather(0, 0, 1, 4, f.buf, f.buf + 64)) \
    X(closed_global_comm, CLOSED, NRT_CLOSED, "after nrt_close", nrt_build_global_comm(0, 0, 1)) \
    X(closed_set_add, CLOSED, NRT_INVALID, "not a live tensor", nrt_add_tensor_to_tensor_set(f.set, "x", f.t)) \
    X(closed_fetch_none, CLOSED, NRT_INVALID, "no system trace capture", nrt_sys_trace_fetch_events((char **)(void *)&f.va, &f.size, NULL)) \
    X(closed_tensor_info, CLOSED, NRT_CLOSED, "after nrt_close", nrt_tensor_get_device_allocation_info(f.t, (void *)f.buf)) \
    X(closed_reset, CLOSED, NRT_CLOSED, "after nrt_close", nrt_tensor_reset_output_completion(f.out)) \
    X(closed_attach, CLOSED, NRT_CLOSED, "after nrt_close", nrt_tensor_attach_buffer(f.t, f.buf, 64)) \
    X(closed_empty, CLOSED, NRT_CLOSED, "after nrt_close", nrt_tensor_allocate_empty("e", &f.tensor)) \
    X(closed_repeat, CLOSED, NRT_CLOSED, "after nrt_close", nrt_execute_repeat(f.m.model, f.m.in, f.m.out, 2)) \
    X(closed_load_coll, CLOSED, NRT_CLOSED, "after nrt_close", nrt_load_collectives(f.neff, f.neff_size, 0, -1, 0, 1, &f.model)) \
    X(closed_cc_init, CLOSED, NRT_CLOSED, "after nrt_close", nrt_cc_global_comm_init(0, 0, 1)) \
    X(closed_batch, CLOSED, NRT_CLOSED, "after nrt_close", c_batch_past_end()) \
    X(closed_continuous_save, CLOSED, NRT_INVALID, "no continuous profile", nrt_profile_continuous_save(0, NULL)) \
    X(closed_set_entry, CLOSED, NRT_INVALID, "was freed", nrt_get_tensor_from_tensor_set(f.set, "t", &f.tensor)) \
    X(closed_set_missing, CLOSED, NRT_FAILURE, "no tensor named 'nothing'", nrt_get_tensor_from_tensor_set(f.set, "nothing", &f.tensor))

#define CASE_FN(id, ph, want, text, call) \
    static int case_##id(void) { return (int)(call); }
ERROR_CASES(CASE_FN)

/* One row of the table. */
struct error_case {
    const char *id;      /* the case's name */
    enum phase phase;    /* when it runs */
    int want;            /* the status (NO_STATUS: a void function) */
    const char *text;    /* what its one line holds */
    const char *call;    /* the call, as written */
    int (*run)(void);    /* makes the call */
};

#define CASE_ROW(id, ph, want, text, call) {#id, ph, want, text, #call, case_##id},
static const struct error_case cases[] = {ERROR_CASES(CASE_ROW)};

/* ---- capture ---------------------------------------------------------- */

/* The bytes of the log file from offset `from` on, appended to out. */
static size_t read_log_from(off_t from, char *out, size_t cap)
{
    int fd = open(log_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = pread(fd, out, cap - 1, from);
    close(fd);
    n = n > 0 ? n : 0;
    out[n] = '\0';
    return (size_t)n;
}

static off_t log_size(void)
{
    struct stat st;
    return stat(log_path, &st) == 0 ? st.st_size : 0;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Run one case; false (with the reason on stdout) when it breaks the rule. */
static bool run_case(const struct error_case *c)
{
    static char err_text[8192], file_text[8192];
    off_t from = log_size();
    it_log_begin();
    int st = c->run();
    it_log_end(err_text, sizeof err_text);
    read_log_from(from, file_text, sizeof file_text);
    snprintf(lines_text, sizeof lines_text, "%s%s", err_text, file_text);
    int lines = count_lines(lines_text);
    const char *why = NULL;
    if (st != c->want)
        why = "wrong status";
    else if (lines != 1)
        why = lines == 0 ? "no log line" : "more than one log line";
    else if (strstr(lines_text, c->text) == NULL)
        why = "the line does not name the cause";
    else if (c->phase != PRE && err_text[0] != '\0')
        why = "the line went to stderr, not to NEURON_RT_LOG_LOCATION";
    if (why == NULL)
        return true;
    printf("FAIL %s (%s): %s: %s -> status %d (want %d), %d line(s), want \"%s\":\n%s",
           c->id, phase_name[c->phase], why, c->call, st, c->want, lines, c->text,
           lines_text);
    return false;
}

/* Every case of one phase; how many failed. */
static int run_phase(enum phase p)
{
    int failed = 0, ran = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (cases[i].phase != p)
            continue;
        ran++;
        failed += !run_case(&cases[i]);
    }
    printf("%s: %d cases, %d failed\n", phase_name[p], ran, failed);
    return failed;
}

/* ---- the phases ----------------------------------------------------------- */

static void fixture_open(void)
{
    it_model_load(&f.m, "add");
    f.t = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 4096, "t");
    f.h = it_tensor(NRT_TENSOR_PLACEMENT_HOST, -1, 4096, "h");
    f.out = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "out");
    assert_int_equal(nrt_add_tensor_to_tensor_set(f.set, "t", f.t), NRT_SUCCESS);
    assert_int_equal(nrta_error_tracker_create(0, &f.tracker), NRT_SUCCESS);
    assert_int_equal(nrt_inspect_config_allocate(&f.icfg), NRT_SUCCESS);
    assert_int_equal(nrt_sys_trace_config_allocate(&f.scfg), NRT_SUCCESS);
    assert_int_equal(nrt_profile_continuous_options_allocate(&f.popt), NRT_SUCCESS);
}

static void test_error_lines(void **state)
{
    (void)state;
    int failed = 0;
    f.neff = it_read_example_neff("add", &f.neff_size);
    assert_int_equal(nrt_allocate_tensor_set(&f.set), NRT_SUCCESS);
    failed += run_phase(PRE);

    setenv("NEURON_RT_LOG_LOCATION", log_path, 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    fixture_open();
    failed += run_phase(OPEN);

    nrta_error_tracker_destroy(f.tracker);
    nrt_inspect_config_free(f.icfg);
    nrt_sys_trace_config_free(f.scfg);
    nrt_profile_continuous_options_free(f.popt);
    assert_int_equal(nrt_free_model_tensor_info(f.m.info), NRT_SUCCESS);
    nrt_close();
    failed += run_phase(CLOSED);
    /* Closing again is no error: no status, no line. */
    off_t from = log_size();
    it_log_begin();
    nrt_close();
    int lines = it_log_end(lines_text, sizeof lines_text);
    lines += count_lines((read_log_from(from, lines_text, sizeof lines_text), lines_text));
    assert_int_equal(lines, 0);

    nrt_destroy_tensor_set(&f.set);
    free(f.neff);
    assert_int_equal(failed, 0);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int main(void)
{
    it_env_clear();
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    for (char **e = environ; *e != NULL; e++)  /* the default level: none set */
        if (strncmp(*e, "NEURON_RT_LOG_", 14) == 0) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(strcspn(*e, "=")), *e);
            unsetenv(name);
            e = environ - 1;
        }
    snprintf(work_dir, sizeof work_dir, "%s/trnemu-error-lines.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(work_dir) == NULL)
        return 1;
    snprintf(log_path, sizeof log_path, "%s/nrt.log", work_dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_lines),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    nftw(work_dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}
