/*
 * vm_read.h - reading this process's memory where it may be gone (a Python thread state another
 * thread frees, a kernel name in a library being unloaded): process_vm_readv fails with EFAULT
 * where a load would fault. Used by the Python frame walker and the hang ring.
 */
#ifndef CUSCOPE_COLLECTORS_VM_READ_H
#define CUSCOPE_COLLECTORS_VM_READ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* The end of the user part of the address space on x86-64 and AArch64 (48-bit). */
#define CS_USER_ADDR_END ((uintptr_t)1 << 47)

/* Read n bytes at src of process pid into dst without the risk of a fault (an address outside
 * user space fails). 0, or -1 when any of it cannot be read. */
static inline int cs_vm_read(pid_t pid, void *dst, uintptr_t src, size_t n)
{
	struct iovec local = {dst, n}, remote = {(void *)src, n};

	if (src < 4096 || src >= CS_USER_ADDR_END || n > CS_USER_ADDR_END - src)
		return -1;
	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -1;
}

#endif
