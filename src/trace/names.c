/*
 * names.c - names of the trace store's enums: event kinds (and their tables), copy directions,
 * memory kinds, memory operations and synchronization types, as reports, exporters and the CLI
 * print them; and what two readers must read alike from them: which waits are host waits, which
 * memory rows move the device memory counter; the event tables' columns as people see them
 * (their labels and units, from include/cuscope/columns.def).
 */
#include <stddef.h>
#include <stdint.h>

#include "cuscope/trace.h"

static const char *const event_tables[CS_EV_COUNT] = {
	[CS_EV_KERNEL] = "CUPTI_ACTIVITY_KIND_KERNEL",
	[CS_EV_MEMCPY] = "CUPTI_ACTIVITY_KIND_MEMCPY",
	[CS_EV_MEMSET] = "CUPTI_ACTIVITY_KIND_MEMSET",
	[CS_EV_MEMORY] = "CUDA_GPU_MEMORY_USAGE_EVENTS",
	[CS_EV_SYNC] = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
	[CS_EV_API] = "CUPTI_ACTIVITY_KIND_RUNTIME",
	[CS_EV_NVTX] = "NVTX_EVENTS",
};

static const char *const event_names[CS_EV_COUNT] = {
	[CS_EV_KERNEL] = "kernels", [CS_EV_MEMCPY] = "memcpy", [CS_EV_MEMSET] = "memset",
	[CS_EV_MEMORY] = "memory",  [CS_EV_SYNC] = "sync",     [CS_EV_API] = "api",
	[CS_EV_NVTX] = "nvtx",
};

/* NULL for a kind out of range, so that no SQL is ever built with a made-up table name. */
const char *cs_event_kind_table(enum cs_event_kind kind)
{
	if ((int)kind < 0 || kind >= CS_EV_COUNT)
		return NULL;
	return event_tables[kind];
}

const char *cs_event_kind_name(enum cs_event_kind kind)
{
	if ((int)kind < 0 || kind >= CS_EV_COUNT)
		return "unknown";
	return event_names[kind];
}

const char *cs_copy_kind_name(int kind)
{
	switch (kind) {
	case CS_COPY_HTOD:
		return "HtoD";
	case CS_COPY_DTOH:
		return "DtoH";
	case CS_COPY_HTOA:
		return "HtoA";
	case CS_COPY_ATOH:
		return "AtoH";
	case CS_COPY_ATOA:
		return "AtoA";
	case CS_COPY_ATOD:
		return "AtoD";
	case CS_COPY_DTOA:
		return "DtoA";
	case CS_COPY_DTOD:
		return "DtoD";
	case CS_COPY_HTOH:
		return "HtoH";
	case CS_COPY_PTOP:
		return "PtoP";
	}
	return "unknown";
}

const char *cs_mem_kind_name(int kind)
{
	switch (kind) {
	case CS_MEM_PAGEABLE:
		return "pageable";
	case CS_MEM_PINNED:
		return "pinned";
	case CS_MEM_DEVICE:
		return "device";
	case CS_MEM_ARRAY:
		return "array";
	case CS_MEM_MANAGED:
		return "managed";
	case CS_MEM_DEVICE_STATIC:
		return "device_static";
	case CS_MEM_MANAGED_STATIC:
		return "managed_static";
	}
	return "unknown";
}

const char *cs_mem_op_name(int op)
{
	switch (op) {
	case CS_MEMOP_ALLOC:
		return "alloc";
	case CS_MEMOP_FREE:
		return "free";
	case CS_MEMOP_VMM_CREATE:
		return "vmm_create";
	case CS_MEMOP_VMM_RELEASE:
		return "vmm_release";
	case CS_MEMOP_VMM_MAP:
		return "vmm_map";
	case CS_MEMOP_VMM_UNMAP:
		return "vmm_unmap";
	case CS_MEMOP_VMM_RESERVE:
		return "vmm_reserve";
	case CS_MEMOP_VMM_ADDRESS_FREE:
		return "vmm_address_free";
	}
	return "unknown";
}

const char *cs_sync_type_name(int type)
{
	switch (type) {
	case CS_SYNC_EVENT_SYNCHRONIZE:
		return "event_synchronize";
	case CS_SYNC_STREAM_WAIT_EVENT:
		return "stream_wait_event";
	case CS_SYNC_STREAM_SYNCHRONIZE:
		return "stream_synchronize";
	case CS_SYNC_CONTEXT_SYNCHRONIZE:
		return "context_synchronize";
	case CS_SYNC_MEMCPY:
		return "memcpy";
	case CS_SYNC_EVENT_QUERY:
		return "event_query";
	case CS_SYNC_STREAM_QUERY:
		return "stream_query";
	case CS_SYNC_HOST_FUNC:
		return "host_function";
	}
	return "unknown";
}

