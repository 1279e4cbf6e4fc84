/*
 * it_dir.h: the shared-memory directory as the integration tests look at
 * it (what trnemu leaves there).
 */
#ifndef TRNEMU_TESTS_INTEGRATION_IT_DIR_H
#define TRNEMU_TESTS_INTEGRATION_IT_DIR_H

#include <dirent.h>

#include "it_common.h"

/* How many entries dir holds besides "." and ".." and the one named skip
 * (NULL: none skipped); the test fails when dir cannot be opened. */
static inline int it_dir_entries(const char *dir, const char *skip)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
             (skip == NULL || strcmp(e->d_name, skip) != 0);
    closedir(d);
    return n;
}

#endif
