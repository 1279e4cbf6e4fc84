/*
 * dp_train.c: data-parallel training of a small MLP, one process per rank,
 * written only against the Neuron Runtime C API.
 *
 *   TRNEMU_INSTANCE=trn2.48xlarge trnemu launch -n 4 -- build/examples/dp_train
 *
 * Every rank loads the same NEFF (examples/mlp_train.s: forward, MSE loss
 * gradient, backward, an all-reduce of the gradients across the ranks and
 * an SGD update) with nrt_load_collectives(ctx_device_id = RANK,
 * ctx_device_count = WORLD_SIZE), feeds it batches from its own shard of a
 * deterministic synthetic dataset and runs STEPS steps, the weights going
 * back and forth between two pairs of device tensors. Rank 0 prints the
 * loss of the global batch at each step. At the end
 *   - rank 0 compares its weights and losses with a host reference that
 *     runs the same fp32 math for all ranks (the same fmaf order as the
 *     Tensor engine; only the all-reduce may add in another order, hence a
 *     small tolerance), and
 *   - every rank gathers a hash of every rank's weights (nrt_all_gather)
 *     and checks they are all identical, so all match the reference.
 * Exit status 0 when the checks pass on this rank.
 *
 * Options: --steps N (default 20), --neff FILE (default: mlp_train.neff
 * next to this program). Without the launcher (no RANK / WORLD_SIZE) it
 * runs as the single rank of a job of one.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "example_file.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"

#define NB 128             /* samples per rank and step (the SBUF partitions) */
#define ND 64              /* input features */
#define NH 128             /* hidden units */
#define NO 16              /* outputs */
#define NSAMPLES 4096      /* size of the dataset, split into WORLD_SIZE shards */
#define LR 0.125f          /* learning rate */
#define LOSS_TOL 1e-4      /* relative: the loss sums in another order than here */
#define WEIGHT_TOL 1e-5    /* relative to the largest weight: all-reduce order */

/* The model's parameters. */
struct mlp {
    float w1[ND * NH];     /* [ND x NH], row-major */
    float w2[NH * NO];     /* [NH x NO], row-major */
};

/* One batch of one rank. */
struct batch {
    float x[NB * ND];      /* inputs [NB x ND] */
    float y[NB * NO];      /* targets [NB x NO] */
};

/* Gradients and local loss of one rank, as the NEFF computes them. */
struct grads {
    float g1[ND * NH];     /* dW1 */
    float g2[NH * NO];     /* dW2 */
    float loss;            /* squared error summed over outputs, mean over the batch */
};

/* ---- deterministic synthetic data ----------------------------------- */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A value in [-1, 1) from (stream, index), exact in fp32. */
static float uniform(uint64_t stream, uint64_t index)
{
    uint32_t u = (uint32_t)(mix64(stream * 0x100000001b3ull ^ index) >> 40);   /* 24 bits */
    return (float)u * (1.0f / 8388608.0f) - 1.0f;
}

/* The teacher that defines the targets: y = relu(x @ T1) @ T2. */
static float teacher_t1[ND * NH], teacher_t2[NH * NO];

static void teacher_init(void)
{
    for (int i = 0; i < ND * NH; i++)
        teacher_t1[i] = uniform(11, (uint64_t)i) * 0.25f;
    for (int i = 0; i < NH * NO; i++)
        teacher_t2[i] = uniform(12, (uint64_t)i) * 0.125f;
}

static void teacher(const float *x, float *y)
{
    float t[NH];
    for (int j = 0; j < NH; j++) {
        float a = 0.0f;
        for (int k = 0; k < ND; k++)
            a += x[k] * teacher_t1[k * NH + j];
        t[j] = a > 0.0f ? a : 0.0f;
    }
    for (int o = 0; o < NO; o++) {
        float a = 0.0f;
        for (int j = 0; j < NH; j++)
            a += t[j] * teacher_t2[j * NO + o];
        y[o] = a;
    }
}

/* The dataset: NSAMPLES inputs in [-1, 1) and their teacher targets. */
static float data_x[NSAMPLES * ND], data_y[NSAMPLES * NO];

