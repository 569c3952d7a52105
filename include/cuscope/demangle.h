/*
 * demangle.h - kernel and function names as people read them.
 *
 * CUPTI gives kernel names as the compiler emitted them: C++ names mangled by the Itanium ABI
 * (`_ZN2at6native...`), C names and cuBLAS/cuDNN names as they are (`nvjet_sm90_...`), and some
 * already demangled (`void at::native::foo<...>(...)`). The trace keeps them so; the outputs that a
 * person reads show the demangled name, in a short form in tables. JSON outputs keep the raw name
 * and add the demangled one beside it.
 */
#ifndef CUSCOPE_DEMANGLE_H
#define CUSCOPE_DEMANGLE_H

#include <stddef.h>

/*
 * The demangled name of a mangled C++ name ("_Z..."), e.g.
 * `void at::native::reduce_kernel<512, 1, ...>(at::native::ReduceOp<...>)`; any other name, and a
 * mangled one that does not demangle (malformed), is returned as it is (the same pointer). NULL
 * gives NULL. A demangled name is made once per distinct name and kept for the life of the process
 * (the returned string is never freed); the cache is shared by threads. Past 65,536 distinct names
 * new names are returned as they are.
 */
const char *cs_demangle(const char *name);

/*
 * The short form of a kernel name for tables: demangled (cs_demangle), without its return type and
 * parameter list, and every template argument list at the outer level shown as `<...>`:
 * `at::native::reduce_kernel<...>`. A name with none of these is returned as it is. Same lifetime
 * and cache as cs_demangle.
 */
const char *cs_demangle_short(const char *name);

/*
 * The short names of n kernels shown together (the rows of a table), told apart: a name whose
 * short form another row of the list shares keeps its template arguments, however long
 * (`multi_tensor_apply_kernel<TensorListMetadata<1>, BinaryOpScalarFunctor<float, 1, 1, 0>,
 * multiplies<float>, float>`), and rows that still read the same get " #1", " #2", ... in list
 * order. out[i] are malloc'd for the caller to free. 0, or -1 without memory (out[] all NULL).
 */
int cs_demangle_short_distinct(const char *const *names, size_t n, char **out);

/*
 * The demangled name of a mangled C++ name ("_Z..."), malloc'd for the caller to free; NULL for any
 * other name, a malformed one, or without memory. No cache: for callers that keep their own (the
 * symbolizer's per-module symbols).
 */
char *cs_demangle_alloc(const char *name);

/*
 * The name of a CUDA API function without the version suffix CUPTI gives it in buf
 * (cudaFree_v3020 -> cudaFree, cuMemAlloc_v2 -> cuMemAlloc); any other name, and one that does not
 * fit in buf, is returned as it is (the same pointer).
 */
const char *cs_api_name_plain(const char *name, char *buf, size_t size);

#endif
