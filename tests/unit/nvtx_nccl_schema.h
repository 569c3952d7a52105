/*
 * nvtx_nccl_schema.h - the payload of an NCCL all-reduce, as NCCL registers it with NVTX's payload
 * extension (a static schema of communicator, message size and reduction, the reduction an enum),
 * for the programs that send such payloads without NCCL: tests/unit/nvtx_payload_prog.c (recorded
 * by test_record) and tests/bench/nvtx_payload_cost.c. The reduction's entry name has quotes in
 * it, so that the recorded JSON must escape them.
 */
#ifndef CUSCOPE_TESTS_NVTX_NCCL_SCHEMA_H
#define CUSCOPE_TESTS_NVTX_NCCL_SCHEMA_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#define SCHEMA_ALLREDUCE (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 5)
#define ENUM_REDOP	 (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 11)

struct allreduce {
	uint64_t comm;
	size_t bytes;
	int op; /* 0 ncclSum, 1 ncclProd, 2 ncclMax */
};

/* Register the reduction enum, then the all-reduce schema, in domain d. */
static inline void register_nccl_allreduce(nvtxDomainHandle_t d)
{
	static const nvtxPayloadEnum_t redops[] = {
		{"ncclSum", 0, 0}, {"ncclProd", 1, 0}, {"ncclMax", 2, 0}};
	static const nvtxPayloadSchemaEntry_t entries[] = {
		{0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", NULL, 0,
		 offsetof(struct allreduce, comm), NULL, NULL},
		{0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", NULL, 0,
		 offsetof(struct allreduce, bytes), NULL, NULL},
		{0, ENUM_REDOP, "Reduction \"operation\"", NULL, 0, offsetof(struct allreduce, op),
		 NULL, NULL}};
	nvtxPayloadEnumAttr_t eattr = {
		NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES | NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES |
			NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE | NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID,
		"ncclRedOp_t",
		redops,
		3,
		sizeof(int),
		ENUM_REDOP,
		NULL};
	nvtxPayloadSchemaAttr_t sattr = {NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE |
						 NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
						 NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
						 NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
						 NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID,
					 NULL,
					 NVTX_PAYLOAD_SCHEMA_TYPE_STATIC,
					 NVTX_PAYLOAD_SCHEMA_FLAG_NONE,
					 entries,
					 3,
					 sizeof(struct allreduce),
					 0,
					 SCHEMA_ALLREDUCE,
					 NULL};

	nvtxPayloadEnumRegister(d, &eattr);
	nvtxPayloadSchemaRegister(d, &sattr);
}

/* The attributes of a range named name (a registered string) that carry n payloads at pd (none
 * when n is 0), as NCCL's ranges carry theirs. */
static inline nvtxEventAttributes_t nccl_range_attr(nvtxStringHandle_t name,
						    const nvtxPayloadData_t *pd, int n)
{
	nvtxEventAttributes_t a;

	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = name;
	if (n) {
		a.payloadType = NVTX_PAYLOAD_TYPE_EXT;
		a.reserved0 = n;
		a.payload.ullValue = (uint64_t)(uintptr_t)pd;
	}
	return a;
}

#endif
