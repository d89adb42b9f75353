"""Everything an agent can do, through one registry (seed 003 §51-52): each tool registered once with its schema
and its handler (`registry.py`), a call validated against it and routed there; what runs on the server (web
search and page fetch, owners' API connections, memory, skills) in `server_tools.py`, over `web.py` (httpx) and
`vault.py` (the connections' auth headers, encrypted)."""
