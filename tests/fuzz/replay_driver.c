/* Replays a fuzz target's committed corpus without libFuzzer, so every build
 * (plain, ASan+UBSan, TSan) runs the inputs the fuzzer found interesting as a
 * regression test. Arguments are files or directories of inputs. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    uint8_t *buf = NULL; size_t len = 0, cap = 0, n;
    uint8_t chunk[65536];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n > cap) {
            cap = (len + n) * 2;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) { fclose(f); free(buf); exit(1); }
            buf = nb;
        }
        memcpy(buf + len, chunk, n); len += n;
    }
    fclose(f);
    /* Hand the target an exact-size heap copy so ASan sees any over-read. */
    uint8_t *exact = malloc(len ? len : 1);
    if (len) memcpy(exact, buf, len);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact); free(buf);
    return 1;
}

static long replay_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return 0; /* an empty corpus is not an error */
    if (!S_ISDIR(st.st_mode)) return replay_file(path);
    DIR *d = opendir(path);
    if (!d) return 0;
    long count = 0; struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        count += replay_path(sub);
    }
    closedir(d);
    return count;
}

int main(int argc, char **argv)
{
    long count = 0;
    for (int i = 1; i < argc; i++) count += replay_path(argv[i]);
    /* An empty input always runs too: the smallest case must not crash. */
    LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
    printf("%ld inputs replayed\n", count);
    return 0;
}
