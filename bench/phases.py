"""Wall and CPU time of each phase of one ``warehouse ingest``, in this process (stderr).

    python bench/phases.py ingest /tmp/speed-bench/inference-20000 --root /tmp/wh --quiet

Wraps the runner's steps (imports, loading the formats, the repair, the catalog, the walk,
the batches, the commit) with timers; the arguments are the CLI's. Run it twice on the
same corpus and root to see an unchanged re-ingest. (A pool's forkserver imports
``__main__``: hence the guard.)
"""

import sys
import time

if __name__ == "__main__":
    last = [time.perf_counter(), time.process_time()]
    start = list(last)

    def mark(label: str) -> None:
        now = [time.perf_counter(), time.process_time()]
        print(f"  {label:<28} wall {now[0] - last[0]:.3f}  cpu {now[1] - last[1]:.3f}", file=sys.stderr)
        last[:] = now

    import warehouse.cli

    mark("import warehouse.cli")
    import warehouse.runner as runner
    from warehouse import catalog, registry

    mark("import warehouse.runner")

    def timed(owner, name: str) -> None:
        f = getattr(owner, name)

        def wrapper(*args, **kwargs):
            last[:] = [time.perf_counter(), time.process_time()]  # what ran before is not this phase's
            try:
                return f(*args, **kwargs)
            finally:
                mark(name)

        setattr(owner, name, wrapper)

    timed(registry.Registry, "ingestors")
    timed(runner, "open_for_writing")
    timed(catalog.Catalog, "load")
    timed(runner, "_what_to_read")
    timed(runner, "_run_batches")
    timed(runner, "commit")
    sys.argv = ["warehouse", *sys.argv[1:]]
    code = warehouse.cli.main()
    print(f"  total wall {time.perf_counter() - start[0]:.3f}  cpu {time.process_time() - start[1]:.3f}", file=sys.stderr)
    sys.exit(code)
