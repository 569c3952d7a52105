"""rounds.py - the summary of a GPU bench's alternating rounds (stack_cost.sh, wait_flush.sh).

    python3 tests/gpu/rounds.py FILE [UNIT]

FILE holds one line per run, "MODE VALUE ROUND" (VALUE "nan" when the run failed). Prints, per mode in the
order of its first run, the median, the range and the median against the mode "none"; then each mode against
the run of "none" of the same round, per round and the median of those.
"""
import statistics
import sys


def main(path, unit):
    values, rounds = {}, {}
    for line in open(path):
        mode, x, r = line.split()[:3]
        if x != "nan":
            values.setdefault(mode, []).append(float(x))
            rounds.setdefault(r, {})[mode] = float(x)
    base = statistics.median(values.get("none", [float("nan")]))
    for mode, xs in values.items():
        med = statistics.median(xs)
        print(f"{mode:10s} median {med:.3f} {unit}  range {min(xs):.3f}..{max(xs):.3f}  "
              f"vs none {100 * (med / base - 1):+.1f}%")
    for mode in values:
        d = [100 * (x[mode] / x["none"] - 1) for _, x in sorted(rounds.items(), key=lambda kv: int(kv[0]))
             if mode != "none" and mode in x and "none" in x]
        if d:
            print(f"{mode:10s} over none per round: {', '.join(f'{p:+.1f}%' for p in d)}; "
                  f"median {statistics.median(d):+.1f}%")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: rounds.py FILE [UNIT]")
    main(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else "ms")
