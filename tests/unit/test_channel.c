/*
 * test_channel.c: the shared-memory SPSC rings and doorbells
 * (devices/link/channel.h): wrap-around, back-pressure, message framing,
 * streaming between two processes, timeouts and a dead peer.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "devices/link/channel.h"
#include "devices/thread/spin.h"

/* A ring and its two bells in one shared anonymous mapping. */
struct pipe_mem {
    uint8_t *mem;            /* the mapping */
    size_t bytes;            /* its size */
    struct chan_bell *prod;  /* producer's bell */
    struct chan_bell *cons;  /* consumer's bell */
    struct chan c;           /* the ring (both ends use the same struct) */
};

static void pipe_make(struct pipe_mem *p, uint64_t cap)
{
    p->bytes = 128 + chan_shm_bytes(cap);
    p->mem = mmap(NULL, p->bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(p->mem != MAP_FAILED);
    memset(p->mem, 0, p->bytes);
    p->prod = (struct chan_bell *)p->mem;
    p->cons = (struct chan_bell *)(p->mem + 64);
    assert_true(chan_cap_ok(cap));
    chan_attach(&p->c, p->mem + 128, cap, p->cons, p->prod);
}

static void pipe_free(struct pipe_mem *p)
{
    munmap(p->mem, p->bytes);
}

static uint8_t pattern(uint64_t i)
{
    return (uint8_t)(i * 2654435761u >> 13);
}

/* Many odd-sized pieces through a small ring: every byte arrives in order. */
static void test_wraparound(void **state)
{
    (void)state;
    struct pipe_mem p;
    pipe_make(&p, 4096);
    uint8_t buf[3000], out[3000];
    uint64_t sent = 0, got = 0;
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + (size_t)(round * 977) % sizeof buf;
        for (size_t i = 0; i < n; i++)
            buf[i] = pattern(sent + i);
        uint64_t k = chan_put(&p.c, buf, n, 1);
        sent += k;
        size_t m = 1 + (size_t)(round * 613) % sizeof out;
        uint64_t r = chan_get(&p.c, out, m, 1);
        for (uint64_t i = 0; i < r; i++)
            assert_int_equal(out[i], pattern(got + i));
        got += r;
    }
    uint64_t r;
    while ((r = chan_get(&p.c, out, sizeof out, 1)) > 0) {
        for (uint64_t i = 0; i < r; i++)
            assert_int_equal(out[i], pattern(got + i));
        got += r;
    }
    assert_int_equal(got, sent);
    assert_true(sent > 10 * 4096);  /* wrapped many times */
    pipe_free(&p);
}

/* A full ring takes nothing more until the consumer releases. */
static void test_backpressure(void **state)
{
    (void)state;
    struct pipe_mem p;
    pipe_make(&p, 4096);
    uint8_t buf[8192] = {0};
    assert_int_equal(chan_put(&p.c, buf, sizeof buf, 1), 4096);
    assert_int_equal(chan_put(&p.c, buf, 1, 1), 0);
    uint8_t *w;
    assert_int_equal(chan_space(&p.c, &w), 0);
    assert_int_equal(chan_get(&p.c, buf, 100, 1), 100);
    assert_int_equal(chan_put(&p.c, buf, sizeof buf, 1), 100);
    assert_int_equal(chan_fill(&p.c), 4096);
    /* unit: only whole elements go */
    assert_int_equal(chan_get(&p.c, buf, 10, 4), 8);
    assert_int_equal(chan_put(&p.c, buf, 7, 4), 4);
    pipe_free(&p);
}

/* Headers and padding keep every message 64-byte aligned across the wrap. */
static void test_messages(void **state)
{
    (void)state;
    struct pipe_mem p;
    pipe_make(&p, 4096);
    uint8_t data[200];
    for (int i = 0; i < 100; i++) {
        struct chan_msg m = {CHAN_MSG_MAGIC, (uint32_t)i, 3, 10, 1, 7, (uint64_t)(i % 130), 0,
                             {0}};
        assert_true(chan_put_msg(&p.c, &m));
        memset(data, i, m.bytes);
        assert_int_equal(chan_put(&p.c, data, m.bytes, 1), m.bytes);
        assert_true(chan_put_pad(&p.c, chan_pad_bytes(m.bytes)));
        assert_int_equal(atomic_load(&p.c.ring->head) % CHAN_ALIGN, 0);
        struct chan_msg g;
        assert_true(chan_get_msg(&p.c, &g));
        assert_memory_equal(&g, &m, sizeof m);
        uint8_t back[200];
        assert_int_equal(chan_get(&p.c, back, g.bytes, 1), g.bytes);
        assert_memory_equal(back, data, g.bytes);
        assert_true(chan_get_pad(&p.c, chan_pad_bytes(g.bytes)));
    }
    struct chan_msg g;
    assert_false(chan_get_msg(&p.c, &g));  /* nothing left */
    pipe_free(&p);
}

