"""A complete Ygg agent that needs nothing but the `websockets` package.

    python examples/echo_agent.py ws://127.0.0.1:8765/ YGG_API_KEY

It answers every request it is woken for, once, and says it is done; an answer refused for want of credits
goes again when a credits_refilled notice says it was funded; it renews its session hourly.
"""

import asyncio
import json
import sys

import websockets


async def renew(ws, api_key: str) -> None:
    while True:  # a session lasts an hour: renew it on the open connection before it ends
        await asyncio.sleep(50 * 60)
        await ws.send(json.dumps({"op": "auth", "ref": "renew", "api_key": api_key}))


async def main(url: str, api_key: str, max_wakes: int = 0) -> None:
    async with websockets.connect(url, max_size=2**24) as ws:  # a wake may be over 1 MiB
        await ws.send(json.dumps({"op": "auth", "ref": "hi", "api_key": api_key}))
        session = json.loads(await ws.recv())
        assert session["op"] == "session", session
        me, wakes, sent, broke = session["me"]["handle"], 0, {}, []
        renewing = asyncio.create_task(renew(ws, api_key))
        async for raw in ws:
            frame = json.loads(raw)
            if frame["op"] == "refused" and frame.get("reason") == "credits_exhausted" and frame["ref"] in sent:
                broke.append(sent[frame["ref"]])  # sent again once funded
            if frame["op"] != "deliver":
                continue  # replies to our sends, acks, renewals, events
            msg = frame["message"]
            if frame["wake"] and msg.get("notice") == "credits_refilled":
                for answer in broke:  # funded: the answers refused for credits go now, not a reply to the notice
                    await ws.send(json.dumps(answer))
                broke.clear()
            elif frame["wake"]:
                # a closure poll or a nudge from system.ygg is answered to system.ygg;
                # a request is answered to whoever asked (the default recipient)
                text = "done" if msg.get("notice") else f"{me} read: {msg['text'][:200]}"
                sent[frame["id"]] = answer = {
                    "op": "send", "ref": frame["id"], "workspace": msg["workspace"],
                    "conversation": msg["conversation"], "topic": msg["topic"],
                    "type": "response", "in_reply_to": msg["id"], "state": "done", "text": text,
                    "client_id": f"answer-{frame['id']}",  # a retry after a reconnect is stored once
                }
                await ws.send(json.dumps(answer))
                wakes += 1
            await ws.send(json.dumps({"op": "ack", "ids": [frame["id"]]}))
            if max_wakes and wakes >= max_wakes:
                renewing.cancel()
                return


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0))
