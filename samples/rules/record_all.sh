#!/usr/bin/env bash
# record_all.sh - record every rule sample (samples/rules/README.md) with `cuscope record`.
#
#   samples/rules/record_all.sh [OUTDIR]
#
# OUTDIR defaults to samples/rules/traces. Each program is recorded into OUTDIR/<rule>-<name>.db (clean.py into
# OUTDIR/clean.db) with a time limit of 120 s; its output goes to OUTDIR/logs/<rule>-<name>.log. A failure does
# not stop the run. One line per program: exit status, trace size in bytes, and the program's final `done` line.
# The exit status is the number of programs that failed. A CUDA C program (a .cu file) is first built with
# `$NVCC -O2 -arch=$NVCC_ARCH` into a temporary directory (its compiler output in OUTDIR/logs/<name>.build.log).
#
# Environment: CUSCOPE (default: cuscope on PATH), PYTHON (default: python3), TIMEOUT (seconds, default 120),
# NVCC (default: nvcc), NVCC_ARCH (default: sm_90),
# CUSCOPE_RECORD_OPTS (extra `cuscope record` options, e.g. --latency-timestamps), ONLY (a substring: record
# only the programs whose trace name contains it).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/samples/rules/traces}
cuscope=${CUSCOPE:-cuscope}
python=${PYTHON:-python3}
limit=${TIMEOUT:-120}
only=${ONLY:-}
# shellcheck disable=SC2206
record_opts=(${CUSCOPE_RECORD_OPTS:-})
nvcc=${NVCC:-nvcc}
arch=${NVCC_ARCH:-sm_90}
bindir=$(mktemp -d) || exit 1
trap 'rm -rf "$bindir"' EXIT

mkdir -p "$out/logs" || exit 1
out=$(cd "$out" && pwd)
cd "$root" || exit 1