static void dataset_init(void)
{
    teacher_init();
    for (uint64_t i = 0; i < (uint64_t)NSAMPLES * ND; i++)
        data_x[i] = uniform(10, i);
    for (int s = 0; s < NSAMPLES; s++)
        teacher(&data_x[s * ND], &data_y[s * NO]);
}

/* Batch `step` of rank `rank`'s shard: the shard is the contiguous block
 * rank of WORLD_SIZE blocks of the dataset, walked cyclically. */
static void make_batch(int rank, int world, int step, struct batch *bt)
{
    int shard = NSAMPLES / world, per_shard = shard / NB;
    int first = rank * shard + (step % per_shard) * NB;
    memcpy(bt->x, &data_x[first * ND], sizeof bt->x);
    memcpy(bt->y, &data_y[first * NO], sizeof bt->y);
}

static void init_mlp(struct mlp *m)
{
    for (int i = 0; i < ND * NH; i++)
        m->w1[i] = uniform(1, (uint64_t)i) * 0.125f;
    for (int i = 0; i < NH * NO; i++)
        m->w2[i] = uniform(2, (uint64_t)i) * 0.0884f;
}

/* ---- host reference: the NEFF's math in the same fp32 order --------- */

/* acc[n] = fmaf(a, row[n], acc[n]) for n < len: one step of a Tensor
 * engine chain for a whole row of outputs. */
/* Not under ThreadSanitizer: the clones' resolver runs while the program
 * is relocated, before the TSan runtime is up, and its instrumented entry
 * crashes there. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DP_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define DP_TSAN 1
#endif
#if defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 6) && !defined(DP_TSAN)
__attribute__((target_clones("fma", "default")))  /* same bits, without a call per element */
#endif
static void fma_row(float *acc, float a, const float *row, int len)
{
    for (int n = 0; n < len; n++)
        acc[n] = fmaf(a, row[n], acc[n]);
}

/* Gradients of one rank's batch, operation for operation as mlp_train.s:
 * each product element a chain of fmaf over the contracted index in
 * increasing order from +0 (the Tensor engine), elementwise ops rounded to
 * fp32. The loops run the chains of a whole row side by side. */
static void ref_grads(const struct mlp *m, const struct batch *bt, struct grads *g)
{
    static float h[NB * NH], dout[NB * NO], dpre[NB * NH], w2t[NO * NH];
    double loss = 0.0;
    for (int j = 0; j < NH; j++)
        for (int o = 0; o < NO; o++)
            w2t[o * NH + j] = m->w2[j * NO + o];
    for (int b = 0; b < NB; b++) {
        float *hb = &h[b * NH], out[NO] = {0};
        memset(hb, 0, NH * sizeof *hb);
        for (int k = 0; k < ND; k++)
            fma_row(hb, bt->x[b * ND + k], &m->w1[k * NH], NH);
        for (int j = 0; j < NH; j++)
            hb[j] = hb[j] > 0.0f ? hb[j] : 0.0f;
        for (int j = 0; j < NH; j++)
            fma_row(out, hb[j], &m->w2[j * NO], NO);
        for (int o = 0; o < NO; o++) {
            float diff = out[o] - bt->y[b * NO + o];
            loss += (double)(diff * diff);
            dout[b * NO + o] = diff * 0.015625f;
        }
        float *db = &dpre[b * NH];
        memset(db, 0, NH * sizeof *db);
        for (int o = 0; o < NO; o++)
            fma_row(db, dout[b * NO + o], &w2t[o * NH], NH);
        for (int j = 0; j < NH; j++)
            db[j] = (hb[j] > 0.0f ? 1.0f : 0.0f) * db[j];
    }
    g->loss = (float)(loss / NB);
    memset(g->g1, 0, sizeof g->g1);
    memset(g->g2, 0, sizeof g->g2);
    for (int b = 0; b < NB; b++) {
        for (int j = 0; j < NH; j++)
            fma_row(&g->g2[j * NO], h[b * NH + j], &dout[b * NO], NO);
        for (int k = 0; k < ND; k++)
            fma_row(&g->g1[k * NH], bt->x[b * ND + k], &dpre[b * NH], NH);
    }
}

