/*
 * test_spin.c: bounded busy-polling (devices/thread/spin.h): an empty window,
 * a condition already true, one that another thread makes true inside
 * the window, one that never comes, and the window's variable (default,
 * good values, malformed ones).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "devices/link/channel.h"
#include "devices/thread/spin.h"

/* What the tests poll: a flag, and how often it was looked at. */
struct flag {
    atomic_int set;    /* the condition */
    atomic_int polls;  /* calls of flag_ready */
};

static bool flag_ready(const void *arg)
{
    struct flag *f = (struct flag *)(uintptr_t)arg;
    atomic_fetch_add(&f->polls, 1);
    return atomic_load(&f->set) != 0;
}

static void test_empty_window(void **state)
{
    (void)state;
    struct flag f = {1, 0};
    assert_false(spin_poll(flag_ready, &f, 0));
    assert_int_equal(atomic_load(&f.polls), 0);
}

static void test_already_true(void **state)
{
    (void)state;
    struct flag f = {1, 0};
    assert_true(spin_poll(flag_ready, &f, 1000000000ull));
    assert_int_equal(atomic_load(&f.polls), 1);
}

static void *set_later(void *arg)
{
    struct flag *f = arg;
    usleep(2000);
    atomic_store(&f->set, 1);
    return NULL;
}

static void test_set_by_another_thread(void **state)
{
    (void)state;
    struct flag f = {0, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, set_later, &f), 0);
    /* a 60 s window: ends long before, when the flag is set */
    assert_true(spin_poll(flag_ready, &f, 60000000000ull));
    pthread_join(t, NULL);
}

static void *bump_later(void *arg)
{
    _Atomic uint32_t *w = arg;
    usleep(2000);
    atomic_fetch_add(w, 1);
    return NULL;
}

/* spin_until_moved: a word another thread moves ends the window; one
 * nobody moves lasts it out. */
static void test_word_moved(void **state)
{
    (void)state;
    _Atomic uint32_t w = 7;
    assert_false(spin_until_moved(&w, 7, 1000000ull));
    assert_false(spin_until_moved(&w, 6, 0));  /* an empty window looks at nothing */
    assert_true(spin_until_moved(&w, 6, 1000000ull));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, bump_later, &w), 0);
    assert_true(spin_until_moved(&w, 7, 60000000000ull));
    pthread_join(t, NULL);
    assert_int_equal(atomic_load(&w), 8);
}

static void test_never(void **state)
{
    (void)state;
    struct flag f = {0, 0};
    uint64_t t0 = spin_now_ns();
    assert_false(spin_poll(flag_ready, &f, 1000000ull));  /* polls, then offers the CPU */
    assert_true(spin_now_ns() - t0 >= 1000000ull);  /* the whole window was polled */
    assert_false(spin_poll(flag_ready, &f, 1000ull));     /* too short to offer the CPU */
    assert_true(atomic_load(&f.polls) > 1);
}

static void test_window_variable(void **state)
{
    (void)state;
    const char *name = "TRNEMU_TEST_SPIN_US";
    unsetenv(name);
    assert_int_equal(spin_window_ns(name, "NRT", 30), 30000u);
    setenv(name, "", 1);
    assert_int_equal(spin_window_ns(name, "NRT", 30), 30000u);
    setenv(name, "0", 1);
    assert_int_equal(spin_window_ns(name, "NRT", 30), 0u);
    setenv(name, "0x10", 1);
    assert_int_equal(spin_window_ns(name, "NRT", 30), 16000u);
    setenv(name, "10000", 1);
    assert_int_equal(spin_window_ns(name, "NRT", 30), 10000000u);
    /* the one parser's whole numbers (docs/env.md): a fraction is refused too */
    static const char *const bad[] = {"-1", "10001", "20us", "fast", "2.5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv(name, bad[i], 1);
        assert_int_equal(spin_window_ns(name, "NRT", 30), 30000u);  /* one log line each */
    }
    unsetenv(name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_window),
        cmocka_unit_test(test_already_true),
        cmocka_unit_test(test_set_by_another_thread),
        cmocka_unit_test(test_never),
        cmocka_unit_test(test_word_moved),
        cmocka_unit_test(test_window_variable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