static NRT_STATUS no_check(void *arg)
{
    (void)arg;
    return NRT_SUCCESS;
}

/* 24 MiB from a child process through a 64 KiB ring, both ends sleeping
 * on their bells when they must. */
static void test_stream_fork(void **state)
{
    (void)state;
    struct pipe_mem p;
    pipe_make(&p, 64 << 10);
    const uint64_t total = 24u << 20;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct chan_waiter w = {p.prod, spin_now_ns() + 20000000000ull, 5000, 20, no_check, NULL,
                                0};
        static uint8_t buf[100000];
        uint64_t off = 0;
        while (off < total) {
            uint64_t n = total - off < sizeof buf ? total - off : sizeof buf;
            for (uint64_t i = 0; i < n; i++)
                buf[i] = pattern(off + i);
            if (chan_send(&p.c, buf, n, &w) != NRT_SUCCESS)
                _exit(2);
            off += n;
        }
        _exit(0);
    }
    struct chan_waiter w = {p.cons, spin_now_ns() + 20000000000ull, 5000, 20, no_check, NULL, 0};
    static uint8_t buf[77777];
    uint64_t off = 0;
    bool ok = true;
    while (off < total && ok) {
        uint64_t n = total - off < sizeof buf ? total - off : sizeof buf;
        ok = chan_recv(&p.c, buf, n, &w) == NRT_SUCCESS;
        for (uint64_t i = 0; ok && i < n; i++)
            ok = buf[i] == pattern(off + i);
        off += n;
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(ok);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    pipe_free(&p);
}

/* Nothing arrives: NRT_TIMEOUT at the deadline, not before, not much after. */
static void test_timeout(void **state)
{
    (void)state;
    struct pipe_mem p;
    pipe_make(&p, 4096);
    uint64_t t0 = spin_now_ns();
    struct chan_waiter w = {p.cons, t0 + 200000000ull, 1000, 50, no_check, NULL, 0};
    uint8_t b[16];
    assert_int_equal(chan_recv(&p.c, b, sizeof b, &w), NRT_TIMEOUT);
    uint64_t dt = spin_now_ns() - t0;
    assert_true(dt >= 200000000ull);
    assert_true(dt < 1000000000ull);
    pipe_free(&p);
}

/* The peer dies without sending: the check sees it within a slice or two. */
static pid_t dead_pid;

static NRT_STATUS peer_check(void *arg)
{
    (void)arg;
    int status;
    if (waitpid(dead_pid, &status, WNOHANG) == dead_pid)
        dead_pid = -1;
    return dead_pid < 0 ? NRT_EXEC_HW_ERR_COLLECTIVES : NRT_SUCCESS;
}

static void test_dead_peer(void **state)
{
    (void)state;
    struct pipe_mem p;
    pipe_make(&p, 4096);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        usleep(50000);
        _exit(0);  /* dies without a word */
    }
    dead_pid = pid;
    uint64_t t0 = spin_now_ns();
    struct chan_waiter w = {p.cons, t0 + 10000000000ull, 1000, 20, peer_check, NULL, 0};
    uint8_t b[16];
    assert_int_equal(chan_recv(&p.c, b, sizeof b, &w), NRT_EXEC_HW_ERR_COLLECTIVES);
    assert_true(spin_now_ns() - t0 < 2000000000ull);
    pipe_free(&p);
}

/* A bell rung by another process wakes a sleeper at once. */
static void test_bell_wakes(void **state)
{
    (void)state;
    struct pipe_mem p;
    pipe_make(&p, 4096);
    uint32_t seen = chan_bell_seen(p.cons);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        usleep(100000);
        chan_bell_ring(p.cons);
        _exit(0);
    }
    uint64_t t0 = spin_now_ns();
    struct chan_waiter w = {p.cons, t0 + 10000000000ull, 0, 5000, no_check, NULL, 0};
    assert_int_equal(chan_wait(&w, seen), NRT_SUCCESS);
    uint64_t dt = spin_now_ns() - t0;
    assert_true(chan_bell_seen(p.cons) != seen);
    assert_true(dt < 3000000000ull);  /* woken, not the 5 s slice */
    waitpid(pid, NULL, 0);
    pipe_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wraparound),
        cmocka_unit_test(test_backpressure),
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_stream_fork),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_dead_peer),
        cmocka_unit_test(test_bell_wakes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
