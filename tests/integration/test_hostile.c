/*
 * test_hostile.c: the API hostility test. Every function of the vendor ABI
 * (the ABI facts, through gen_hostile.py) is called with NULL pointers and
 * with zero and all-ones numbers: before nrt_init, with the runtime open,
 * and after nrt_close. Nothing may crash or hang, and every call that
 * returns a status other than NRT_SUCCESS must print exactly one log line
 * (NEURON_RT_LOG_LEVEL=WARN, stderr captured per call). A function being
 * written by someone else may still fail as a stub: it is held to the same
 * rule, so the test keeps holding when it becomes real.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hostile.h"

static char h_log[16384];
unsigned char hostile_scratch[65536];

/* Run one call with stderr captured; the number of lines it printed. */
static int h_run(const struct hostile_call *c, int *status)
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
    memset(hostile_scratch, 0, sizeof hostile_scratch);
    if (getenv("HOSTILE_TRACE") != NULL) /* which call, should one crash */
        dprintf(saved, "hostile: %s variant %d\n", c->name, c->variant);
    *status = c->call();
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    size_t n = fread(h_log, 1, sizeof h_log - 1, tmp);
    h_log[n] = '\0';
    fclose(tmp);
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += h_log[i] == '\n';
    return lines;
}

/* Every call of the table in the current phase; failures listed at once. */
static void h_phase(const char *phase, int *failures)
{
    size_t refused = 0;
    for (size_t i = 0; i < hostile_ncalls; i++) {
        const struct hostile_call *c = &hostile_calls[i];
        int st = 0;
        int lines = h_run(c, &st);
        if (st == HOSTILE_NOT_STATUS || st == NRT_SUCCESS)
            continue;
        refused++;
        if (lines != 1) {
            fprintf(stderr, "%s: %s (variant %d): status %d with %d log lines:\n%s", phase,
                    c->name, c->variant, st, lines, h_log);
            (*failures)++;
        }
    }
    printf("%s: %zu calls, %zu refused\n", phase, hostile_ncalls, refused);
    assert_true(refused > hostile_ncalls / 2); /* the calls did run */
}

static void test_hostile(void **state)
{
    (void)state;
    int failures = 0;
    setenv("NEURON_RT_LOG_LEVEL", "WARN", 1);
    h_phase("before nrt_init", &failures);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    h_phase("runtime open", &failures);
    nrt_close();
    h_phase("after nrt_close", &failures);
    assert_int_equal(failures, 0);
}

/* The documented order: NRT_UNINITIALIZED before the arguments. */
static void test_order(void **state)
{
    (void)state;
    nrt_model_t *m = NULL;
    assert_int_equal(nrt_load(NULL, 0, 0, -1, &m), NRT_UNINITIALIZED);
    assert_int_equal(nrt_load(NULL, 0, 0, -1, NULL), NRT_UNINITIALIZED);
}

int main(void)
{
    unsetenv("TRNEMU_INSTANCE");
    unsetenv("NEURON_RT_VISIBLE_CORES");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