/* One step of the whole job: every rank's gradients, summed in rank order
 * (the all-reduce), then W' = sum * (-lr/world) + W. Returns the loss. */
static float ref_step(struct mlp *m, int world, int step)
{
    static struct batch bt;
    static struct grads g, sum;
    memset(&sum, 0, sizeof sum);
    for (int r = 0; r < world; r++) {
        make_batch(r, world, step, &bt);
        ref_grads(m, &bt, &g);
        for (int i = 0; i < ND * NH; i++)
            sum.g1[i] += g.g1[i];
        for (int i = 0; i < NH * NO; i++)
            sum.g2[i] += g.g2[i];
        sum.loss += g.loss;
    }
    float scale = -LR / (float)world;
    for (int i = 0; i < ND * NH; i++)
        m->w1[i] = sum.g1[i] * scale + m->w1[i];
    for (int i = 0; i < NH * NO; i++)
        m->w2[i] = sum.g2[i] * scale + m->w2[i];
    return sum.loss * (1.0f / (float)world);
}

/* ---- the runtime side ------------------------------------------------ */

/* One rank's model, tensors and tensor sets. */
struct dp_rank {
    int rank;                    /* RANK */
    int world;                   /* WORLD_SIZE */
    nrt_model_t *model;          /* mlp_train.neff, loaded with collectives */
    nrt_tensor_t *x, *y, *hp;    /* per-step inputs and the hyper-parameters */
    nrt_tensor_t *w1[2], *w2[2]; /* weights: step s reads [s%2], writes [1-s%2] */
    nrt_tensor_t *loss;          /* the global batch's loss of the last step */
    nrt_tensor_set_t *in[2];     /* input set of even / odd steps */
    nrt_tensor_set_t *out[2];    /* output set of even / odd steps */
};

static int ok(NRT_STATUS st, const struct dp_rank *dp, const char *what)
{
    if (st == NRT_SUCCESS)
        return 1;
    fprintf(stderr, "dp_train rank %d: %s failed: %s (%d)\n", dp->rank, what,
            nrt_get_status_as_str(st), (int)st);
    return 0;
}

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? atoi(v) : dflt;
}

/* The NEFF next to this program (build/examples/mlp_train.neff). */
static int default_neff(char *path, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", path, cap - 32);
    if (n <= 0)
        return -1;
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    if (slash == NULL)
        return -1;
    strcpy(slash + 1, "mlp_train.neff");
    return 0;
}

static int load_model(struct dp_rank *dp, const char *neff_path)
{
    size_t size;
    void *neff = example_read_file(neff_path, &size);
    if (neff == NULL) {
        fprintf(stderr, "dp_train rank %d: cannot read %s\n", dp->rank, neff_path);
        return 0;
    }
    int good = ok(nrt_load_collectives(neff, size, 0, -1, (uint32_t)dp->rank,
                                       (uint32_t)dp->world, &dp->model),
                  dp, "nrt_load_collectives");
    free(neff);
    return good;
}

static int alloc(struct dp_rank *dp, size_t bytes, const char *name, nrt_tensor_t **t)
{
    return ok(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, bytes, name, t), dp, name);
}

static int add(struct dp_rank *dp, nrt_tensor_set_t *set, const char *name, nrt_tensor_t *t)
{
    return ok(nrt_add_tensor_to_tensor_set(set, name, t), dp, "nrt_add_tensor_to_tensor_set");
}

