/*
 * test_shm_full.c: a full shared-memory directory is a status, never a
 * signal. Run by shm_full_test.sh, which gives it a small tmpfs of its
 * own as TRNEMU_SHM_DIR ("tmpfs" mode) or a file size limit ("fsize"
 * mode, ulimit -f). With the directory full before nrt_init, init fails
 * with NRT_RESOURCE and one log line and leaves nothing behind; with it
 * full later, a tensor write and an execution that must first touch HBM
 * pages fail with NRT_RESOURCE and one line each (the execution's names
 * the instruction that touched the page); once space is freed the
 * same calls succeed with the right bits, and nrt_close leaves the
 * directory empty. A recording into the full directory stops with one
 * line and the calls go on.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "it_common.h"
#include "it_dir.h"

enum { N = 128 * 512, BYTES = N * 4, BIG = 2 << 20 };

static char shm_dir[1024];   /* the tmpfs */
static char fill_path[1100]; /* the file that fills it */
static char log_buf[16384];

/* Take every free byte of the directory (a file of whole blocks). */
static void fill_up(void)
{
    int fd = open(fill_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    off_t size = 0;
    for (off_t step = 64 << 20; step >= 4096; step /= 2)
        while (posix_fallocate(fd, size, step) == 0)
            size += step;
    close(fd);
}

static void free_up(void)
{
    assert_int_equal(unlink(fill_path), 0);
}

/* How many entries besides the filler the directory holds. */
static int dir_entries(void)
{
    return it_dir_entries(shm_dir, "fill");
}

/* Does the line name an instruction as the failure reports do ("core 0
 * sp[3] (sp.dma_copy ...)": core, engine, index, its text)? */
static bool names_instruction(const char *line)
{
    const char *at = strstr(line, "instruction core ");
    unsigned core, index;
    char engine[8];
    return at != NULL && sscanf(at, "instruction core %u %7[a-z][%u] (", &core, engine,
                                &index) == 3 && strstr(at, "] (") != NULL;
}

static int setup(void **state)
{
    (void)state;
    it_env_clear();
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    return 0;
}

/* Full before nrt_init: NRT_RESOURCE, one line naming the directory. */
static void test_full_at_init(void **state)
{
    (void)state;
    fill_up();
    it_log_begin();
    NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
    int lines = it_log_end(log_buf, sizeof log_buf);
    assert_int_equal(st, NRT_RESOURCE);
    assert_int_equal(lines, 1);
    assert_non_null(strstr(log_buf, shm_dir));
    assert_non_null(strstr(log_buf, "MiB free"));
    assert_int_equal(dir_entries(), 0);
    free_up();
}

static void fill_floats(float *x, int seed)
{
    for (int i = 0; i < N; i++)
        x[i] = (float)((i * 13 + seed) % 977) * 0.25f - (float)seed;
}

/* Full after nrt_init: a write and an execution fail and the process
 * lives on; with space again both succeed. */
static void test_full_later(void **state)
{
    (void)state;
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    struct it_model x;
    it_model_load(&x, "add");
    float *a = malloc(BYTES), *b = malloc(BYTES), *c = malloc(BYTES);
    fill_floats(a, 1);
    fill_floats(b, 2);
    /* the inputs are backed before the directory fills up */
    assert_int_equal(nrt_tensor_write(x.t[0], a, 0, BYTES), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_write(x.t[1], b, 0, BYTES), NRT_SUCCESS);
    nrt_tensor_t *big = NULL;
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, BIG, "big", &big),
                     NRT_SUCCESS);
    char *src = malloc(BIG), *back = malloc(BIG);
    memset(src, 0x5a, BIG);

    fill_up();
    it_log_begin();
    NRT_STATUS st = nrt_tensor_write(big, src, 0, BIG);
    int lines = it_log_end(log_buf, sizeof log_buf);
    assert_int_equal(st, NRT_RESOURCE);
    assert_int_equal(lines, 1);
    assert_non_null(strstr(log_buf, shm_dir));
    it_log_begin();
    st = nrt_execute(x.model, x.in, x.out);
    lines = it_log_end(log_buf, sizeof log_buf);
    assert_int_equal(st, NRT_RESOURCE);
    assert_int_equal(lines, 1);
    assert_non_null(strstr(log_buf, "'add'"));
    assert_true(names_instruction(log_buf));
    assert_non_null(strstr(log_buf, shm_dir));
    free_up();

    assert_int_equal(nrt_tensor_write(big, src, 0, BIG), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_read(big, back, 0, BIG), NRT_SUCCESS);
    assert_memory_equal(src, back, BIG);
    assert_int_equal(nrt_execute(x.model, x.in, x.out), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_read(x.t[2], c, 0, BYTES), NRT_SUCCESS);
    for (int i = 0; i < N; i++)
        assert_true(c[i] == a[i] + b[i]);
    nrt_tensor_free(&big);
    it_model_unload(&x);
    free(a), free(b), free(c), free(src), free(back);
    nrt_close();
    assert_int_equal(dir_entries(), 0);
}

