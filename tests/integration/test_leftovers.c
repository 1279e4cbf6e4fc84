/*
 * test_leftovers.c: nothing stays in the shared-memory directory. The
 * instance of a process killed with SIGKILL beside ours is removed when
 * ours closes; a process at its file descriptor limit still removes its
 * own instance at nrt_close. Each case runs in a private TRNEMU_SHM_DIR.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "it_common.h"
#include "it_dir.h"

static char shm_dir[] = "/tmp/trnemu-it-leftovers-XXXXXX";

/* Entries of the shared-memory directory. */
static int shm_entries(void)
{
    return it_dir_entries(shm_dir, NULL);
}

static int setup(void **state)
{
    (void)state;
    it_env_clear();
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    setenv("TRNEMU_SHM_DIR", shm_dir, 1);
    setenv("TRNEMU_INSTANCE_NAME", "leftovers-self", 1);
    return 0;
}

/* A neighbour instance whose only process is killed: gone at our close. */
static void test_killed_neighbour(void **state)
{
    (void)state;
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(ready[0]);
        setenv("TRNEMU_INSTANCE_NAME", "leftovers-killed", 1);
        char ok = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") == NRT_SUCCESS ? 'y' : 'n';
        if (write(ready[1], &ok, 1) != 1)
            _exit(2);
        pause();
        _exit(0);
    }
    close(ready[1]);
    char ok = 0;
    assert_int_equal(read(ready[0], &ok, 1), 1);
    close(ready[0]);
    assert_int_equal(ok, 'y');
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    assert_int_equal(shm_entries(), 2);  /* ours and the neighbour's */
    kill(pid, SIGKILL);
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    nrt_close();
    assert_int_equal(shm_entries(), 0);
}

/* At the descriptor limit, nrt_close still removes the instance. */
static void test_fd_limit(void **state)
{
    (void)state;
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    assert_int_equal(shm_entries(), 1);
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 256;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fds[256], n = 0;
    while (n < 256 && (fds[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
        n++;
    assert_true(n < 256 && errno == EMFILE);  /* every descriptor taken */
    nrt_close();
    int left = shm_entries();
    for (int i = 0; i < n; i++)
        close(fds[i]);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(left, 0);
}

int main(void)
{
    assert_non_null(mkdtemp(shm_dir));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_killed_neighbour, setup),
        cmocka_unit_test_setup(test_fd_limit, setup),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(shm_dir);
    return rc;
}
