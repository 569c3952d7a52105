/*
 * test_demangle.c - cs_demangle and cs_demangle_short (src/util/demangle.c) on the kernel names of
 * a committed sample trace: mangled PyTorch names demangle, names that are not mangled (cuBLAS's
 * nvjet_*, names CUPTI gave already demangled) pass through, a malformed mangled name is kept as
 * it is, and threads share the cache.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/demangle.h"
#include "cuscope/table.h"
#include "cuscope/trace.h"

#include "testutil.h"

/* A kernel of the committed cuda-core-scan trace (a PyTorch reduction). */
static const char reduce_mangled[] = "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_"
				     "7MeanOpsIffffEEjfLi4ELi4EEEEEvT1_";

/* Every kernel name of samples/rules/traces/cuda-core-scan-bad.db, once; *n set. */
static char **trace_names(int *n)
{
	char *path = tu_source_file("samples/rules/traces/cuda-core-scan-bad.db");
	cs_trace *t = NULL;
	cs_error err = {0, ""};
	cs_iter *it;
	cs_event ev;
	char **v = NULL;
	int rc;

	*n = 0;
	ck_assert_msg(cs_trace_open(path, &t, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(cs_iter_open(t, CS_EV_KERNEL, NULL, &it, &err), 0);
	while ((rc = cs_iter_next(it, &ev)) > 0) {
		int seen = 0;

		for (int i = 0; i < *n && !seen; i++)
			seen = !strcmp(v[i], ev.u.kernel.name);
		if (seen)
			continue;
		v = realloc(v, (size_t)(*n + 1) * sizeof(*v));
		ck_assert_ptr_nonnull(v);
		v[(*n)++] = strdup(ev.u.kernel.name);
	}
	ck_assert_int_eq(rc, 0);
	cs_iter_close(it);
	cs_trace_close(t);
	free(path);
	return v;
}

/* The mangled names of a real trace demangle; the others come back as the same pointer. */
START_TEST(test_trace_names)
{
	int n, mangled = 0, plain = 0, reduce = 0;
	char **v = trace_names(&n);

	ck_assert_int_gt(n, 10);
	for (int i = 0; i < n; i++) {
		const char *full = cs_demangle(v[i]), *shrt = cs_demangle_short(v[i]);

		if (!strncmp(v[i], "_Z", 2)) {
			mangled++;
			ck_assert_msg(strncmp(full, "_Z", 2) && strstr(full, "::"), "%s -> %s",
				      v[i], full);
			/* no return type, no parameter list */
			ck_assert_msg(shrt[0] && strncmp(shrt, "void ", 5) &&
					      shrt[strlen(shrt) - 1] != ')',
				      "short of %s: %s", v[i], shrt);
			/* cached: the same string each time */
			ck_assert_ptr_eq(cs_demangle(v[i]), full);
			ck_assert_ptr_eq(cs_demangle_short(v[i]), shrt);
		} else {
			plain++;
			ck_assert_ptr_eq(full, v[i]);
			if (!strncmp(v[i], "nvjet_", 6))
				ck_assert_ptr_eq(shrt, v[i]);
		}
		reduce += !strcmp(v[i], reduce_mangled);
		free(v[i]);
	}
	free(v);
	ck_assert_int_gt(mangled, 10);
	ck_assert_int_gt(plain, 0); /* nvjet_* */
	ck_assert_int_eq(reduce, 1);
}
END_TEST

START_TEST(test_reduce_kernel)
{
	ck_assert_str_eq(
		cs_demangle(reduce_mangled),
		"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
		"at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4> "
		">(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, "
		"float>, unsigned int, float, 4, 4>)");
	ck_assert_str_eq(cs_demangle_short(reduce_mangled),
			 "at::native::reduce_kernel<512, 1, ReduceOp<...>>");
	ck_assert_str_eq(cs_demangle("_Z6cs_addPfPKfi"), "cs_add(float*, float const*, int)");
	ck_assert_str_eq(cs_demangle_short("_Z6cs_addPfPKfi"), "cs_add");
}
END_TEST

/* Names that are not mangled: unchanged by cs_demangle; a demangled one is shortened for tables. */
START_TEST(test_not_mangled)
{
	static const char cupti[] = "void at::native::vectorized_elementwise_kernel<4, "
				    "at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, "
				    "at::native::FillFunctor<float>, std::array<char*, 1ul>)";
	static const char nvjet[] = "nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT";

	ck_assert_ptr_eq(cs_demangle(cupti), cupti);
	ck_assert_str_eq(cs_demangle_short(cupti),
			 "at::native::vectorized_elementwise_kernel<4, FillFunctor<float>, "
			 "array<char*, 1ul>>");
	ck_assert_ptr_eq(cs_demangle(nvjet), nvjet);
	ck_assert_ptr_eq(cs_demangle_short(nvjet), nvjet);
	ck_assert_ptr_null(cs_demangle(NULL));
	ck_assert_ptr_null(cs_demangle_short(NULL));
	ck_assert_str_eq(cs_demangle(""), "");
}
END_TEST

/* A malformed mangled name (cut short, or garbage after _Z) is shown raw, without a crash. */
START_TEST(test_malformed)
{
	static const char *const bad[] = {
		"_Z",
		"_ZN2at6nati",
		"_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOps",
		"_Z\xff\xfe",
		"_ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_str_eq(cs_demangle(bad[i]), bad[i]);
		ck_assert_str_eq(cs_demangle_short(bad[i]), bad[i]);
	}
}
END_TEST

static void *demangle_many(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2000; i++) {
		char name[64];

		snprintf(name, sizeof(name), "_Z%zu%s%di",
			 strlen("kernel_") + 1 + (i >= 10) + (i >= 100) + (i >= 1000), "kernel_",
			 i);
		if (!strstr(cs_demangle(name), "kernel_"))
			return (void *)1;
		if (strcmp(cs_demangle_short(reduce_mangled),
			   "at::native::reduce_kernel<512, 1, ReduceOp<...>>"))
			return (void *)1;
	}
	return NULL;
}

/* Threads (export's formatter, the viewer's server) share the cache. */
/* Rows of a table grouped by mangled name and shown by short name are told apart: the six
 * multi_tensor_apply_kernel<...> of an optimizer step keep their template arguments, rows that
 * still read the same are numbered, and a row alone keeps its short name. */
START_TEST(test_short_distinct)
{
	const char *names[] = {
		"_ZN2at6native57_GLOBAL__N__e658eeb9_24_ForeachBinaryOpScalar_cu_86b9896c25multi_"
		"tensor_apply_kernelINS1_18TensorListMetadataILi1EEENS1_21BinaryOpScalarFunctorIf"
		"Li1ELi1ELi0EEEJSt10multipliesIfEfEEEvT_T0_DpT1_",
		"_ZN2at6native54_GLOBAL__N__f8a10d72_21_ForeachPointwiseOp_cu_ef478fac25multi_ten"
		"sor_apply_kernelINS1_28TensorListScalarListMetadataIfLi3EEENS1_28PointwiseOpScal"
		"arListFunctorIfLi3ELi3ELi0EEEJSt7dividesIfEEEEvT_T0_DpT1_",
		"void f<int>(int)",
		"void g<int>(int)",
		"void f<int>(int, int)",
		"nvjet_sm90_tst_192x128",
	};
	char *out[6];

	ck_assert_str_eq(cs_demangle_short(names[0]), cs_demangle_short(names[1]));
	ck_assert_int_eq(cs_demangle_short_distinct(names, 6, out), 0);
	ck_assert_str_eq(out[0], "at::native::(anonymous namespace)::multi_tensor_apply_kernel<"
				 "TensorListMetadata<1>, BinaryOpScalarFunctor<float, 1, 1, 0>, "
				 "multiplies<float>, float>");
	ck_assert_str_eq(out[1], "at::native::(anonymous namespace)::multi_tensor_apply_kernel<"
				 "TensorListScalarListMetadata<float, 3>, "
				 "PointwiseOpScalarListFunctor<float, 3, 3, 0>, divides<float>>");
	ck_assert_str_eq(out[2], "f<int> #1");
	ck_assert_str_eq(out[3], "g<int>");
	ck_assert_str_eq(out[4], "f<int> #2");
	ck_assert_str_eq(out[5], "nvjet_sm90_tst_192x128");
	for (int i = 0; i < 6; i++)
		free(out[i]);
}
END_TEST

/* A name cut to fit a column: namespaces go first, and the cut falls between words. */
START_TEST(test_truncate_name)
{
	static const struct {
		const char *in;
		size_t width;
		const char *want;
	} cases[] = {
		{"at::native::vectorized_elementwise_kernel<4, FillFunctor<float>, array<char*, "
		 "3ul>>",
		 29, "vectorized_\xe2\x80\xa6<char*, 3ul>>"},
		{"at::native::reduce_kernel<512, 1, ReduceOp<...>>", 29,
		 "reduce_kernel<512, 1, \xe2\x80\xa6>"},
		{"at::native::unrolled_elementwise_kernel<...>", 29,
		 "unrolled_elementwise_kernel\xe2\x80\xa6"},
		{"at::native::reduce_kernel<512, 1, ReduceOp<...>>", 40,
		 "reduce_kernel<512, 1, ReduceOp<...>>"},
		{"DtoH bytes per step", 29, "DtoH bytes per step"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = cs_truncate_name(cases[i].in, cases[i].width);

		ck_assert_str_eq(got, cases[i].want);
		ck_assert_uint_le(cs_text_width(got), cases[i].width);
		free(got);
	}
}
END_TEST

START_TEST(test_threads)
{
	pthread_t th[4];
	void *res;

	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, demangle_many, NULL), 0);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(th[i], &res), 0);
		ck_assert_ptr_null(res);
	}
	ck_assert_str_eq(cs_demangle("_Z9kernel_42i"), "kernel_42(int)");
}
END_TEST

static Suite *demangle_suite(void)
{
	Suite *s = suite_create("demangle");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_trace_names);
	tcase_add_test(tc, test_reduce_kernel);
	tcase_add_test(tc, test_not_mangled);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_short_distinct);
	tcase_add_test(tc, test_truncate_name);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(demangle_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
