/*
 * soak.c: everything at once on one instance, with the shared-memory
 * directory filling up and emptying underneath (docs/security.md). Run
 * by soak_test.sh on a small tmpfs of its own (TRNEMU_SHM_DIR).
 *
 * Two rank processes share a trn1.2xlarge (one VNC each). Each backs its
 * memory first (tensors written, a first execution, a first collective),
 * then runs four threads at once: nrt_execute, the nrta_* queues
 * (execution, read back), host all-gathers with the other rank, and
 * continuous profiles with snapshot saves. Meanwhile a third process
 * fills the directory to the last byte and frees it, over and over.
 * Every result is checked bit for bit; afterwards nothing but the filler
 * may be left in the directory. SOAK_ITERS sets the work per thread.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_profile.h"
#include "trnemu/trnemu.h"

enum { N = 128 * 512, BYTES = N * 4, GATHER = 4096, WORLD = 2 };

static int iters = 150;            /* work per thread */
static int rank;                   /* this rank */
static char work[256];             /* profiles and snapshots (not the tmpfs) */
static void *neff;                 /* add.neff */
static size_t neff_size;           /* its bytes */
static _Atomic int failures;       /* checks that failed in this process */

#define CHECK(cond, ...) do { \
        if (!(cond)) { \
            fprintf(stderr, "soak rank %d: ", rank); \
            fprintf(stderr, __VA_ARGS__); \
            fputc('\n', stderr); \
            atomic_fetch_add(&failures, 1); \
        } \
    } while (0)

/* The add model with its own tensors, backed before the soak starts. */
struct add_io {
    nrt_model_t *m;              /* the model */
    nrt_tensor_t *t[3];          /* a, b, c */
    nrt_tensor_set_t *in, *out;  /* {a, b}, {c} */
    float *a, *b, *c;            /* host copies and the read-back buffer */
};

static void fill(float *x, int seed)
{
    for (int i = 0; i < N; i++)
        x[i] = (float)((i * 7 + seed * 13) % 1000) * 0.37f - (float)seed;
}

static void add_make(struct add_io *io, int seed)
{
    const char *names[3] = {"a", "b", "c"};
    CHECK(nrt_load(neff, neff_size, 0, -1, &io->m) == NRT_SUCCESS, "nrt_load");
    nrt_allocate_tensor_set(&io->in);
    nrt_allocate_tensor_set(&io->out);
    for (int k = 0; k < 3; k++) {
        CHECK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, BYTES, names[k], &io->t[k]) ==
              NRT_SUCCESS, "allocate %s", names[k]);
        nrt_add_tensor_to_tensor_set(k < 2 ? io->in : io->out, names[k], io->t[k]);
    }
    io->a = malloc(BYTES), io->b = malloc(BYTES), io->c = malloc(BYTES);
    fill(io->a, seed);
    fill(io->b, seed + 1);
    CHECK(nrt_tensor_write(io->t[0], io->a, 0, BYTES) == NRT_SUCCESS, "write a");
    CHECK(nrt_tensor_write(io->t[1], io->b, 0, BYTES) == NRT_SUCCESS, "write b");
    CHECK(nrt_execute(io->m, io->in, io->out) == NRT_SUCCESS, "first execution");
}

static void add_check(struct add_io *io, const char *who, int it)
{
    for (int i = 0; i < N; i++)
        if (io->c[i] != io->a[i] + io->b[i]) {
            CHECK(0, "%s %d: c[%d] = %g, want %g", who, it, i, (double)io->c[i],
                  (double)(io->a[i] + io->b[i]));
            return;
        }
}

static void add_free(struct add_io *io)
{
    for (int k = 0; k < 3; k++)
        nrt_tensor_free(&io->t[k]);
    nrt_destroy_tensor_set(&io->in);
    nrt_destroy_tensor_set(&io->out);
    nrt_unload(io->m);
    free(io->a), free(io->b), free(io->c);
}

