/*
 * nvtx_payload_prog.c - a program that annotates with NVTX payloads the way NCCL does (a domain
 * "NCCL", static schemas and an enum registered through the payload extension, a range per call
 * whose attributes carry NVTX_PAYLOAD_TYPE_EXT), plus payloads cuscope must not trip on. Needs no
 * GPU: test_record.c records it and reads NVTX_EVENTS back. Exits 7, so that the test sees the
 * exit code kept.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nvtx_nccl_schema.h"

#define SCHEMA_NOOFFSETS (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 6)
#define SCHEMA_MIXED	 (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 7)

/* offsets left out: the tool works them out from natural alignment */
struct packed {
	int8_t a;
	int32_t b;
	double c;
};

/* a pointer, an array and entries after them, with and without offsets */
struct mixed {
	const char *p;
	int32_t after_ptr;
	char name[8];
	int32_t lost;
	int64_t explicit_off;
};

static void push_payload(nvtxDomainHandle_t d, nvtxStringHandle_t name, nvtxPayloadData_t *pd,
			 int n)
{
	nvtxEventAttributes_t a = nccl_range_attr(name, pd, n);

	nvtxDomainRangePushEx(d, &a);
	nvtxDomainRangePop(d);
}

int main(void)
{
	nvtxDomainHandle_t d = nvtxDomainCreateA("NCCL");
	nvtxStringHandle_t name = nvtxDomainRegisterStringA(d, "ncclAllReduce");
	static const nvtxPayloadSchemaEntry_t packed_entries[] = {
		{0, NVTX_PAYLOAD_ENTRY_TYPE_INT8, "a", NULL, 0, 0, NULL, NULL},
		{0, NVTX_PAYLOAD_ENTRY_TYPE_INT32, "b", NULL, 0, 0, NULL, NULL},
		{0, NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE, "c", NULL, 0, 0, NULL, NULL}};
	nvtxPayloadSchemaAttr_t pattr = {NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
						 NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
						 NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID,
					 NULL,
					 NVTX_PAYLOAD_SCHEMA_TYPE_STATIC,
					 NVTX_PAYLOAD_SCHEMA_FLAG_NONE,
					 packed_entries,
					 3,
					 0,
					 0,
					 SCHEMA_NOOFFSETS,
					 NULL};
	static const nvtxPayloadSchemaEntry_t mixed_entries[] = {
		{NVTX_PAYLOAD_ENTRY_FLAG_POINTER, NVTX_PAYLOAD_ENTRY_TYPE_INT32, "ptr", NULL, 0, 0,
		 NULL, NULL},
		{0, NVTX_PAYLOAD_ENTRY_TYPE_INT32, "after", NULL, 0, 0, NULL, NULL},
		{NVTX_PAYLOAD_ENTRY_FLAG_ARRAY_FIXED_SIZE, NVTX_PAYLOAD_ENTRY_TYPE_CHAR, "name",
		 NULL, 8, 0, NULL, NULL},
		{0, NVTX_PAYLOAD_ENTRY_TYPE_INT32, "lost", NULL, 0, 0, NULL, NULL},
		{0, NVTX_PAYLOAD_ENTRY_TYPE_INT64, "explicit", NULL, 0,
		 offsetof(struct mixed, explicit_off), NULL, NULL}};
	nvtxPayloadSchemaAttr_t mattr = {NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
						 NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
						 NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID,
					 NULL,
					 NVTX_PAYLOAD_SCHEMA_TYPE_STATIC,
					 NVTX_PAYLOAD_SCHEMA_FLAG_NONE,
					 mixed_entries,
					 5,
					 0,
					 0,
					 SCHEMA_MIXED,
					 NULL};
	struct mixed mx = {"x", 5, "abc", 6, -9};
	struct allreduce ar = {0x1234abcdULL, 4096, 2};
	struct packed pk = {-3, 70000, 0.5};
	nvtxPayloadData_t pd[2];
	nvtxEventAttributes_t a;

	register_nccl_allreduce(d);
	nvtxPayloadSchemaRegister(d, &pattr);
	nvtxPayloadSchemaRegister(d, &mattr);

	/* 1: as NCCL's ncclAllReduce */
	pd[0] = (nvtxPayloadData_t){SCHEMA_ALLREDUCE, sizeof(ar), &ar};
	push_payload(d, name, pd, 1);
	/* 1b: the same struct, another size: not the first one's text again */
	ar.bytes = 8192;
	push_payload(d, name, pd, 1);
	ar.bytes = 4096;
	/* 2: a size that ends inside the second entry: only the communicator */
	pd[0] = (nvtxPayloadData_t){SCHEMA_ALLREDUCE, 12, &ar};
	push_payload(d, name, pd, 1);
	/* 3: a schema never registered, and a null payload: no payload */
	pd[0] = (nvtxPayloadData_t){NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 99, sizeof(ar), &ar};
	pd[1] = (nvtxPayloadData_t){SCHEMA_ALLREDUCE, sizeof(ar), NULL};
	push_payload(d, name, pd, 2);
	/* 4: offsets worked out by alignment */
	pd[0] = (nvtxPayloadData_t){SCHEMA_NOOFFSETS, sizeof(pk), &pk};
	push_payload(d, name, pd, 1);
	/* 5: an ext payload whose array pointer is null */
	push_payload(d, name, NULL, 1);

	/* 6: what follows a pointer is decoded, what follows an array only with its offset */
	pd[0] = (nvtxPayloadData_t){SCHEMA_MIXED, sizeof(mx), &mx};
	push_payload(d, name, pd, 1);

	/* 7: a plain payload in the default domain */
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "plain";
	a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
	a.payload.llValue = -42;
	nvtxMarkEx(&a);
	return 7;
}