int cs_sync_type_is_host_wait(int type)
{
	switch (type) {
	case CS_SYNC_EVENT_SYNCHRONIZE:
	case CS_SYNC_STREAM_SYNCHRONIZE:
	case CS_SYNC_CONTEXT_SYNCHRONIZE:
	case CS_SYNC_MEMCPY:
	case CS_SYNC_HOST_FUNC:
		return 1;
	}
	return 0;
}

/* ---- the columns as people see them ---- */

/* clang-format off */
#define NONE_TS    1, CS_TS_UNKNOWN
#define NONE_END   1, CS_TS_UNKNOWN
#define NONE_INT   0, 0
#define NONE_ID    1, CS_ID_NONE
#define NONE_U64   0, 0
#define NONE_BYTES 0, 0
#define CS_EVENT_TABLE(KIND, name) static const cs_column_info KIND##_info[] = {
#define CS_COLUMN(KIND, column, field, ctype, TYPE, base, late, label, UNIT) \
	{#column, label, CS_COLUNIT_##UNIT, NONE_##TYPE},
#define CS_EVENT_TABLE_END(KIND, name) };
#include "cuscope/columns.def"

#define CS_EVENT_TABLE(KIND, name) [CS_EV_##KIND] = {KIND##_info, CS_COL_##KIND##_COUNT},
static const struct {
	const cs_column_info *col;
	int n;
} event_columns[CS_EV_COUNT] = {
#include "cuscope/columns.def"
};
/* clang-format on */

const cs_column_info *cs_event_columns(enum cs_event_kind kind, int *n)
{
	if ((int)kind < 0 || kind >= CS_EV_COUNT) {
		*n = 0;
		return NULL;
	}
	*n = event_columns[kind].n;
	return event_columns[kind].col;
}

/* clang-format off */
int64_t cs_event_value(const cs_event *ev, int col)
{
	switch (ev->kind) {
#define CS_EVENT_TABLE(KIND, name) \
	case CS_EV_##KIND: { \
		const cs_##name *r = &ev->u.name; \
		switch (col) {
#define CS_COLUMN(KIND, column, field, ctype, TYPE, base, late, label, UNIT) \
		case CS_COL_##KIND##_##column: \
			return (int64_t)r->field;
#define CS_EVENT_TABLE_END(KIND, name) \
		default: \
			return 0; \
		} \
	}
#include "cuscope/columns.def"
	case CS_EV_COUNT:
		break;
	}
	return 0;
}
/* clang-format on */

static const char *const unit_names[] = {
	[CS_COLUNIT_NONE] = "none",
	[CS_COLUNIT_NS] = "ns",
	[CS_COLUNIT_BYTES] = "bytes",
	[CS_COLUNIT_COUNT] = "count",
	[CS_COLUNIT_DIM] = "dim",
	[CS_COLUNIT_ID] = "id",
	[CS_COLUNIT_STRING] = "string",
	[CS_COLUNIT_FLAG] = "flag",
	[CS_COLUNIT_CODE] = "code",
	[CS_COLUNIT_COPY_KIND] = "copy_kind",
	[CS_COLUNIT_MEM_KIND] = "mem_kind",
	[CS_COLUNIT_MEM_OP] = "mem_op",
	[CS_COLUNIT_SYNC_TYPE] = "sync_type",
	[CS_COLUNIT_ADDRESS] = "address",
	[CS_COLUNIT_COLOR] = "color",
};

const char *cs_column_unit_name(enum cs_column_unit unit)
{
	if ((int)unit < 0 || (size_t)unit >= sizeof(unit_names) / sizeof(unit_names[0]) ||
	    !unit_names[unit])
		return "none";
	return unit_names[unit];
}

const char *cs_column_value_name(enum cs_column_unit unit, int64_t v)
{
	/* the name functions take an int: a value past it has no name */
	int i = v < INT32_MIN || v > INT32_MAX ? -1 : (int)v;

	switch (unit) {
	case CS_COLUNIT_COPY_KIND:
		return cs_copy_kind_name(i);
	case CS_COLUNIT_MEM_KIND:
		return cs_mem_kind_name(i);
	case CS_COLUNIT_MEM_OP:
		return cs_mem_op_name(i);
	case CS_COLUNIT_SYNC_TYPE:
		return cs_sync_type_name(i);
	default:
		return NULL;
	}
}