static void *soak_exec(void *arg)
{
    struct add_io *io = arg;
    for (int it = 0; it < iters; it++) {
        memset(io->c, 0, BYTES);
        CHECK(nrt_execute(io->m, io->in, io->out) == NRT_SUCCESS, "nrt_execute %d", it);
        CHECK(nrt_tensor_read(io->t[2], io->c, 0, BYTES) == NRT_SUCCESS, "read %d", it);
        add_check(io, "nrt_execute", it);
    }
    return NULL;
}

static void soak_wait(nrta_seq_t seq)
{
    bool done = false;
    for (int k = 0; k < 2000000 && !done; k++)
        if (nrta_is_completed(seq, &done) != NRT_SUCCESS || !done)
            usleep(100);
    CHECK(done, "request 0x%llx never completed", (unsigned long long)seq);
}

static void *soak_async(void *arg)
{
    struct add_io *io = arg;
    for (int it = 0; it < iters; it++) {
        nrta_seq_t se, sr;
        memset(io->c, 0, BYTES);
        CHECK(nrta_execute_schedule(io->m, io->in, io->out, 0, NULL, &se) == NRT_SUCCESS,
              "schedule %d", it);
        soak_wait(se);
        CHECK(nrta_tensor_read(io->c, io->t[2], 0, BYTES, 0, NULL, &sr) == NRT_SUCCESS,
              "async read %d", it);
        soak_wait(sr);
        add_check(io, "nrta_execute_schedule", it);
    }
    return NULL;
}

static void *soak_coll(void *arg)
{
    (void)arg;
    uint8_t in[GATHER], out[GATHER * WORLD];
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < GATHER; i++)
            in[i] = (uint8_t)(rank * 31 + i + it);
        CHECK(nrt_all_gather(0, (uint32_t)rank, WORLD, GATHER, in, out) == NRT_SUCCESS,
              "all_gather %d", it);
        for (int r = 0; r < WORLD; r++)
            for (int i = 0; i < GATHER; i++)
                if (out[r * GATHER + i] != (uint8_t)(r * 31 + i + it)) {
                    CHECK(0, "all_gather %d: [%d][%d]", it, r, i);
                    r = WORLD;
                    break;
                }
    }
    return NULL;
}

static void *soak_profile(void *arg)
{
    (void)arg;
    char snap[512];
    snprintf(snap, sizeof snap, "%s/snap-%d.db", work, rank);
    nrt_profile_continuous_options_t *o = NULL;
    CHECK(nrt_profile_continuous_options_allocate(&o) == NRT_SUCCESS, "profile options");
    nrt_profile_continuous_options_set_output_dir(o, work);
    for (int it = 0; it < 4; it++) {
        CHECK(nrt_profile_continuous_start(o) == NRT_SUCCESS, "profile start %d", it);
        usleep(20000);
        NRT_STATUS st = nrt_profile_continuous_save(0, o);
        CHECK(st == NRT_SUCCESS || st == NRT_INVALID, "profile save %d: %d", it, (int)st);
        CHECK(nrt_profile_continuous_stop() == NRT_SUCCESS, "profile stop %d", it);
        int64_t id = -1;
        CHECK(trnemu_snapshot_save(snap, "soak", &id) == NRT_SUCCESS && id > 0,
              "snapshot save %d", it);
    }
    nrt_profile_continuous_options_free(o);
    return NULL;
}

/* One rank: back its memory, say so on ready, wait for go, soak. */
static int soak_rank(int ready, int go)
{
    char vis[8];
    snprintf(vis, sizeof vis, "%d", rank);
    setenv("NEURON_RT_VISIBLE_CORES", vis, 1);
    if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS)
        return 1;
    struct add_io io[2];
    add_make(&io[0], rank * 2);
    add_make(&io[1], rank * 2 + 1);
    CHECK(nrt_build_global_comm(0, (uint32_t)rank, WORLD) == NRT_SUCCESS, "global comm");
    soak_coll(NULL);  /* the channels exist before the directory fills */
    char c = 'r';
    if (write(ready, &c, 1) != 1 || read(go, &c, 1) != 1)
        return 1;
    pthread_t th[4];
    pthread_create(&th[0], NULL, soak_exec, &io[0]);
    pthread_create(&th[1], NULL, soak_async, &io[1]);
    pthread_create(&th[2], NULL, soak_coll, NULL);
    pthread_create(&th[3], NULL, soak_profile, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    add_free(&io[0]);
    add_free(&io[1]);
    nrt_close();
    return atomic_load(&failures) == 0 ? 0 : 1;
}

