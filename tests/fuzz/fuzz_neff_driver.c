/*
 * fuzz_neff_driver.c: runs the fuzz entry (fuzz_neff.c) over every file of
 * the directories (or files) named on the command line, in name order, so
 * the seed corpus is exercised by every build without clang/libFuzzer.
 * Exit status 0 when every input was processed (a crash fails the test).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        fprintf(stderr, "fuzz-neff-driver: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    size_t r;
    while (buf != NULL && (r = fread(buf + len, 1, cap - len, fp)) > 0) {
        len += r;
        if (len == cap) {
            uint8_t *p = realloc(buf, cap * 2);
            if (p == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = p;
            cap *= 2;
        }
    }
    fclose(fp);
    if (buf == NULL)
        return -1;
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "fuzz-neff-driver: cannot open %s\n", dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char **p = realloc(names, (n + 1) * sizeof *p);
        if (p == NULL)
            break;
        names = p;
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, name_cmp);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (run_file(path) != 0)
            rc = -1;
        else
            (*count)++;
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    int rc = 0, count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "fuzz-neff-driver: no such path %s\n", argv[i]);
            rc = 1;
        } else if (S_ISDIR(st.st_mode)) {
            rc |= run_dir(argv[i], &count) != 0;
        } else {
            rc |= run_file(argv[i]) != 0;
            count += rc == 0;
        }
    }
    printf("fuzz-neff-driver: %d inputs run\n", count);
    return rc != 0 || count == 0;
}
