"""One solve across a Dask cluster: shards of the portfolio on many machines, one deadline, the
driver's verified incumbent shared with every shard.

- :mod:`.split`: which backends and seeds each Dask worker runs (one shard per worker).
- :mod:`.plans`: the compact wire form of a plan (smallest integer type, zlib).
- :mod:`.shard_main`: the shard process (``python -m portfolio.distributed.shard_main``): the local
  runner on one machine, plans out as JSON lines on stdout, the cluster's incumbent in on stdin.
- :mod:`.shard_task`: the Dask task that runs a shard process in its own session and relays
  between it and the cluster; it kills the process group at the deadline or on the stop signal.
- :mod:`.link`: the driver's Dask side (connection or local cluster, problem transfer, submission,
  the inbox of shard messages, publishing the incumbent, stopping), in a thread of its own.
- :mod:`.driver`: the hooks of the driver's local run (fallback plan, greedy), which verify every
  shard plan and credit it to the shard's row.
- :mod:`.session`: the life cycle of one cluster solve (whether the cluster is used at all, the
  link started, the driver's hooks, stop, rows settled, close), what ``portfolio solve
  --dask-scheduler`` and ``portfolio.solve(dask_scheduler=...)`` both call.
- :mod:`.local_cluster`: ``--dask-workers``, a local cluster in a host process of its own.

docs/distributed.md explains the design and how to run it.
"""
