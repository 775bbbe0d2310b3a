/* SPDX-License-Identifier: Apache-2.0 */
/* jobs_file.c: the jobs file of `pfi allocate` (jobs.h). */
#include "store/jobs.h"

#include <errno.h>
#include <string.h>

#include <jansson.h>

#include "store/codec.h"

int pfi_jobs_file_load(const char *path, int per_gpu, pfi_alloc_set *s, pfi_err *err)
{
    memset(s, 0, sizeof *s);
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (!doc && je.line < 1) /* not opened or read: jansson has no line to point at */
        return pfi_err_set(err, errno == ENOENT ? PFI_ENOENT : PFI_EIO, "%s", je.text);
    if (!doc)
        return pfi_err_set(err, PFI_EINVAL, "%s:%d: %s", path, je.line, je.text);
    json_t *arr = json_is_array(doc) ? doc : json_object_get(doc, "jobs");
    int rc = PFI_OK;
    if (!json_is_array(arr) || json_array_size(arr) == 0) {
        rc = pfi_err_set(err, PFI_EINVAL, "%s: no \"jobs\" array (docs/jobs-format.md)", path);
    } else {
        int n = (int)json_array_size(arr);
        if (pfi_alloc_set_init(s, n, per_gpu) != PFI_OK)
            rc = pfi_err_set(err, PFI_ENOMEM, "out of memory for %d jobs", n);
        for (int j = 0; rc == PFI_OK && j < n; j++)
            rc = pfi_job_json_decode(json_array_get(arr, (size_t)j), path, j, s, j, err);
    }
    json_decref(doc);
    return rc;
}
