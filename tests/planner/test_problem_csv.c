/* CSV problems: every kind of bad input gives one message naming the file and line. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "planner.h"

static char path[64];

static void write_file(const char *text)
{
    snprintf(path, sizeof path, "/tmp/ws_problem_%d.csv", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
}

static void cleanup(void) { unlink(path); }

static void expect_error(const char *text, const char *where, const char *what)
{
    struct ws_problem pr;
    char err[512], want[128];
    write_file(text);
    cr_expect_eq(ws_problem_read(path, &pr, err, sizeof err), -1, "accepted: %s", text);
    snprintf(want, sizeof want, "%s%s", path, where);
    cr_expect(strncmp(err, want, strlen(want)) == 0, "'%s' does not start with '%s'", err, want);
    cr_expect(strstr(err, what) != NULL, "'%s' does not mention '%s'", err, what);
    cr_expect_null(strchr(err, '\n'), "one line");
    cr_expect_null(pr.buffers);
}

TestSuite(problem_csv, .fini = cleanup);

Test(problem_csv, reads_rows_and_optional_alignment)
{
    struct ws_problem pr;
    char err[512];
    write_file("id,lower,upper,size\r\n0,2,6,8\r\n7, 3 ,8,8\r\n\r\n");
    cr_assert_eq(ws_problem_read(path, &pr, err, sizeof err), 0, "%s", err);
    cr_expect_eq(pr.n, 2);
    cr_expect_eq(pr.has_alignment, 0);
    cr_expect_eq(pr.buffers[1].id, 7);
    cr_expect_eq(pr.buffers[1].lower, 3);
    cr_expect_eq(pr.buffers[1].upper, 8);
    cr_expect_eq(pr.buffers[1].size, 8);
    ws_problem_free(&pr);
    write_file("id,lower,upper,size,alignment\n1,0,1,10,64\n");
    cr_assert_eq(ws_problem_read(path, &pr, err, sizeof err), 0, "%s", err);
    cr_expect_eq(pr.has_alignment, 1);
    cr_expect_eq(pr.buffers[0].alignment, 64);
    ws_problem_free(&pr);
}

Test(problem_csv, writes_the_offset_column)
{
    struct ws_problem pr;
    char err[512], out[80], line[128];
    write_file("id,lower,upper,size,alignment\n1,0,2,10,64\n2,1,3,5,0\n");
    cr_assert_eq(ws_problem_read(path, &pr, err, sizeof err), 0, "%s", err);
    pr.buffers[0].offset = 0;
    pr.buffers[1].offset = 64;
    snprintf(out, sizeof out, "%s.out", path);
    FILE *w = fopen(out, "w");
    cr_assert(w);
    cr_assert_eq(ws_problem_write(w, &pr), 0);
    cr_assert_eq(fclose(w), 0);
    FILE *f = fopen(out, "r");
    cr_assert(f);
    cr_expect_str_eq(fgets(line, sizeof line, f), "id,lower,upper,size,alignment,offset\n");
    cr_expect_str_eq(fgets(line, sizeof line, f), "1,0,2,10,64,0\n");
    cr_expect_str_eq(fgets(line, sizeof line, f), "2,1,3,5,0,64\n");
    fclose(f);
    unlink(out);
    ws_problem_free(&pr);
}

Test(problem_csv, missing_file)
{
    struct ws_problem pr;
    char err[512];
    cr_expect_eq(ws_problem_read("/nonexistent/x.csv", &pr, err, sizeof err), -1);
    cr_expect(strstr(err, "/nonexistent/x.csv: ") == err, "%s", err);
}

Test(problem_csv, bad_header)
{
    expect_error("id,start,end,size\n0,1,2,3\n", ":1:", "header");
    expect_error("", "", "empty file");
    expect_error("id,lower,upper,size\n", "", "no buffers");
}

Test(problem_csv, missing_or_extra_columns)
{
    expect_error("id,lower,upper,size\n0,1,2,3\n1,1,2\n", ":3:", "expected 4 columns, found 3");
    expect_error("id,lower,upper,size\n0,1,2,3,4\n", ":2:", "found 5");
}

Test(problem_csv, non_numeric_and_negative_values)
{
    expect_error("id,lower,upper,size\n0,1,2,abc\n", ":2:", "size: not a non-negative integer");
    expect_error("id,lower,upper,size\n0,1,2,\n", ":2:", "size: empty value");
    expect_error("id,lower,upper,size\n0,-1,2,3\n", ":2:", "lower: negative value");
    expect_error("id,lower,upper,size\n0,1,2,1.5\n", ":2:", "size: not a non-negative");
    expect_error("id,lower,upper,size\n0,1,99999999999999999999,3\n", ":2:", "upper: value too large");
}

Test(problem_csv, lower_above_upper)
{
    expect_error("id,lower,upper,size\n0,1,2,3\n1,6,5,3\n", ":3:", "lower must not be above upper");
}

Test(problem_csv, empty_lifetimes_zero_sizes_and_alignment_zero_are_accepted)
{
    struct ws_problem pr;
    char err[512];
    write_file("id,lower,upper,size,alignment\n0,5,5,3,0\n1,0,1,0,0\n2,0,4,7,0\n");
    cr_assert_eq(ws_problem_read(path, &pr, err, sizeof err), 0, "%s", err);
    cr_expect_eq(pr.n, 3);
    cr_expect_eq(pr.buffers[0].lower, 5);
    cr_expect_eq(pr.buffers[0].upper, 5);
    cr_expect_eq(pr.buffers[1].size, 0);
    cr_expect_eq(pr.buffers[2].alignment, 0);
    ws_problem_free(&pr);
}

Test(problem_csv, byte_order_mark_and_quoted_fields)
{
    struct ws_problem pr;
    char err[512];
    write_file("\xef\xbb\xbf\"id\",\"lower\",\"upper\",\"size\"\r\n0,2,6,8\r\n\"1\",3,8,\"9\"\r\n");
    cr_assert_eq(ws_problem_read(path, &pr, err, sizeof err), 0, "%s", err);
    cr_expect_eq(pr.n, 2);
    cr_expect_eq(pr.buffers[1].id, 1);
    cr_expect_eq(pr.buffers[1].size, 9);
    ws_problem_free(&pr);
    /* A mark anywhere but at the start is not a header. */
    expect_error("id,lower,upper,\xef\xbb\xbfsize\n0,1,2,3\n", ":1:", "header");
}

Test(problem_csv, duplicate_ids)
{
    expect_error("id,lower,upper,size\n4,1,2,3\n5,1,2,3\n4,2,3,3\n", ":4:", "duplicate id 4 (first on line 2)");
}

Test(problem_csv, sizes_whose_sum_overflows_are_read)
{
    /* The planner decides whether the peak fits; the reader only needs each value to fit. */
    struct ws_problem pr;
    char err[512];
    write_file("id,lower,upper,size\n0,1,2,18446744073709551615\n1,3,4,1\n");
    cr_assert_eq(ws_problem_read(path, &pr, err, sizeof err), 0, "%s", err);
    cr_expect_eq(pr.buffers[0].size, UINT64_MAX);
    ws_problem_free(&pr);
}
