/* SPDX-License-Identifier: Apache-2.0 */
/* db_dir.h: a store's place for a test: a fresh folder under $PFI_TEST_TMP (else /tmp) and the
 * path of t.db in it, removed afterwards with the files SQLite keeps beside a database (-wal,
 * -shm, -journal).  Header only (static inline), for the store's tests. */
#ifndef PFI_TESTS_SUPPORT_DB_DIR_H
#define PFI_TESTS_SUPPORT_DB_DIR_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct pfi_test_db_dir {
    char dir[512];
    char db[600];
} pfi_test_db_dir;

/* A new folder named NAME-XXXXXX: 0, or -1 when it cannot be made. */
static inline int pfi_test_db_dir_make(pfi_test_db_dir *d, const char *name)
{
    const char *tmp = getenv("PFI_TEST_TMP");
    snprintf(d->dir, sizeof d->dir, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    if (!mkdtemp(d->dir))
        return -1;
    snprintf(d->db, sizeof d->db, "%s/t.db", d->dir);
    return 0;
}

static inline void pfi_test_db_dir_remove(const pfi_test_db_dir *d)
{
    static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        char p[700];
        snprintf(p, sizeof p, "%s%s", d->db, sfx[i]);
        unlink(p);
    }
    rmdir(d->dir);
}

/* cmocka fixture halves: *state becomes a made pfi_test_db_dir (setup answers -1 when it cannot). */
static inline int pfi_test_db_dir_setup(void **state, const char *name)
{
    pfi_test_db_dir *d = calloc(1, sizeof *d);
    if (!d || pfi_test_db_dir_make(d, name) != 0) {
        free(d);
        return -1;
    }
    *state = d;
    return 0;
}

static inline int pfi_test_db_dir_teardown(void **state)
{
    pfi_test_db_dir_remove(*state);
    free(*state);
    return 0;
}

#endif