static int setup_tensors(struct dp_rank *dp, const struct mlp *init)
{
    float hp[2] = {-LR / (float)dp->world, 1.0f / (float)dp->world};
    int good = alloc(dp, NB * ND * 4, "x", &dp->x) &&
               alloc(dp, NB * NO * 4, "y", &dp->y) && alloc(dp, sizeof hp, "hp", &dp->hp) &&
               alloc(dp, 4, "loss", &dp->loss);
    for (int i = 0; good && i < 2; i++)
        good = alloc(dp, sizeof init->w1, "w1", &dp->w1[i]) &&
               alloc(dp, sizeof init->w2, "w2", &dp->w2[i]) &&
               ok(nrt_allocate_tensor_set(&dp->in[i]), dp, "nrt_allocate_tensor_set") &&
               ok(nrt_allocate_tensor_set(&dp->out[i]), dp, "nrt_allocate_tensor_set");
    for (int i = 0; good && i < 2; i++)
        good = add(dp, dp->in[i], "x", dp->x) && add(dp, dp->in[i], "y", dp->y) &&
               add(dp, dp->in[i], "hp", dp->hp) && add(dp, dp->in[i], "w1", dp->w1[i]) &&
               add(dp, dp->in[i], "w2", dp->w2[i]) &&
               add(dp, dp->out[i], "w1_out", dp->w1[1 - i]) &&
               add(dp, dp->out[i], "w2_out", dp->w2[1 - i]) &&
               add(dp, dp->out[i], "loss", dp->loss);
    return good && ok(nrt_tensor_write(dp->hp, hp, 0, sizeof hp), dp, "write hp") &&
           ok(nrt_tensor_write(dp->w1[0], init->w1, 0, sizeof init->w1), dp, "write w1") &&
           ok(nrt_tensor_write(dp->w2[0], init->w2, 0, sizeof init->w2), dp, "write w2");
}

static void free_tensors(struct dp_rank *dp)
{
    for (int i = 0; i < 2; i++) {
        nrt_destroy_tensor_set(&dp->in[i]);
        nrt_destroy_tensor_set(&dp->out[i]);
        nrt_tensor_free(&dp->w1[i]);
        nrt_tensor_free(&dp->w2[i]);
    }
    nrt_tensor_free(&dp->x);
    nrt_tensor_free(&dp->y);
    nrt_tensor_free(&dp->hp);
    nrt_tensor_free(&dp->loss);
}

/* Run the steps; losses[s] gets the loss the NEFF reports for step s. */
static int train(struct dp_rank *dp, int steps, float *losses)
{
    static struct batch bt;
    for (int s = 0; s < steps; s++) {
        make_batch(dp->rank, dp->world, s, &bt);
        if (!ok(nrt_tensor_write(dp->x, bt.x, 0, sizeof bt.x), dp, "write x") ||
            !ok(nrt_tensor_write(dp->y, bt.y, 0, sizeof bt.y), dp, "write y") ||
            !ok(nrt_execute(dp->model, dp->in[s % 2], dp->out[s % 2]), dp, "nrt_execute") ||
            !ok(nrt_tensor_read(dp->loss, &losses[s], 0, 4), dp, "read loss"))
            return 0;
        if (dp->rank == 0)
            printf("step %3d  loss %.6f\n", s, losses[s]);
    }
    return 1;
}

/* ---- checks ---------------------------------------------------------- */

static double max_rel_err(const float *got, const float *want, int n)
{
    double scale = 0.0, err = 0.0;
    for (int i = 0; i < n; i++) {
        scale = fmax(scale, fabs((double)want[i]));
        err = fmax(err, fabs((double)got[i] - (double)want[i]));
    }
    return scale > 0.0 ? err / scale : err;
}

/* Weights and losses against the host reference of the whole job (rank 0
 * only: the other ranks check that their weights are rank 0's bits). */
