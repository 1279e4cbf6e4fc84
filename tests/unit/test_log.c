/*
 * test_log.c: unit tests of the log's tap (emu/log.c, log_tap_begin/end):
 * while it is open, the lines bound for stderr, from any thread, are kept
 * instead of printed; after it, lines are printed again and a new tap
 * starts empty; lines for a sink and lines below the level are not kept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>
#include <unistd.h>

#include "emu/log.h"

/* What fn wrote to stderr (fd 2 on a temporary file meanwhile). */
static size_t stderr_of(void (*fn)(void), char *out, size_t cap)
{
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(2);
    assert_true(saved >= 0);
    dup2(fileno(tmp), 2);
    fn();
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(out, 1, cap - 1, tmp);
    out[n] = '\0';
    fclose(tmp);
    return n;
}

static void *log_from_thread(void *arg)
{
    (void)arg;
    LOG_ERROR("NRT", "from another thread");
    return NULL;
}

static const char *tapped;
static size_t tapped_len;

static void tap_two_threads(void)
{
    log_tap_begin();
    LOG_ERROR("NRT", "first %d", 1);
    LOG_INFO("NRT", "below the level");
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, log_from_thread, NULL), 0);
    pthread_join(t, NULL);
    tapped_len = log_tap_end(&tapped);
}

static void test_tap_keeps_the_lines_instead_of_printing(void **state)
{
    (void)state;
    char out[4096];
    assert_int_equal(stderr_of(tap_two_threads, out, sizeof out), 0);
    assert_int_equal(tapped_len, strlen(tapped));
    assert_non_null(strstr(tapped, "ERROR"));
    assert_non_null(strstr(tapped, "first 1\n"));
    assert_non_null(strstr(tapped, "from another thread\n"));
    assert_null(strstr(tapped, "below the level"));
}

static void log_after_a_tap(void)
{
    log_tap_begin();
    tapped_len = log_tap_end(&tapped);
    LOG_ERROR("NRT", "printed again");
}

static void test_after_the_tap_lines_are_printed_and_a_new_tap_is_empty(void **state)
{
    (void)state;
    char out[4096];
    stderr_of(tap_two_threads, out, sizeof out);
    assert_true(stderr_of(log_after_a_tap, out, sizeof out) > 0);
    assert_non_null(strstr(out, "printed again\n"));
    assert_int_equal(tapped_len, 0);
    assert_string_equal(tapped, "");
}

static char sunk[4096];

static void sink(int level, const char *line, size_t len)
{
    (void)level;
    strncat(sunk, line, len < sizeof sunk - strlen(sunk) - 1 ? len : sizeof sunk - strlen(sunk) - 1);
}

static void test_lines_for_a_sink_go_there(void **state)
{
    (void)state;
    log_configure(&(struct log_config){LOG_LVL_ERROR, NULL, NULL, sink});
    log_tap_begin();
    LOG_ERROR("NRT", "to the sink");
    const char *text;
    size_t n = log_tap_end(&text);
    log_configure(&(struct log_config){LOG_LVL_ERROR, NULL, NULL, NULL});
    assert_int_equal(n, 0);
    assert_non_null(strstr(sunk, "to the sink\n"));
}

int main(void)
{
    log_configure(&(struct log_config){LOG_LVL_ERROR, NULL, NULL, NULL});
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tap_keeps_the_lines_instead_of_printing),
        cmocka_unit_test(test_after_the_tap_lines_are_printed_and_a_new_tap_is_empty),
        cmocka_unit_test(test_lines_for_a_sink_go_there),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
