/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of pfi's own table of NVML return codes (hw/nvml/nvml_errors.h): every code the NVML
 * reference lists has a name, a sentence and the pfi_code callers act on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "hw/nvml/nvml_errors.h"

static void test_every_code_named(void **state)
{
    for (int r = 0; r <= 29; r++) {
        const char *name = pfi_nvml_return_name((nvmlReturn_t)r);
        assert_non_null(strstr(name, "NVML_"));
        assert_true(strlen(pfi_nvml_return_text((nvmlReturn_t)r)) > 5);
        assert_non_null(pfi_nvml_return_hint((nvmlReturn_t)r));
    }
    assert_string_equal(pfi_nvml_return_name(NVML_ERROR_UNKNOWN), "NVML_ERROR_UNKNOWN");
    /* A code newer than this table still gets a readable answer. */
    assert_string_equal(pfi_nvml_return_name((nvmlReturn_t)4242), "unknown NVML return code");
    assert_int_equal(pfi_nvml_code((nvmlReturn_t)4242), PFI_EIO);
}

static void test_codes_callers_act_on(void **state)
{
    assert_int_equal(pfi_nvml_code(NVML_SUCCESS), PFI_OK);
    assert_int_equal(pfi_nvml_code(NVML_ERROR_GPU_IS_LOST), PFI_ELOST);
    assert_int_equal(pfi_nvml_code(NVML_ERROR_NO_PERMISSION), PFI_EPERM);
    assert_int_equal(pfi_nvml_code(NVML_ERROR_NOT_SUPPORTED), PFI_ENOTSUP);
    assert_int_equal(pfi_nvml_code(NVML_ERROR_INVALID_ARGUMENT), PFI_EINVAL);
    assert_int_equal(pfi_nvml_code(NVML_ERROR_DRIVER_NOT_LOADED), PFI_ENODRIVER);
    assert_int_equal(pfi_nvml_code(NVML_ERROR_LIB_RM_VERSION_MISMATCH), PFI_ENODRIVER);
    assert_int_equal(pfi_nvml_code(NVML_ERROR_TIMEOUT), PFI_ETIMEOUT);
    assert_non_null(strstr(pfi_nvml_return_hint(NVML_ERROR_NO_PERMISSION), "root"));
    assert_non_null(strstr(pfi_nvml_return_hint(NVML_ERROR_GPU_IS_LOST), "reset"));
}

static void test_unavailable_vs_failure(void **state)
{
    assert_true(pfi_nvml_is_unavailable(NVML_ERROR_NOT_SUPPORTED));
    assert_true(pfi_nvml_is_unavailable(NVML_ERROR_FUNCTION_NOT_FOUND));
    assert_true(pfi_nvml_is_unavailable(NVML_ERROR_NO_PERMISSION));
    assert_false(pfi_nvml_is_unavailable(NVML_ERROR_GPU_IS_LOST));
    assert_false(pfi_nvml_is_unavailable(NVML_ERROR_INVALID_ARGUMENT));
    assert_false(pfi_nvml_is_unavailable(NVML_ERROR_UNKNOWN));
    assert_false(pfi_nvml_is_unavailable(NVML_SUCCESS));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_code_named),
        cmocka_unit_test(test_codes_callers_act_on),
        cmocka_unit_test(test_unavailable_vs_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