static int check_reference(const struct dp_rank *dp, const struct mlp *got, int steps,
                           const float *losses)
{
    static struct mlp ref;
    init_mlp(&ref);
    double loss_err = 0.0;
    for (int s = 0; s < steps; s++) {
        float want = ref_step(&ref, dp->world, s);
        loss_err = fmax(loss_err, fabs((double)losses[s] - want) / fmax(fabs(want), 1e-30));
    }
    double e1 = max_rel_err(got->w1, ref.w1, ND * NH), e2 = max_rel_err(got->w2, ref.w2, NH * NO);
    int good = e1 <= WEIGHT_TOL && e2 <= WEIGHT_TOL && loss_err <= LOSS_TOL;
    printf("rank %d: host reference: W1 max rel err %.2e, W2 %.2e, loss %.2e: %s\n",
               dp->rank, e1, e2, loss_err, good ? "ok" : "MISMATCH");
    return good;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

/* Every rank's weight hash, gathered; all must be equal. */
static int check_identical(struct dp_rank *dp, const struct mlp *got)
{
    uint64_t mine = fnv1a(fnv1a(0xcbf29ce484222325ull, got->w1, sizeof got->w1), got->w2,
                          sizeof got->w2);
    if (dp->world == 1)
        return 1;
    uint64_t *all = calloc((size_t)dp->world, sizeof *all);
    int good = all != NULL &&
               ok(nrt_all_gather(0, (uint32_t)dp->rank, (uint32_t)dp->world, sizeof mine, &mine,
                                 all),
                  dp, "nrt_all_gather");
    for (int r = 0; good && r < dp->world; r++)
        if (all[r] != mine) {
            printf("rank %d: weights differ from rank %d's (hash %016llx vs %016llx)\n", dp->rank,
                   r, (unsigned long long)mine, (unsigned long long)all[r]);
            good = 0;
        }
    if (good && dp->rank == 0)
        printf("weights identical on all %d ranks (hash %016llx)\n", dp->world,
               (unsigned long long)mine);
    free(all);
    return good;
}

static int parse_args(int argc, char **argv, int *steps, const char **neff)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
            *steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--neff") == 0 && i + 1 < argc)
            *neff = argv[++i];
        else
            return 0;
    }
    return *steps > 0 && *steps <= 100000;
}

int main(int argc, char **argv)
{
    static char neff_buf[PATH_MAX];
    static struct mlp init, got;
    struct dp_rank dp = {.rank = env_int("RANK", 0), .world = env_int("WORLD_SIZE", 1)};
    int steps = 20;
    const char *neff = NULL;
    setvbuf(stdout, NULL, _IOLBF, 0);   /* ranks share the terminal: whole lines */
    if (!parse_args(argc, argv, &steps, &neff) || dp.world < 1 || dp.rank < 0 ||
        dp.rank >= dp.world || NSAMPLES % (dp.world * NB) != 0) {
        fprintf(stderr, "usage: [RANK=r WORLD_SIZE=n] dp_train [--steps N] [--neff FILE]\n"
                        "(WORLD_SIZE must divide %d)\n", NSAMPLES / NB);
        return 2;
    }
    if (neff == NULL && default_neff(neff_buf, sizeof neff_buf) == 0)
        neff = neff_buf;
    if (dp.rank == 0)
        printf("dp_train: %d rank%s, MLP %dx%dx%d, batch %d per rank, %d steps\n", dp.world,
               dp.world == 1 ? "" : "s", ND, NH, NO, NB, steps);
    if (!ok(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), &dp, "nrt_init"))
        return 1;
    float *losses = calloc((size_t)steps, sizeof *losses);
    dataset_init();
    init_mlp(&init);
    int good = losses != NULL && neff != NULL && load_model(&dp, neff) &&
               setup_tensors(&dp, &init) && train(&dp, steps, losses) &&
               ok(nrt_tensor_read(dp.w1[steps % 2], got.w1, 0, sizeof got.w1), &dp, "read w1") &&
               ok(nrt_tensor_read(dp.w2[steps % 2], got.w2, 0, sizeof got.w2), &dp, "read w2");
    if (good) {
        int ref_ok = dp.rank != 0 || check_reference(&dp, &got, steps, losses);
        int same_ok = check_identical(&dp, &got);
        good = ref_ok && same_ok;
    }
    free_tensors(&dp);
    if (dp.model != NULL)
        nrt_unload(dp.model);
    nrt_close();
    free(losses);
    if (dp.rank == 0 || !good)
        printf("dp_train rank %d: %s\n", dp.rank, good ? "ok" : "FAILED");
    return good ? 0 : 1;
}