/* The neighbour: take every free byte of the directory, give it back;
 * one byte on `cycles` each time the directory was full. */
static void soak_filler(const char *dir, int cycles)
{
    char path[512];
    snprintf(path, sizeof path, "%s/filler", dir);
    for (;;) {
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        off_t size = 0;
        for (off_t step = 16 << 20; fd >= 0 && step >= 4096; step /= 2)
            while (posix_fallocate(fd, size, step) == 0)
                size += step;
        if (fd >= 0)
            close(fd);
        if (write(cycles, "f", 1) != 1)
            _exit(1);
        usleep(30000);
        unlink(path);
        usleep(10000);
    }
}

static void *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *b = malloc((size_t)n);
    if (b != NULL && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return b;
}

/* Entries left in the directory. */
static int dir_left(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            fprintf(stderr, "soak: left behind: %s/%s\n", dir, e->d_name);
            n++;
        }
    if (d != NULL)
        closedir(d);
    return n;
}

int main(void)
{
    const char *shm = getenv("TRNEMU_SHM_DIR"), *ex = getenv("TRNEMU_EXAMPLES_DIR");
    if (shm == NULL || ex == NULL) {
        fprintf(stderr, "soak: set TRNEMU_SHM_DIR and TRNEMU_EXAMPLES_DIR\n");
        return 2;
    }
    if (getenv("SOAK_ITERS") != NULL)
        iters = atoi(getenv("SOAK_ITERS"));
    char path[512];
    snprintf(path, sizeof path, "%s/add.neff", ex);
    neff = read_file(path, &neff_size);
    snprintf(work, sizeof work, "%s/trnemu-soak-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (neff == NULL || mkdtemp(work) == NULL) {
        fprintf(stderr, "soak: cannot read %s or make a work directory\n", path);
        return 2;
    }
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    int ready[2], go[2];
    if (pipe(ready) != 0 || pipe(go) != 0)
        return 2;
    pid_t ranks[WORLD];
    for (int r = 0; r < WORLD; r++) {
        ranks[r] = fork();
        if (ranks[r] == 0) {
            rank = r;
            _exit(soak_rank(ready[1], go[0]));
        }
    }
    char c;
    int up = 0;
    for (int r = 0; r < WORLD; r++)
        up += read(ready[0], &c, 1) == 1;
    int cycles[2];
    if (pipe2(cycles, O_NONBLOCK) != 0)
        return 2;
    pid_t filler = fork();
    if (filler == 0) {
        soak_filler(shm, cycles[1]);
        _exit(0);
    }
    usleep(50000);  /* the directory is full now and then from here on */
    for (int r = 0; r < WORLD; r++)
        if (write(go[1], "g", 1) != 1)
            return 2;
    int bad = up == WORLD ? 0 : 1;
    for (int r = 0; r < WORLD; r++) {
        int ws = 0;
        waitpid(ranks[r], &ws, 0);
        if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
            fprintf(stderr, "soak: rank %d ended with status 0x%x\n", r, ws);
            bad++;
        }
    }
    kill(filler, SIGKILL);
    waitpid(filler, NULL, 0);
    char fb[4096];
    ssize_t full = read(cycles[0], fb, sizeof fb);
    if (full < 2) {
        fprintf(stderr, "soak: the directory was full only %zd times during the run\n", full);
        bad++;
    }
    snprintf(path, sizeof path, "%s/filler", shm);
    unlink(path);
    bad += dir_left(shm);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    if (system(cmd) != 0)
        bad++;
    free(neff);
    printf("soak: %d iterations per thread, directory full %zd times, %s\n", iters, full,
           bad ? "FAILED" : "ok");
    return bad ? 1 : 0;
}
