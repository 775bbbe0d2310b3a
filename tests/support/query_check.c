/* SPDX-License-Identifier: Apache-2.0 */
/* query_check.c: see query_check.h. */
#include "query_check.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/http.h"

long pfi_test_ask(int port, const char *method, const char *path, const char *token,
                  const char *json, char **reply)
{
    char url[1024];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    pfi_http_req r;
    memset(&r, 0, sizeof r);
    r.url = url;
    r.method = method;
    r.body = json;
    pfi_http_many(NULL, &r, 1, token, 10.0, 1);
    if (reply)
        *reply = r.reply;
    else
        free(r.reply);
    return r.status;
}

/* One request with query args, wanted 400 with `names` in its body; 0 when so, else 1. */
static int refused(int port, const char *method, const char *path, const char *args,
                   const char *names, const char *token, const char *json)
{
    char full[512];
    snprintf(full, sizeof full, "%s?%s", path, args);
    char *reply = NULL;
    long st = pfi_test_ask(port, method, full, token, json, &reply);
    int ok = st == 400 && reply && strstr(reply, names);
    if (!ok)
        fprintf(stderr, "%s %s: status %ld, expected 400 naming '%s': %s\n", method, full, st,
                names, reply ? reply : "(no body)");
    free(reply);
    return !ok;
}

int pfi_test_query_refused(int port, const char *method, const char *path, const char *takes,
                           const char *token, const char *json)
{
    /* Arguments wrong whatever the route takes: "%s" is the parameter it takes. */
    static const char *const unknown[][2] = {
        {"%ss=5", "%ss"},          {"x=1", "x"},       {"x", "x"},
        {"x=", "x"},               {"_=1733300000", "_"}, {"since_=5", "since_"},
        {"limit%%20=5", "limit "}, {"=5", "no name"},
    };
    /* Wrong for a route that takes %s: the parameter in capitals, unknown ones beside it,
     * it twice, and values that are no number in its range. */
    static const char *const bad[][2] = {
        {"%s=5&x=1", "x"},         {"x=1&%s=5", "x"},
        {"%s=5&%s=5", "%s"},       {"%s=5&%s=6", "%s"}, {"%s=", "%s"},
        {"%s", "%s"},              {"%s=-1", "%s"},     {"%s=abc", "%s"},
        {"%s=nan", "%s"},          {"%s=1e3", "%s"},    {"%s=5.0", "%s"},
        {"%s=99999999999999999999", "%s"}, {"%s=%%205", "%s"}, {"%s=5%%00", "%s"},
        {"%s=%%2B5", "%s"},        {"%s=+5", "%s"},     {"%s=-0", "%s"},
    };
    int wrong = 0;
    char args[256], names[64];
    const char *t = takes ? takes : "since";
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++) {
        snprintf(args, sizeof args, unknown[i][0], t);
        snprintf(names, sizeof names, unknown[i][1], t);
        wrong += refused(port, method, path, args, names, token, json);
    }
    /* A route that takes nothing refuses even the parameters other routes take. */
    if (!takes) {
        wrong += refused(port, method, path, "since=5", "since", token, json);
        wrong += refused(port, method, path, "limit=5", "limit", token, json);
        return wrong;
    }
    char upper[32]; /* names are matched as sent: "SINCE" is not "since" */
    snprintf(upper, sizeof upper, "%s", t);
    for (char *c = upper; *c; c++)
        *c = (char)toupper((unsigned char)*c);
    snprintf(args, sizeof args, "%s=5", upper);
    wrong += refused(port, method, path, args, upper, token, json);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(args, sizeof args, bad[i][0], t, t);
        snprintf(names, sizeof names, bad[i][1], t);
        wrong += refused(port, method, path, args, names, token, json);
    }
    return wrong;
}
