/*
 * fake_cuda.c - a CUDA driver without a GPU, built as libcuda.so.1 into its own directory: the
 * calls `cuscope calibrate`'s measuring processes make succeed and do nothing, so that a test can
 * run them (test_record.c). Nothing else is provided.
 */
#include <string.h>

/* The project builds with hidden visibility: the driver's calls are this library's exports. */
#define API __attribute__((visibility("default")))

API int cuInit(unsigned flags);
API int cuDeviceGet(int *dev, int ordinal);
API int cuDeviceGetName(char *name, int len, int dev);
API int cuDevicePrimaryCtxRetain(void **ctx, int dev);
API int cuCtxSetCurrent(void *ctx);
API int cuModuleLoadData(void **mod, const void *image);
API int cuModuleGetFunction(void **fn, void *mod, const char *name);
API int cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		       unsigned bz, unsigned shmem, void *stream, void **params, void **extra);
API int cuCtxSynchronize(void);
API int cuMemAlloc_v2(unsigned long long *dptr, size_t bytes);
API int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t bytes);

API int cuInit(unsigned flags)
{
	(void)flags;
	return 0;
}

API int cuDeviceGet(int *dev, int ordinal)
{
	*dev = ordinal;
	return 0;
}

API int cuDeviceGetName(char *name, int len, int dev)
{
	(void)dev;
	if (len > 0) {
		strncpy(name, "Fake GPU", (size_t)len - 1);
		name[len - 1] = '\0';
	}
	return 0;
}

API int cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	(void)dev;
	*ctx = ctx;
	return 0;
}

API int cuCtxSetCurrent(void *ctx)
{
	(void)ctx;
	return 0;
}

API int cuModuleLoadData(void **mod, const void *image)
{
	(void)image;
	*mod = mod;
	return 0;
}

API int cuModuleGetFunction(void **fn, void *mod, const char *name)
{
	(void)mod;
	(void)name;
	*fn = fn;
	return 0;
}

API int cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		       unsigned bz, unsigned shmem, void *stream, void **params, void **extra)
{
	(void)fn, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shmem;
	(void)stream, (void)params, (void)extra;
	return 0;
}

API int cuCtxSynchronize(void)
{
	return 0;
}

API int cuMemAlloc_v2(unsigned long long *dptr, size_t bytes)
{
	(void)bytes;
	*dptr = 0x1000;
	return 0;
}

API int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t bytes)
{
	(void)src;
	memset(dst, 0, bytes);
	return 0;
}
