"""Every benchmark and the fuzzer, out of the runtime packages: `python -m ygg_server.bench <subcommand>`
(`core.py`: the routing core; `server.py`: a real server beside a raw relay; `fanout.py`; `backlog.py`),
`python -m ygg_server.bench.fuzz`."""