# trace name | program (relative to samples/rules) and its arguments
programs=(
	"clean|clean.py"
	"d2h-sync-bad|d2h-sync/bad.py"
	"d2h-sync-fixed|d2h-sync/fixed.py"
	"d2h-sync-negative_final_read|d2h-sync/negative_final_read.py"
	"d2h-sync-negative_lagged_read|d2h-sync/negative_lagged_read.py"
	"d2h-sync-negative_sync_long_step|d2h-sync/negative_sync_long_step.py"
	"d2h-sync-negative_event_query|d2h-sync/negative_event_query.py"
	"empty-cache-in-loop-bad|empty-cache-in-loop/bad.py"
	"empty-cache-in-loop-fixed|empty-cache-in-loop/fixed.py"
	"empty-cache-in-loop-negative_train_eval_switch|empty-cache-in-loop/negative_train_eval_switch.py"
	"memory-ceiling-thrash-bad_fraction|memory-ceiling-thrash/bad_fraction.py"
	"memory-ceiling-thrash-bad_real|memory-ceiling-thrash/bad_real.py"
	"memory-ceiling-thrash-bad_expandable|memory-ceiling-thrash/bad_expandable.py"
	"memory-ceiling-thrash-fixed|memory-ceiling-thrash/fixed.py"
	"memory-ceiling-thrash-fixed_real|memory-ceiling-thrash/fixed.py --ceiling real"
	"memory-ceiling-thrash-fixed_expandable|memory-ceiling-thrash/fixed.py --ceiling real --expandable"
	"launch-starvation-bad|launch-starvation/bad.py"
	"launch-starvation-fixed|launch-starvation/fixed.py"
	"launch-starvation-negative_gpu_bound|launch-starvation/negative_gpu_bound.py"
	"cuda-core-scan-bad|cuda-core-scan/bad.py"
	"cuda-core-scan-fixed|cuda-core-scan/fixed.py"
	"cuda-core-scan-negative_short_cumsum|cuda-core-scan/negative_short_cumsum.py"
	"cuda-core-scan-negative_nonzero_select|cuda-core-scan/negative_nonzero_select.py"
	"sync-call-bad|sync-call/bad.py"
	"sync-call-fixed|sync-call/fixed.py"
	"sync-call-negative_side_stream|sync-call/negative_side_stream.py"
	"sync-call-negative_long_step|sync-call/negative_long_step.py"
	"pageable-memcpy-bad|pageable-memcpy/bad.py"
	"pageable-memcpy-fixed|pageable-memcpy/fixed.py"
	"pageable-memcpy-negative_gpu_bound|pageable-memcpy/negative_gpu_bound.py"
	"pageable-memcpy-negative_item|pageable-memcpy/negative_item.py"
	"allocator-churn-bad|allocator-churn/bad.py"
	"allocator-churn-fixed|allocator-churn/fixed.py"
	"allocator-churn-negative_buckets|allocator-churn/negative_buckets.py"
	"allocator-churn-bad_no_caching|allocator-churn/bad_no_caching.py"
	"allocator-churn-fixed_no_caching|allocator-churn/fixed_no_caching.py"
	"allocator-churn-alloc_per_iter_bad|allocator-churn/alloc_per_iter.cu bad"
	"allocator-churn-alloc_per_iter_fixed|allocator-churn/alloc_per_iter.cu fixed"
	"unfused-optimizer-bad|unfused-optimizer/bad.py"
	"unfused-optimizer-bad_sgd|unfused-optimizer/bad.py --opt sgd"
	"unfused-optimizer-fixed|unfused-optimizer/fixed.py"
	"unfused-optimizer-fixed_foreach|unfused-optimizer/fixed.py --fix foreach"
	"unfused-optimizer-negative_huge_param|unfused-optimizer/negative_huge_param.py"
	"zero-grad-memset-bad|zero-grad-memset/bad.py"
	"zero-grad-memset-bad_optimizer|zero-grad-memset/bad.py --how optimizer"
	"zero-grad-memset-bad_foreach|zero-grad-memset/bad.py --how foreach"
	"zero-grad-memset-fixed|zero-grad-memset/fixed.py"
	"zero-grad-memset-negative_buffer_reset|zero-grad-memset/negative_buffer_reset.py"
	"unfused-elementwise-bad|unfused-elementwise/bad.py"
	"unfused-elementwise-fixed|unfused-elementwise/fixed.py"
	"unfused-elementwise-negative_fused_op|unfused-elementwise/negative_fused_op.py"
	"no-tensor-cores-bad|no-tensor-cores/bad.py"
	"no-tensor-cores-fixed|no-tensor-cores/fixed.py"
	"no-tensor-cores-fixed_tf32|no-tensor-cores/fixed.py --tf32"
	"no-tensor-cores-negative_small_gemm|no-tensor-cores/negative_small_gemm.py"
	"no-tensor-cores-negative_odd_shapes|no-tensor-cores/negative_odd_shapes.py"
	"dataloader-stall-bad|dataloader-stall/bad.py"
	"dataloader-stall-fixed|dataloader-stall/fixed.py"
	"dataloader-stall-negative_gpu_bound|dataloader-stall/negative_gpu_bound.py"
	"dataloader-stall-negative_epoch_boundary|dataloader-stall/negative_epoch_boundary.py"
	"low-utilization-bad|low-utilization/bad.py"
	"low-utilization-fixed|low-utilization/fixed.py"
	"host-created-tensor-bad|host-created-tensor/bad.py"
	"host-created-tensor-fixed|host-created-tensor/fixed.py"
	"host-created-tensor-negative_gpu_bound|host-created-tensor/negative_gpu_bound.py"
	"index-select-embedding-bad|index-select-embedding/bad.py"
	"index-select-embedding-fixed|index-select-embedding/fixed.py"
	"index-select-embedding-bad_bf16|index-select-embedding/bad.py --table-dtype bfloat16"
	"index-select-embedding-fixed_bf16|index-select-embedding/fixed.py --table-dtype bfloat16"
	"index-select-embedding-negative_select_rows|index-select-embedding/negative_select_rows.py"
	"index-select-embedding-skewed|index-select-embedding/skewed.py"
	"index-select-embedding-skewed_embedding|index-select-embedding/skewed_embedding.py"
)

failed=0
for entry in "${programs[@]}"; do
	name=${entry%%|*}
	cmd=${entry#*|}
	if [ -n "$only" ] && [[ $name != *"$only"* ]]; then
		continue
	fi
	# shellcheck disable=SC2206
	argv=($cmd)
	argv[0]=samples/rules/${argv[0]}
	db=$out/$name.db
	log=$out/logs/$name.log
	if [[ ${argv[0]} == *.cu ]]; then
		exe=$bindir/$(basename "${argv[0]}" .cu)
		if [ ! -x "$exe" ] &&
			! "$nvcc" -O2 -arch="$arch" -o "$exe" "${argv[0]}" >"$out/logs/$name.build.log" 2>&1; then
			failed=$((failed + 1))
			printf '%-50s build failed: see %s\n' "$name" "$out/logs/$name.build.log"
			continue
		fi
		argv=("$exe" "${argv[@]:1}")
	else
		argv=("$python" "${argv[@]}")
	fi
	start=$(date +%s)
	timeout -k 10 "$limit" "$cuscope" record "${record_opts[@]}" -o "$db" --force -- \
		"${argv[@]}" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	last=$(grep '^done ' "$log" | tail -n 1)
	size=$(stat -c %s "$db" 2>/dev/null || echo none)
	[ "$rc" -eq 0 ] && [ -n "$last" ] || failed=$((failed + 1))
	[ "$rc" -eq 124 ] && last="(timed out after ${limit}s) $last"
	printf '%-50s rc=%-3s %4ss size=%-10s %s\n' "$name" "$rc" "$secs" "$size" "${last:-(no done line; see $log)}"
done
exit "$failed"
