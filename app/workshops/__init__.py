"""Instructor-led workshops: a presenter drives one scene state, a room follows it live.

Theory of operation
-------------------
A workshop is a row in a store (SQLite by default, PostgreSQL with DATABASE_URL; store.py) holding
the presenter's current scene URL and a sequence number. Everything the room must see is an
*event* appended under the next sequence number: `state` (the presenter's scene URL) and `poll`
(a poll opened, closed or revealed). Events are persisted before anyone is told, so a restarted
server, or another worker, can replay them.

Each server process keeps one in-memory fan-out (hub.py): the event streams (SSE) of the
participants it serves, by workshop. A publish in this process wakes the hub directly; a publish
in another process reaches it through PostgreSQL's LISTEN/NOTIFY, or, on SQLite, through a
light poll of the workshops' sequence numbers. A stream that reconnects sends `Last-Event-ID`
and gets every event after it from the store, then the live ones.

Participants' pages apply a `state` event by asking for the scene URL exactly as a Step click
does (static/app.js), so a workshop page is the scene page, rendered by the same code
(app/main.py `scene_response`), with a workshop bar and, for the presenter, a notes pane.
"""
