/*
 * test_units.c - the unit formatter and the text sanitizer of src/util (cuscope/units.h,
 * cuscope/utf8.h): rounding at the unit boundaries, signs, unknown values, thousands separators,
 * the rules' title style, and what becomes of control characters and invalid UTF-8.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/trace.h"
#include "cuscope/units.h"
#include "cuscope/utf8.h"
#include "testutil.h"

static const char *dur(int64_t ns)
{
	static char buf[CS_FMT_MAX];

	return cs_fmt_duration(buf, sizeof(buf), ns);
}

static const char *bytes(int64_t b)
{
	static char buf[CS_FMT_MAX];

	return cs_fmt_bytes(buf, sizeof(buf), b);
}

static const char *value(int unit, double v, int sign)
{
	static char buf[CS_FMT_MAX];

	return cs_fmt_value(buf, sizeof(buf), unit, v, sign);
}

START_TEST(test_duration)
{
	ck_assert_str_eq(dur(0), "0 ns");
	ck_assert_str_eq(dur(999), "999 ns");
	ck_assert_str_eq(dur(1000), "1.00 us");
	ck_assert_str_eq(dur(12345), "12.3 us");
	ck_assert_str_eq(dur(740000), "740 us");
	ck_assert_str_eq(dur(999499), "999 us");
	ck_assert_str_eq(dur(999500), "1.00 ms"); /* rounding carries into the next unit */
	ck_assert_str_eq(dur(4560000), "4.56 ms");
	ck_assert_str_eq(dur(1230000000), "1.23 s");
	ck_assert_str_eq(dur(INT64_C(5000000000000)), "5000 s");
	ck_assert_str_eq(dur(-12345), "-12.3 us");
	ck_assert_str_eq(dur(INT64_MIN + 1), "-9223372037 s");
	ck_assert_str_eq(dur(CS_TS_UNKNOWN), "-");
}
END_TEST

START_TEST(test_bytes_count)
{
	char buf[CS_FMT_MAX];

	ck_assert_str_eq(bytes(0), "0 B");
	ck_assert_str_eq(bytes(1023), "1023 B");
	ck_assert_str_eq(bytes(1024), "1.0 KiB");
	ck_assert_str_eq(bytes(1536 * 1024), "1.5 MiB");
	ck_assert_str_eq(bytes(INT64_C(1024) * 1024 * 1024 - 1), "1.0 GiB");
	ck_assert_str_eq(bytes(INT64_MAX), "8.0 EiB");
	ck_assert_str_eq(bytes(-1), "-");
	ck_assert_str_eq(cs_fmt_count(buf, sizeof(buf), 0), "0");
	ck_assert_str_eq(cs_fmt_count(buf, sizeof(buf), 1234567), "1,234,567");
	ck_assert_str_eq(cs_fmt_count(buf, sizeof(buf), -1000), "-1,000");
	ck_assert_str_eq(cs_fmt_count(buf, sizeof(buf), INT64_MIN), "-9,223,372,036,854,775,808");
}
END_TEST

START_TEST(test_value)
{
	ck_assert_str_eq(value(CS_UNIT_NS, 18.06e6, 0), "18.06 ms");
	ck_assert_str_eq(value(CS_UNIT_NS, 1.2e6, 1), "+1.20 ms");
	ck_assert_str_eq(value(CS_UNIT_NS, -512, 1), "-512 ns");
	ck_assert_str_eq(value(CS_UNIT_NS, 0, 1), "0 ns"); /* no sign on nothing */
	ck_assert_str_eq(value(CS_UNIT_BYTES, 1.5 * 1024 * 1024, 0), "1.50 MiB");
	ck_assert_str_eq(value(CS_UNIT_COUNT, 3, 0), "3");
	ck_assert_str_eq(value(CS_UNIT_COUNT, 0.25, 0), "0.25");
	ck_assert_str_eq(value(CS_UNIT_COUNT, -0.001, 1), "0");
	ck_assert_str_eq(value(CS_UNIT_SHARE, 0.625, 0), "62.5%");
	ck_assert_str_eq(value(CS_UNIT_SHARE, 0.05, 1), "+5.0 pt");
}
END_TEST

START_TEST(test_title_units)
{
	char buf[CS_FMT_MAX];

	ck_assert_str_eq(cs_fmt_duration_title(buf, sizeof(buf), -5), "0 ns");
	ck_assert_str_eq(cs_fmt_duration_title(buf, sizeof(buf), 850), "850 ns");
	ck_assert_str_eq(cs_fmt_duration_title(buf, sizeof(buf), 12345), "12.3 us");
	ck_assert_str_eq(cs_fmt_duration_title(buf, sizeof(buf), 99999), "100.0 us");
	ck_assert_str_eq(cs_fmt_duration_title(buf, sizeof(buf), 740000), "740 us");
	ck_assert_str_eq(cs_fmt_duration_title(buf, sizeof(buf), 15000000), "15.00 ms");
	ck_assert_str_eq(cs_fmt_duration_title(buf, sizeof(buf), 135000000), "135 ms");
	ck_assert_str_eq(cs_fmt_duration_title(buf, sizeof(buf), 1500000000), "1.50 s");
	ck_assert_str_eq(cs_fmt_bytes_title(buf, sizeof(buf), 1023), "1023 B");
	ck_assert_str_eq(cs_fmt_bytes_title(buf, sizeof(buf), 4096), "4.0 KiB");
	ck_assert_str_eq(cs_fmt_bytes_title(buf, sizeof(buf), INT64_C(13) << 30), "13 GiB");
	ck_assert_str_eq(cs_fmt_bytes_title(buf, sizeof(buf), INT64_C(1) << 50), "1024 TiB");
}
END_TEST

START_TEST(test_text_clean)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"at::native::reduce_kernel<512, 1>", "at::native::reduce_kernel<512, 1>"},
		{"red\033[31mtext", "red^[[31mtext"}, /* ESC */
		{"a\tb\nc\x7f\x01", "a^Ib^Jc^?^A"},	/* C0 and DEL */
		{"t\033]0;title\007", "t^[]0;title^G"},	/* the title (OSC ... BEL) */
		{"x\xc2\x9b"
		 "1m\xc2\x85",
		 "x<U+009B>1m<U+0085>"},				  /* C1 (CSI, NEL) */
		{"caf\xc3\xa9 \xe2\x80\xa6", "caf\xc3\xa9 \xe2\x80\xa6"}, /* kept */
		{"bad\xff", "bad" CS_UTF8_REPLACEMENT}, /* invalid byte repaired */
		{"", ""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *c = cs_text_clean(cases[i].in);

		ck_assert_ptr_nonnull(c);
		ck_assert_msg(!strcmp(c, cases[i].out), "case %zu: '%s'", i, c);
		free(c);
	}
	{
		char *c = cs_text_clean(NULL);

		ck_assert_str_eq(c, "");
		free(c);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("units");
	TCase *tc = tcase_create("units");

	tcase_add_test(tc, test_duration);
	tcase_add_test(tc, test_bytes_count);
	tcase_add_test(tc, test_value);
	tcase_add_test(tc, test_title_units);
	tcase_add_test(tc, test_text_clean);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