/* A recording (TRNEMU_RECORD) into the full directory stops with one
 * line naming the cause, and the calls go on. */
static void test_record_full(void **state)
{
    (void)state;
    char rec[1200];
    snprintf(rec, sizeof rec, "%s/rec.db", shm_dir);
    setenv("TRNEMU_RECORD", rec, 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    enum { CHUNK = 64 << 10, CALLS = 128 };
    nrt_tensor_t *t = NULL;
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, CHUNK, "t", &t),
                     NRT_SUCCESS);
    uint8_t *buf = calloc(1, CHUNK);
    assert_int_equal(nrt_tensor_write(t, buf, 0, CHUNK), NRT_SUCCESS);  /* HBM backed */
    fill_up();
    it_log_begin();
    int failed = 0;
    for (int i = 0; i < CALLS; i++) {
        memset(buf, i + 1, CHUNK);  /* new bytes each call: the log must grow */
        failed += nrt_tensor_write(t, buf, 0, CHUNK) != NRT_SUCCESS;
    }
    nrt_tensor_free(&t);
    nrt_close();
    int lines = it_log_end(log_buf, sizeof log_buf);
    unsetenv("TRNEMU_RECORD");
    assert_int_equal(failed, 0);
    assert_int_equal(lines, 1);
    assert_non_null(strstr(log_buf, "recording into"));
    assert_non_null(strstr(log_buf, "full"));
    free_up();
    char side[1300];
    unlink(rec);
    snprintf(side, sizeof side, "%s-wal", rec);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", rec);
    unlink(side);
    assert_int_equal(dir_entries(), 0);
    free(buf);
}

/* Under a file size limit smaller than the HBM files: init refuses. */
static void test_fsize_limit(void **state)
{
    (void)state;
    it_log_begin();
    NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
    int lines = it_log_end(log_buf, sizeof log_buf);
    assert_int_equal(st, NRT_RESOURCE);
    assert_int_equal(lines, 1);
    assert_non_null(strstr(log_buf, "ulimit -f"));
    assert_int_equal(dir_entries(), 0);
}

int main(int argc, char **argv)
{
    const char *dir = getenv("TRNEMU_SHM_DIR");
    if (argc != 2 || dir == NULL) {
        fprintf(stderr, "usage: TRNEMU_SHM_DIR=DIR %s tmpfs|fsize\n", argv[0]);
        return 2;
    }
    snprintf(shm_dir, sizeof shm_dir, "%s", dir);
    snprintf(fill_path, sizeof fill_path, "%s/fill", dir);
    const struct CMUnitTest tmpfs[] = {
        cmocka_unit_test_setup(test_full_at_init, setup),
        cmocka_unit_test_setup(test_full_later, setup),
        cmocka_unit_test_setup(test_record_full, setup),
    };
    const struct CMUnitTest fsize[] = {
        cmocka_unit_test_setup(test_fsize_limit, setup),
    };
    if (strcmp(argv[1], "fsize") == 0)
        return cmocka_run_group_tests(fsize, NULL, NULL);
    return cmocka_run_group_tests(tmpfs, NULL, NULL);
}
