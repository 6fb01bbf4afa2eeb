#!/usr/bin/env python3
"""Writes a Philly-like trace of GPU training jobs in tidepool's native CSV (docs/simulator.md).

Shaped after what the Philly analysis (Jeon et al., USENIX ATC '19) reports of Microsoft's
multi-tenant GPU cluster, not copied from its data: most jobs use one GPU, but the large
multi-node gangs (8 and 16 GPUs) hold much of the GPU time; run times are heavy-tailed (minutes
to a day); submissions follow working hours. Scaled to examples/seed/config.yaml (1-GPU nodes
and 4-GPU nodes, 32 GPUs in all).

  scripts/philly-like-trace.py [--days 14] [--seed 24] > examples/traces/philly-like-gangs.csv
"""
import argparse
import math
import random

SIZES = [(1, 0.35), (2, 0.15), (4, 0.20), (8, 0.20), (16, 0.10)]


def pick_size(rng):
    r = rng.random()
    for gpus, p in SIZES:
        if r < p:
            return gpus
        r -= p
    return SIZES[-1][0]


def rate_per_hour(t_s):
    """Submissions per hour at t: busy on weekday working hours, quiet otherwise."""
    day = int(t_s // 86400) % 7
    hour = (t_s % 86400) / 3600
    if day < 5 and 8 <= hour < 20:
        return 0.8
    return 0.15


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=int, default=14)
    ap.add_argument("--seed", type=int, default=24)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    end = args.days * 86400
    print("id,submit_s,duration_s,replicas,cpu,memory,gpu,gpu_model,gang,namespace,priority,spot")
    t, n = 0.0, 0
    peak = 0.8  # thinning: candidates at the peak rate, kept with rate(t) / peak
    while True:
        t += rng.expovariate(peak / 3600)
        if t >= end:
            break
        if rng.random() >= rate_per_hour(t) / peak:
            continue
        gpus = pick_size(rng)
        replicas = 1 if gpus <= 4 else gpus // 4
        per = gpus // replicas
        cpu = 4 if per == 1 else 5 * per
        memory = f"{40 if per == 1 else 80 * per}Gi"
        duration = min(86400, max(300, int(3600 * math.exp(rng.gauss(0, 1.2)))))
        gang = "true" if replicas > 1 else "false"
        spot = "true" if rng.random() < 0.4 else "false"
        vc = f"philly-vc{rng.randint(1, 4)}"
        print(f"job-{n:04d},{int(t)},{duration},{replicas},{cpu},{memory},{per},,{gang},{vc},0,{spot}")
        n += 1


if __name__ == "__main__":
    main()
